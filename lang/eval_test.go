package lang

import (
	"math"
	"testing"

	"tec/te"
)

// TestEvaluate lowers small programs and runs them with the reference
// evaluator. Every input is filled with 1, 2, 3, ... in row-major order
// (or 0, 1, 2, ... when its name starts with "z"); the expected values are
// worked out by hand.
func TestEvaluate(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want map[string][]float64
		// dtypes optionally gives the expected dtype of outputs.
		dtypes map[string]te.DType
	}{{
		name: "view",
		src: `model m {
  param W: f32[2, 3]
  w = W[1]
  output y = w * 2.0, v = W[0]
}`,
		want: map[string][]float64{"y": {8, 10, 12}, "v": {1, 2, 3}},
	}, {
		// Folding a cast of a number applies its rounding (issue 17, F7):
		// f16(0.3) = 0.300048828125, bf16(0.3) = 0.30078125.
		name: "cast of a number rounds",
		src: `const C = f16(0.3)
model m {
  input x: f32[2]
  y[i] = x[i] * 0.0 + (f16(0.3) + bf16(0.3))
  z = x * 0.0 + C + bf16(70000.5) - f16(1.0 / 3.0)
  output y, z
}`,
		want: map[string][]float64{
			"y": {0.300048828125 + 0.30078125, 0.300048828125 + 0.30078125},
			"z": {0.300048828125 + 70144 - 0.333251953125, 0.300048828125 + 70144 - 0.333251953125},
		},
	}, {
		name: "view in body",
		src: `model m {
  param W: f32[2, 2, 2]
  y[i, j] = W[1][i, j] + W[0, j, i]
  output y
}`,
		want: map[string][]float64{"y": {5 + 1, 6 + 3, 7 + 2, 8 + 4}},
	}, {
		name: "stack of a comprehension",
		src: `model m {
  input x: f32[2]
  ys = [x * float(t) for t in 0..3]
  output y = stack(ys)
}`,
		want: map[string][]float64{"y": {0, 0, 1, 2, 2, 4}},
	}, {
		name: "list element assignment in loops",
		src: `model m {
  input x: f32[2]
  h = [zeros(f32[2]) for l in 0..2]
  for t in 0..3 {
    h[1] = h[1] + x
  }
  h = h + [ones(f32[2]), full(f32[2], 0.5)]
  output y = h[1] + h[0] + h[2] + h[len(h) - 1]
}`,
		want: map[string][]float64{"y": {3 + 1.5, 6 + 1.5}},
	}, {
		name: "select padding",
		src: `const N = 6
model m {
  input x: f32[N]
  p[i] = select(i >= 1 && i < N + 1, x[i - 1], 0.0) where i in 0..N+2
  output p
}`,
		want: map[string][]float64{"p": {0, 1, 2, 3, 4, 5, 6, 0}},
	}, {
		name: "select else branch and shifted guard",
		src: `model m {
  input a: f32[3]
  input b: f32[2]
  y[i] = select(i < 3, a[i], b[i - 3]) where i in 0..5
  z[i] = select(2 * i + 1 < 5, a[2 * i], 0.0) where i in 0..3
  output y, z
}`,
		want: map[string][]float64{"y": {1, 2, 3, 1, 2}, "z": {1, 3, 0}},
	}, {
		name: "div and mod reshape",
		src: `model m {
  input z: f32[6]
  y[i, j] = z[i * 3 + j] where i in 0..2, j in 0..3
  t[j, i] = y[i, j]
  f[k] = t[k / 2, k % 2] where k in 0..6
  output y, f
}`,
		want: map[string][]float64{"y": {0, 1, 2, 3, 4, 5}, "f": {0, 3, 1, 4, 2, 5}},
	}, {
		name: "scalar function on whole tensors and in bodies",
		src: `fn sq(v) = v * v
fn affine1(v, a, b) = a * v + b
model m {
  input x: f32[3]
  y = sq(x) + 1.0
  z[i] = affine1(x[i], 2.0, sq(3.0))
  r = relu(x - 2.0)
  output y, z, r
}`,
		want: map[string][]float64{"y": {2, 5, 10}, "z": {11, 13, 15}, "r": {0, 0, 1}},
	}, {
		name: "dtypes and casts",
		src: `model m {
  input x: f32[3]
  n[i] = i32(x[i] * 2.5 - 4.0)
  h[i] = f16(x[i] / 3.0)
  b[i] = x[i] > 1.5
  c[i] = select(b[i], 1, 0)
  output n, h, b, c
}`,
		want:   map[string][]float64{"n": {-1, 1, 3}, "h": {0.333251953125, 0.66650390625, 1}, "b": {0, 1, 1}, "c": {0, 1, 1}},
		dtypes: map[string]te.DType{"n": te.I32, "h": te.F16, "b": te.Bool, "c": te.I32},
	}, {
		// A body that is a half-precision cast of a number stores that
		// dtype like any cast body; f16(0.3) + bf16(0.3) is arithmetic, f32.
		name: "cast of a number as a body",
		src: `model m {
  input x: f32[2]
  h[i] = f16(0.3) where i in 0..2
  b[i] = bf16(0.3) where i in 0..2
  s[i] = f16(0.3) + bf16(0.3) where i in 0..2
  output h, b, s
}`,
		want: map[string][]float64{
			"h": {0.300048828125, 0.300048828125},
			"b": {0.30078125, 0.30078125},
			"s": {0.300048828125 + 0.30078125, 0.300048828125 + 0.30078125},
		},
		dtypes: map[string]te.DType{"h": te.F16, "b": te.BF16, "s": te.F32},
	}, {
		name: "int arithmetic",
		src: `const A = -7 / 2
const B = -7 % 2
model m {
  input x: f32[5]
  q[i] = (i - 3) / 2 where i in 0..5
  r[i] = (i - 3) % 2 where i in 0..5
  s[i] = x[i] * A + B
  output q, r, s
}`,
		want: map[string][]float64{"q": {-2, -1, -1, 0, 0}, "r": {1, 0, 1, 0, 1}, "s": {-3, -7, -11, -15, -19}},
	}, {
		name: "rank-0 tensors and reductions",
		src: `model m {
  input x: f32[4]
  s = sum[i](x[i])
  m = max[i](x[i]) where i in 0..4
  y[i] = x[i] / s + m
  z = x - s
  output y, z, s
}`,
		want: map[string][]float64{"y": {4.1, 4.2, 4.3, 4.4}, "z": {-9, -8, -7, -6}, "s": {10}},
	}, {
		name: "functions with tuples and numbers",
		src: `fn split(x: f32[N], k: float) -> (f32[N], f32[N]) {
  a[i] = x[i] * k
  b[i] = x[i] + k
  return a, b
}
fn count(xs) = 0
model m {
  input x: f32[2]
  p, q = split(x, 2)
  for l in 0..2 {
    p, q = split(p, float(l))
  }
  output p, q
}`,
		want: map[string][]float64{"p": {0, 0}, "q": {1, 1}},
	}, {
		name: "stdlib",
		src: `model m {
  input x: f32[2, 3]
  param w: f32[3, 2]
  param b: f32[2]
  y = linear(x, w, b)
  t = transpose(x)
  c = concat2(x, x, 0)
  output y, t, c
}`,
		want: map[string][]float64{
			"y": {1*1 + 2*3 + 3*5 + 1, 1*2 + 2*4 + 3*6 + 2, 4*1 + 5*3 + 6*5 + 1, 4*2 + 5*4 + 6*6 + 2},
			"t": {1, 4, 2, 5, 3, 6},
			"c": {1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6},
		},
	}, {
		name: "sin and cos",
		src: `const HALF_PI = 1.5707963267948966
const C = cos(HALF_PI * 2.0) + sin(HALF_PI)
model m {
  input z: f32[3]
  y[i] = sin(z[i]) + cos(f32(i) * HALF_PI) * C
  output y
}`,
		want: map[string][]float64{"y": {math.Sin(0) + 0, math.Sin(1) + math.Cos(math.Pi/2)*0, math.Sin(2) + math.Cos(math.Pi)*0}},
	}, {
		name: "inf as the identity of max and min",
		src: `const LOW = -inf
model m {
  input x: f32[2, 3]
  a[i] = max[j](select(j >= 1, x[i, j], -inf))
  b[i] = min[j](select(j < 2, x[i, j], inf))
  c[i] = max[j](select(j > 5, x[i, j], LOW)) + max(LOW, 1.0)
  output a, b, c
}`,
		want: map[string][]float64{"a": {3, 6}, "b": {1, 4}, "c": {math.Inf(-1), math.Inf(-1)}},
	}, {
		name: "** is pow",
		src: `const A = 2 ** 10
const B = 2 ** -1
const C = -2 ** 2 + 2 ** 3 ** 2
model m {
  input x: f32[3]
  y[i] = x[i] ** 2 + 2.0 ** f32(i) * f32(A) * B + f32(C)
  z = -x ** 3
  output y, z
}`,
		want: map[string][]float64{"y": {1 + 1*512 + 508, 4 + 2*512 + 508, 9 + 4*512 + 508}, "z": {-1, -8, -27}},
	}, {
		// The generic standard library keeps the argument's dtype: f16 in,
		// f16 stored; bf16 in, bf16 stored; f32 in, f32 (no cast).
		name: "stdlib generic over the float dtype",
		src: `model m {
  input x: f16[2, 3]
  param w: f16[3, 2]
  param b: f16[2]
  input xb: bf16[2, 3]
  param wt: bf16[2, 3]
  param bt: bf16[2]
  input xf: f32[2, 3]
  param wf: f32[2, 3]
  param bf: f32[2]
  y = linear(x, w, b)
  z = linear_t(xb, wt, bt)
  u = linear_t(xf, wf, bf)
  v = matmul(x, w)
  output y, z, u, v
}`,
		want: map[string][]float64{
			"y": {23, 30, 50, 66}, "z": {15, 34, 33, 79}, "u": {15, 34, 33, 79}, "v": {22, 28, 49, 64},
		},
		dtypes: map[string]te.DType{"y": te.F16, "z": te.BF16, "u": te.F32, "v": te.F16},
	}, {
		// Index products past 2^31 are exact (issue 23): the proof admits
		// every value within ±2^53. x = 1, 2, 3; i·1500000001 and
		// i·3000000001 are i modulo 3, and i·(2^40 + 1) + 5 is i + 1
		// modulo 4.
		name: "index products past 2^31",
		src: `model m {
  input x: f32[3]
  input w: f32[4]
  y[i] = x[(i * 1500000001) % 3] + 10.0 * x[(i * 3000000001) % 3] where i in 0..3
  z[i] = w[(i * 1099511627777 + 5) % 4] where i in 0..4
  output y, z
}`,
		want: map[string][]float64{"y": {11, 22, 33}, "z": {2, 3, 4, 1}},
	}, {
		// i32 of a float truncates, saturates and reads NaN as 0, at run
		// time (te.Round) and folded alike (docs/language.md).
		name: "i32 saturates",
		src: `model m {
  input x: f32[4]
  y[i] = f32(i32(select(i == 0, x[i] * inf, select(i == 1, -x[i] * inf, select(i == 2, x[i] * 1e10, x[i] * inf - x[i] * inf)))))
  z[i] = x[i] * 0.0 + f32(i32(-inf)) + f32(i32(1e10)) + f32(i32(-2.7)) where i in 0..1
  output y, z
}`,
		want: map[string][]float64{"y": {2147483647, -2147483648, 2147483647, 0}, "z": {-2147483648 + 2147483647 - 2}},
	}, {
		name: "outputs of placeholders",
		src: `model m {
  input x: f32[2]
  output x, y = x
}`,
		want: map[string][]float64{"x": {1, 2}, "y": {1, 2}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, ds := Check("m.te", []byte(tc.src), Config{})
			if ds.HasErrors() {
				t.Fatalf("check failed:\n%s", render("m.te", []byte(tc.src), ds))
			}
			feeds := map[string]*te.Array{}
			for _, ph := range p.Placeholders() {
				a := te.NewArray(ph.DType, ph.Shape)
				for i := range a.Data {
					a.Data[i] = float64(i + 1)
					if ph.Name[0] == 'z' {
						a.Data[i] = float64(i)
					}
				}
				feeds[ph.Name] = a
			}
			out, err := te.Evaluate(p, feeds, te.EvalOptions{})
			if err != nil {
				t.Fatalf("evaluate: %v\n%s", err, p)
			}
			for name, want := range tc.want {
				got, ok := out[name]
				if !ok {
					t.Errorf("no output %s; program:\n%s", name, p)
					continue
				}
				if dt, ok := tc.dtypes[name]; ok && got.DType != dt {
					t.Errorf("%s has dtype %s, want %s", name, got.DType, dt)
				}
				if len(got.Data) != len(want) {
					t.Errorf("%s = %v, want %v", name, got.Data, want)
					continue
				}
				for i := range want {
					if math.IsInf(want[i], 0) && got.Data[i] != want[i] || math.Abs(got.Data[i]-want[i]) > 1e-9*math.Max(1, math.Abs(want[i])) {
						t.Errorf("%s = %v, want %v\n%s", name, got.Data, want, p)
						break
					}
				}
			}
		})
	}
}
