package te

import "testing"

func TestIndexSimplify(t *testing.T) {
	i, j := NewVar("i", 4), NewVar("j", 8)
	vi, vj := VarIndex(i), VarIndex(j)
	tests := []struct {
		name string
		x    Index
		want string
	}{
		{"affine unchanged", vi.Scale(2).AddConst(1), "i*2 + 1"},
		{"div within one multiple", vi.Div(4), "0"},
		{"div shifted within one multiple", vi.AddConst(8).Div(4), "2"},
		{"mod within one multiple", vi.Mod(4), "i"},
		{"mod shifted", vi.AddConst(4).Mod(4), "i"},
		{"div across multiples kept", vj.Div(4), "(j / 4)"},
		{"mod across multiples kept", vj.Mod(4), "(j % 4)"},
		{"nested", vi.Add(vj.Scale(4)).Mod(32).Div(4), "j"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.x.Simplify()
			if got.String() != tt.want {
				t.Fatalf("%s.Simplify() = %s, want %s", tt.x, got, tt.want)
			}
			// Simplify must not change the value anywhere in the domain.
			for a := 0; a < i.Extent; a++ {
				for b := 0; b < j.Extent; b++ {
					val := func(v *Var) int {
						if v == i {
							return a
						}
						return b
					}
					if x, y := tt.x.Eval(val), got.Eval(val); x != y {
						t.Fatalf("at i=%d j=%d: %d before, %d after", a, b, x, y)
					}
				}
			}
		})
	}
}

func TestLoadsInBounds(t *testing.T) {
	i := NewVar("i", 4)
	x := &Tensor{Name: "x", Shape: []int{4}}
	load := func(ix Index) Expr { return &Load{Tensor: x, Index: []Index{ix}} }
	tests := []struct {
		name string
		e    Expr
		want bool
	}{
		{"direct", load(VarIndex(i)), true},
		{"past the end", load(VarIndex(i).AddConst(1)), false},
		{"before the start", load(VarIndex(i).AddConst(-1)), false},
		{"mod keeps it in", load(VarIndex(i).AddConst(1).Mod(4)), true},
		{"inside a select", &Select{Cond: &ConstExpr{Value: 1, DType: Bool}, Then: load(VarIndex(i).AddConst(1)), Else: &ConstExpr{}}, false},
		{"no loads", &ConstExpr{Value: 2}, true},
	}
	for _, tt := range tests {
		if got := LoadsInBounds(tt.e); got != tt.want {
			t.Errorf("%s: LoadsInBounds = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestUsedVars(t *testing.T) {
	i, j, k := NewVar("i", 4), NewVar("j", 4), NewVar("k", 8)
	x := &Tensor{Name: "x", Shape: []int{8}}
	e := &Binary{Op: Add,
		X: &Load{Tensor: x, Index: []Index{VarIndex(i).Add(VarIndex(j).Div(4))}}, // j/4 is 0: j is not used
		Y: &IndexExpr{Index: VarIndex(k)}}
	got := UsedVars(e)
	if len(got) != 2 || !got[i] || !got[k] || got[j] {
		t.Errorf("UsedVars = %v, want {i, k}", got)
	}
}
