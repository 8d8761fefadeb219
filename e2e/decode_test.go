package e2e

import (
	"fmt"
	"slices"
	"testing"

	"tec/backend/kir"
	"tec/gpu"
	"tec/internal/numeric"
	"tec/lang"
	"tec/pipeline"
	"tec/schedule"
	"tec/te"
)

// decodeSkipSource is a decode step of single-head attention over a cache
// of T positions whose scores s are a masked contraction on the run-time
// positions pos[b] (flop-free: no scale in the epilogue, so that a kernel
// of s alone does exactly the products of the tiles it does not skip).
const decodeSkipSource = `
const B = 4
const T = 1024
const D = 16

model decode {
  input pos: i32[B]
  input x: f32[B, D]
  input kc: f32[B, T, D]
  input vc: f32[B, T, D]
  param wq: f32[D, D]
  param wk: f32[D, D]
  param wv: f32[D, D]
  q[b, e] = sum[d](x[b, d] * wq[d, e]) * 0.25
  knew[b, e] = sum[d](x[b, d] * wk[d, e])
  vnew[b, e] = sum[d](x[b, d] * wv[d, e])
  k[b, t, e] = select(t == pos[b], knew[b, e], kc[b, t, e]) where t in 0..T
  v[b, t, e] = select(t == pos[b], vnew[b, e], vc[b, t, e]) where t in 0..T
  s[b, t] = select(t <= pos[b], sum[e](q[b, e] * k[b, t, e]), -inf)
  m[b] = max[t](s[b, t])
  p[b, t] = exp(s[b, t] - m[b])
  o[b, e] = sum[t](p[b, t] * v[b, t, e]) / sum[t](p[b, t])
  update kc[b, pos[b], e] = knew[b, e]
  update vc[b, pos[b], e] = vnew[b, e]
  output o
}
`

// TestDecodeSkipsTiles runs a decode step whose attention scores are
// masked by the run-time positions, at every level in the simulator
// (race-free, against the reference) for positions at the first, a
// middle and the last slot and mixed per sequence, and checks that the
// work past pos is skipped at run time. In the persistent kernel of -O3
// and -O4 the scores are a contraction in tiles (of matrix-vector
// products, a query a sequence): the step does fewer FLOPs than with
// every position at the last slot by the work of exactly the tiles that a
// brute-force count finds wholly past pos[b]. At -O0 to
// -O2 the scores (one row per sequence) are a kernel of their own that
// computes each point's sum only at or before pos[b].
func TestDecodeSkipsTiles(t *testing.T) {
	p, diags := lang.Check("decode.te", []byte(decodeSkipSource), lang.Config{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	g, _ := gpu.Builtin("a100")
	last := []float64{1023, 1023, 1023, 1023}
	// each level's FLOPs (of the step at -O3 and -O4, of s below) with
	// every position at the last slot
	full := map[int]int64{}
	// each level's FLOPs saved per matrix-vector tile skipped
	perTile := map[int]int64{}
	for _, pos := range [][]float64{last, {0, 0, 0, 0}, {511, 512, 513, 256}, {1023, 0, 300, 700}} {
		in := numeric.SeededFeeds(p, 7)
		copy(in["pos"].Data, pos)
		want, err := te.Evaluate(p, in, te.EvalOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for level := 0; level <= pipeline.MaxLevel; level++ {
			t.Run(fmt.Sprintf("pos%v/O%d", pos, level), func(t *testing.T) {
				res, out := buildAndCompare(t, p, pipeline.Options{Level: level, GPU: g}, in, want, tolModel)
				s := res.Plan.Schedules[res.Plan.Program.Lookup("s")]
				if s.Kind != schedule.Contraction || s.Mask == nil || len(s.Mask.Scalars) != 1 {
					t.Fatalf("s: %s; want a contraction masked by the run-time pos", s)
				}
				if level < 3 {
					for i, k := range res.Module.Kernels {
						if !onlyStage(k, "s") {
							continue
						}
						got := out.Kernels[i].FLOPs
						if slices.Equal(pos, last) {
							full[level] = got
						} else if want := full[level] / livePoints(last, 1024) * livePoints(pos, 1024); got != want {
							t.Errorf("kernel %s does %d FLOPs; the sums at or before pos, %d", k.Name, got, want)
						}
					}
					return
				}
				if len(res.Module.Kernels) != 1 {
					t.Fatalf("%d kernels, want 1", len(res.Module.Kernels))
				}
				flops := out.Total().FLOPs
				if slices.Equal(pos, last) {
					full[level] = flops
					return
				}
				// The products of a tile; a skipped tile also leaves out a
				// few other operations (less than a tile's products), so
				// that the FLOPs saved count the tiles skipped exactly.
				kpad := (s.K + s.TileK - 1) / s.TileK * s.TileK
				tile := 2 * int64(s.TileM*s.TileN*kpad)
				dead := liveTiles(s, last) - liveTiles(s, pos)
				if dead == 0 {
					t.Fatalf("no tile wholly past pos %v: the test needs some", pos)
				}
				// The value side skips too (contraction.ZeroPast): each
				// output o[b, e] sums no terms past pos[b], 7 FLOPs per
				// t for each of its D = 16 columns (the numerator's
				// s - m, exp, product and add; the denominator's s - m,
				// exp and add).
				values := 16 * 7 * (livePoints(last, 1024) - livePoints(pos, 1024))
				got := full[level] - flops - values
				if s.MatVec == nil {
					if got/tile != int64(dead) {
						t.Errorf("%d FLOPs fewer than at the last slot, %d tiles' products; the tiles wholly past pos (of %d): %d", got, got/tile, s.Tiles, dead)
					}
					return
				}
				// A matrix-vector tile skipped also leaves out the
				// combining of its columns' split sums: every dead tile
				// saves the same FLOPs, at least its products.
				if got%int64(dead) != 0 || got/int64(dead) < tile {
					t.Errorf("%d FLOPs fewer than at the last slot for %d tiles wholly past pos (of %d): not the same whole number for each, of at least its %d products", got, dead, s.Tiles, tile)
				}
				if per, ok := perTile[level]; ok && per != got/int64(dead) {
					t.Errorf("%d FLOPs fewer a tile past pos, %d at other positions", got/int64(dead), per)
				}
				perTile[level] = got / int64(dead)
			})
		}
	}
}

// livePoints counts the points t < n at or before pos[b] of every b.
func livePoints(pos []float64, n int) int64 {
	var k int64
	for _, p := range pos {
		k += int64(min(int(p)+1, n))
	}
	return k
}

// onlyStage reports whether kernel k computes stage name alone.
func onlyStage(k *kir.Kernel, name string) bool {
	var stages []string
	for _, st := range k.Body {
		if st, ok := st.(*kir.Stage); ok {
			stages = append(stages, st.Name)
		}
	}
	return len(stages) == 1 && stages[0] == name
}

// liveTiles counts, point by point, the tiles of s[b, t] (batch b, N = t,
// tiled by s's TileN) with some t <= pos[b].
func liveTiles(s *schedule.Schedule, pos []float64) int {
	live := 0
	for b := range s.Batch {
		for n0 := 0; n0 < s.N; n0 += s.TileN {
			for t := n0; t < min(n0+s.TileN, s.N); t++ {
				if t <= int(pos[b]) {
					live++
					break
				}
			}
		}
	}
	return live
}
