package e2e

import (
	"fmt"
	"testing"

	"tec/gpu"
	"tec/internal/numeric"
	"tec/lang"
	"tec/pipeline"
	"tec/precision"
	"tec/te"
	"tec/transform"
)

// windowAttention is Swin's window attention at a small size: 16 windows
// of 49 positions, 4 heads of 32, a relative-position table read at
// (i - j) and a region mask.
const windowAttention = `
model win {
  input q: f32[16, 4, 49, 32]
  input k: f32[16, 4, 49, 32]
  input v: f32[16, 4, 49, 32]
  param table: f32[97, 4]
  sc[w, h, i, j] = sum[e](q[w, h, i, e] * k[w, h, j, e]) * 0.17677669 + table[i - j + 48, h]
      + select(i / 7 == j / 7, 0.0, -100.0)
    where e in 0..32
  mx[w, h, i] = max[j](sc[w, h, i, j])
  p[w, h, i, j] = exp(sc[w, h, i, j] - mx[w, h, i])
  den[w, h, i] = sum[j](p[w, h, i, j])
  ctx[w, h, i, e] = sum[j](p[w, h, i, j] * v[w, h, j, e]) / den[w, h, i]
    where e in 0..32
  output ctx
}
`

// TestPaddedSoftmax builds a window attention padded from 49 positions to
// 56 (transform.PadSoftmax) at -O4 in f16 and bf16 for the A100, and
// compares the simulator's output (race-free, every load bounds-checked)
// with the half-precision reference of the unpadded program. Padded, the
// weighted sum is a tensor-core stage over K = 56 whose operands are
// staged 16 bytes at a time; unpadded, its weights (rows of 49) are
// staged 2 bytes at a time.
func TestPaddedSoftmax(t *testing.T) {
	g, _ := gpu.Builtin("a100")
	p, diags := lang.Check("win.te", []byte(windowAttention), lang.Config{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	in := feeds(p, 11)
	for _, mode := range []precision.Mode{precision.F16, precision.BF16} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			half := precision.Apply(p, mode)
			hin := numeric.ConformFeeds(in, half)
			want, err := te.Evaluate(half, hin, te.EvalOptions{})
			if err != nil {
				t.Fatal(err)
			}
			padded, sites := transform.PadSoftmax(half, func(*transform.SoftmaxSite) bool { return true })
			if len(sites) != 1 {
				t.Fatalf("%d sites padded; want 1", len(sites))
			}
			opts := pipeline.Options{Level: pipeline.MaxLevel, GPU: g, Precision: mode}
			for _, tc := range []struct {
				prog  *te.Program
				k     int
				width int
			}{{half, 49, 2}, {padded, 56, 16}} {
				res, err := pipeline.Build(tc.prog, opts)
				if err != nil {
					t.Fatal(err)
				}
				k, at := stageOf(res.Plan, "ctx")
				if k == nil {
					t.Fatalf("no stage ctx in\n%s", res.Plan)
				}
				s := res.Plan.Schedules[k.Stages[at]]
				if !s.TensorCores || s.K != tc.k || s.Load.Width != tc.width {
					t.Errorf("K = %d: ctx %s, its loads %d bytes; want K = %d on tensor cores, %d-byte loads", tc.k, s, s.Load.Width, tc.k, tc.width)
				}
				checkHalf(t, res, hin, want, "ctx")
			}
		})
	}
}

// TestPaddedSoftmaxChosen builds an attention over 196 positions (a ViT's
// 14×14 patches) in f16 at -O4, where the pad pass pads it to 200 (the
// cost model's choice), and compares the simulator's output with the
// half-precision reference: the weighted sum a tensor-core stage over K =
// 200 staged 16 bytes at a time.
func TestPaddedSoftmaxChosen(t *testing.T) {
	g, _ := gpu.Builtin("a100")
	p, diags := lang.Check("vit.te", []byte(`
model vit {
  input q: f32[4, 196, 32]
  input k: f32[4, 196, 32]
  input v: f32[4, 196, 32]
  sc[h, i, j] = sum[e](q[h, i, e] * k[h, j, e]) * 0.17677669 where e in 0..32
  mx[h, i] = max[j](sc[h, i, j])
  p[h, i, j] = exp(sc[h, i, j] - mx[h, i])
  den[h, i] = sum[j](p[h, i, j])
  ctx[h, i, e] = sum[j](p[h, i, j] * v[h, j, e]) / den[h, i] where e in 0..32
  output ctx
}
`), lang.Config{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	res, hin, want := buildHalf(t, p, feeds(p, 13), precision.F16, g)
	if len(res.Pads) != 1 || !res.Pads[0].Padded || res.Pads[0].To != 200 {
		t.Fatalf("pad choices %v; want mx's padded to 200", res.Pads)
	}
	k, at := stageOf(res.Plan, "ctx")
	if k == nil {
		t.Fatalf("no stage ctx in\n%s", res.Plan)
	}
	if s := res.Plan.Schedules[k.Stages[at]]; !s.TensorCores || s.K != 200 || s.Load.Width != 16 {
		t.Errorf("ctx %s, its loads %d bytes; want K = 200 on tensor cores, 16-byte loads", s, s.Load.Width)
	}
	checkHalf(t, res, hin, want, "ctx")
}
