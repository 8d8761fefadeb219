package numeric

import (
	"math"
	"slices"
	"strings"
	"testing"

	"tec/te"
)

func arr(shape []int, data ...float64) *te.Array {
	return &te.Array{DType: te.F32, Shape: shape, Data: data}
}

func TestCompare(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	tol := Tolerance{Rtol: 1e-3, Atol: 1e-6}
	tests := []struct {
		name      string
		got, want *te.Array
		wantIdx   string // "" means equal
		count     int
	}{
		{"equal", arr([]int{2}, 1, 2), arr([]int{2}, 1, 2), "", 0},
		{"within rtol", arr([]int{2}, 1.0005, 2), arr([]int{2}, 1, 2), "", 0},
		{"outside rtol", arr([]int{2, 2}, 1, 2, 3, 4.1), arr([]int{2, 2}, 1, 2, 3, 4), "[1, 1]", 1},
		{"first of several", arr([]int{3}, 0, 5, 5), arr([]int{3}, 1, 2, 5), "[0]", 2},
		{"nan equals nan", arr([]int{1}, nan), arr([]int{1}, nan), "", 0},
		{"nan vs number", arr([]int{1}, nan), arr([]int{1}, 0), "[0]", 1},
		{"inf equals inf", arr([]int{1}, inf), arr([]int{1}, inf), "", 0},
		{"inf vs -inf", arr([]int{1}, inf), arr([]int{1}, -inf), "[0]", 1},
		{"scalar", arr(nil, 3), arr(nil, 2), "[]", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Compare(tt.got, tt.want, tol)
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantIdx == "" {
				if m != nil {
					t.Fatalf("got mismatch %v, want none", m)
				}
				return
			}
			if m == nil {
				t.Fatalf("got no mismatch, want one at %s", tt.wantIdx)
			}
			if got := FormatIndex(m.Index); got != tt.wantIdx || m.Count != tt.count {
				t.Errorf("mismatch at %s (count %d), want %s (count %d)", got, m.Count, tt.wantIdx, tt.count)
			}
			if !strings.Contains(m.String(), tt.wantIdx) {
				t.Errorf("String() = %q lacks the index", m.String())
			}
		})
	}
	if _, err := Compare(arr([]int{2}, 1, 2), arr([]int{1, 2}, 1, 2), tol); err == nil {
		t.Error("Compare of different shapes: no error")
	}
}

func TestNewFilled(t *testing.T) {
	w := &te.Tensor{Name: "w", Kind: te.Param, DType: te.F32, Shape: []int{64, 256}}
	x := &te.Tensor{Name: "x", Kind: te.Input, DType: te.F16, Shape: []int{3, 5}}
	idx := &te.Tensor{Name: "idx", Kind: te.Input, DType: te.I32, Shape: []int{100}}

	a, b := NewFilled(w, Random, 7), NewFilled(w, Random, 7)
	for i := range a.Data {
		if a.Data[i] != b.Data[i] {
			t.Fatal("random fill is not reproducible")
		}
	}
	if c := NewFilled(w, Random, 8); c.Data[0] == a.Data[0] && c.Data[1] == a.Data[1] {
		t.Error("random fill ignores the seed")
	}
	bound := 1 / math.Sqrt(64)
	for _, v := range a.Data {
		if v < -bound || v >= bound {
			t.Fatalf("param value %v outside ±%v", v, bound)
		}
	}
	for _, v := range NewFilled(x, Random, 1).Data {
		if te.Round(te.F16, v) != v || v < -1 || v > 1 {
			t.Fatalf("f16 input value %v not an f16 in [-1, 1]", v)
		}
	}
	for _, v := range NewFilled(idx, Random, 1).Data {
		if v != math.Trunc(v) || v < 0 || v >= 8 {
			t.Fatalf("i32 value %v not an int in [0, 8)", v)
		}
	}
	for _, v := range NewFilled(x, Ones, 0).Data {
		if v != 1 {
			t.Fatal("ones fill")
		}
	}
	for _, s := range []string{"zeros", "ones", "random"} {
		f, err := ParseFill(s)
		if err != nil || f.String() != s {
			t.Errorf("ParseFill(%q) = %v, %v", s, f, err)
		}
	}
	if _, err := ParseFill("gaussian"); err == nil {
		t.Error("ParseFill(gaussian): no error")
	}
}

func TestSummarize(t *testing.T) {
	s := Summarize(arr([]int{5}, 1, -2, math.NaN(), math.Inf(1), 4))
	if s.Min != -2 || s.Max != 4 || s.Mean != 1 || s.NaNs != 1 || s.Infs != 1 {
		t.Errorf("Summarize = %+v", s)
	}
}

func TestCompareShapeMessage(t *testing.T) {
	_, err := Compare(te.NewArray(te.F32, []int{2, 10}), te.NewArray(te.F32, []int{4, 8}), Tolerance{})
	if err == nil || err.Error() != "shape [2, 10], want [4, 8]" {
		t.Errorf("Compare of different shapes: %v, want shape [2, 10], want [4, 8]", err)
	}
}

func TestSeededFeeds(t *testing.T) {
	p := &te.Program{Name: "m", Tensors: []*te.Tensor{
		{Name: "x", Kind: te.Input, DType: te.F16, Shape: []int{64}},
		{Name: "bn_var", Kind: te.Param, DType: te.F32, Shape: []int{64}},
	}}
	a, b := SeededFeeds(p, 1), SeededFeeds(p, 1)
	c := SeededFeeds(p, 2)
	tests := []struct {
		name   string
		lo, hi float64
	}{
		{"x", -1, 1},
		{"bn_var", 0.5, 1.5},
	}
	for _, tt := range tests {
		got := a[tt.name]
		if got == nil || got.DType != p.Lookup(tt.name).DType || len(got.Data) != 64 {
			t.Fatalf("%s: got %+v", tt.name, got)
		}
		for i, v := range got.Data {
			if v < tt.lo || v > tt.hi || v != te.Round(got.DType, v) {
				t.Errorf("%s[%d] = %v: want a %s value in [%v, %v]", tt.name, i, v, got.DType, tt.lo, tt.hi)
			}
			if v != b[tt.name].Data[i] {
				t.Errorf("%s[%d]: the same seed gave %v and %v", tt.name, i, v, b[tt.name].Data[i])
			}
		}
		if slices.Equal(got.Data, c[tt.name].Data) {
			t.Errorf("%s: seeds 1 and 2 gave the same values", tt.name)
		}
	}
}

// TestGatherRanges: the ids of a gather are kept in the table whether the
// constant added to them is in the static part of the index or in the
// run-time expression (x[l, ids[i] + 2] as the front end may write it).
func TestGatherRanges(t *testing.T) {
	ids := &te.Tensor{Name: "ids", Kind: te.Input, DType: te.I32, Shape: []int{4}}
	pos := &te.Tensor{Name: "pos", Kind: te.Input, DType: te.I32, Shape: []int{4}}
	wte := &te.Tensor{Name: "wte", Kind: te.Param, DType: te.F32, Shape: []int{3, 10}}
	s, d := te.NewVar("s", 4), te.NewVar("d", 3)
	at := func(x *te.Tensor) te.Expr { return &te.Load{Tensor: x, Index: []te.Index{te.VarIndex(s)}} }
	two := &te.ConstExpr{Value: 2, DType: te.I32}
	e := &te.Tensor{Name: "e", Kind: te.Compute, DType: te.F32, Shape: []int{4, 3}, Axes: []*te.Var{s, d},
		Body: &te.Binary{Op: te.Add,
			X: &te.Load{Tensor: wte, Index: []te.Index{te.VarIndex(d), te.Const(0)}, Gather: []te.Expr{nil, &te.Binary{Op: te.Add, X: at(ids), Y: two}}},
			Y: &te.Load{Tensor: wte, Index: []te.Index{te.VarIndex(d), te.Const(1)}, Gather: []te.Expr{nil, &te.Binary{Op: te.Sub, X: at(pos), Y: two}}}}}
	p := &te.Program{Name: "m", Tensors: []*te.Tensor{ids, pos, wte, e}, Outputs: []*te.Tensor{e}}
	got := GatherRanges(p)
	if want := [2]int{-2, 8}; got[ids] != want {
		t.Errorf("ids: range %v, want %v", got[ids], want)
	}
	if want := [2]int{1, 11}; got[pos] != want {
		t.Errorf("pos: range %v, want %v", got[pos], want)
	}
}

// TestGatherRangesUpdate checks that the run-time slot of an in-place
// update narrows its index tensor as a gather does: update kc[b, pos[b] +
// 1, e] on a cache of 4 slots keeps pos in [-1, 3). (tec run --fill random
// filled such positions in [0, 8), outside the cache.)
func TestGatherRangesUpdate(t *testing.T) {
	pos := &te.Tensor{Name: "pos", Kind: te.Input, DType: te.I32, Shape: []int{2}}
	x := &te.Tensor{Name: "x", Kind: te.Input, DType: te.F32, Shape: []int{2, 3}}
	kc := &te.Tensor{Name: "kc", Kind: te.Input, DType: te.F32, Shape: []int{2, 4, 3}}
	b, e := te.NewVar("b", 2), te.NewVar("e", 3)
	one := &te.ConstExpr{Value: 1, DType: te.I32}
	u := &te.Tensor{Name: "kc/update", Kind: te.Compute, DType: te.F32, Shape: []int{2, 3}, Axes: []*te.Var{b, e},
		Body: &te.Load{Tensor: x, Index: []te.Index{te.VarIndex(b), te.VarIndex(e)}},
		Update: &te.Update{Target: kc, Index: []te.Index{te.VarIndex(b), te.Const(0), te.VarIndex(e)},
			Gather: []te.Expr{nil, &te.Binary{Op: te.Add, X: &te.Load{Tensor: pos, Index: []te.Index{te.VarIndex(b)}}, Y: one}, nil}}}
	p := &te.Program{Name: "m", Tensors: []*te.Tensor{pos, x, kc, u}}
	if got, want := GatherRanges(p)[pos], [2]int{-1, 3}; got != want {
		t.Errorf("pos: range %v, want %v", got, want)
	}
}

// TestConformFeeds checks that feeds are rounded to the dtypes of the
// program at a precision, and shared where the dtype is already right.
func TestConformFeeds(t *testing.T) {
	x := &te.Tensor{Name: "x", Kind: te.Input, DType: te.F16, Shape: []int{2}}
	ids := &te.Tensor{Name: "ids", Kind: te.Input, DType: te.I32, Shape: []int{2}}
	y := &te.Tensor{Name: "y", Kind: te.Compute, DType: te.F32, Shape: []int{2},
		Axes: []*te.Var{te.NewVar("i", 2)}}
	y.Body = &te.Load{Tensor: x, Index: []te.Index{te.VarIndex(y.Axes[0])}}
	q := &te.Program{Name: "q", Tensors: []*te.Tensor{x, ids, y}, Outputs: []*te.Tensor{y}}
	in := map[string]*te.Array{
		"x":   arr([]int{2}, 0.1, 1.0/3),
		"ids": {DType: te.I32, Shape: []int{2}, Data: []float64{1, 0}},
	}
	got := ConformFeeds(in, q)
	if got["x"].DType != te.F16 || got["x"].Data[0] != te.Round(te.F16, 0.1) || got["x"].Data[1] != te.Round(te.F16, 1.0/3) {
		t.Errorf("x = %v %v, want f16 roundings of 0.1 and 1/3", got["x"].DType, got["x"].Data)
	}
	if got["x"].Data[0] == 0.1 {
		t.Errorf("x[0] = 0.1 was not rounded to f16")
	}
	if got["ids"] != in["ids"] {
		t.Errorf("ids of the right dtype was copied, want shared")
	}
	if in["x"].DType != te.F32 || in["x"].Data[0] != 0.1 {
		t.Errorf("the caller's feed was changed: %v %v", in["x"].DType, in["x"].Data)
	}
}

func TestRelError(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	arr := func(xs ...float64) *te.Array { return &te.Array{Shape: []int{len(xs)}, Data: xs} }
	for _, tc := range []struct {
		name      string
		got, want *te.Array
		rel       float64 // NaN: want NaN
	}{
		{"equal", arr(1, -2), arr(1, -2), 0},
		{"relative to the largest", arr(1.5, 4), arr(1, 4), 0.125},
		{"all zero", arr(0.5), arr(0), 0.5},
		{"same infinity", arr(inf, 2), arr(inf, 2), 0},
		{"both NaN", arr(nan, 2), arr(nan, 2), 0},
		{"NaN against a number", arr(nan, 2), arr(1, 2), nan},
	} {
		got := RelError(tc.got, tc.want)
		if math.IsNaN(tc.rel) != math.IsNaN(got) || (!math.IsNaN(got) && got != tc.rel) {
			t.Errorf("%s: RelError = %v, want %v", tc.name, got, tc.rel)
		}
	}
}
