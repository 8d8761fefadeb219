package te

import (
	"slices"
	"strings"
	"testing"
)

// updateProgram is u[b, d] = x[b, d] written to c[b, pos[b] + off, d] in
// place, c of dtype dt, and y[b, d] = c[b, 0, d], which reads the cache
// as the caller gave it.
func updateProgram(dt DType, off int) *Program {
	pos := &Tensor{Name: "pos", Kind: Input, DType: I32, Shape: []int{2}}
	x := &Tensor{Name: "x", Kind: Input, DType: F32, Shape: []int{2, 2}}
	c := &Tensor{Name: "c", Kind: Input, DType: dt, Shape: []int{2, 3, 2}}
	b, d := NewVar("b", 2), NewVar("d", 2)
	u := &Tensor{Name: "u", Kind: Compute, DType: F32, Shape: []int{2, 2}, Axes: []*Var{b, d},
		Body: &Load{Tensor: x, Index: []Index{VarIndex(b), VarIndex(d)}}}
	u.Update = &Update{Target: c, Index: []Index{VarIndex(b), Const(off), VarIndex(d)},
		Gather: []Expr{nil, &Load{Tensor: pos, Index: []Index{VarIndex(b)}}, nil}}
	b2, d2 := NewVar("b", 2), NewVar("d", 2)
	y := &Tensor{Name: "y", Kind: Compute, DType: F32, Shape: []int{2, 2}, Axes: []*Var{b2, d2},
		Body: &Load{Tensor: c, Index: []Index{VarIndex(b2), Const(0), VarIndex(d2)}}}
	p := &Program{Name: "upd", Tensors: []*Tensor{pos, x, c, u, y}, Outputs: []*Tensor{y, c}}
	for i, t := range p.Tensors {
		t.ID = i
	}
	return p
}

// TestUpdateEvaluate checks the reference semantics of an in-place update:
// only the slots written change, reads see the values before the step, the
// caller's array is left alone, the value is rounded to the input's dtype,
// and a slot outside the input is an error naming the index.
func TestUpdateEvaluate(t *testing.T) {
	tests := []struct {
		name    string
		dt      DType
		off     int
		pos     []float64
		want    []float64 // c after the step
		wantErr string
	}{
		{"first and last slot", F32, 0, []float64{0, 2}, []float64{
			1.5, 2.5, -1, -1, -1, -1,
			-1, -1, -1, -1, 3.5, 4.5}, ""},
		{"offset", F32, 1, []float64{0, 1}, []float64{
			-1, -1, 1.5, 2.5, -1, -1,
			-1, -1, -1, -1, 3.5, 4.5}, ""},
		{"rounded to bf16", BF16, 0, []float64{1, 1}, []float64{
			-1, -1, 1.5, 2.5, -1, -1,
			-1, -1, 3.5, 4.5, -1, -1}, ""},
		{"past the end", F32, 1, []float64{0, 2}, nil, "update index pos[1] + 1 = 3 is outside c's dimension 1 [0, 3)"},
		{"below 0", F32, 0, []float64{-1, 0}, nil, "update index pos[0] = -1 is outside c's dimension 1 [0, 3)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := updateProgram(tt.dt, tt.off)
			pos := NewArray(I32, []int{2})
			copy(pos.Data, tt.pos)
			x := NewArray(F32, []int{2, 2})
			copy(x.Data, []float64{1.5, 2.5, 3.5, 4.5})
			c := NewArray(tt.dt, []int{2, 3, 2})
			for i := range c.Data {
				c.Data[i] = -1
			}
			out, err := Evaluate(p, map[string]*Array{"pos": pos, "x": x, "c": c}, EvalOptions{})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := out["c"].Data; !slices.Equal(got, tt.want) {
				t.Errorf("c = %v, want %v", got, tt.want)
			}
			if got := out["y"].Data; !slices.Equal(got, []float64{-1, -1, -1, -1}) {
				t.Errorf("y = %v, want the cache before the update", got)
			}
			if slices.ContainsFunc(c.Data, func(v float64) bool { return v != -1 }) {
				t.Errorf("the caller's array changed: %v", c.Data)
			}
		})
	}
}

// TestUpdatePrint checks that tec te shows where an update writes.
func TestUpdatePrint(t *testing.T) {
	s := updateProgram(F32, 1).String()
	if want := `u = compute((2, 2), lambda b, d: x[b, d], name="u") -> c[b, pos[b] + 1, d]`; !strings.Contains(s, want) {
		t.Errorf("printed\n%s\nwant a line with %s", s, want)
	}
}
