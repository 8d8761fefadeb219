package stdlib_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"tec/lang"
	"tec/te"
)

// The numeric tests of the standard library: small programs that call each
// function are lowered with lang.Check, run with te.Evaluate on random data,
// and compared with independent loops written in Go.

// tol is the tolerance of a comparison, relative to 1 + |want|. The evaluator
// and the Go references both compute in float64, so only the order of
// operations differs.
const tol = 1e-9

// arr is a dense row-major array for the Go references.
type arr struct {
	shape []int
	data  []float64
}

func newArr(shape ...int) *arr {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return &arr{shape: shape, data: make([]float64, n)}
}

func fromTE(a *te.Array) *arr { return &arr{shape: a.Shape, data: a.Data} }

// off returns the flat offset of idx.
func (a *arr) off(idx ...int) int {
	if len(idx) != len(a.shape) {
		panic(fmt.Sprintf("rank %d index into rank %d array", len(idx), len(a.shape)))
	}
	o := 0
	for d, i := range idx {
		if i < 0 || i >= a.shape[d] {
			panic(fmt.Sprintf("index %v out of bounds of %v", idx, a.shape))
		}
		o = o*a.shape[d] + i
	}
	return o
}

func (a *arr) at(idx ...int) float64     { return a.data[a.off(idx...)] }
func (a *arr) set(v float64, idx ...int) { a.data[a.off(idx...)] = v }

// each calls f with every index of shape, in row-major order.
func each(shape []int, f func(idx []int)) {
	idx := make([]int, len(shape))
	n := 1
	for _, d := range shape {
		n *= d
	}
	for k := 0; k < n; k++ {
		r := k
		for d := len(shape) - 1; d >= 0; d-- {
			idx[d] = r % shape[d]
			r /= shape[d]
		}
		f(idx)
	}
}

// mapArr returns an array of shape whose element at idx is f(idx).
func mapArr(shape []int, f func(idx []int) float64) *arr {
	out := newArr(shape...)
	k := 0
	each(shape, func(idx []int) {
		out.data[k] = f(idx)
		k++
	})
	return out
}

// feed makes random inputs for every placeholder of p: uniform in [-1, 1),
// except placeholders whose name ends in "var" (variances), uniform in
// [0.5, 1.5).
func feed(p *te.Program, seed uint64) map[string]*te.Array {
	rng := rand.New(rand.NewPCG(seed, 7))
	feeds := map[string]*te.Array{}
	for _, t := range p.Placeholders() {
		a := te.NewArray(t.DType, t.Shape)
		for i := range a.Data {
			if strings.HasSuffix(t.Name, "var") {
				a.Data[i] = 0.5 + rng.Float64()
			} else {
				a.Data[i] = 2*rng.Float64() - 1
			}
		}
		feeds[t.Name] = a
	}
	return feeds
}

// run checks and lowers src and evaluates it on random inputs. It returns the
// inputs and the outputs, both as arrs by name.
func run(t *testing.T, src string) (in, out map[string]*arr) {
	t.Helper()
	p, diags := lang.Check("test.te", []byte(src), lang.Config{})
	if diags.HasErrors() {
		t.Fatalf("lang.Check:\n%v", diags.Error())
	}
	feeds := feed(p, 1)
	res, err := te.Evaluate(p, feeds, te.EvalOptions{})
	if err != nil {
		t.Fatalf("te.Evaluate: %v", err)
	}
	in, out = map[string]*arr{}, map[string]*arr{}
	for k, v := range feeds {
		in[k] = fromTE(v)
	}
	for k, v := range res {
		out[k] = fromTE(v)
	}
	return in, out
}

// compare reports elements of got that differ from want.
func compare(t *testing.T, name string, got, want *arr) {
	t.Helper()
	if got == nil {
		t.Errorf("%s: no output", name)
		return
	}
	if fmt.Sprint(got.shape) != fmt.Sprint(want.shape) {
		t.Errorf("%s: shape %v, want %v", name, got.shape, want.shape)
		return
	}
	bad := 0
	k := 0
	each(want.shape, func(idx []int) {
		g, w := got.data[k], want.data[k]
		if !(math.Abs(g-w) <= tol*(1+math.Abs(w))) {
			if bad < 5 {
				t.Errorf("%s%v = %.12g, want %.12g", name, idx, g, w)
			}
			bad++
		}
		k++
	})
	if bad > 5 {
		t.Errorf("%s: %d of %d elements differ", name, bad, len(want.data))
	}
}

// convRef is a direct 2-D convolution: x [N, C, H, W], w [O, C/groups, KH, KW].
func convRef(x, w *arr, stride, pad, dil, groups int) *arr {
	n, c, h, wd := x.shape[0], x.shape[1], x.shape[2], x.shape[3]
	o, cg, kh, kw := w.shape[0], w.shape[1], w.shape[2], w.shape[3]
	if cg*groups != c {
		panic("convRef: bad groups")
	}
	oh := (h+2*pad-dil*(kh-1)-1)/stride + 1
	ow := (wd+2*pad-dil*(kw-1)-1)/stride + 1
	og := o / groups
	return mapArr([]int{n, o, oh, ow}, func(i []int) float64 {
		s := 0.0
		for ci := 0; ci < cg; ci++ {
			for a := 0; a < kh; a++ {
				for b := 0; b < kw; b++ {
					y := i[2]*stride + a*dil - pad
					z := i[3]*stride + b*dil - pad
					if y < 0 || y >= h || z < 0 || z >= wd {
						continue
					}
					s += x.at(i[0], i[1]/og*cg+ci, y, z) * w.at(i[1], ci, a, b)
				}
			}
		}
		return s
	})
}

// poolRef is a k×k pooling with PyTorch's semantics: max ignores padding, avg
// counts it as zeros.
func poolRef(x *arr, k, stride, pad int, isMax bool) *arr {
	n, c, h, wd := x.shape[0], x.shape[1], x.shape[2], x.shape[3]
	oh := (h+2*pad-k)/stride + 1
	ow := (wd+2*pad-k)/stride + 1
	return mapArr([]int{n, c, oh, ow}, func(i []int) float64 {
		m, s := math.Inf(-1), 0.0
		for a := 0; a < k; a++ {
			for b := 0; b < k; b++ {
				y := i[2]*stride + a - pad
				z := i[3]*stride + b - pad
				if y < 0 || y >= h || z < 0 || z >= wd {
					continue
				}
				m = math.Max(m, x.at(i[0], i[1], y, z))
				s += x.at(i[0], i[1], y, z)
			}
		}
		if isMax {
			return m
		}
		return s / float64(k*k)
	})
}

// matmulRef multiplies a [M, K] by b [K, N].
func matmulRef(a, b *arr) *arr {
	return mapArr([]int{a.shape[0], b.shape[1]}, func(i []int) float64 {
		s := 0.0
		for k := 0; k < a.shape[1]; k++ {
			s += a.at(i[0], k) * b.at(k, i[1])
		}
		return s
	})
}

// permuteRef is x.permute(perm...).
func permuteRef(x *arr, perm ...int) *arr {
	shape := make([]int, len(perm))
	for d, p := range perm {
		shape[d] = x.shape[p]
	}
	src := make([]int, len(perm))
	return mapArr(shape, func(i []int) float64 {
		for d, p := range perm {
			src[p] = i[d]
		}
		return x.at(src...)
	})
}

// concatRef joins a and b along axis.
func concatRef(a, b *arr, axis int) *arr {
	shape := append([]int(nil), a.shape...)
	shape[axis] += b.shape[axis]
	return mapArr(shape, func(i []int) float64 {
		if i[axis] < a.shape[axis] {
			return a.at(i...)
		}
		j := append([]int(nil), i...)
		j[axis] -= a.shape[axis]
		return b.at(j...)
	})
}

// sliceRef takes start..stop along axis.
func sliceRef(x *arr, axis, start, stop int) *arr {
	shape := append([]int(nil), x.shape...)
	shape[axis] = stop - start
	return mapArr(shape, func(i []int) float64 {
		j := append([]int(nil), i...)
		j[axis] += start
		return x.at(j...)
	})
}

// reshapeRef gives x's elements, in row-major order, a new shape.
func reshapeRef(x *arr, shape ...int) *arr {
	out := newArr(shape...)
	if len(out.data) != len(x.data) {
		panic("reshapeRef: sizes differ")
	}
	copy(out.data, x.data)
	return out
}

func gelu(v float64) float64 {
	return 0.5 * v * (1 + math.Tanh(0.7978845608*(v+0.044715*v*v*v)))
}

func sigmoid(v float64) float64 { return 1 / (1 + math.Exp(-v)) }

// unary applies f to every element of x.
func unary(x *arr, f func(float64) float64) *arr {
	out := newArr(x.shape...)
	for i, v := range x.data {
		out.data[i] = f(v)
	}
	return out
}

// A numeric test: a program and the expected value of each of its outputs.
type numericTest struct {
	name string
	src  string
	want func(in map[string]*arr) map[string]*arr
}

var numericTests = []numericTest{
	{
		name: "linear",
		src: `model m {
  input x: f32[3, 4]
  param w: f32[4, 5]
  param b: f32[5]
  output y = linear(x, w, b)
}`,
		want: func(in map[string]*arr) map[string]*arr {
			mm := matmulRef(in["x"], in["w"])
			return map[string]*arr{"y": mapArr(mm.shape, func(i []int) float64 { return mm.at(i...) + in["b"].at(i[1]) })}
		},
	},
	{
		name: "matmul",
		src: `model m {
  input a: f32[2, 7]
  input b: f32[7, 3]
  output y = matmul(a, b)
}`,
		want: func(in map[string]*arr) map[string]*arr {
			return map[string]*arr{"y": matmulRef(in["a"], in["b"])}
		},
	},
	{
		name: "batch_matmul",
		src: `model m {
  input a: f32[3, 2, 5]
  input b: f32[3, 5, 4]
  output y = batch_matmul(a, b)
}`,
		want: func(in map[string]*arr) map[string]*arr {
			a, b := in["a"], in["b"]
			return map[string]*arr{"y": mapArr([]int{3, 2, 4}, func(i []int) float64 {
				s := 0.0
				for k := 0; k < 5; k++ {
					s += a.at(i[0], i[1], k) * b.at(i[0], k, i[2])
				}
				return s
			})}
		},
	},
	{
		name: "conv1d",
		src: `model m {
  input x: f32[2, 4, 9]
  param w: f32[6, 2, 3]
  param w1: f32[3, 4, 1]
  output y = conv1d(x, w, 2, 2, 2, 2)    # stride 2, pad 2, dilation 2, 2 groups
  output y1 = conv1d(x, w1, 1, 0, 1, 1)  # a pointwise convolution
}`,
		want: func(in map[string]*arr) map[string]*arr {
			x := in["x"]
			ref := func(w *arr, stride, pad, dil, groups int) *arr {
				c, l := x.shape[1], x.shape[2]
				o, cg, k := w.shape[0], w.shape[1], w.shape[2]
				ol := (l+2*pad-dil*(k-1)-1)/stride + 1
				og := o / groups
				if cg*groups != c {
					panic("conv1d reference: bad groups")
				}
				return mapArr([]int{x.shape[0], o, ol}, func(i []int) float64 {
					s := 0.0
					for ci := 0; ci < cg; ci++ {
						for a := 0; a < k; a++ {
							if p := i[2]*stride + a*dil - pad; p >= 0 && p < l {
								s += x.at(i[0], i[1]/og*cg+ci, p) * w.at(i[1], ci, a)
							}
						}
					}
					return s
				})
			}
			return map[string]*arr{"y": ref(in["w"], 2, 2, 2, 2), "y1": ref(in["w1"], 1, 0, 1, 1)}
		},
	},
	{
		name: "conv2d_variants",
		src: `model m {
  input x: f32[2, 4, 9, 8]
  param wg: f32[6, 2, 3, 3]
  param w1: f32[5, 4, 3, 2]
  param w4: f32[8, 1, 3, 3]
  param b: f32[5]
  output grouped = conv2d(x, wg, 2, 1, 2, 2)  # stride 2, pad 1, dilation 2, groups 2
  output plain = conv2d(x, w1, 1, 0, 1, 1)
  output strided = conv2d_bias(x, w1, b, 3, 2, 1, 1)
  output dw = conv2d(x, w4, 1, 1, 1, 4)       # 2 filters per channel
}`,
		want: func(in map[string]*arr) map[string]*arr {
			x := in["x"]
			strided := convRef(x, in["w1"], 3, 2, 1, 1)
			strided = mapArr(strided.shape, func(i []int) float64 { return strided.at(i...) + in["b"].at(i[1]) })
			return map[string]*arr{
				"grouped": convRef(x, in["wg"], 2, 1, 2, 2),
				"plain":   convRef(x, in["w1"], 1, 0, 1, 1),
				"strided": strided,
				"dw":      convRef(x, in["w4"], 1, 1, 1, 4),
			}
		},
	},
	{
		name: "depthwise_conv2d",
		src: `model m {
  input x: f32[2, 3, 9, 8]
  param w3: f32[3, 1, 3, 3]
  param w5: f32[3, 1, 5, 5]
  output a = depthwise_conv2d(x, w3, 2, 1)
  output b = depthwise_conv2d(x, w5, 1, 2)
}`,
		want: func(in map[string]*arr) map[string]*arr {
			return map[string]*arr{
				"a": convRef(in["x"], in["w3"], 2, 1, 1, 3),
				"b": convRef(in["x"], in["w5"], 1, 2, 1, 3),
			}
		},
	},
	{
		name: "pooling",
		src: `model m {
  input x: f32[2, 3, 9, 8]
  output mx = max_pool2d(x, 3, 2, 1)
  output mx0 = max_pool2d(x, 2, 2, 0)
  output av = avg_pool2d(x, 3, 2, 1)
  output av0 = avg_pool2d(x, 3, 1, 0)
  output g = global_avg_pool2d(x)
}`,
		want: func(in map[string]*arr) map[string]*arr {
			x := in["x"]
			return map[string]*arr{
				"mx":  poolRef(x, 3, 2, 1, true),
				"mx0": poolRef(x, 2, 2, 0, true),
				"av":  poolRef(x, 3, 2, 1, false),
				"av0": poolRef(x, 3, 1, 0, false),
				"g": mapArr([]int{2, 3}, func(i []int) float64 {
					s := 0.0
					for h := 0; h < 9; h++ {
						for w := 0; w < 8; w++ {
							s += x.at(i[0], i[1], h, w)
						}
					}
					return s / 72
				}),
			}
		},
	},
	{
		name: "softmax",
		src: `model m {
  input x: f32[3, 6]
  output y = softmax(x * 100)    # large logits: exp would overflow without the max
}`,
		want: func(in map[string]*arr) map[string]*arr {
			x := in["x"]
			return map[string]*arr{"y": mapArr(x.shape, func(i []int) float64 {
				m := math.Inf(-1)
				for j := 0; j < 6; j++ {
					m = math.Max(m, 100*x.at(i[0], j))
				}
				s := 0.0
				for j := 0; j < 6; j++ {
					s += math.Exp(100*x.at(i[0], j) - m)
				}
				return math.Exp(100*x.at(i[0], i[1])-m) / s
			})}
		},
	},
	{
		name: "layernorm",
		src: `model m {
  input x: f32[3, 8]
  param g: f32[8]
  param b: f32[8]
  output y = layernorm(x + 1000, g, b, 1e-5)   # a large mean: one-pass variance would cancel
}`,
		want: func(in map[string]*arr) map[string]*arr {
			x, g, b := in["x"], in["g"], in["b"]
			return map[string]*arr{"y": mapArr(x.shape, func(i []int) float64 {
				mu := 0.0
				for j := 0; j < 8; j++ {
					mu += x.at(i[0], j) + 1000
				}
				mu /= 8
				v := 0.0
				for j := 0; j < 8; j++ {
					d := x.at(i[0], j) + 1000 - mu
					v += d * d
				}
				v /= 8
				return (x.at(i...)+1000-mu)/math.Sqrt(v+1e-5)*g.at(i[1]) + b.at(i[1])
			})}
		},
	},
	{
		name: "log_softmax",
		src: `model m {
  input x: f32[3, 6]
  output y = log_softmax(x * 1000)   # log(softmax) would be log(0) = -inf
}`,
		want: func(in map[string]*arr) map[string]*arr {
			x := in["x"]
			return map[string]*arr{"y": mapArr(x.shape, func(i []int) float64 {
				m := math.Inf(-1)
				for j := 0; j < 6; j++ {
					m = math.Max(m, 1000*x.at(i[0], j))
				}
				s := 0.0
				for j := 0; j < 6; j++ {
					s += math.Exp(1000*x.at(i[0], j) - m)
				}
				return 1000*x.at(i...) - m - math.Log(s)
			})}
		},
	},
	{
		name: "rmsnorm",
		src: `model m {
  input x: f32[3, 8]
  param g: f32[8]
  output y = rmsnorm(x, g, 1e-6)
}`,
		want: func(in map[string]*arr) map[string]*arr {
			x, g := in["x"], in["g"]
			return map[string]*arr{"y": mapArr(x.shape, func(i []int) float64 {
				ms := 0.0
				for j := 0; j < 8; j++ {
					ms += x.at(i[0], j) * x.at(i[0], j)
				}
				return x.at(i...) / math.Sqrt(ms/8+1e-6) * g.at(i[1])
			})}
		},
	},
	{
		name: "group_norm",
		src: `model m {
  input x: f32[2, 6, 3, 4]
  param g: f32[6]
  param b: f32[6]
  output y = group_norm(x + 100, g, b, 3, 1e-5)   # a large mean: one-pass variance would cancel
  output y1 = group_norm(x, g, b, 1, 1e-5)       # one group: layer norm over C, H, W
}`,
		want: func(in map[string]*arr) map[string]*arr {
			x, g, b := in["x"], in["g"], in["b"]
			ref := func(groups int, shift float64) *arr {
				cg := 6 / groups
				return mapArr(x.shape, func(i []int) float64 {
					k := i[1] / cg
					var vals []float64
					for c := k * cg; c < (k+1)*cg; c++ {
						for h := 0; h < 3; h++ {
							for w := 0; w < 4; w++ {
								vals = append(vals, x.at(i[0], c, h, w)+shift)
							}
						}
					}
					mu, v := 0.0, 0.0
					for _, e := range vals {
						mu += e
					}
					mu /= float64(len(vals))
					for _, e := range vals {
						v += (e - mu) * (e - mu)
					}
					v /= float64(len(vals))
					return (x.at(i...)+shift-mu)/math.Sqrt(v+1e-5)*g.at(i[1]) + b.at(i[1])
				})
			}
			return map[string]*arr{"y": ref(3, 100), "y1": ref(1, 0)}
		},
	},
	{
		name: "batchnorm2d",
		src: `model m {
  input x: f32[2, 3, 4, 5]
  param mean: f32[3]
  param var: f32[3]
  param g: f32[3]
  param b: f32[3]
  output y = batchnorm2d(x, mean, var, g, b, 1e-5)
}`,
		want: func(in map[string]*arr) map[string]*arr {
			x := in["x"]
			return map[string]*arr{"y": mapArr(x.shape, func(i []int) float64 {
				c := i[1]
				return (x.at(i...)-in["mean"].at(c))/math.Sqrt(in["var"].at(c)+1e-5)*in["g"].at(c) + in["b"].at(c)
			})}
		},
	},
	{
		name: "activations",
		src: `model m {
  input x: f32[4, 5]
  output r = relu(x)
  output ge = gelu(x * 3)
  output sg = sigmoid_fn(x * 3)
  output sw = swish(x * 3)
  output sq = square(x)
  inner[i, j] = relu(x[i, j]) + swish(x[i, j])
  output inner
}`,
		want: func(in map[string]*arr) map[string]*arr {
			x := in["x"]
			x3 := unary(x, func(v float64) float64 { return 3 * v })
			relu := func(v float64) float64 { return math.Max(v, 0) }
			swish := func(v float64) float64 { return v * sigmoid(v) }
			return map[string]*arr{
				"r":     unary(x, relu),
				"ge":    unary(x3, gelu),
				"sg":    unary(x3, sigmoid),
				"sw":    unary(x3, swish),
				"sq":    unary(x, func(v float64) float64 { return v * v }),
				"inner": unary(x, func(v float64) float64 { return relu(v) + swish(v) }),
			}
		},
	},
	{
		// softplus at ±40 too: log(1 + exp(40)) written directly would
		// lose nothing in float64, but exp(v) overflows f32 from 89 on.
		name: "silu and softplus",
		src: `model m {
  input x: f32[4, 5]
  output si = silu(x * 3)
  output sp = softplus(x * 40)
  output sp1 = softplus(x)
  inner[i] = silu(sum[j](x[i, j]))
  output inner
}`,
		want: func(in map[string]*arr) map[string]*arr {
			x := in["x"]
			softplus := func(v float64) float64 { return math.Log1p(math.Exp(v)) }
			silu := func(v float64) float64 { return v / (1 + math.Exp(-v)) }
			return map[string]*arr{
				"si":  unary(x, func(v float64) float64 { return silu(3 * v) }),
				"sp":  unary(x, func(v float64) float64 { return softplus(40 * v) }),
				"sp1": unary(x, softplus),
				"inner": mapArr([]int{4}, func(i []int) float64 {
					s := 0.0
					for j := 0; j < 5; j++ {
						s += x.at(i[0], j)
					}
					return silu(s)
				}),
			}
		},
	},
	{
		name: "transpose_permute",
		src: `model m {
  input x2: f32[3, 5]
  input x3: f32[2, 3, 4]
  input x4: f32[2, 3, 4, 5]
  output t = transpose(x2)
  output p3 = permute3(x3, 2, 0, 1)
  output p3b = permute3(x3, 0, 2, 1)
  output p4 = permute4(x4, 0, 2, 3, 1)
  output p4b = permute4(x4, 3, 1, 0, 2)
}`,
		want: func(in map[string]*arr) map[string]*arr {
			return map[string]*arr{
				"t":   permuteRef(in["x2"], 1, 0),
				"p3":  permuteRef(in["x3"], 2, 0, 1),
				"p3b": permuteRef(in["x3"], 0, 2, 1),
				"p4":  permuteRef(in["x4"], 0, 2, 3, 1),
				"p4b": permuteRef(in["x4"], 3, 1, 0, 2),
			}
		},
	},
	{
		name: "reshape",
		src: `model m {
  input x2: f32[6, 4]
  input x3: f32[2, 3, 4]
  input x4: f32[2, 3, 2, 2]
  output r2 = ravel2(x2)
  output r3 = ravel3(x3)
  output r4 = ravel4(x4)
  output a = reshape2(ravel3(x3), 4, 6)
  output b = reshape3(ravel2(x2), 3, 2, 4)
  output c = reshape4(ravel3(x3), 2, 2, 3, 2)
  output f = flatten(x4)
}`,
		want: func(in map[string]*arr) map[string]*arr {
			return map[string]*arr{
				"r2": reshapeRef(in["x2"], 24),
				"r3": reshapeRef(in["x3"], 24),
				"r4": reshapeRef(in["x4"], 24),
				"a":  reshapeRef(in["x3"], 4, 6),
				"b":  reshapeRef(in["x2"], 3, 2, 4),
				"c":  reshapeRef(in["x3"], 2, 2, 3, 2),
				"f":  reshapeRef(in["x4"], 2, 12),
			}
		},
	},
	{
		name: "concat",
		src: `model m {
  input a1: f32[3]
  input b1: f32[5]
  input a2: f32[3, 4]
  input b2: f32[2, 4]
  input c2: f32[3, 2]
  input a3: f32[2, 3, 4]
  input b3: f32[2, 1, 4]
  input a4: f32[2, 3, 2, 2]
  input b4: f32[2, 3, 2, 3]
  output c1 = concat1(a1, b1)
  output c20 = concat2(a2, b2, 0)
  output c21 = concat2(a2, c2, 1)
  output c31 = concat3(a3, b3, 1)
  output c43 = concat4(a4, b4, 3)
  output c40 = concat4(a4, a4, 0)
}`,
		want: func(in map[string]*arr) map[string]*arr {
			return map[string]*arr{
				"c1":  concatRef(in["a1"], in["b1"], 0),
				"c20": concatRef(in["a2"], in["b2"], 0),
				"c21": concatRef(in["a2"], in["c2"], 1),
				"c31": concatRef(in["a3"], in["b3"], 1),
				"c43": concatRef(in["a4"], in["b4"], 3),
				"c40": concatRef(in["a4"], in["a4"], 0),
			}
		},
	},
	{
		name: "slice",
		src: `model m {
  input x1: f32[7]
  input x2: f32[5, 6]
  input x3: f32[3, 4, 5]
  input x4: f32[2, 3, 4, 5]
  output s1 = slice1(x1, 2, 5)
  output s20 = slice2(x2, 0, 1, 4)
  output s21 = slice2(x2, 1, 0, 6)
  output s32 = slice3(x3, 2, 3, 5)
  output s41 = slice4(x4, 1, 1, 2)
}`,
		want: func(in map[string]*arr) map[string]*arr {
			return map[string]*arr{
				"s1":  sliceRef(in["x1"], 0, 2, 5),
				"s20": sliceRef(in["x2"], 0, 1, 4),
				"s21": sliceRef(in["x2"], 1, 0, 6),
				"s32": sliceRef(in["x3"], 2, 3, 5),
				"s41": sliceRef(in["x4"], 1, 1, 2),
			}
		},
	},
	{
		name: "pad2d",
		src: `model m {
  input x: f32[2, 3, 4, 5]
  output y = pad2d(x, 2)
}`,
		want: func(in map[string]*arr) map[string]*arr {
			x := in["x"]
			return map[string]*arr{"y": mapArr([]int{2, 3, 8, 9}, func(i []int) float64 {
				h, w := i[2]-2, i[3]-2
				if h < 0 || h >= 4 || w < 0 || w >= 5 {
					return 0
				}
				return x.at(i[0], i[1], h, w)
			})}
		},
	},
	{
		name: "take",
		src: `model m {
  param p: f32[64]
  a, o = take1(p, 3, 4)
  b, o = take2(p, o, 2, 3)
  c, o = take3(p, o, 2, 2, 3)
  d, o = take4(p, o, 1, 2, 3, 4)
  output a, b, c, d
}`,
		want: func(in map[string]*arr) map[string]*arr {
			p := in["p"]
			part := func(off int, shape ...int) *arr {
				return mapArr(shape, func(i []int) float64 { return p.data[off+newArr(shape...).off(i...)] })
			}
			return map[string]*arr{
				"a": part(3, 4),
				"b": part(7, 2, 3),
				"c": part(13, 2, 2, 3),
				"d": part(25, 1, 2, 3, 4),
			}
		},
	},
}

// TestNumeric runs each numeric test.
func TestNumeric(t *testing.T) {
	for _, tt := range numericTests {
		t.Run(tt.name, func(t *testing.T) {
			in, out := run(t, tt.src)
			want := tt.want(in)
			for name, w := range want {
				compare(t, name, out[name], w)
			}
			if len(out) != len(want) {
				t.Errorf("%d outputs, want %d", len(out), len(want))
			}
		})
	}
}

// TestShadowedShapeSymbols checks that a program's constants do not leak into
// the standard library: conv2d's shape symbols N, C, H, W, O, KH, KW are
// bound at each call even where the program has constants of those names.
func TestShadowedShapeSymbols(t *testing.T) {
	src := `const N = 5
const C = 7
const H = 3
const W = 11
const O = 13
const M = 17
const K = 19
model m {
  input x: f32[1, 2, 6, 6]
  param w: f32[4, 2, 3, 3]
  input a: f32[2, 3]
  output y = conv2d(x, w, 1, 1, 1, 1)
  output s = softmax(a)
}`
	in, out := run(t, src)
	compare(t, "y", out["y"], convRef(in["x"], in["w"], 1, 1, 1, 1))
	if s := out["s"]; s == nil || fmt.Sprint(s.shape) != "[2 3]" {
		t.Errorf("softmax output %v, want shape [2 3]", s)
	}
}

// TestMisuse checks that calls with shapes or arguments that do not fit are
// rejected by the checker, not lowered into a program that reads out of
// bounds or silently drops elements.
func TestMisuse(t *testing.T) {
	tests := []struct {
		name, body string
	}{
		{"linear shapes", "input x: f32[3, 4]\n  param w: f32[5, 2]\n  param b: f32[2]\n  output y = linear(x, w, b)"},
		{"conv2d groups", "input x: f32[1, 4, 5, 5]\n  param w: f32[4, 3, 3, 3]\n  output y = conv2d(x, w, 1, 1, 1, 2)"},
		{"slice past the end", "input x: f32[5, 6]\n  output y = slice2(x, 1, 2, 9)"},
		{"take past the end", "param p: f32[10]\n  a, o = take2(p, 4, 2, 4)\n  output a"},
		{"concat other axis", "input a: f32[3, 4]\n  input b: f32[2, 5]\n  output y = concat2(a, b, 0)"},
		{"reshape size", "input x: f32[24]\n  output y = reshape2(x, 4, 5)"},
		{"reshape4 size", "input x: f32[2, 3, 4]\n  output y = reshape4(ravel3(x), 2, 2, 2, 2)"},
		{"permute4 repeated axis", "input x: f32[2, 3, 4, 5]\n  output y = permute4(x, 0, 1, 1, 2)"},
		{"layernorm gain", "input x: f32[3, 4]\n  param g: f32[5]\n  param b: f32[4]\n  output y = layernorm(x, g, b, 1e-5)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "model m {\n  " + tt.body + "\n}\n"
			p, diags := lang.Check("test.te", []byte(src), lang.Config{})
			if !diags.HasErrors() || p != nil {
				t.Errorf("lang.Check accepted\n%s", src)
				return
			}
			t.Logf("%v", diags.Error())
		})
	}
}
