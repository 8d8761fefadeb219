package lower_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"tec/internal/numeric"
	tb "tec/internal/testkit/tebuild"
	"tec/precision"
	"tec/te"
	"tec/transform"
)

// decodeAttention is the attention of a decode step of batch b as
// examples/llama.te writes it: nh query heads of dh, g = nh/nkv of them
// sharing each key/value head, over a cache of t positions, the new key
// at pos[b] and the positions after it masked.
func decodeAttention(batch, nh, nkv, dh, t int) *te.Program {
	g := nh / nkv
	b := tb.New("attention")
	pos := b.InputOf("pos", te.I32, batch)
	q, k := b.Input("q", batch, nh, dh), b.Input("k", batch, nkv, dh)
	kc, vc := b.Input("kc", batch, nkv, t, dh), b.Input("vc", batch, nkv, t, dh)
	at := func(x te.Index) te.Expr { return tb.Ld(pos, x) }
	sc := b.Compute("sc", tb.Shape(batch, nh, t), func(ax []te.Index) te.Expr {
		bi, n, p := ax[0], ax[1], ax[2]
		dot := tb.Reduce(te.Sum, "e", dh, func(e te.Index) te.Expr {
			key := tb.Sel(tb.Bin(te.Eq, tb.Idx(p), at(bi)), tb.Ld(k, bi, n.Div(g), e), tb.Ld(kc, bi, n.Div(g), p, e))
			return tb.Bin(te.Mul, tb.Ld(q, bi, n, e), key)
		})
		return tb.Sel(tb.Bin(te.Le, tb.Idx(p), at(bi)), tb.Bin(te.Mul, dot, tb.F(0.125)), tb.F(math.Inf(-1)))
	})
	mx := b.Compute("mx", tb.Shape(batch, nh), func(ax []te.Index) te.Expr {
		return tb.Reduce(te.ReduceMax, "t", t, func(p te.Index) te.Expr { return tb.Ld(sc, ax[0], ax[1], p) })
	})
	pr := func(bi, n, p te.Index) te.Expr {
		return tb.Un(te.Exp, tb.Bin(te.Sub, tb.Ld(sc, bi, n, p), tb.Ld(mx, bi, n)))
	}
	den := b.Compute("den", tb.Shape(batch, nh), func(ax []te.Index) te.Expr {
		return tb.Reduce(te.Sum, "t", t, func(p te.Index) te.Expr { return pr(ax[0], ax[1], p) })
	})
	ctx := b.Compute("ctx", tb.Shape(batch, nh, dh), func(ax []te.Index) te.Expr {
		bi, n, e := ax[0], ax[1], ax[2]
		return tb.Bin(te.Div, tb.Reduce(te.Sum, "t", t, func(p te.Index) te.Expr {
			return tb.Bin(te.Mul, pr(bi, n, p), tb.Ld(vc, bi, n.Div(g), p, e))
		}), tb.Ld(den, bi, n))
	})
	return b.Program(ctx)
}

// TestGroupedScores lowers a decode step's grouped-query attention with
// the query heads of each key head made the rows of the scores' and the
// context's tiles (transform.GroupRows): the scores are a matrix-vector
// tile of G rows whose column's threads are consecutive lanes of a warp
// (schedule.MatVec.KLanes), each key, the new one or the cache's, read
// 16 bytes at a time once for the G heads, and their sums combined by
// shuffles, G of them a lane; the context's G rows of probabilities,
// computed as bf16 or f16 vectors of 8 and staged as f32 words, two
// 16-byte stores a lane, are stored rotated (storeRotated), which would
// otherwise put a phase's lanes two to a bank. The module computes the
// reference's answer, race-free, its shared memory read and written
// without a bank conflict, for groups of 2, 4 and 8 heads, in f32, f16
// and bf16, on the H100 and A100 models, with every position live and
// with the second sequence's past a third of them (its tiles there
// skipped, its last staged vectors partly past the mask).
func TestGroupedScores(t *testing.T) {
	for _, tc := range []struct {
		nh, nkv, dh, t int
		mode           precision.Mode
		gpu            string
	}{
		{8, 2, 64, 256, precision.BF16, "h100"},
		{8, 4, 64, 128, precision.F32, "a100"},
		{8, 1, 64, 128, precision.BF16, "h100"},
		{16, 4, 32, 64, precision.F16, "a100"},
	} {
		g := tc.nh / tc.nkv
		t.Run(fmt.Sprintf("%d heads of %d, %s, %s", g, tc.dh, tc.mode, tc.gpu), func(t *testing.T) {
			p := precision.Apply(decodeAttention(2, tc.nh, tc.nkv, tc.dh, tc.t), tc.mode)
			p = transform.GroupRows(p, func(u *te.Tensor) bool { return u.Name == "sc" || u.Name == "ctx" })
			sc := p.Lookup("sc")
			if fmt.Sprint(sc.Shape) != fmt.Sprint([]int{2, tc.nkv, g, tc.t}) {
				t.Fatalf("sc of shape %v: not grouped", sc.Shape)
			}
			m, pl := fusedModule(t, p, tc.gpu, false)
			s := pl.Schedules[sc]
			if mv := s.MatVec; mv == nil || !mv.KLanes || mv.Vec == 0 || s.TileM != g {
				t.Fatalf("sc is not a matrix-vector tile of %d rows on a warp's lanes with vector loads: %s\n%s", g, s, pl)
			}
			tol := numeric.Tolerance{Rtol: 1e-4, Atol: 1e-5}
			if tc.mode != precision.F32 {
				tol = numeric.Tolerance{Rtol: 2e-2, Atol: 2e-2}
			}
			for _, pos := range [][]float64{{float64(tc.t - 1), float64(tc.t - 1)}, {float64(tc.t - 1), float64(tc.t / 3)}} {
				in := randomFeeds(p)
				copy(in["pos"].Data, pos)
				want, res := runRaceFree(t, p, m, in)
				for i, k := range m.Kernels {
					for name, b := range res.Kernels[i].ArrayBanks {
						if b.Conflicts != 0 {
							t.Errorf("kernel %s, shared %s: %d bank conflicts in %d wavefronts", k.Name, name, b.Conflicts, b.Wavefronts)
						}
					}
				}
				mm, err := numeric.Compare(res.Outputs["ctx"], want["ctx"], tol)
				if err != nil || mm != nil {
					t.Errorf("pos %v: ctx: %v %v", pos, err, mm)
				}
			}
		})
	}
}

// TestGroupedScoresRandom lowers the grouped attention of random shapes
// (batch, key/value heads, heads a group, head size, cache, precision,
// GPU) at random positions, and checks the module against the reference,
// race-free.
func TestGroupedScoresRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 20))
	modes := []precision.Mode{precision.F32, precision.BF16, precision.F16}
	gpus := []string{"h100", "a100", "t4"}
	for range 16 {
		batch, nkv, g := 1+rng.IntN(3), 1+rng.IntN(2), []int{2, 4, 8}[rng.IntN(3)]
		dh, tt := []int{8, 12, 32, 64}[rng.IntN(4)], []int{16, 40, 96}[rng.IntN(3)]
		mode, gpuName := modes[rng.IntN(len(modes))], gpus[rng.IntN(len(gpus))]
		if mode == precision.BF16 && gpuName == "t4" {
			mode = precision.F16 // sm_75 has no bf16 arithmetic
		}
		name := fmt.Sprintf("B=%d NKV=%d G=%d DH=%d T=%d %s %s", batch, nkv, g, dh, tt, mode, gpuName)
		t.Run(name, func(t *testing.T) {
			p := precision.Apply(decodeAttention(batch, nkv*g, nkv, dh, tt), mode)
			p = transform.GroupRows(p, func(u *te.Tensor) bool { return u.Name == "sc" || u.Name == "ctx" })
			m, _ := fusedModule(t, p, gpuName, false)
			in := randomFeeds(p)
			for j := range in["pos"].Data {
				in["pos"].Data[j] = float64(rng.IntN(tt))
			}
			want, res := runRaceFree(t, p, m, in)
			tol := numeric.Tolerance{Rtol: 1e-4, Atol: 1e-5}
			if mode != precision.F32 {
				tol = numeric.Tolerance{Rtol: 2e-2, Atol: 2e-2}
			}
			if mm, err := numeric.Compare(res.Outputs["ctx"], want["ctx"], tol); err != nil || mm != nil {
				t.Errorf("ctx: %v %v", err, mm)
			}
		})
	}
}
