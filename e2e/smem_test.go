package e2e

import (
	"fmt"
	"testing"

	"tec/examples"
	"tec/gpu"
	"tec/lang"
	"tec/pipeline"
	"tec/precision"
	"tec/te"
)

// smallSharedGPU is a valid GPU description of the least shared memory
// per block that docs/gpu.md allows (16 KiB) and 192-thread blocks, on
// which the plan's shared-memory figures decide whether a build fits.
func smallSharedGPU() gpu.Model { return smallShared(192) }

// smallShared is smallSharedGPU with blocks of threads threads.
func smallShared(threads int) gpu.Model {
	g, _ := gpu.Builtin("a100")
	g.Name = fmt.Sprintf("small16-%d", threads)
	g.SMs = 7
	g.SharedPerSM, g.SharedPerBlock = 16<<10, 16<<10
	g.MaxThreadsPerSM, g.MaxThreadsPerBlock = threads, threads
	return g
}

// TestPlanSharedBytes checks that every fused kernel's shared memory, as
// its plan counts it (the figure occupancy and the cost model use), is
// what the lowering declares: every example at its tiny configuration,
// at -O3 and -O4, on the A100 and on a 16 KiB-per-block GPU.
func TestPlanSharedBytes(t *testing.T) {
	a100, _ := gpu.Builtin("a100")
	for _, ex := range examples.All() {
		p, diags := lang.Check(ex.File(), ex.Source(), lang.Config{Defines: ex.Tiny, Model: ex.Model})
		if diags.HasErrors() {
			t.Fatalf("%s: lang.Check:\n%v", ex.Name, diags.Error())
		}
		for _, g := range []gpu.Model{a100, smallSharedGPU()} {
			for level := 3; level <= pipeline.MaxLevel; level++ {
				for _, prec := range []precision.Mode{precision.F32, precision.TF32, precision.F16} {
					t.Run(fmt.Sprintf("%s/%s/O%d/%s", ex.Name, g.Name, level, prec), func(t *testing.T) {
						res, err := pipeline.Build(p, pipeline.Options{Level: level, GPU: g, Precision: prec})
						if err != nil {
							t.Fatal(err)
						}
						planCountsShared(t, res)
					})
				}
			}
		}
	}
}

// planCountsShared checks that each kernel of res declares the shared
// memory its plan counted.
func planCountsShared(t *testing.T, res *pipeline.Result) {
	t.Helper()
	for i, pk := range res.Plan.Kernels {
		k := res.Module.Kernels[i]
		if got, want := k.SharedBytes(), int64(pk.Resources.SharedBytes); got != want {
			t.Errorf("kernel %s: %d B of shared memory declared, %d B planned", k.Name, got, want)
		}
	}
}

// TestSharedFits checks the programs of issue 23 whose fused kernels
// declared more shared memory than their plans counted (the largest size
// of each array across the stages, maxima from different stages), or that
// had no tile that fit: each builds where it failed, declares what its
// plan counts and, where small enough to simulate, computes the
// reference's result without races.
func TestSharedFits(t *testing.T) {
	const scores = `model m {
  input pos: i32[4]
  input x: f32[4, 512]
  input kc: f32[4, 2, 512, 64]
  param w: f32[512, 128]
  q[b, h, e] = sum[f](x[b, f] * w[f, h * 64 + e]) where b in 0..4, h in 0..2, e in 0..64
  sc[b, h, t] = select(t <= pos[b], sum[e](q[b, h, e] * kc[b, h, t, e]), -inf) where b in 0..4, h in 0..2, t in 0..512
  output sc
}
`
	const argmax = `model m {
  input x: f32[8, 1000]
  a[i] = argmax[k](x[i, k]) where i in 0..8
  output a
}
`
	// A masked contraction with no fallback tile on a 16 KiB, 256-thread
	// GPU: its 1×256 tile staged 16 of K at a time took 16448 B.
	const masked = `model m {
  input pos: i32[1]
  input q: f32[1, 64]
  input kc: f32[1, 200, 64]
  sc[b, t] = select(t <= pos[b], sum[e](q[b, e] * kc[b, t, e]), -inf) where b in 0..1, t in 0..200
  output sc
}
`
	// A contraction with a reduction nested in a factor, not a
	// matrix-vector product: lowered a block per output.
	const nested = `model m {
  input x: f32[64, 64]
  input w: f32[64, 64]
  input s: f32[32]
  y[i, j] = sum[k](x[i, k] * (w[k, j] / sum[m](s[m]))) where i in 0..64, j in 0..64
  output y
}
`
	a100, _ := gpu.Builtin("a100")
	llama := examples.Example{Name: "llama/decode"}
	for _, tt := range []struct {
		name     string
		file     string
		src      []byte
		model    string
		defines  map[string]string
		gpu      gpu.Model
		level    int
		simulate bool
	}{
		{"scores/a100", "scores.te", []byte(scores), "", nil, a100, 3, true},
		{"scores/small16", "scores.te", []byte(scores), "", nil, smallSharedGPU(), 3, true},
		{"scores/small16/O4", "scores.te", []byte(scores), "", nil, smallSharedGPU(), 4, false},
		{"argmax/a100", "argmax.te", []byte(argmax), "", nil, a100, 3, true},
		{"nested/a100", "nested.te", []byte(nested), "", nil, a100, 3, true},
		{"masked/small16-256/O3", "masked.te", []byte(masked), "", nil, smallShared(256), 3, true},
		{"masked/small16-256/O4", "masked.te", []byte(masked), "", nil, smallShared(256), 4, true},
		{"llama-decode/small16", llama.File(), llama.Source(), "decode", map[string]string{
			"B": "4", "T": "512", "L": "1", "D": "256", "NH": "4", "NKV": "2", "FF": "512", "V": "64",
		}, smallSharedGPU(), 4, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, diags := lang.Check(tt.file, tt.src, lang.Config{Defines: tt.defines, Model: tt.model})
			if diags.HasErrors() {
				t.Fatalf("lang.Check:\n%v", diags.Error())
			}
			res, err := pipeline.Build(p, pipeline.Options{Level: tt.level, GPU: tt.gpu})
			if err != nil {
				t.Fatal(err)
			}
			planCountsShared(t, res)
			if !tt.simulate {
				return
			}
			in := feeds(p, 1)
			want, err := te.Evaluate(p, in, te.EvalOptions{})
			if err != nil {
				t.Fatal(err)
			}
			simulateAndCompare(t, p, res.Module, in, want, tolModel)
		})
	}
}
