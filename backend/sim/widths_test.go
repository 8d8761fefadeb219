package sim

import (
	"math"
	"strings"
	"testing"

	"tec/backend/kir"
	"tec/te"
)

// gatherMod is y[i] = x[(i * mult) % n] over i in [0, n), the index
// arithmetic of the issue that found 32-bit overflow in the emitted code:
// for mult = 1500000001 and n = 3 the product passes 2^31 at i = 2.
func gatherMod(n int, mult float64) *kir.Module {
	x := &kir.Buffer{Name: "x", Role: kir.Input, DType: te.F32, Shape: []int{n}}
	y := &kir.Buffer{Name: "y", Role: kir.Output, DType: te.F32, Shape: []int{n}}
	i := kir.NewVar("i", te.I32)
	index := kir.Mod(kir.Mul(i, &kir.Const{Value: mult, T: te.I32}), kir.I(n))
	return &kir.Module{
		Name: "m", Buffers: []*kir.Buffer{x, y}, Outputs: []*kir.Buffer{y},
		Kernels: []*kir.Kernel{{
			Name: "y", Grid: kir.Grid{Blocks: 1}, Block: 32, Params: []*kir.Buffer{x, y},
			Body: []kir.Stmt{&kir.Stage{Name: "y", Body: []kir.Stmt{
				&kir.For{Var: i, Kind: kir.ThreadStride, Lo: kir.I(0), Hi: kir.I(n), Body: []kir.Stmt{
					&kir.Store{Buf: y, Index: i, Value: kir.Ld(x, index)},
				}},
			}}},
		}},
	}
}

// TestIndexWidths checks that the simulator evaluates index arithmetic at
// the emitters' widths: an i32 product past 2^31, which a 64-bit
// evaluation would carry to the right element and the GPU would wrap, is
// an error; after kir.Widen the same module computes it in i64 and reads
// the right elements.
func TestIndexWidths(t *testing.T) {
	x := &te.Array{DType: te.F32, Shape: []int{3}, Data: []float64{10, 20, 30}}
	inputs := map[string]*te.Array{"x": x}

	planted := gatherMod(3, 1500000001)
	_, err := Run(planted, inputs, Options{})
	const want = "i32 overflow: 2 * 1500000001 = 3000000002 does not fit the 32 bits in which the GPU computes it"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("planted overflow: err = %v, want one containing %q", err, want)
	}

	widened := gatherMod(3, 1500000001)
	kir.Widen(widened)
	out, err := Run(widened, inputs, Options{Race: true})
	if err != nil {
		t.Fatalf("widened: %v", err)
	}
	// (i * 1500000001) % 3 = (i * 1) % 3 = i, exactly.
	for i, v := range out.Outputs["y"].Data {
		if v != x.Data[i] {
			t.Errorf("widened: y[%d] = %v, want %v", i, v, x.Data[i])
		}
	}

	// A constant that does not fit 32 bits at all: the verifier refuses it
	// as i32, Widen makes it i64.
	big := gatherMod(3, 3000000001)
	if _, err := Run(big, inputs, Options{}); err == nil || !strings.Contains(err.Error(), "not a 32-bit integer") {
		t.Errorf("i32 constant 3000000001: err = %v, want the verifier's refusal", err)
	}
	kir.Widen(big)
	out, err = Run(big, inputs, Options{})
	if err != nil {
		t.Fatalf("widened 3000000001: %v", err)
	}
	// 3000000001 = 3·10^9 + 1, so (i * 3000000001) % 3 = i; wrapped to
	// 32 bits, the LLVM IR of the issue read x[1] for i = 2.
	for i, want := range []float64{10, 20, 30} {
		if got := out.Outputs["y"].Data[i]; got != want {
			t.Errorf("widened 3000000001: y[%d] = %v, want %v", i, got, want)
		}
	}
}

// TestNarrowingOverflow checks that i32 arithmetic that does not fit 32
// bits, and i64 arithmetic beyond the simulator's exact range, stop the
// simulation.
func TestNarrowingOverflow(t *testing.T) {
	tests := []struct {
		name string
		e    kir.Expr
		want string
	}{
		{"neg", &kir.Unary{Op: te.Neg, X: kir.I(-1 << 31)}, "neg gives 2147483648 does not fit"},
		{"sub", kir.Sub(kir.I(-1<<31), kir.I(1)), "-2147483648 - 1 = -2147483649 does not fit"},
		{"i64 beyond 2^53", kir.Mul(&kir.Const{Value: 1 << 40, T: te.I64}, &kir.Const{Value: 1 << 20, T: te.I64}), "beyond ±2^53"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			y := &kir.Buffer{Name: "y", Role: kir.Output, DType: te.I32, Shape: []int{1}}
			v := tt.e
			if v.Type() == te.I64 {
				v = &kir.Cast{To: te.I32, X: v}
			}
			m := &kir.Module{
				Name: "m", Buffers: []*kir.Buffer{y}, Outputs: []*kir.Buffer{y},
				Kernels: []*kir.Kernel{{
					Name: "y", Grid: kir.Grid{Blocks: 1}, Block: 1, Params: []*kir.Buffer{y},
					Body: []kir.Stmt{&kir.Store{Buf: y, Index: kir.I(0), Value: v}},
				}},
			}
			_, err := Run(m, nil, Options{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestNarrowingSaturates checks that an i64 value narrowed to i32
// saturates at the i32 limits, as the reference evaluator's store to an
// i32 tensor does, and that a cast to f32 converts the i64 value itself.
func TestNarrowingSaturates(t *testing.T) {
	tests := []struct {
		name string
		v    kir.Expr
		dt   te.DType
		want float64
	}{
		{"above", &kir.Cast{To: te.I32, X: &kir.Const{Value: 3000000001, T: te.I64}}, te.I32, math.MaxInt32},
		{"below", &kir.Cast{To: te.I32, X: &kir.Const{Value: -3000000001, T: te.I64}}, te.I32, math.MinInt32},
		{"within", &kir.Cast{To: te.I32, X: &kir.Const{Value: -7, T: te.I64}}, te.I32, -7},
		{"to f32", &kir.Cast{To: te.F32, X: &kir.Const{Value: 3000000001, T: te.I64}}, te.F32, float64(float32(3000000001))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			y := &kir.Buffer{Name: "y", Role: kir.Output, DType: tt.dt, Shape: []int{1}}
			m := &kir.Module{
				Name: "m", Buffers: []*kir.Buffer{y}, Outputs: []*kir.Buffer{y},
				Kernels: []*kir.Kernel{{
					Name: "y", Grid: kir.Grid{Blocks: 1}, Block: 1, Params: []*kir.Buffer{y},
					Body: []kir.Stmt{&kir.Store{Buf: y, Index: kir.I(0), Value: tt.v}},
				}},
			}
			out, err := Run(m, nil, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got := out.Outputs["y"].Data[0]; got != tt.want {
				t.Errorf("y = %v, want %v", got, tt.want)
			}
		})
	}
}
