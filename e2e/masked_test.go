package e2e

import (
	"fmt"
	"os"
	"testing"

	"tec/backend/kir"
	"tec/backend/report"
	"tec/contraction"
	"tec/gpu"
	"tec/internal/numeric"
	"tec/lang"
	"tec/pipeline"
	"tec/precision"
	"tec/schedule"
	"tec/te"
)

// maskedPrograms are contractions under a select on their output indexes
// (issue 11, item 4), at sizes where the tiles of every level straddle the
// mask's boundary: each stays a tiled contraction, with the select in its
// epilogue, and skips the tiles its mask removes.
var maskedPrograms = []struct {
	name    string
	src     string
	defines map[string]string
	// masked names the masked contraction, exact whether it must skip
	// every tile none of whose outputs uses the products (its mask's
	// bounds are exact), and flopFree whether its epilogue does no
	// arithmetic (see checkMasked).
	masked          string
	exact, flopFree bool
}{
	{"gpt2-block", "", map[string]string{"S": "37", "D": "16", "NH": "2", "FF": "32"}, "a/causal_attention/sc", true, false},
	{"causal", causalSrc, nil, "sc", true, false},
	{"causal/S=64", causalSrc, map[string]string{"S": "64"}, "sc", true, false},
	{"causal-else", causalElseSrc, nil, "sc", true, true},
	{"sliding-window", windowSrc, nil, "sc", true, true},
	{"padding", paddingSrc, nil, "sc", true, false},
	{"mask-input", maskInputSrc, nil, "sc", false, true},
	{"flat-rows", flatRowsSrc, nil, "y", true, true},
}

// causalSrc is causal self-attention's scores and softmax, the mask a
// select around the contraction, scaled inside the select.
const causalSrc = `
const S = 45
const E = 8
model m {
  input q: f32[3, S, E]
  input k: f32[3, S, E]
  sc[h, i, j] = select(j <= i, sum[e](q[h, i, e] * k[h, j, e]) * 0.35, -1e30)
  mx[h, i] = max[j](sc[h, i, j])
  p[h, i, j] = exp(sc[h, i, j] - mx[h, i])
  output p
}
`

// causalElseSrc has the contraction in the select's else branch.
const causalElseSrc = `
const S = 41
model m {
  input q: f32[2, S, 8]
  input k: f32[2, S, 8]
  sc[h, i, j] = select(j > i, -1e30, sum[e](q[h, i, e] * k[h, j, e]))
  output sc
}
`

// windowSrc is local attention: a conjunction that removes the tiles on
// both sides of a band.
const windowSrc = `
const S = 70
const W = 9
model m {
  input q: f32[2, S, 8]
  input k: f32[2, S, 8]
  sc[h, i, j] = select(j <= i && i - j < W, sum[e](q[h, i, e] * k[h, j, e]), 0.0)
  output sc
}
`

// paddingSrc masks the keys past a constant length, and adds a bias read
// at the output indexes in the epilogue.
const paddingSrc = `
const S = 50
const LEN = 19
model m {
  input q: f32[2, S, 8]
  input k: f32[2, S, 8]
  input bias: f32[S, S]
  sc[h, i, j] = select(j < LEN, sum[e](q[h, i, e] * k[h, j, e]) + bias[i, j], -1e30)
  output sc
}
`

// maskInputSrc reads its mask from an input at the output indexes: an
// epilogue that no tile can decide.
const maskInputSrc = `
const S = 33
model m {
  input q: f32[2, S, 8]
  input k: f32[2, S, 8]
  input keep: f32[S, S]
  sc[h, i, j] = select(keep[i, j] > 0.0, sum[e](q[h, i, e] * k[h, j, e]), -1e30)
  output sc
}
`

// flatRowsSrc masks a contraction whose M axes are two (b and i), so that
// the tiles' rows cross from one b to the next.
const flatRowsSrc = `
const S = 21
model m {
  input x: f32[3, S, 16]
  param w: f32[16, S]
  y[b, i, n] = select(n <= i || b == 2, sum[c](x[b, i, c] * w[c, n]), 0.0)
  output y
}
`

// tolPrecision are the tolerances of the masked programs against the
// reference of the program the precision pass transformed, which rounds
// at the same points: a value rounded to half (or a contraction's operand
// to TF32) may still round to the neighbouring value where the f32 and
// float64 results straddle a rounding boundary, and later stages carry
// and amplify that unit: the GPT-2 block's layernorms and softmax turn one
// TF32 unit (2^-11) into 2·10^-2 relative near an output's zero crossing.
// The bounds are eight units of the type times that amplification.
var tolPrecision = map[precision.Mode]numeric.Tolerance{
	precision.F16:  {Rtol: 8.0 / 1024, Atol: 1e-2},
	precision.BF16: {Rtol: 8.0 / 128, Atol: 6e-2},
	precision.TF32: {Rtol: 8.0 / 2048, Atol: 1e-2},
}

// TestMaskedContractions builds every program of maskedPrograms at every
// level on the A100, H100 and small GPU models (and at -O0 and -O4 at each
// half precision, against the reference of the transformed program) and
// checks, simulated with
// race detection, its outputs against the reference evaluator, the static
// report's counts against the simulator's, that the masked contraction is
// a tiled contraction in the plan, and that the tiles the plan says its
// mask skips are the ones the kernel skips: the report's FLOPs of the
// stage are the plan's unmasked ones less those of the skipped tiles.
func TestMaskedContractions(t *testing.T) {
	gpt2, err := os.ReadFile("testdata/gpt2_block.te")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range maskedPrograms {
		src := []byte(tt.src)
		if tt.src == "" {
			src = gpt2
		}
		p, diags := lang.Check(tt.name+".te", src, lang.Config{Defines: tt.defines})
		if diags.HasErrors() {
			t.Fatalf("%s: lang.Check:\n%v", tt.name, diags.Error())
		}
		in := feeds(p, 1)
		want, err := te.Evaluate(p, in, te.EvalOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, gpuName := range []string{"a100", "h100", "small"} {
			for level := 0; level <= pipeline.MaxLevel; level++ {
				if level < 3 && gpuName != "a100" {
					continue
				}
				t.Run(fmt.Sprintf("%s/%s/O%d", tt.name, gpuName, level), func(t *testing.T) {
					t.Parallel()
					g, _ := gpu.Builtin(gpuName)
					res, out := buildAndCompare(t, p, pipeline.Options{Level: level, GPU: g}, in, want, tolModel)
					rep := report.Module(res.Module, report.Config{ResidentBlocks: resident})
					for i, k := range rep.Kernels {
						if got := out.Kernels[i].Counts; !k.Exact || k.Counts != got {
							t.Errorf("kernel %s: report (exact %v) %v\nsimulator %v", k.Name, k.Exact, k.Counts, got)
						}
					}
					checkMasked(t, res, rep, tt.masked, tt.exact, tt.flopFree)
				})
			}
		}
		for _, m := range []precision.Mode{precision.F16, precision.BF16, precision.TF32} {
			q := precision.Apply(p, m)
			qin := numeric.ConformFeeds(in, q)
			ref, err := te.Evaluate(q, qin, te.EvalOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, level := range []int{0, 4} {
				t.Run(fmt.Sprintf("%s/%s/O%d", tt.name, m, level), func(t *testing.T) {
					t.Parallel()
					g, _ := gpu.Builtin("a100")
					buildAndCompare(t, p, pipeline.Options{Level: level, GPU: g, Precision: m}, qin, ref, tolPrecision[m])
				})
			}
		}
	}
}

// checkMasked checks that the stage named name is a contraction in res's
// plan that skips only tiles none of whose outputs uses the products, and
// all of them if exact. If flopFree (the select's other branch
// and the epilogue do no arithmetic), it also checks that a kernel of
// that stage alone does the products of exactly the tiles the plan does
// not skip: 2 FLOPs per thread of a tile per k of the staged range.
func checkMasked(t *testing.T, res *pipeline.Result, rep *report.Report, name string, exact, flopFree bool) {
	t.Helper()
	u := res.Plan.Program.Lookup(name)
	if u == nil {
		t.Fatalf("no tensor %s in the plan's program", name)
	}
	s := res.Plan.Schedules[u]
	if s.Kind != schedule.Contraction {
		t.Fatalf("%s is a %s stage, not a contraction", name, s.Kind)
	}
	d, _ := contraction.Of(u)
	if dead := deadTiles(s, d); s.Skipped > dead || exact && s.Skipped != dead {
		t.Fatalf("%s skips %d of %d tiles; %d have no output point that uses the products", name, s.Skipped, s.Tiles, dead)
	}
	if !flopFree {
		return
	}
	for i, k := range res.Module.Kernels {
		var stages []string
		for _, st := range k.Body {
			if st, ok := st.(*kir.Stage); ok {
				stages = append(stages, st.Name)
			}
		}
		if len(stages) != 1 || stages[0] != name {
			continue
		}
		kpad := (s.K + s.TileK - 1) / s.TileK * s.TileK
		want := int64(s.Tiles-s.Skipped) * 2 * int64(s.TileM*s.TileN*kpad)
		if got := rep.Kernels[i].FLOPs; got != want {
			t.Errorf("kernel %s does %d FLOPs; the %d tiles the plan does not skip, %d", k.Name, got, s.Tiles-s.Skipped, want)
		}
		return
	}
	t.Errorf("no kernel of stage %s alone", name)
}

// deadTiles counts the tiles of the contraction d, tiled as s says, none
// of whose output points use the products, by evaluating the guards at
// every point.
func deadTiles(s *schedule.Schedule, d contraction.Dims) int {
	val := map[*te.Var]int{}
	at := func(v *te.Var) int { return val[v] }
	set := func(axes []*te.Var, flat int) {
		for i := len(axes) - 1; i >= 0; i-- {
			val[axes[i]] = flat % axes[i].Extent
			flat /= axes[i].Extent
		}
	}
	live := func() bool {
		for _, g := range d.Guards {
			if evalCond(g.Cond, at) != g.Want {
				return false
			}
		}
		return true
	}
	mt, nt := (s.M+s.TileM-1)/s.TileM, (s.N+s.TileN-1)/s.TileN
	dead := 0
	for b := range s.Batch {
		for mi := range mt {
			for ni := range nt {
				used := false
				for m := mi * s.TileM; m < min(s.M, (mi+1)*s.TileM) && !used; m++ {
					for n := ni * s.TileN; n < min(s.N, (ni+1)*s.TileN) && !used; n++ {
						set(d.BatchAxes, b)
						set(d.MAxes, m)
						set(d.NAxes, n)
						used = live()
					}
				}
				if !used {
					dead++
				}
			}
		}
	}
	return dead
}

// evalCond evaluates an index-only condition.
func evalCond(c te.Expr, val func(*te.Var) int) bool { return evalIndexValue(c, val) != 0 }

func evalIndexValue(e te.Expr, val func(*te.Var) int) int {
	b2i := func(b bool) int {
		if b {
			return 1
		}
		return 0
	}
	switch x := e.(type) {
	case *te.ConstExpr:
		return int(x.Value)
	case *te.IndexExpr:
		return x.Index.Eval(val)
	case *te.Unary:
		if x.Op == te.Not {
			return 1 - evalIndexValue(x.X, val)
		}
	case *te.Binary:
		a, b := evalIndexValue(x.X, val), evalIndexValue(x.Y, val)
		switch x.Op {
		case te.And:
			return b2i(a != 0 && b != 0)
		case te.Or:
			return b2i(a != 0 || b != 0)
		case te.Lt:
			return b2i(a < b)
		case te.Le:
			return b2i(a <= b)
		case te.Gt:
			return b2i(a > b)
		case te.Ge:
			return b2i(a >= b)
		case te.Eq:
			return b2i(a == b)
		case te.Ne:
			return b2i(a != b)
		case te.Add:
			return a + b
		case te.Sub:
			return a - b
		case te.Mul:
			return a * b
		}
	}
	panic(fmt.Sprintf("evalIndexValue: %s", te.FormatExpr(e)))
}

// TestMaskedWork checks that the static report (tec build --report) shows
// causal scores doing about half the work of unmasked ones: at 256
// positions in 16×16 tiles, the 136 tiles of 256 on and below the
// diagonal compute products, so the masked kernel's FLOPs and loads are
// 136/256 of the unmasked one's, with the epilogue's few more.
func TestMaskedWork(t *testing.T) {
	const src = `
const S = 256
model m {
  input q: f32[2, S, 32]
  input k: f32[2, S, 32]
  sc[h, i, j] = select(MASKED == 0 || j <= i, sum[e](q[h, i, e] * k[h, j, e]), -1e30)
  output sc
}
`
	work := func(masked string) report.Kernel {
		p, diags := lang.Check("work.te", []byte("const MASKED = "+masked+"\n"+src), lang.Config{})
		if diags.HasErrors() {
			t.Fatalf("lang.Check:\n%v", diags.Error())
		}
		g, _ := gpu.Builtin("a100")
		res, err := pipeline.Build(p, pipeline.Options{Level: 0, GPU: g})
		if err != nil {
			t.Fatal(err)
		}
		rep := report.Module(res.Module, report.Config{ResidentBlocks: resident})
		if len(rep.Kernels) != 1 || !rep.Exact {
			t.Fatalf("%d kernels, exact %v", len(rep.Kernels), rep.Exact)
		}
		return rep.Kernels[0]
	}
	m, u := work("1"), work("0")
	for _, c := range []struct {
		what   string
		m, u   int64
		lo, hi float64
	}{
		{"FLOPs", m.FLOPs, u.FLOPs, 0.53, 0.54},
		{"loaded bytes", m.LoadBytes, u.LoadBytes, 0.53, 0.54},
	} {
		if r := float64(c.m) / float64(c.u); r < c.lo || r > c.hi {
			t.Errorf("masked %s %d are %.4f of the unmasked %d, want 136/256 = 0.531 and a little more", c.what, c.m, r, c.u)
		}
	}
}
