package sign

import (
	"testing"

	"tec/backend/kir"
	"tec/te"
)

func TestNonNeg(t *testing.T) {
	i := kir.NewVar("i", te.I32)
	j := kir.NewVar("j", te.I32)
	acc := kir.NewVar("acc", te.I32)
	neg := kir.NewVar("n", te.I32)
	body := []kir.Stmt{
		&kir.Let{Var: acc, Value: kir.I(0)},
		&kir.Let{Var: neg, Value: kir.Sub(kir.I(0), kir.I(1))},
		&kir.For{Var: i, Kind: kir.ThreadStride, Lo: kir.I(0), Hi: kir.I(10), Body: []kir.Stmt{
			&kir.Let{Var: j, Value: kir.Mod(kir.Div(i, kir.I(4)), kir.I(3))},
			&kir.Assign{Var: acc, Value: kir.Add(acc, j)},
		}},
	}
	f := Analyze(body)
	for _, tc := range []struct {
		name string
		e    kir.Expr
		want bool
	}{
		{"const", kir.I(3), true},
		{"negative const", kir.I(-3), false},
		{"loop var", i, true},
		{"let of non-negative", j, true},
		{"assigned var", acc, false},
		{"difference", neg, false},
		{"i / 4", kir.Div(i, kir.I(4)), true},
		{"i / j", kir.Div(i, j), false},
		{"n % 4", kir.Mod(neg, kir.I(4)), true},
		{"n % j", kir.Mod(neg, j), false},
		{"tid*2+1", kir.Add(kir.Mul(kir.Tid(), kir.I(2)), kir.I(1)), true},
		{"max(n, i)", kir.Bin(te.Max, neg, i), true},
		{"min(n, i)", kir.Bin(te.Min, neg, i), false},
		{"f32", kir.F(1), false},
	} {
		if got := f.NonNeg(tc.e); got != tc.want {
			t.Errorf("NonNeg(%s) = %v, want %v", tc.name, got, tc.want)
		}
	}
	if !f.Truncating(i, kir.I(8)) || f.Truncating(neg, kir.I(8)) || f.Truncating(i, kir.I(0)) {
		t.Error("Truncating is wrong")
	}
}
