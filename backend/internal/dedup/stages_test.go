package dedup

import (
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
		{"a stage's counters are its own", counted(stage(kir.I(1)), &kir.Signal{Counter: counter, Index: kir.I(0)}),
			counted(stage(kir.I(5)), &kir.Signal{Counter: counter, Index: kir.I(0)}), 0},
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
