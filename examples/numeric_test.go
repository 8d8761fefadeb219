package examples

import (
	"fmt"
	"math"
	"testing"

	"tec/te"
)

// The numeric tests of examples: at the tiny configuration, the evaluated
// outputs are compared with the same model written as plain Go loops.

// mat is a row-major matrix for the Go references.
type mat struct {
	r, c int
	d    []float64
}

func (m mat) at(i, j int) float64 { return m.d[i*m.c+j] }

// view returns rows×cols elements of a starting at off as a matrix.
func view(a *te.Array, off, rows, cols int) mat {
	return mat{rows, cols, a.Data[off : off+rows*cols]}
}

// linearRef is x·w + b (b may be nil).
func linearRef(x, w mat, b []float64) mat {
	y := mat{x.r, w.c, make([]float64, x.r*w.c)}
	for i := 0; i < x.r; i++ {
		for j := 0; j < w.c; j++ {
			s := 0.0
			if b != nil {
				s = b[j]
			}
			for k := 0; k < x.c; k++ {
				s += x.at(i, k) * w.at(k, j)
			}
			y.d[i*y.c+j] = s
		}
	}
	return y
}

// attentionRef is multi-head self-attention with a fused QKV projection.
func attentionRef(x, wqkv mat, bqkv []float64, wo mat, bo []float64, nh int) mat {
	s, d := x.r, x.c
	dh := d / nh
	qkv := linearRef(x, wqkv, bqkv)
	m := mat{s, d, make([]float64, s*d)}
	for h := 0; h < nh; h++ {
		for i := 0; i < s; i++ {
			sc := make([]float64, s)
			mx := math.Inf(-1)
			for j := 0; j < s; j++ {
				for e := 0; e < dh; e++ {
					sc[j] += qkv.at(i, h*dh+e) * qkv.at(j, d+h*dh+e)
				}
				sc[j] /= math.Sqrt(float64(dh))
				mx = math.Max(mx, sc[j])
			}
			den := 0.0
			for j := range sc {
				sc[j] = math.Exp(sc[j] - mx)
				den += sc[j]
			}
			for e := 0; e < dh; e++ {
				v := 0.0
				for j := 0; j < s; j++ {
					v += sc[j] / den * qkv.at(j, 2*d+h*dh+e)
				}
				m.d[i*d+h*dh+e] = v
			}
		}
	}
	return linearRef(m, wo, bo)
}

// layernormRef normalises each row, with gain g and bias b.
func layernormRef(x mat, g, b []float64, eps float64) mat {
	y := mat{x.r, x.c, make([]float64, len(x.d))}
	for i := 0; i < x.r; i++ {
		mu, v := 0.0, 0.0
		for j := 0; j < x.c; j++ {
			mu += x.at(i, j)
		}
		mu /= float64(x.c)
		for j := 0; j < x.c; j++ {
			v += (x.at(i, j) - mu) * (x.at(i, j) - mu)
		}
		v /= float64(x.c)
		for j := 0; j < x.c; j++ {
			y.d[i*x.c+j] = (x.at(i, j)-mu)/math.Sqrt(v+eps)*g[j] + b[j]
		}
	}
	return y
}

func add(a, b mat) mat {
	y := mat{a.r, a.c, make([]float64, len(a.d))}
	for i := range a.d {
		y.d[i] = a.d[i] + b.d[i]
	}
	return y
}

func apply(a mat, f func(float64) float64) mat {
	y := mat{a.r, a.c, make([]float64, len(a.d))}
	for i, v := range a.d {
		y.d[i] = f(v)
	}
	return y
}

func geluRef(v float64) float64 {
	return 0.5 * v * (1 + math.Tanh(0.7978845608*(v+0.044715*v*v*v)))
}

func sigmoidRef(v float64) float64 { return 1 / (1 + math.Exp(-v)) }

func reluRef(v float64) float64 { return math.Max(v, 0) }

// evalTiny checks and evaluates the named example at its tiny configuration.
func evalTiny(t *testing.T, name string) (feeds, out map[string]*te.Array, defs map[string]int) {
	t.Helper()
	ex, ok := Lookup(name)
	if !ok {
		t.Fatalf("no example %s", name)
	}
	p := check(t, ex, ex.Tiny)
	feeds = randomFeeds(p, 5)
	out, err := te.Evaluate(p, feeds, te.EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defs = map[string]int{}
	for k, v := range ex.Tiny {
		var n int
		if _, err := fmt.Sscan(v, &n); err == nil {
			defs[k] = n
		}
	}
	return feeds, out, defs
}

// near reports the elements of got that differ from want.
func near(t *testing.T, name string, got []float64, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d elements, want %d", name, len(got), len(want))
	}
	for i := range want {
		if !(math.Abs(got[i]-want[i]) <= 1e-9*(1+math.Abs(want[i]))) {
			t.Fatalf("%s[%d] = %.12g, want %.12g", name, i, got[i], want[i])
		}
	}
}

// TestAttentionNumeric compares attention.te with attentionRef.
func TestAttentionNumeric(t *testing.T) {
	f, out, d := evalTiny(t, "attention")
	s, dm := d["S"], d["D"]
	want := attentionRef(view(f["x"], 0, s, dm), view(f["wqkv"], 0, dm, 3*dm), f["bqkv"].Data,
		view(f["wo"], 0, dm, dm), f["bo"].Data, d["NH"])
	near(t, "y", out["y"].Data, want.d)
}

// TestBERTNumeric compares bert.te with a post-LN encoder built from the
// references.
func TestBERTNumeric(t *testing.T) {
	f, out, d := evalTiny(t, "bert")
	l, s, dm, ff := d["L"], d["S"], d["D"], d["FF"]
	const eps = 1e-12
	vec := func(name string, off, n int) []float64 { return f[name].Data[off : off+n] }
	emb := mat{s, dm, make([]float64, s*dm)}
	for i := range s {
		id, sg := int(f["ids"].Data[i]), int(f["seg"].Data[i])
		for j := range dm {
			emb.d[i*dm+j] = f["wte"].Data[id*dm+j] + f["wpe"].Data[i*dm+j] + f["wtt"].Data[sg*dm+j]
		}
	}
	x := layernormRef(emb, vec("ln_emb", 0, dm), vec("ln_emb", dm, dm), eps)
	for i := 0; i < l; i++ {
		a := attentionRef(x, view(f["wqkv"], i*dm*3*dm, dm, 3*dm), vec("bqkv", i*3*dm, 3*dm),
			view(f["wo"], i*dm*dm, dm, dm), vec("bo", i*dm, dm), d["NH"])
		x = layernormRef(add(x, a), vec("ln1", 2*i*dm, dm), vec("ln1", (2*i+1)*dm, dm), eps)
		h := apply(linearRef(x, view(f["w1"], i*dm*ff, dm, ff), vec("b1", i*ff, ff)), geluRef)
		o := linearRef(h, view(f["w2"], i*ff*dm, ff, dm), vec("b2", i*dm, dm))
		x = layernormRef(add(x, o), vec("ln2", 2*i*dm, dm), vec("ln2", (2*i+1)*dm, dm), eps)
	}
	near(t, "hidden", out["hidden"].Data, x.d)
	logits := linearRef(x, view(f["w_span"], 0, dm, 2), f["b_span"].Data)
	near(t, "logits", out["logits"].Data, logits.d)
	for c, name := range []string{"start", "end"} {
		best := 0
		for i := range s {
			if logits.at(i, c) > logits.at(best, c) {
				best = i
			}
		}
		if got := int(out[name].Data[0]); got != best {
			t.Errorf("%s = %d, want %d, the first position of the greatest logit", name, got, best)
		}
	}
}

// TestLSTMNumeric compares lstm.te with a stacked LSTM whose gates are, in
// order, input, cell candidate, forget, output.
func TestLSTMNumeric(t *testing.T) {
	f, out, d := evalTiny(t, "lstm")
	steps, layers, hs := d["T"], d["L"], d["H"]
	W, U, b := f["W"].Data, f["U"].Data, f["b"].Data
	h := make([][]float64, layers)
	c := make([][]float64, layers)
	for l := range h {
		h[l], c[l] = make([]float64, hs), make([]float64, hs)
	}
	var ys []float64
	for t := 0; t < steps; t++ {
		inp := f["xs"].Data[t*hs : (t+1)*hs]
		for l := 0; l < layers; l++ {
			g := make([][]float64, 4)
			for q := range g {
				g[q] = make([]float64, hs)
				for j := 0; j < hs; j++ {
					s := b[(l*4+q)*hs+j]
					for k := 0; k < hs; k++ {
						s += inp[k]*W[((l*4+q)*hs+k)*hs+j] + h[l][k]*U[((l*4+q)*hs+k)*hs+j]
					}
					g[q][j] = s
				}
			}
			nh, nc := make([]float64, hs), make([]float64, hs)
			for j := 0; j < hs; j++ {
				nc[j] = c[l][j]*sigmoidRef(g[2][j]) + sigmoidRef(g[0][j])*math.Tanh(g[1][j])
				nh[j] = math.Tanh(nc[j]) * sigmoidRef(g[3][j])
			}
			h[l], c[l] = nh, nc
			inp = nh
		}
		ys = append(ys, inp...)
	}
	near(t, "y", out["y"].Data, ys)
}

// TestMMoENumeric compares mmoe.te with a multi-gate mixture of experts.
func TestMMoENumeric(t *testing.T) {
	f, out, d := evalTiny(t, "mmoe")
	in, units, ne, tasks, tower := d["IN"], d["UNITS"], d["E"], d["TASKS"], d["TOWER"]
	x := view(f["x"], 0, 1, in)
	experts := make([]mat, ne)
	for e := range experts {
		experts[e] = apply(linearRef(x, view(f["we"], e*in*units, in, units), f["be"].Data[e*units:(e+1)*units]), reluRef)
	}
	var ys []float64
	for k := 0; k < tasks; k++ {
		g := linearRef(x, view(f["wg"], k*in*ne, in, ne), f["bg"].Data[k*ne:(k+1)*ne])
		mx := math.Inf(-1)
		for _, v := range g.d {
			mx = math.Max(mx, v)
		}
		den := 0.0
		for _, v := range g.d {
			den += math.Exp(v - mx)
		}
		mix := mat{1, units, make([]float64, units)}
		for e := 0; e < ne; e++ {
			for u := 0; u < units; u++ {
				mix.d[u] += math.Exp(g.d[e]-mx) / den * experts[e].d[u]
			}
		}
		tw := apply(linearRef(mix, view(f["wt"], k*units*tower, units, tower), f["bt"].Data[k*tower:(k+1)*tower]), reluRef)
		o := apply(linearRef(tw, view(f["wo"], k*tower, tower, 1), f["bo"].Data[k:k+1]), sigmoidRef)
		ys = append(ys, o.d...)
	}
	near(t, "y", out["y"].Data, ys)
}
