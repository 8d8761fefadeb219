package e2e

import (
	"fmt"
	"strings"
	"testing"

	"tec/backend/sim"
	"tec/gpu"
	"tec/internal/numeric"
	"tec/lang"
	"tec/pipeline"
	"tec/te"
)

// decodeSource is one decode step of single-head attention over a key and
// value cache: the new key and value of position pos[b] are appended to
// the caches in place (update), and the query attends to positions
// 0..pos[b], the new one read from knew/vnew since reads of the caches see
// the values before the step.
const decodeSource = `
const B = %d
const T = 8
const D = 16

model decode {
  input pos: i32[B]
  input x: f32[B, D]
  input kc: f32[B, T, D]
  input vc: f32[B, T, D]
  param wq: f32[D, D]
  param wk: f32[D, D]
  param wv: f32[D, D]
  q[b, e] = sum[d](x[b, d] * wq[d, e])
  knew[b, e] = sum[d](x[b, d] * wk[d, e]) * cos(f32(pos[b]) * 0.1)
  vnew[b, e] = sum[d](x[b, d] * wv[d, e])
  k[b, t, e] = select(t == pos[b], knew[b, e], kc[b, t, e]) where t in 0..T
  v[b, t, e] = select(t == pos[b], vnew[b, e], vc[b, t, e]) where t in 0..T
  s[b, t] = select(t <= pos[b], sum[e](q[b, e] * k[b, t, e]) * 0.25, -inf)
  m[b] = max[t](s[b, t])
  p[b, t] = exp(s[b, t] - m[b])
  o[b, e] = sum[t](p[b, t] * v[b, t, e]) / sum[t](p[b, t])
  update kc[b, pos[b], e] = knew[b, e]
  update vc[b, pos[b], e] = vnew[b, e]
  output o, knew, vnew
}
`

// TestDecodeUpdate appends to a cache in place and attends up to the new
// position, for B = 1 and 4 and positions at the first, a middle and the
// last slot: the reference changes exactly the slots written, the
// simulator agrees with it at every level without a race, the persistent
// kernel of -O3 and -O4 writes the updates itself, and a position past the
// cache is an error on both.
func TestDecodeUpdate(t *testing.T) {
	g, _ := gpu.Builtin("a100")
	for _, b := range []int{1, 4} {
		p, diags := lang.Check("decode.te", []byte(fmt.Sprintf(decodeSource, b)), lang.Config{})
		if diags.HasErrors() {
			t.Fatal(diags.Error())
		}
		for _, pos := range [][]float64{{0, 0, 0, 0}, {3, 4, 5, 2}, {7, 7, 7, 7}, {7, 0, 4, 1}} {
			in := numeric.SeededFeeds(p, 5)
			copy(in["pos"].Data, pos[:b])
			want, err := te.Evaluate(p, in, te.EvalOptions{})
			if err != nil {
				t.Fatal(err)
			}
			checkSlots(t, in, want, "kc", "knew", b)
			checkSlots(t, in, want, "vc", "vnew", b)
			for level := 0; level <= pipeline.MaxLevel; level++ {
				t.Run(fmt.Sprintf("B%d/pos%v/O%d", b, pos[:b], level), func(t *testing.T) {
					buildAndCompare(t, p, pipeline.Options{Level: level, GPU: g}, in, want, tolModel)
				})
			}
		}
		// At -O3 and above the step is one persistent kernel, the updates
		// included (after a grid sync), not a kernel of their own.
		for level := 3; level <= pipeline.MaxLevel; level++ {
			res, err := pipeline.Build(p, pipeline.Options{Level: level, GPU: g})
			if err != nil {
				t.Fatal(err)
			}
			if n := len(res.Module.Kernels); n != 1 {
				t.Errorf("B=%d -O%d: %d kernels, want 1", b, level, n)
			}
		}
		bad := numeric.SeededFeeds(p, 5)
		bad["pos"].Data[b-1] = 8
		wantErr := fmt.Sprintf("update index pos[%d] = 8 is outside kc's dimension 1 [0, 8)", b-1)
		if _, err := te.Evaluate(p, bad, te.EvalOptions{}); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("reference with pos past the cache: %v, want %q", err, wantErr)
		}
		for level := 0; level <= pipeline.MaxLevel; level++ {
			res, err := pipeline.Build(p, pipeline.Options{Level: level, GPU: g})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := sim.Run(res.Module, bad, sim.Options{ResidentBlocks: resident}); err == nil || !strings.Contains(err.Error(), wantErr) {
				t.Errorf("B=%d -O%d: simulator with pos past the cache: %v, want %q", b, level, err, wantErr)
			}
		}
	}
}

// checkSlots checks that the reference's updated cache equals the input
// cache except at slot pos[b] of each row b, which holds the new row.
func checkSlots(t *testing.T, in, out map[string]*te.Array, cache, row string, batch int) {
	t.Helper()
	old, got, nu := in[cache], out[cache], out[row]
	tt, d := old.Shape[1], old.Shape[2]
	for b := range batch {
		pos := int(in["pos"].Data[b])
		for s := range tt {
			for e := range d {
				i := (b*tt+s)*d + e
				want := old.Data[i]
				if s == pos {
					want = nu.Data[b*d+e]
				}
				if got.Data[i] != want {
					t.Fatalf("%s[%d, %d, %d] = %g, want %g (pos %d)", cache, b, s, e, got.Data[i], want, pos)
				}
			}
		}
	}
}
