package te

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// at returns a's element at idx.
func at(a *Array, idx ...int) float64 {
	off := 0
	for d, s := range a.Strides() {
		off += idx[d] * s
	}
	return a.Data[off]
}

// evalCase is a program built directly in Go and the same computation written
// as plain loops.
type evalCase struct {
	name  string
	build func() *Program
	// ref computes the expected outputs, by name, from the feeds.
	ref func(in map[string]*Array) map[string][]float64
	// gemms is the least number of contractions the fast path must take.
	gemms int
	tol   float64
}

func matmulCase(name string, m, k, n int, bias bool) evalCase {
	return evalCase{
		name: name,
		build: func() *Program {
			b := newBuilder(name)
			x := b.input("x", F32, m, k)
			w := b.param("w", F32, k, n)
			bb := b.param("b", F32, n)
			y := b.f32("y", shp(m, n), func(a []Index) Expr {
				s := sum1(k, func(kk Index) Expr { return mul(ld(x, a[0], kk), ld(w, kk, a[1])) })
				if bias {
					s = add(s, ld(bb, a[1]))
				}
				return s
			})
			return b.outputs(y)
		},
		ref: func(in map[string]*Array) map[string][]float64 {
			x, w, bb := in["x"], in["w"], in["b"]
			y := make([]float64, m*n)
			for i := range m {
				for j := range n {
					s := 0.0
					for kk := range k {
						s += at(x, i, kk) * at(w, kk, j)
					}
					if bias {
						s += at(bb, j)
					}
					y[i*n+j] = s
				}
			}
			return map[string][]float64{"y": y}
		},
		gemms: 1,
		tol:   1e-12,
	}
}

func attentionCase() evalCase {
	const h, s, e = 3, 7, 5
	scale := 1 / math.Sqrt(e)
	return evalCase{
		name: "attention",
		build: func() *Program {
			b := newBuilder("attention")
			q := b.input("q", F32, h, s, e)
			k := b.input("k", F32, h, s, e)
			v := b.input("v", F32, s, h*e) // heads interleaved in the columns
			sc := b.f32("scores", shp(h, s, s), func(a []Index) Expr {
				return mul(sum1(e, func(kk Index) Expr { return mul(ld(q, a[0], a[1], kk), ld(k, a[0], a[2], kk)) }), cf(scale))
			})
			ctx := b.f32("ctx", shp(s, h, e), func(a []Index) Expr {
				return sum1(s, func(j Index) Expr {
					return mul(ld(sc, a[1], a[0], j), ld(v, j, a[1].Scale(e).Add(a[2])))
				})
			})
			return b.outputs(sc, ctx)
		},
		ref: func(in map[string]*Array) map[string][]float64 {
			q, k, v := in["q"], in["k"], in["v"]
			sc := make([]float64, h*s*s)
			for hh := range h {
				for i := range s {
					for j := range s {
						t := 0.0
						for ee := range e {
							t += at(q, hh, i, ee) * at(k, hh, j, ee)
						}
						sc[(hh*s+i)*s+j] = t * scale
					}
				}
			}
			ctx := make([]float64, s*h*e)
			for i := range s {
				for hh := range h {
					for ee := range e {
						t := 0.0
						for j := range s {
							t += sc[(hh*s+i)*s+j] * at(v, j, hh*e+ee)
						}
						ctx[(i*h+hh)*e+ee] = t
					}
				}
			}
			return map[string][]float64{"scores": sc, "ctx": ctx}
		},
		gemms: 2,
		tol:   1e-12,
	}
}

func softmaxCase() evalCase {
	const n, d = 5, 33
	return evalCase{
		name: "softmax",
		build: func() *Program {
			b := newBuilder("softmax")
			x := b.input("x", F32, n, d)
			m := b.f32("m", shp(n), func(a []Index) Expr {
				return red(ReduceMax, []int{d}, func(k []Index) Expr { return ld(x, a[0], k[0]) })
			})
			e := b.f32("e", shp(n, d), func(a []Index) Expr { return un(Exp, sub(ld(x, a[0], a[1]), ld(m, a[0]))) })
			s := b.f32("s", shp(n), func(a []Index) Expr { return sum1(d, func(k Index) Expr { return ld(e, a[0], k) }) })
			y := b.f32("y", shp(n, d), func(a []Index) Expr { return div(ld(e, a[0], a[1]), ld(s, a[0])) })
			return b.outputs(y)
		},
		ref: func(in map[string]*Array) map[string][]float64 {
			x := in["x"]
			y := make([]float64, n*d)
			for i := range n {
				m := math.Inf(-1)
				for j := range d {
					m = math.Max(m, at(x, i, j))
				}
				s := 0.0
				for j := range d {
					y[i*d+j] = math.Exp(at(x, i, j) - m)
					s += y[i*d+j]
				}
				for j := range d {
					y[i*d+j] /= s
				}
			}
			return map[string][]float64{"y": y}
		},
		tol: 1e-14,
	}
}

func layernormCase() evalCase {
	const n, d, eps = 4, 40, 1e-5
	return evalCase{
		name: "layernorm",
		build: func() *Program {
			b := newBuilder("layernorm")
			x := b.input("x", F32, n, d)
			g := b.param("g", F32, d)
			bb := b.param("b", F32, d)
			mean := b.f32("mean", shp(n), func(a []Index) Expr {
				return div(sum1(d, func(k Index) Expr { return ld(x, a[0], k) }), cf(d))
			})
			xc := b.f32("xc", shp(n, d), func(a []Index) Expr { return sub(ld(x, a[0], a[1]), ld(mean, a[0])) })
			vr := b.f32("var", shp(n), func(a []Index) Expr {
				return div(sum1(d, func(k Index) Expr { return mul(ld(xc, a[0], k), ld(xc, a[0], k)) }), cf(d))
			})
			y := b.f32("y", shp(n, d), func(a []Index) Expr {
				norm := mul(ld(xc, a[0], a[1]), un(Rsqrt, add(ld(vr, a[0]), cf(eps))))
				return add(mul(norm, ld(g, a[1])), ld(bb, a[1]))
			})
			return b.outputs(y)
		},
		ref: func(in map[string]*Array) map[string][]float64 {
			x, g, bb := in["x"], in["g"], in["b"]
			y := make([]float64, n*d)
			for i := range n {
				mean := 0.0
				for j := range d {
					mean += at(x, i, j)
				}
				mean /= d
				v := 0.0
				for j := range d {
					v += (at(x, i, j) - mean) * (at(x, i, j) - mean)
				}
				v /= d
				for j := range d {
					y[i*d+j] = (at(x, i, j)-mean)/math.Sqrt(v+eps)*at(g, j) + at(bb, j)
				}
			}
			return map[string][]float64{"y": y}
		},
		tol: 1e-12,
	}
}

// convCase is a 2-d convolution in NCHW layout with weights [CO, CI/G, KH, KW].
func convCase(name string, n, c, hgt, wid, co, kh, kw, stride, pad, dil, groups int, gemms int) evalCase {
	oh := (hgt+2*pad-dil*(kh-1)-1)/stride + 1
	ow := (wid+2*pad-dil*(kw-1)-1)/stride + 1
	cin, cout := c/groups, co/groups
	return evalCase{
		name: name,
		build: func() *Program {
			b := newBuilder(name)
			x := b.input("x", F32, n, c, hgt, wid)
			w := b.param("w", F32, co, cin, kh, kw)
			y := b.f32("y", shp(n, co, oh, ow), func(a []Index) Expr {
				return red(Sum, []int{cin, kh, kw}, func(k []Index) Expr {
					ih := a[2].Scale(stride).Add(k[1].Scale(dil)).AddConst(-pad)
					iw := a[3].Scale(stride).Add(k[2].Scale(dil)).AddConst(-pad)
					ch := k[0]
					if groups > 1 {
						ch = a[1].Div(cout).Scale(cin).Add(k[0])
					}
					in := ld(x, a[0], ch, ih, iw)
					if pad > 0 {
						in = sel(and(
							bin(Ge, ix(ih), ci(0)), bin(Lt, ix(ih), ci(hgt)),
							bin(Ge, ix(iw), ci(0)), bin(Lt, ix(iw), ci(wid)),
						), in, cf(0))
					}
					return mul(in, ld(w, a[1], k[0], k[1], k[2]))
				})
			})
			return b.outputs(y)
		},
		ref: func(in map[string]*Array) map[string][]float64 {
			x, w := in["x"], in["w"]
			y := make([]float64, n*co*oh*ow)
			i := 0
			for nn := range n {
				for o := range co {
					g := o / cout
					for r := range oh {
						for q := range ow {
							s := 0.0
							for cc := range cin {
								for p := range kh {
									for t := range kw {
										ih, iw := r*stride+p*dil-pad, q*stride+t*dil-pad
										if ih < 0 || ih >= hgt || iw < 0 || iw >= wid {
											continue
										}
										s += at(x, nn, g*cin+cc, ih, iw) * at(w, o, cc, p, t)
									}
								}
							}
							y[i] = s
							i++
						}
					}
				}
			}
			return map[string][]float64{"y": y}
		},
		gemms: gemms,
		tol:   1e-12,
	}
}

func lstmCase() evalCase {
	const in, hid = 6, 5
	return evalCase{
		name: "lstm_cell",
		build: func() *Program {
			b := newBuilder("lstm")
			x := b.input("x", F32, in)
			h := b.input("h", F32, hid)
			c := b.input("c", F32, hid)
			w := b.param("w", F32, 4*hid, in)
			u := b.param("u", F32, 4*hid, hid)
			bias := b.param("b", F32, 4*hid)
			gates := b.f32("gates", shp(4*hid), func(a []Index) Expr {
				wx := sum1(in, func(k Index) Expr { return mul(ld(w, a[0], k), ld(x, k)) })
				uh := sum1(hid, func(k Index) Expr { return mul(ld(u, a[0], k), ld(h, k)) })
				return add(add(wx, uh), ld(bias, a[0]))
			})
			gate := func(g int, a Index) Expr { return ld(gates, a.AddConst(g*hid)) }
			c2 := b.f32("c2", shp(hid), func(a []Index) Expr {
				i, f, gg := un(Sigmoid, gate(0, a[0])), un(Sigmoid, gate(1, a[0])), un(Tanh, gate(2, a[0]))
				return add(mul(f, ld(c, a[0])), mul(i, gg))
			})
			h2 := b.f32("h2", shp(hid), func(a []Index) Expr {
				return mul(un(Sigmoid, gate(3, a[0])), un(Tanh, ld(c2, a[0])))
			})
			return b.outputs(h2, c2)
		},
		ref: func(m map[string]*Array) map[string][]float64 {
			x, h, c, w, u, bias := m["x"], m["h"], m["c"], m["w"], m["u"], m["b"]
			sig := func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }
			gates := make([]float64, 4*hid)
			for g := range 4 * hid {
				s := at(bias, g)
				for k := range in {
					s += at(w, g, k) * at(x, k)
				}
				for k := range hid {
					s += at(u, g, k) * at(h, k)
				}
				gates[g] = s
			}
			c2, h2 := make([]float64, hid), make([]float64, hid)
			for j := range hid {
				c2[j] = sig(gates[hid+j])*at(c, j) + sig(gates[j])*math.Tanh(gates[2*hid+j])
				h2[j] = sig(gates[3*hid+j]) * math.Tanh(c2[j])
			}
			return map[string][]float64{"c2": c2, "h2": h2}
		},
		gemms: 2,
		tol:   1e-12,
	}
}

func reductionsCase() evalCase {
	const n, d1, d2 = 3, 4, 5
	ops := []ReduceOp{Sum, ReduceMax, ReduceMin, Prod}
	return evalCase{
		name: "reductions",
		build: func() *Program {
			b := newBuilder("reductions")
			x := b.input("x", F32, n, d1, d2)
			var outs []*Tensor
			for _, op := range ops {
				outs = append(outs, b.f32(op.String(), shp(n), func(a []Index) Expr {
					return red(op, []int{d1, d2}, func(k []Index) Expr {
						// 1 + x/4 keeps the product of 20 terms moderate.
						return add(cf(1), div(ld(x, a[0], k[0], k[1]), cf(4)))
					})
				}))
			}
			// A reduction over an empty range gives the identity.
			outs = append(outs, b.f32("empty", shp(n), func(a []Index) Expr {
				return red(ReduceMax, []int{0}, func(k []Index) Expr { return ld(x, a[0], k[0], k[0]) })
			}))
			return b.outputs(outs...)
		},
		ref: func(in map[string]*Array) map[string][]float64 {
			x := in["x"]
			out := map[string][]float64{}
			for _, op := range ops {
				r := make([]float64, n)
				for i := range n {
					acc := op.Identity()
					for j := range d1 {
						for k := range d2 {
							v := 1 + at(x, i, j, k)/4
							switch op {
							case Sum:
								acc += v
							case ReduceMax:
								acc = math.Max(acc, v)
							case ReduceMin:
								acc = math.Min(acc, v)
							case Prod:
								acc *= v
							}
						}
					}
					r[i] = acc
				}
				out[op.String()] = r
			}
			out["empty"] = []float64{math.Inf(-1), math.Inf(-1), math.Inf(-1)}
			return out
		},
		tol: 1e-13,
	}
}

func storageCase() evalCase {
	const n = 64
	return evalCase{
		name: "f16_bf16_storage",
		build: func() *Program {
			b := newBuilder("storage")
			x := b.input("x", F32, n)
			h := b.input("h", F16, n)
			y := b.compute("y", F16, shp(n), func(a []Index) Expr { return mul(ld(x, a[0]), cf(3.3)) })
			z := b.compute("z", BF16, shp(n), func(a []Index) Expr { return div(ld(h, a[0]), cf(7)) })
			// The f32 tensor that reads an f16 one sees the rounded values;
			// a cast rounds inside an expression.
			s := b.f32("s", shp(n), func(a []Index) Expr {
				return add(ld(y, a[0]), &Cast{To: F16, X: mul(ld(x, a[0]), cf(1.1))})
			})
			t := b.compute("t", I32, shp(n), func(a []Index) Expr { return mul(ld(x, a[0]), cf(10)) })
			return b.outputs(y, z, s, t)
		},
		ref: func(in map[string]*Array) map[string][]float64 {
			x, h := in["x"], in["h"]
			y, z, s, t := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
			for i := range n {
				y[i] = float64(Float16ToFloat32(Float32ToFloat16(float32(x.Data[i] * 3.3))))
				z[i] = float64(BFloat16ToFloat32(Float32ToBFloat16(float32(h.Data[i] / 7))))
				s[i] = y[i] + float64(Float16ToFloat32(Float32ToFloat16(float32(x.Data[i]*1.1))))
				t[i] = math.Trunc(x.Data[i] * 10)
			}
			return map[string][]float64{"y": y, "z": z, "s": s, "t": t}
		},
	}
}

func intCase() evalCase {
	const n = 16
	return evalCase{
		name: "i32_floor_div_mod",
		build: func() *Program {
			b := newBuilder("ints")
			x := b.input("x", I32, n)
			y := b.input("y", I32, n)
			// Divisors: y, made nonzero.
			d := b.compute("d", I32, shp(n), func(a []Index) Expr {
				return sel(bin(Eq, ld(y, a[0]), ci(0)), ci(3), ld(y, a[0]))
			})
			q := b.compute("q", I32, shp(n), func(a []Index) Expr { return div(ld(x, a[0]), ld(d, a[0])) })
			r := b.compute("r", I32, shp(n), func(a []Index) Expr { return bin(Mod, ld(x, a[0]), ld(d, a[0])) })
			// An index value minus a constant, divided: (i - 8) / 3 with floor.
			iq := b.compute("iq", I32, shp(n), func(a []Index) Expr { return div(ix(a[0].AddConst(-8)), ci(3)) })
			// Division of an i32 by an f32 is a float division.
			fq := b.f32("fq", shp(n), func(a []Index) Expr { return div(ld(x, a[0]), cf(4)) })
			cmp := b.compute("cmp", Bool, shp(n), func(a []Index) Expr {
				return bin(Or, bin(Lt, ld(x, a[0]), ci(0)), un(Not, bin(Ne, ld(x, a[0]), ld(y, a[0]))))
			})
			fm := b.f32("fm", shp(n), func(a []Index) Expr { return bin(Mod, ld(x, a[0]), cf(-2.5)) })
			return b.outputs(q, r, iq, fq, cmp, fm)
		},
		ref: func(in map[string]*Array) map[string][]float64 {
			x, y := in["x"], in["y"]
			out := map[string][]float64{}
			for _, k := range []string{"q", "r", "iq", "fq", "cmp", "fm"} {
				out[k] = make([]float64, n)
			}
			for i := range n {
				a, d := x.Data[i], y.Data[i]
				if d == 0 {
					d = 3
				}
				out["q"][i] = math.Floor(a / d)
				out["r"][i] = a - d*math.Floor(a/d)
				out["iq"][i] = math.Floor(float64(i-8) / 3)
				out["fq"][i] = a / 4
				if a < 0 || a == y.Data[i] {
					out["cmp"][i] = 1
				}
				out["fm"][i] = a - -2.5*math.Floor(a/-2.5)
			}
			return out
		},
	}
}

func lazySelectCase() evalCase {
	const n = 10
	return evalCase{
		name: "lazy_select",
		build: func() *Program {
			b := newBuilder("lazy")
			x := b.input("x", F32, n)
			// x[i+1] is out of bounds at i = n-1, where it is not chosen, and
			// so is x[i-1] at i = 0.
			y := b.f32("y", shp(n), func(a []Index) Expr {
				next := sel(bin(Lt, ix(a[0]), ci(n-1)), ld(x, a[0].AddConst(1)), cf(0))
				prev := sel(bin(Gt, ix(a[0]), ci(0)), ld(x, a[0].AddConst(-1)), cf(0))
				return add(next, prev)
			})
			return b.outputs(y)
		},
		ref: func(in map[string]*Array) map[string][]float64 {
			x := in["x"].Data
			y := make([]float64, n)
			for i := range n {
				if i < n-1 {
					y[i] += x[i+1]
				}
				if i > 0 {
					y[i] += x[i-1]
				}
			}
			return map[string][]float64{"y": y}
		},
	}
}

func reshapeCase() evalCase {
	const r, c = 6, 4
	return evalCase{
		name: "reshape_div_mod",
		build: func() *Program {
			b := newBuilder("reshape")
			x := b.input("x", F32, r, c)
			flat := b.f32("flat", shp(r*c), func(a []Index) Expr { return ld(x, a[0].Div(c), a[0].Mod(c)) })
			// [6, 4] → [4, 6] through the flat offset i*6 + j, then transposed
			// back from the flat copy.
			re := b.f32("re", shp(4, 6), func(a []Index) Expr {
				f := a[0].Scale(6).Add(a[1])
				return ld(x, f.Div(c), f.Mod(c))
			})
			tr := b.f32("tr", shp(6, 4), func(a []Index) Expr { return ld(flat, a[1].Scale(6).Add(a[0])) })
			return b.outputs(flat, re, tr)
		},
		ref: func(in map[string]*Array) map[string][]float64 {
			x := in["x"].Data
			tr := make([]float64, r*c)
			for i := range 6 {
				for j := range 4 {
					tr[i*4+j] = x[j*6+i]
				}
			}
			return map[string][]float64{"flat": x, "re": x, "tr": tr}
		},
	}
}

func evalCases() []evalCase {
	return []evalCase{
		matmulCase("matmul", 9, 13, 7, false),
		matmulCase("linear", 70, 130, 90, true),
		attentionCase(),
		softmaxCase(),
		layernormCase(),
		convCase("conv2d", 2, 4, 9, 8, 6, 3, 3, 1, 0, 1, 1, 1),
		convCase("conv2d_stride_pad_dil_groups", 2, 6, 11, 10, 4, 3, 2, 2, 2, 2, 2, 0),
		convCase("conv2d_grouped_unpadded", 1, 4, 6, 6, 6, 3, 3, 1, 0, 1, 2, 0),
		convCase("depthwise", 1, 5, 8, 7, 5, 3, 3, 1, 1, 1, 5, 0),
		convCase("depthwise_unpadded", 1, 5, 8, 7, 5, 3, 3, 2, 0, 1, 5, 1),
		lstmCase(),
		reductionsCase(),
		storageCase(),
		intCase(),
		lazySelectCase(),
		reshapeCase(),
	}
}

// checkClose compares got with want elementwise, relative to max(1, |want|).
func checkClose(t *testing.T, name string, got *Array, want []float64, tol float64) {
	t.Helper()
	if got == nil {
		t.Errorf("%s: missing output", name)
		return
	}
	if len(got.Data) != len(want) {
		t.Errorf("%s: %d elements, want %d", name, len(got.Data), len(want))
		return
	}
	bad := 0
	for i, w := range want {
		g := got.Data[i]
		if g == w || math.IsNaN(g) && math.IsNaN(w) || math.Abs(g-w) <= tol*math.Max(1, math.Abs(w)) {
			continue
		}
		if bad++; bad <= 3 {
			t.Errorf("%s[%d] = %v, want %v", name, i, g, w)
		}
	}
	if bad > 3 {
		t.Errorf("%s: %d elements differ", name, bad)
	}
}

func TestEvaluate(t *testing.T) {
	for _, tc := range evalCases() {
		for _, mode := range []struct {
			name    string
			noGEMM  bool
			workers int
		}{
			{"gemm", false, 0},
			{"generic", true, 0},
			{"generic_1worker", true, 1},
		} {
			t.Run(tc.name+"/"+mode.name, func(t *testing.T) {
				p := tc.build()
				feeds := randFeeds(p, 42)
				want := tc.ref(feeds)
				var st evalStats
				got, err := Evaluate(p, feeds, EvalOptions{Workers: mode.workers, noGEMM: mode.noGEMM, stats: &st})
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != len(p.Outputs) {
					t.Errorf("got %d outputs, want %d", len(got), len(p.Outputs))
				}
				for name, w := range want {
					checkClose(t, name, got[name], w, tc.tol)
				}
				if mode.noGEMM && st.gemms != 0 {
					t.Errorf("%d GEMMs with the fast path off", st.gemms)
				}
				if !mode.noGEMM && st.gemms < tc.gemms {
					t.Errorf("%d GEMMs, want at least %d", st.gemms, tc.gemms)
				}
			})
		}
	}
}

// TestEvaluateParallelLarge checks that splitting a large tensor among workers
// and the GEMM fast path agree with the generic path on one worker.
func TestEvaluateParallelLarge(t *testing.T) {
	tc := matmulCase("big", 130, 70, 300, true)
	p := tc.build()
	feeds := randFeeds(p, 7)
	one, err := Evaluate(p, feeds, EvalOptions{Workers: 1, noGEMM: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []int{2, 3, 8} {
		got, err := Evaluate(p, feeds, EvalOptions{Workers: w, noGEMM: true})
		if err != nil {
			t.Fatal(err)
		}
		checkClose(t, fmt.Sprintf("y/workers=%d", w), got["y"], one["y"].Data, 0)
	}
	fast, err := Evaluate(p, feeds, EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkClose(t, "y/gemm", fast["y"], one["y"].Data, 1e-13)
}

func TestContractionShapes(t *testing.T) {
	// Contractions whose operands need transposing or gathering.
	const m, k, n = 5, 6, 7
	tests := []struct {
		name string
		body func(a, w *Tensor, ax []Index) Expr
		ref  func(a, w *Array, i, j int) float64
	}{
		{"AtB", func(a, w *Tensor, ax []Index) Expr {
			return sum1(k, func(kk Index) Expr { return mul(ld(a, kk, ax[0]), ld(w, kk, ax[1])) })
		}, func(a, w *Array, i, j int) float64 {
			s := 0.0
			for kk := range k {
				s += at(a, kk, i) * at(w, kk, j)
			}
			return s
		}},
		{"diagonal_and_offset", func(a, w *Tensor, ax []Index) Expr {
			return sum1(k-1, func(kk Index) Expr { return mul(ld(a, kk.AddConst(1), ax[0]), ld(w, kk, kk)) })
		}, func(a, w *Array, i, j int) float64 {
			s := 0.0
			for kk := range k - 1 {
				s += at(a, kk+1, i) * at(w, kk, kk)
			}
			return s
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBuilder(tt.name)
			a := b.input("a", F32, k, m)
			w := b.input("w", F32, k, n)
			y := b.f32("y", shp(m, n), func(ax []Index) Expr { return tt.body(a, w, ax) })
			p := b.outputs(y)
			feeds := randFeeds(p, 3)
			var st evalStats
			got, err := Evaluate(p, feeds, EvalOptions{stats: &st})
			if err != nil {
				t.Fatal(err)
			}
			if st.gemms != 1 {
				t.Errorf("%d GEMMs, want 1", st.gemms)
			}
			want := make([]float64, m*n)
			for i := range m {
				for j := range n {
					want[i*n+j] = tt.ref(feeds["a"], feeds["w"], i, j)
				}
			}
			checkClose(t, "y", got["y"], want, 1e-13)
		})
	}
}

func TestEvaluateErrors(t *testing.T) {
	prog := func(body func(x *Tensor, a []Index) Expr) *Program {
		b := newBuilder("bad")
		x := b.input("x", F32, 4, 3)
		w := b.param("w", I32, 3)
		_ = w
		y := b.f32("y", shp(4), func(a []Index) Expr { return body(x, a) })
		return b.outputs(y)
	}
	ok := func(x *Tensor, a []Index) Expr { return ld(x, a[0], Const(0)) }
	good := func(p *Program) map[string]*Array {
		return map[string]*Array{"x": NewArray(F32, []int{4, 3}), "w": NewArray(I32, []int{3})}
	}
	tests := []struct {
		name  string
		prog  *Program
		feeds func(p *Program) map[string]*Array
		want  []string // substrings of the error
	}{
		{"missing feed", prog(ok), func(*Program) map[string]*Array {
			return map[string]*Array{"x": NewArray(F32, []int{4, 3})}
		}, []string{`param "w"`, "i32[3]"}},
		{"wrong shape", prog(ok), func(*Program) map[string]*Array {
			return map[string]*Array{"x": NewArray(F32, []int{3, 4}), "w": NewArray(I32, []int{3})}
		}, []string{`input "x"`, "got f32[3, 4], want f32[4, 3]"}},
		{"wrong dtype", prog(ok), func(*Program) map[string]*Array {
			return map[string]*Array{"x": NewArray(F16, []int{4, 3}), "w": NewArray(I32, []int{3})}
		}, []string{`input "x"`, "got f16"}},
		{"extra feed", prog(ok), func(*Program) map[string]*Array {
			return map[string]*Array{"x": NewArray(F32, []int{4, 3}), "w": NewArray(I32, []int{3}), "z": NewArray(F32, nil)}
		}, []string{`"z"`}},
		{"out of bounds", prog(func(x *Tensor, a []Index) Expr {
			return sel(bin(Ge, ix(a[0]), ci(0)), ld(x, a[0], a[0]), cf(0))
		}), good, []string{`tensor "y"`, "at y[3]", "load x[3, 3] out of bounds of f32[4, 3]"}},
		{"division by zero", prog(func(x *Tensor, a []Index) Expr {
			return &Cast{To: F32, X: div(ci(1), ix(a[0]))}
		}), good, []string{`tensor "y"`, "at y[0]", "integer division by zero"}},
		{"unbound variable", prog(func(x *Tensor, a []Index) Expr {
			return ld(x, a[0], VarIndex(NewVar("q", 3)))
		}), good, []string{`tensor "y"`, "variable q is used outside its scope"}},
		{"wrong index count", prog(func(x *Tensor, a []Index) Expr {
			return ld(x, a[0])
		}), good, []string{`tensor "y"`, "1 indexes for 2 dimensions"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Evaluate(tt.prog, tt.feeds(tt.prog), EvalOptions{})
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestEvaluateKeepAllAndFree(t *testing.T) {
	tc := softmaxCase()
	p := tc.build()
	feeds := randFeeds(p, 1)
	got, err := Evaluate(p, feeds, EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got["y"] == nil {
		t.Errorf("outputs: got %v, want only y", keys(got))
	}
	all, err := Evaluate(p, feeds, EvalOptions{KeepAll: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"m", "e", "s", "y"} {
		if all[name] == nil {
			t.Errorf("KeepAll: no %s in %v", name, keys(all))
		}
	}

	// The evaluator drops each intermediate after its last reader.
	ev, err := newEvaluator(p, feeds, EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var freed []string
	for i, r := range ev.readers {
		for _, j := range r {
			freed = append(freed, fmt.Sprintf("%s@%s", p.Tensors[j].Name, p.Tensors[i].Name))
		}
	}
	if w := "x@e m@e e@y s@y"; strings.Join(freed, " ") != w {
		t.Errorf("freed %q, want %q", strings.Join(freed, " "), w)
	}
}

func keys(m map[string]*Array) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// TestEvaluateLongChain evaluates thousands of tiny tensors, as an unrolled
// recurrent network produces.
func TestEvaluateLongChain(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 500
	}
	b := newBuilder("chain")
	x := b.input("x", F32, 8)
	prev := x
	for i := range n {
		prev = b.f32(fmt.Sprintf("h%d", i), shp(8), func(a []Index) Expr {
			return un(Tanh, add(ld(prev, a[0]), cf(0.01)))
		})
	}
	p := b.outputs(prev)
	feeds := randFeeds(p, 5)
	got, err := Evaluate(p, feeds, EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := append([]float64(nil), feeds["x"].Data...)
	for range n {
		for j := range want {
			want[j] = math.Tanh(want[j] + 0.01)
		}
	}
	checkClose(t, prev.Name, got[prev.Name], want, 1e-14)
}

// TestEvaluateSharedNodes evaluates a body in which one Reduce node is used
// twice, as inlining a function whose result is used twice may produce.
func TestEvaluateSharedNodes(t *testing.T) {
	b := newBuilder("shared")
	x := b.input("x", F32, 3, 4)
	y := b.f32("y", shp(3), func(a []Index) Expr {
		s := sum1(4, func(k Index) Expr { return un(Exp, ld(x, a[0], k)) })
		return mul(s, s)
	})
	p := b.outputs(y)
	feeds := randFeeds(p, 9)
	got, err := Evaluate(p, feeds, EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float64, 3)
	for i := range 3 {
		s := 0.0
		for k := range 4 {
			s += math.Exp(at(feeds["x"], i, k))
		}
		want[i] = s * s
	}
	checkClose(t, "y", got["y"], want, 1e-14)
}

// TestElementwiseOps checks every unary and binary operation on f32 operands
// against the math package.
func TestElementwiseOps(t *testing.T) {
	const n = 50
	unary := map[UnaryOp]func(float64) float64{
		Neg: func(v float64) float64 { return -v },
		Not: func(v float64) float64 { return b2f(v == 0) },
		Exp: math.Exp, Log: math.Log, Sqrt: math.Sqrt,
		Rsqrt:   func(v float64) float64 { return 1 / math.Sqrt(v) },
		Tanh:    math.Tanh,
		Sigmoid: func(v float64) float64 { return 1 / (1 + math.Exp(-v)) },
		Erf:     math.Erf, Abs: math.Abs,
		Sin: math.Sin, Cos: math.Cos,
	}
	binary := map[BinaryOp]func(x, y float64) float64{
		Add: func(x, y float64) float64 { return x + y },
		Sub: func(x, y float64) float64 { return x - y },
		Mul: func(x, y float64) float64 { return x * y },
		Div: func(x, y float64) float64 { return x / y },
		Mod: func(x, y float64) float64 { return x - y*math.Floor(x/y) },
		Max: math.Max, Min: math.Min, Pow: math.Pow,
		Lt:  func(x, y float64) float64 { return b2f(x < y) },
		Le:  func(x, y float64) float64 { return b2f(x <= y) },
		Gt:  func(x, y float64) float64 { return b2f(x > y) },
		Ge:  func(x, y float64) float64 { return b2f(x >= y) },
		Eq:  func(x, y float64) float64 { return b2f(x == y) },
		Ne:  func(x, y float64) float64 { return b2f(x != y) },
		And: func(x, y float64) float64 { return b2f(x != 0 && y != 0) },
		Or:  func(x, y float64) float64 { return b2f(x != 0 || y != 0) },
	}
	b := newBuilder("ops")
	x := b.input("x", F32, n)
	y := b.input("y", F32, n)
	// Positive operands for log, sqrt and pow; some equal and some zero
	// elements for the comparisons and logic.
	px := b.f32("px", shp(n), func(a []Index) Expr {
		return sel(bin(Lt, ix(a[0]), ci(5)), cf(0), add(un(Abs, ld(x, a[0])), cf(0.1)))
	})
	py := b.f32("py", shp(n), func(a []Index) Expr {
		return sel(bin(Lt, ix(a[0]), ci(10)), ld(px, a[0]), add(un(Abs, ld(y, a[0])), cf(0.1)))
	})
	var outs []*Tensor
	for op := range unary {
		outs = append(outs, b.f32("u_"+op.String(), shp(n), func(a []Index) Expr { return un(op, ld(px, a[0])) }))
	}
	for op := range binary {
		outs = append(outs, b.f32("b_"+op.String(), shp(n), func(a []Index) Expr { return bin(op, ld(px, a[0]), ld(py, a[0])) }))
	}
	p := b.outputs(append(outs, px, py)...)
	got, err := Evaluate(p, randFeeds(p, 13), EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	xs, ys := got["px"].Data, got["py"].Data
	for op, f := range unary {
		want := make([]float64, n)
		for i := range n {
			want[i] = f(xs[i])
		}
		checkClose(t, "u_"+op.String(), got["u_"+op.String()], want, 0)
	}
	for op, f := range binary {
		want := make([]float64, n)
		for i := range n {
			want[i] = f(xs[i], ys[i])
		}
		checkClose(t, "b_"+op.String(), got["b_"+op.String()], want, 0)
	}
}

// TestContractionReversedAxes compares the GEMM fast path with the generic
// evaluator on contractions whose operands run backwards along an axis: their
// steps are negative, so the gathered copy must index from each element's
// full offset (issue 17, F2: these panicked with an index of -1).
func TestContractionReversedAxes(t *testing.T) {
	const m, k, n = 3, 12, 4
	tests := []struct {
		name  string
		build func(b *builder) *Tensor
	}{
		{"dot_reversed", func(b *builder) *Tensor {
			a, w := b.input("a", F32, 5), b.input("b", F32, 5)
			return b.f32("y", shp(), func([]Index) Expr {
				return sum1(5, func(kk Index) Expr { return mul(ld(a, kk.Scale(-1).AddConst(4)), ld(w, kk)) })
			})
		}},
		{"A_reversed_k", func(b *builder) *Tensor {
			a, w := b.input("a", F32, m, k), b.input("b", F32, k, n)
			return b.f32("y", shp(m, n), func(ax []Index) Expr {
				return sum1(k, func(kk Index) Expr { return mul(ld(a, ax[0], kk.Scale(-1).AddConst(k-1)), ld(w, kk, ax[1])) })
			})
		}},
		{"B_reversed_n", func(b *builder) *Tensor {
			a, w := b.input("a", F32, m, k), b.input("b", F32, k, k)
			return b.f32("y", shp(m, k), func(ax []Index) Expr {
				return sum1(k, func(kk Index) Expr { return mul(ld(a, ax[0], kk), ld(w, kk, ax[1].Scale(-1).AddConst(k-1))) })
			})
		}},
		{"A_row_reversed", func(b *builder) *Tensor {
			a, w := b.input("a", F32, m, k), b.input("b", F32, k, n)
			return b.f32("y", shp(m, n), func(ax []Index) Expr {
				return sum1(k, func(kk Index) Expr { return mul(ld(a, ax[0].Scale(-1).AddConst(m-1), kk), ld(w, kk, ax[1])) })
			})
		}},
		{"A_sliding_window", func(b *builder) *Tensor {
			// a[i, j - k + 5] for j in 0..6, k in 0..5 reads columns 0..11;
			// j is a batch axis, with enough work per batch for GEMM.
			a, w := b.input("a", F32, 8, 12), b.input("b", F32, 6, 7)
			return b.f32("y", shp(8, 7), func(ax []Index) Expr {
				return sum1(6, func(kk Index) Expr { return mul(ld(a, ax[0], ax[1].Sub(kk).AddConst(5)), ld(w, kk, ax[1])) })
			})
		}},
		{"batch_reversed", func(b *builder) *Tensor {
			a, w := b.input("a", F32, 4, m, k), b.input("b", F32, 4, k, n)
			return b.f32("y", shp(4, m, n), func(ax []Index) Expr {
				return sum1(k, func(kk Index) Expr {
					return mul(ld(a, ax[0].Scale(-1).AddConst(3), ax[1], kk), ld(w, ax[0], kk, ax[2]))
				})
			})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBuilder(tt.name)
			p := b.outputs(tt.build(b))
			feeds := randFeeds(p, 5)
			want, err := Evaluate(p, feeds, EvalOptions{noGEMM: true})
			if err != nil {
				t.Fatal(err)
			}
			var st evalStats
			got, err := Evaluate(p, feeds, EvalOptions{stats: &st})
			if err != nil {
				t.Fatal(err)
			}
			if st.gemms != 1 {
				t.Errorf("%d GEMMs, want 1", st.gemms)
			}
			checkClose(t, "y", got["y"], want["y"].Data, 1e-13)
		})
	}
}
