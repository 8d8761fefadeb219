package te

import (
	"errors"
	"math"
	"path/filepath"
	"testing"

	"tec/internal/testkit/golden"
)

// printPrograms are the programs of the golden-file tests.
func printPrograms() map[string]*Program {
	softmax := func() *Program {
		p := softmaxCase().build()
		p.Name = "softmax"
		for i, t := range p.Tensors {
			t.Span = Span{File: "softmax.te", Line: 6 + i, Col: 3}
		}
		p.Tensors[1].Scope = []string{"layer[3]", "attention"}
		return p
	}

	// Every kind of node, name clashes between variables, dtypes.
	misc := func() *Program {
		b := newBuilder("misc")
		x := b.input("x", F16, 4, 6)
		w := b.param("w", I32, 6)
		s := b.compute("s", Bool, shp(4, 6), func(a []Index) Expr {
			return bin(Or, bin(Lt, ix(a[0]), ix(a[1].Scale(2).AddConst(-1))), un(Not, bin(Eq, ld(w, a[1]), ci(-3))))
		})
		c := b.compute("c", F16, shp(4, 6), func(a []Index) Expr {
			v := sel(ld(s, a[0], a[1]), ld(x, a[0], a[1]), cf(math.Inf(-1)))
			return &Cast{To: F16, X: bin(Max, mul(sub(v, cf(-1)), add(cf(2), cf(0.5))), un(Neg, un(Sqrt, v)))}
		})
		// An output axis and a reduction axis both named i.
		r := b.f32("r", shp(4), func(a []Index) Expr {
			inner := &Reduce{Op: Prod, Axes: []*Var{NewVar("i", 6)}}
			inner.Body = ld(c, a[0], VarIndex(inner.Axes[0]))
			return sub(div(cf(1), inner), bin(Pow, cf(2), ix(a[0])))
		})
		flat := b.f32("flat", shp(24), func(a []Index) Expr {
			f := a[0].AddConst(1)
			return mul(ld(x, f.Div(6).Mod(4), f.Mod(6)), &Cast{To: F32, X: bin(Mod, ix(a[0]), ci(5))})
		})
		sc := b.f32("scalar", nil, func([]Index) Expr {
			return red(Sum, []int{4, 6}, func(k []Index) Expr { return un(Abs, sub(ld(c, k[0], k[1]), cf(1e-7))) })
		})
		return b.outputs(r, flat, sc)
	}
	return map[string]*Program{
		"softmax":   softmax(),
		"conv":      convCase("conv", 1, 4, 8, 8, 4, 3, 3, 2, 1, 2, 2, 0).build(),
		"attention": attentionCase().build(),
		"misc":      misc(),
	}
}

func TestPrintGolden(t *testing.T) {
	for name, p := range printPrograms() {
		t.Run(name, func(t *testing.T) {
			golden.CheckString(t, filepath.Join("testdata", "print_"+name+".golden"), p.String())
		})
	}
}

func TestFormatExpr(t *testing.T) {
	x := &Tensor{Name: "x", Shape: []int{4, 8}}
	i, j := NewVar("i", 4), NewVar("i", 8)
	I, J := VarIndex(i), VarIndex(j)
	tests := []struct {
		e    Expr
		want string
	}{
		{add(mul(cf(1), cf(2)), cf(3)), "1.0 * 2.0 + 3.0"},
		{mul(add(cf(1), cf(2)), cf(3)), "(1.0 + 2.0) * 3.0"},
		{sub(cf(1), sub(cf(2), cf(3))), "1.0 - (2.0 - 3.0)"},
		{sub(sub(cf(1), cf(2)), cf(3)), "1.0 - 2.0 - 3.0"},
		{un(Neg, add(cf(1), ci(2))), "-(1.0 + 2)"},
		{mul(ix(I.AddConst(1)), ix(I)), "(i + 1) * i"},
		{ld(x, I, J.Scale(2).Div(3)), "x[i, (i_1*2 / 3)]"},
		{ld(x, I.Add(J).Mod(4), Const(0)), "x[((i + i_1) % 4), 0]"},
		{&Cast{To: I32, X: cf(2.5)}, "i32(2.5)"},
		{&ConstExpr{Value: 1, DType: Bool}, "true"},
		{&ConstExpr{Value: 0.5, DType: BF16}, "bf16(0.5)"},
		{cf(1e-20), "1e-20"},
		{cf(math.NaN()), "nan"},
		{sum1(8, func(k Index) Expr { return ld(x, Const(0), k) }), "sum(x[0, k], axis=[k:8])"},
	}
	for _, tt := range tests {
		if got := FormatExpr(tt.e); got != tt.want {
			t.Errorf("FormatExpr = %q, want %q", got, tt.want)
		}
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestFprintError(t *testing.T) {
	err := Fprint(failWriter{}, &Program{Name: "m"})
	if err == nil || err.Error() != `te: printing program "m": disk full` {
		t.Errorf("Fprint to a failing writer: %v", err)
	}
}
