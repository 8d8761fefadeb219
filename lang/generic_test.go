package lang

import (
	"math"
	"strings"
	"testing"

	"tec/te"
)

// TestStdlibGenericDTypes calls every tensor function of the standard library
// on f16 and bf16 tensors and checks that the result is stored in that dtype,
// that it is the f32 program's result rounded to it (arithmetic and
// statistics stay in f32), and, for the normalisations, that the statistics
// are f32 tensors. In each case's source, D stands for the dtype; inputs are
// filled with 1, 2, 3, ... as in TestEvaluate.
func TestStdlibGenericDTypes(t *testing.T) {
	tests := []struct {
		name  string
		decls string // placeholders
		body  string // statements defining y
		stats bool   // the function keeps f32 statistics besides y
	}{
		{"softmax", "input x: D[2, 3]", "y = softmax(x)", true},
		{"layernorm", "input x: D[2, 4]\nparam g: D[4]\nparam b: D[4]", "y = layernorm(x, g, b, 1e-5)", true},
		{"batchnorm2d", "input x: D[1, 2, 2, 2]\nparam mu: D[2]\nparam v: D[2]\nparam g: D[2]\nparam b: D[2]", "y = batchnorm2d(x, mu, v, g, b, 1e-5)", false},
		{"conv2d", "input x: D[1, 2, 4, 4]\nparam w: D[4, 1, 3, 3]", "y = conv2d(x, w, 1, 1, 1, 2)", false},
		{"conv2d_bias", "input x: D[1, 2, 4, 4]\nparam w: D[4, 1, 3, 3]\nparam b: D[4]", "y = conv2d_bias(x, w, b, 2, 1, 1, 2)", false},
		{"depthwise_conv2d", "input x: D[1, 2, 4, 4]\nparam w: D[2, 1, 3, 3]", "y = depthwise_conv2d(x, w, 1, 1)", false},
		{"max_pool2d", "input x: D[1, 2, 4, 4]", "y = max_pool2d(x, 3, 2, 1)", false},
		{"avg_pool2d", "input x: D[1, 2, 4, 4]", "y = avg_pool2d(x, 3, 1, 1)", false},
		{"global_avg_pool2d", "input x: D[1, 2, 3, 3]", "y = global_avg_pool2d(x)", false},
		{"transpose", "input x: D[2, 3]", "y = transpose(x)", false},
		{"permute3", "input x: D[2, 3, 4]", "y = permute3(x, 2, 0, 1)", false},
		{"permute4", "input x: D[1, 2, 3, 2]", "y = permute4(x, 3, 1, 0, 2)", false},
		{"ravel2", "input x: D[2, 3]", "y = ravel2(x)", false},
		{"ravel3", "input x: D[2, 3, 2]", "y = ravel3(x)", false},
		{"ravel4", "input x: D[1, 2, 3, 2]", "y = ravel4(x)", false},
		{"reshape2", "input x: D[6]", "y = reshape2(x, 3, 2)", false},
		{"reshape3", "input x: D[6]", "y = reshape3(x, 1, 2, 3)", false},
		{"reshape4", "input x: D[6]", "y = reshape4(x, 1, 2, 3, 1)", false},
		{"flatten", "input x: D[1, 2, 2, 2]", "y = flatten(x)", false},
		{"concat1", "input a: D[2]\ninput b: D[3]", "y = concat1(a, b)", false},
		{"concat2", "input a: D[2, 3]\ninput b: D[1, 3]", "y = concat2(a, b, 0)", false},
		{"concat3", "input a: D[1, 2, 2]\ninput b: D[1, 1, 2]", "y = concat3(a, b, 1)", false},
		{"concat4", "input a: D[1, 1, 1, 2]\ninput b: D[1, 1, 1, 3]", "y = concat4(a, b, 3)", false},
		{"slice1", "input x: D[5]", "y = slice1(x, 1, 4)", false},
		{"slice2", "input x: D[3, 4]", "y = slice2(x, 1, 1, 3)", false},
		{"slice3", "input x: D[2, 3, 4]", "y = slice3(x, 2, 0, 2)", false},
		{"slice4", "input x: D[1, 2, 3, 4]", "y = slice4(x, 1, 1, 2)", false},
		{"pad2d", "input x: D[1, 1, 2, 2]", "y = pad2d(x, 1)", false},
		{"take1", "param p: D[24]", "y, off = take1(p, 3, 4)", false},
		{"take2", "param p: D[24]", "y, off = take2(p, 2, 3, 4)", false},
		{"take3", "param p: D[24]", "y, off = take3(p, 1, 2, 2, 3)", false},
		{"take4", "param p: D[24]", "y, off = take4(p, 0, 1, 2, 3, 2)", false},
		// The activations are scalar functions: they take any float, and a
		// cast keeps the result in the input's dtype.
		{"relu", "input x: D[4]", "y = D(relu(x - 2.5))", false},
		{"gelu", "input x: D[4]", "y = D(gelu(x - 2.5))", false},
		{"sigmoid_fn", "input x: D[4]", "y = D(sigmoid_fn(x - 2.5))", false},
		{"swish", "input x: D[4]", "y = D(swish(x - 2.5))", false},
		{"square", "input x: D[4]", "y = D(square(x - 2.5))", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ref, _ := evalGeneric(t, tc.decls, tc.body, te.F32)
			for _, dt := range []te.DType{te.F16, te.BF16} {
				got, p := evalGeneric(t, tc.decls, tc.body, dt)
				if got.DType != dt {
					t.Fatalf("%s: y has dtype %s, want %s", dt, got.DType, dt)
				}
				checkStatistics(t, p, dt, tc.stats)
				ulp := math.Exp2(-10)
				if dt == te.BF16 {
					ulp = math.Exp2(-7)
				}
				for i, r := range ref.Data {
					want := te.Round(dt, r)
					if math.Abs(got.Data[i]-want) > ulp*math.Abs(want) {
						t.Errorf("%s: y[%d] = %v, want %v (f32 gives %v)", dt, i, got.Data[i], want, r)
					}
				}
			}
		})
	}
}

// evalGeneric checks a model of decls and body with the dtype variable D
// bound to dt, evaluates it with inputs 1, 2, 3, ..., and returns its output y.
func evalGeneric(t *testing.T, decls, body string, dt te.DType) (*te.Array, *te.Program) {
	t.Helper()
	src := strings.ReplaceAll("model m {\n"+decls+"\n"+body+"\noutput y\n}\n", "D", dt.String())
	p, ds := Check("m.te", []byte(src), Config{})
	if ds.HasErrors() {
		t.Fatalf("check failed:\n%s", render("m.te", []byte(src), ds))
	}
	feeds := map[string]*te.Array{}
	for _, ph := range p.Placeholders() {
		a := te.NewArray(ph.DType, ph.Shape)
		for i := range a.Data {
			a.Data[i] = float64(i + 1)
		}
		feeds[ph.Name] = a
	}
	out, err := te.Evaluate(p, feeds, te.EvalOptions{})
	if err != nil {
		t.Fatalf("evaluate: %v\n%s", err, p)
	}
	return out["y"], p
}

// checkStatistics checks the dtypes of a program's computed tensors: all dt,
// or, when stats is set, f32 statistics (at least one) and the output in dt.
func checkStatistics(t *testing.T, p *te.Program, dt te.DType, stats bool) {
	t.Helper()
	nstats := 0
	for _, x := range p.Tensors {
		if x.Kind != te.Compute || x == p.Outputs[0] {
			continue
		}
		switch {
		case stats && x.DType == te.F32:
			nstats++
		case !stats && x.DType == dt:
		default:
			t.Errorf("%s: tensor %s is %s\n%s", dt, x.Name, x.DType, p)
		}
	}
	if stats && nstats == 0 {
		t.Errorf("%s: no f32 statistics\n%s", dt, p)
	}
}
