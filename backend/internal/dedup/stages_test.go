package dedup

import (
	"reflect"
	"slices"
	"testing"

	"tec/backend/internal/kirtest"
	"tec/backend/kir"
	"tec/te"
)

func TestStages(t *testing.T) {
	m := kirtest.RepeatedStages()
	c := Stages(m, Groups(m))
	if len(c.Funcs) != 1 || len(c.Funcs[0].Stages) != 3 {
		t.Fatalf("got %d functions, want one of 3 stages", len(c.Funcs))
	}
	// Each stage reads its own row of w: the pointer is rebased by it.
	for i, s := range c.Funcs[0].Stages {
		if got, want := c.Bases[s], []int{32 * (i + 1), 0, 0, 0}; !slices.Equal(got, want) {
			t.Errorf("stage %s: bases %v, want %v", s.Name, got, want)
		}
		if c.Call(s) != c.Funcs[0] || c.Kernel[s] != m.Kernels[0] {
			t.Errorf("stage %s: not a call of the function in its kernel", s.Name)
		}
	}
	var nilCalls *StageCalls
	if nilCalls.Call(c.Funcs[0].Stages[0]) != nil {
		t.Error("a nil StageCalls calls something")
	}
}

func TestStagesInline(t *testing.T) {
	buf := &kir.Buffer{Name: "y", Role: kir.Output, DType: te.F32, Shape: []int{8}}
	outer := kir.NewVar("o", te.I32)
	counter := &kir.Buffer{Name: "c", Role: kir.Temp, DType: te.I32, Shape: []int{1}}
	counted := func(s kir.Stmt, c kir.Stmt) kir.Stmt {
		st := s.(*kir.Stage)
		st.Body = append(st.Body, c)
		return st
	}
	stage := func(index kir.Expr) kir.Stmt {
		return &kir.Stage{Name: "s", Body: []kir.Stmt{&kir.Store{Buf: buf, Index: index, Value: kir.F(1)}}}
	}
	for _, tc := range []struct {
		name string
		a, b kir.Stmt
		want int
	}{
		{"same code at other offsets", stage(kir.I(1)), stage(kir.I(5)), 1},
		{"a variable from outside", stage(outer), stage(outer), 0},
		{"a negative offset keeps its pointer", stage(kir.Sub(kir.Tid(), kir.I(1))), stage(kir.Sub(kir.Tid(), kir.I(2))), 0},
		{"counters are buffers like the others", counted(stage(kir.I(1)), &kir.Signal{Counter: counter, Index: kir.I(1)}),
			counted(stage(kir.I(5)), &kir.Wait{Counter: counter, Index: kir.I(2), Target: kir.I(4)}), 0},
		{"a counter at another offset is rebased", counted(stage(kir.I(1)), &kir.Signal{Counter: counter, Index: kir.Add(kir.Tid(), kir.I(1))}),
			counted(stage(kir.I(5)), &kir.Signal{Counter: counter, Index: kir.Add(kir.Tid(), kir.I(3))}), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := &kir.Kernel{Name: "k", Block: 32, Grid: kir.Grid{Blocks: 1}, Params: []*kir.Buffer{buf},
				Body: []kir.Stmt{&kir.Let{Var: outer, Value: kir.I(0)}, tc.a, tc.b}}
			m := &kir.Module{Name: "m", Buffers: []*kir.Buffer{buf}, Outputs: []*kir.Buffer{buf}, Kernels: []*kir.Kernel{k}}
			if got := len(Stages(m, Groups(m)).Funcs); got != tc.want {
				t.Errorf("%d functions, want %d", got, tc.want)
			}
		})
	}
}

// TestStagesLocals checks stages with per-thread arrays and 16-byte copies:
// two stages that each copy a vector of x into their own array and store
// it share a function that declares the array, with x's pointer rebased
// by the copies' offsets; a stage whose array another statement of its
// kernel reads stays inline.
func TestStagesLocals(t *testing.T) {
	x := &kir.Buffer{Name: "x", Role: kir.Input, DType: te.F32, Shape: []int{64}}
	y := &kir.Buffer{Name: "y", Role: kir.Output, DType: te.F32, Shape: []int{64}}
	stage := func(off int) (kir.Stmt, *kir.Buffer) {
		v := &kir.Buffer{Name: "v", Space: kir.Local, DType: te.F32, Shape: []int{4}}
		at := kir.Add(kir.Mul(kir.Tid(), kir.I(4)), kir.I(off))
		return &kir.Stage{Name: "s", Body: []kir.Stmt{
			&kir.VecCopy{Dst: v, DstIndex: kir.I(0), Src: x, SrcIndex: at},
			&kir.VecCopy{Dst: y, DstIndex: at, Src: v, SrcIndex: kir.I(0)},
		}}, v
	}
	a, va := stage(16)
	b, vb := stage(32)
	c, vc := stage(48)
	reads := &kir.Store{Buf: y, Index: kir.I(0), Value: kir.Ld(vc, kir.I(0))}
	k := &kir.Kernel{Name: "k", Block: 4, Grid: kir.Grid{Blocks: 1}, Params: []*kir.Buffer{x, y},
		Locals: []*kir.Buffer{va, vb, vc}, Body: []kir.Stmt{a, b, c, reads}}
	m := &kir.Module{Name: "m", Buffers: []*kir.Buffer{x, y}, Outputs: []*kir.Buffer{y}, Kernels: []*kir.Kernel{k}}
	calls := Stages(m, Groups(m))
	if len(calls.Funcs) != 1 || len(calls.Funcs[0].Stages) != 2 {
		t.Fatalf("got %d functions, want one of the 2 stages whose arrays are their own", len(calls.Funcs))
	}
	f := calls.Funcs[0]
	if !slices.Equal(f.Locals, []*kir.Buffer{va}) {
		t.Errorf("the function's arrays are %v, want the first stage's", f.Locals)
	}
	if !calls.Moved[va] || !calls.Moved[vb] || calls.Moved[vc] {
		t.Errorf("moved arrays: v of a %v, b %v, c %v; want true, true, false", calls.Moved[va], calls.Moved[vb], calls.Moved[vc])
	}
	for i, s := range f.Stages {
		if got, want := calls.Bases[s], []int{16 * (i + 1), 16 * (i + 1)}; !slices.Equal(got, want) {
			t.Errorf("stage %d: bases %v, want %v", i, got, want)
		}
	}
	if cp := f.Body[0].(*kir.VecCopy); !reflect.DeepEqual(cp.SrcIndex, kir.Mul(kir.Tid(), kir.I(4))) {
		t.Errorf("the function copies x from %#v, want the index less the base", cp.SrcIndex)
	}
}
