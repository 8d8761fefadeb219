package te

import (
	"math/rand/v2"
	"testing"
)

func TestIndexCanonical(t *testing.T) {
	i, j, k := NewVar("i", 8), NewVar("j", 6), NewVar("k", 5)
	I, J, K := VarIndex(i), VarIndex(j), VarIndex(k)
	tests := []struct {
		name      string
		got, want Index
	}{
		{"commutative", I.Add(J), J.Add(I)},
		{"associative", I.Add(J).Add(K), K.Add(I.Add(J))},
		{"merge", I.Add(I), I.Scale(2)},
		{"cancel", I.Add(J).Sub(I), J},
		{"zero", I.Sub(I), Index{}},
		{"scale0", I.Add(J).Scale(0), Const(0)},
		{"const", I.AddConst(3).AddConst(-3), I},
		{"div terms", I.Scale(4).Add(J).Div(4).Add(K), K.Add(J.Div(4)).Add(I)},
		{"mod args", J.Add(I).Mod(3), I.Add(J).Mod(3)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !tt.got.Equal(tt.want) {
				t.Errorf("%s is not equal to %s", tt.got, tt.want)
			}
		})
	}
	if I.Equal(J) || I.Equal(I.AddConst(1)) || I.Div(2).Equal(I.Mod(2)) || I.Div(2).Equal(I.Div(3)) {
		t.Error("Equal holds for different indexes")
	}
	if terms := I.Sub(I).Terms; terms != nil {
		t.Errorf("i - i has terms %v", terms)
	}
}

func TestIndexDivMod(t *testing.T) {
	i, j := NewVar("i", 8), NewVar("j", 6)
	I, J := VarIndex(i), VarIndex(j)
	tests := []struct {
		name string
		got  Index
		want string
	}{
		{"const div", Const(-7).Div(2), "-4"},
		{"const mod", Const(-7).Mod(2), "1"},
		{"div 1", I.Div(1), "i"},
		{"mod 1", I.Mod(1), "0"},
		{"exact div", I.Scale(4).AddConst(8).Div(4), "i + 2"},
		{"exact mod", I.Scale(4).AddConst(8).Mod(4), "0"},
		{"div splits multiples", I.Scale(4).Add(J).AddConst(5).Div(4), "i + ((j + 1) / 4) + 1"},
		{"div with remainder constant", I.Scale(4).AddConst(1).Div(4), "i"},
		{"negative div", I.Scale(-4).AddConst(1).Div(4), "-i"},
		{"mod keeps remainder", I.Scale(4).Add(J).AddConst(5).Mod(4), "((j + 1) % 4)"},
		{"mod constant remainder", I.Scale(6).AddConst(-1).Mod(3), "2"},
		{"nested", I.Div(2).Div(3), "((i / 2) / 3)"},
		{"string", I.Scale(-2).Add(J.Scale(3)).AddConst(-1), "-i*2 + j*3 - 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if s := tt.got.String(); s != tt.want {
				t.Errorf("got %s, want %s", s, tt.want)
			}
		})
	}
}

// randIndex returns a random quasi-affine index over vs.
func randIndex(rng *rand.Rand, vs []*Var, depth int) Index {
	x := Const(rng.IntN(11) - 5)
	for _, v := range vs {
		if rng.IntN(2) == 0 {
			x = x.Add(VarIndex(v).Scale(rng.IntN(9) - 4))
		}
	}
	if depth > 0 && rng.IntN(2) == 0 {
		d := rng.IntN(5) + 1
		y := randIndex(rng, vs, depth-1)
		if rng.IntN(2) == 0 {
			x = x.Add(y.Div(d).Scale(rng.IntN(5) - 2))
		} else {
			x = x.Add(y.Mod(d).Scale(rng.IntN(5) - 2))
		}
	}
	return x
}

// TestIndexProperties checks Eval, Div, Mod, Bounds and Substitute against
// each other on random indexes at every point of the variables' ranges.
func TestIndexProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	i, j := NewVar("i", 5), NewVar("j", 4)
	vs := []*Var{i, j}
	for n := range 300 {
		x := randIndex(rng, vs, 2)
		d := rng.IntN(6) + 1
		q, r := x.Div(d), x.Mod(d)
		lo, hi := x.ExtentBounds()
		// Substitute i := 2j + 1 - i (j unchanged), with the ranges that gives.
		sub := x.Substitute(func(v *Var) (Index, bool) {
			if v == i {
				return VarIndex(j).Scale(2).AddConst(1).Sub(VarIndex(i)), true
			}
			return Index{}, false
		})
		for iv := range i.Extent {
			for jv := range j.Extent {
				val := func(v *Var) int {
					if v == i {
						return iv
					}
					return jv
				}
				xv := x.Eval(val)
				if got, want := q.Eval(val), FloorDiv(xv, d); got != want {
					t.Fatalf("#%d: (%s) / %d = %s = %d at i=%d j=%d, want %d", n, x, d, q, got, iv, jv, want)
				}
				if got, want := r.Eval(val), FloorMod(xv, d); got != want {
					t.Fatalf("#%d: (%s) %% %d = %s = %d at i=%d j=%d, want %d", n, x, d, r, got, iv, jv, want)
				}
				if xv < lo || xv > hi {
					t.Fatalf("#%d: %s = %d at i=%d j=%d, outside its bounds [%d, %d]", n, x, xv, iv, jv, lo, hi)
				}
				subVal := func(v *Var) int {
					if v == i {
						return 2*jv + 1 - iv
					}
					return jv
				}
				if got, want := sub.Eval(val), x.Eval(subVal); got != want {
					t.Fatalf("#%d: substituted %s = %d at i=%d j=%d, want %d", n, sub, got, iv, jv, want)
				}
			}
		}
	}
}

func TestIndexBounds(t *testing.T) {
	i, j := NewVar("i", 8), NewVar("j", 6)
	I, J := VarIndex(i), VarIndex(j)
	tests := []struct {
		name   string
		x      Index
		lo, hi int
	}{
		{"var", I, 0, 7},
		{"affine", I.Scale(2).Sub(J).AddConst(1), -4, 15},
		{"div", I.Div(3), 0, 2},
		{"mod wraps", I.Mod(3), 0, 2},
		{"mod within one period", I.AddConst(9).Div(1).Mod(20), 9, 16},
		{"negative div", I.Scale(-1).Div(2), -4, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if lo, hi := tt.x.ExtentBounds(); lo != tt.lo || hi != tt.hi {
				t.Errorf("bounds of %s = [%d, %d], want [%d, %d]", tt.x, lo, hi, tt.lo, tt.hi)
			}
		})
	}
}

func TestIndexAccessors(t *testing.T) {
	i, j := NewVar("i", 8), NewVar("j", 6)
	I, J := VarIndex(i), VarIndex(j)
	if v, ok := I.AsVar(); !ok || v != i {
		t.Error("AsVar(i) failed")
	}
	for _, x := range []Index{I.AddConst(1), I.Scale(2), I.Add(J), Const(0)} {
		if _, ok := x.AsVar(); ok {
			t.Errorf("AsVar(%s) succeeded", x)
		}
	}
	if c, ok := Const(3).IsConst(); !ok || c != 3 {
		t.Error("IsConst(3) failed")
	}
	x := J.Add(I.Div(2)).Add(I)
	if vs := x.Vars(); len(vs) != 2 || vs[0] != j || vs[1] != i {
		// Terms are sorted: j first (a variable), then i, then (i / 2).
		if len(vs) != 2 || !(vs[0] == i && vs[1] == j) {
			t.Errorf("Vars(%s) = %v", x, vs)
		}
	}
	if !x.Uses(i) || !J.Div(2).Uses(j) || J.Uses(i) {
		t.Error("Uses is wrong")
	}
	if x.IsAffine() || !I.Add(J).IsAffine() {
		t.Error("IsAffine is wrong")
	}
}

// TestExactBounds checks the checked interval arithmetic that front ends
// prove index arithmetic exact with: each intermediate value of the
// evaluation is bounded, where Bounds would wrap.
func TestExactBounds(t *testing.T) {
	i, j := NewVar("i", 4), NewVar("j", 16)
	I, J := VarIndex(i), VarIndex(j)
	rng := func(v *Var) (int, int) { return 0, v.Extent - 1 }
	const limit = 1 << 53
	tests := []struct {
		name   string
		x      Index
		lo, hi int
		ok     bool
	}{
		{"affine", I.Scale(3).Add(J).AddConst(-2), -2, 22, true},
		{"negative coefficient", I.Scale(-5).AddConst(1), -14, 1, true},
		{"div and mod", I.Add(J).Div(4).Add(J.Mod(3)), 0, 6, true},
		{"near 2^40", I.Scale(1 << 40).Add(J), 0, 3<<40 + 15, true},
		{"at the limit", I.Scale(1 << 51).AddConst(1 << 51), 1 << 51, 1 << 53, true},
		{"constant past the limit", I.AddConst(9223372036854775806), 0, 0, false},
		{"product past the limit", I.Scale(1 << 52), 0, 0, false},
		{"product that wraps int64", I.Scale(4611686018427387904), 0, 0, false},
		{"sum past the limit", I.Scale(1 << 51).Add(J.Scale(1 << 49)).AddConst(1 << 51), 0, 0, false},
		{"inside a mod", I.Scale(1 << 52).Mod(3), 0, 0, false},
		{"negative past the limit", I.Scale(-(1 << 52)), 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lo, hi, ok := tt.x.ExactBounds(rng, limit)
			if ok != tt.ok || ok && (lo != tt.lo || hi != tt.hi) {
				t.Errorf("ExactBounds(%s) = %d, %d, %v; want %d, %d, %v", tt.x, lo, hi, ok, tt.lo, tt.hi, tt.ok)
			}
			if ok {
				if blo, bhi := tt.x.Bounds(rng); blo != lo || bhi != hi {
					t.Errorf("ExactBounds(%s) = %d..%d, but Bounds = %d..%d", tt.x, lo, hi, blo, bhi)
				}
			}
		})
	}
}
