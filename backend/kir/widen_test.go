package kir

import (
	"strings"
	"testing"

	"tec/te"
)

// TestWiden checks which i32 operations Widen makes 64-bit, from the
// bounds of loops, special registers, loads and clamped gathers, and that
// what stays within 32 bits keeps its nodes.
func TestWiden(t *testing.T) {
	i := NewVar("i", te.I32)     // a loop over [0, 3)
	big := NewVar("b", te.I32)   // a loop over [0, 2^30)
	acc := NewVar("acc", te.I32) // assigned: any i32
	ids := &Buffer{Name: "ids", Role: Input, DType: te.I32, Shape: []int{4}}
	c := func(v float64) *Const { return &Const{Value: v, T: te.I32} }
	tests := []struct {
		name  string
		index Expr
		want  string // the store's index after Widen
		same  bool   // Widen keeps the expression's node
	}{
		{"small product", Add(Mul(i, I(64)), Tid()), "i * 64 + threadIdx.x", true},
		{"product past 2^31", Mod(Mul(i, c(1500000001)), I(3)), "i32(i64(i) * 1500000001 % 3)", false},
		{"constant past 2^31", Mod(Mul(i, c(3000000001)), I(3)), "i32(i64(i) * 3000000001 % 3)", false},
		{"large loop times stride", Mod(Mul(big, I(4)), I(7)), "i32(i64(b) * 4 % 7)", false},
		{"large loop plus", Mod(Add(big, I(1<<30)), I(7)), "(b + 1073741824) % 7", true},
		{"loaded plus one", Mod(Add(Ld(ids, I(0)), I(1)), I(4)), "i32((i64(ids[0]) + 1) % 4)", false},
		{"clamped gather index", Add(Mul(&Bounded{X: Ld(ids, I(0)), N: 4}, I(8)), i), "bounded(ids[0], 4) * 8 + i", true},
		{"assigned variable", Mod(Mul(acc, I(2)), I(5)), "i32(i64(acc) * 2 % 5)", false},
		{"block index of a fixed grid", Add(Mul(Bid(), Bdim()), Tid()), "blockIdx.x * blockDim.x + threadIdx.x", true},
		{"comparison of a wide value", sel(Lt(Mul(i, c(1500000001)), I(7)), I(1), I(2)), "select(i64(i) * 1500000001 < 7, 1, 2)", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			y := &Buffer{Name: "y", Role: Output, DType: te.F32, Shape: []int{1 << 30}}
			store := &Store{Buf: y, Index: tt.index, Value: F(1)}
			m := &Module{Name: "m", Buffers: []*Buffer{ids, y}, Outputs: []*Buffer{y}, Kernels: []*Kernel{{
				Name: "k", Grid: Grid{Blocks: 4}, Block: 256, Params: []*Buffer{ids, y},
				Body: []Stmt{
					&Let{Var: acc, Value: I(0)},
					&For{Var: i, Kind: Serial, Lo: I(0), Hi: I(3), Step: 1, Body: []Stmt{
						&For{Var: big, Kind: Serial, Lo: I(0), Hi: I(1 << 30), Step: 1, Body: []Stmt{
							store,
							&Assign{Var: acc, Value: Add(acc, I(1))},
						}},
					}},
				},
			}}}
			Widen(m)
			if got := exprText(store.Index); got != tt.want {
				t.Errorf("index = %s, want %s", got, tt.want)
			}
			if (store.Index == tt.index) != tt.same {
				t.Errorf("Widen kept the node: %v, want %v", store.Index == tt.index, tt.same)
			}
			if err := Verify(m); err != nil && !strings.Contains(err.Error(), "race") {
				t.Errorf("Verify: %v", err)
			}
		})
	}
}

// sel is a shorthand for the test table.
func sel(c, x, y Expr) Expr { return &Select{Cond: c, Then: x, Else: y} }

// TestWidenLet checks that a variable defined by a wide value, and never
// reassigned, becomes i64, and that its uses stay wide.
func TestWidenLet(t *testing.T) {
	i, v := NewVar("i", te.I32), NewVar("v", te.I32)
	y := &Buffer{Name: "y", Role: Output, DType: te.F32, Shape: []int{3}}
	store := &Store{Buf: y, Index: Mod(v, I(3)), Value: F(1)}
	m := &Module{Name: "m", Buffers: []*Buffer{y}, Outputs: []*Buffer{y}, Kernels: []*Kernel{{
		Name: "k", Grid: Grid{Blocks: 1}, Block: 1, Params: []*Buffer{y},
		Body: []Stmt{&For{Var: i, Kind: Serial, Lo: I(0), Hi: I(3), Step: 1, Body: []Stmt{
			&Let{Var: v, Value: Mul(i, I(1500000001))},
			store,
		}}},
	}}}
	Widen(m)
	if v.T != te.I64 {
		t.Errorf("v has type %s, want i64", v.T)
	}
	if got, want := exprText(store.Index), "i32(v % 3)"; got != want {
		t.Errorf("index = %s, want %s", got, want)
	}
	if err := Verify(m); err != nil {
		t.Errorf("Verify: %v", err)
	}
}

// exprText prints e as the text form does.
func exprText(e Expr) string {
	return (&printer{names: map[*Var]string{}, used: map[string]bool{}, next: map[string]int{}}).expr(e)
}
