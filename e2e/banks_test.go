package e2e

import (
	"fmt"
	"maps"
	"testing"

	"tec/backend/sim"
	"tec/examples"
	"tec/gpu"
	"tec/internal/numeric"
	"tec/lang"
	"tec/pipeline"
	"tec/precision"
	"tec/te"
)

// TestTensorCoreBanks simulates every example at its tiny configuration,
// at every level and at f16 and bf16, against the reference of the
// transformed program, and checks that the half-precision shared arrays,
// which hold only the operand tiles of tensor-core stages (SIMT stages
// stage f32), have no bank conflicts: neither their cp.async or element
// stores nor the ldmatrix loads of the main loop, since the lowering lays
// the tiles out rotated (package lower's "Shared tiles").
func TestTensorCoreBanks(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates every example at two precisions")
	}
	g, _ := gpu.Builtin("a100")
	for _, ex := range examples.All() {
		p, diags := lang.Check(ex.File(), ex.Source(), lang.Config{Defines: ex.Tiny, Model: ex.Model})
		if diags.HasErrors() {
			t.Fatalf("%s: lang.Check:\n%v", ex.Name, diags.Error())
		}
		in := feeds(p, 1)
		for _, m := range []precision.Mode{precision.F16, precision.BF16} {
			q := precision.Apply(p, m)
			qin := numeric.ConformFeeds(in, q)
			ref, err := te.Evaluate(q, qin, te.EvalOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for level := 0; level <= pipeline.MaxLevel; level++ {
				t.Run(fmt.Sprintf("%s/%s/O%d", ex.Name, m, level), func(t *testing.T) {
					t.Parallel()
					res, out := buildAndCompare(t, p, pipeline.Options{Level: level, GPU: g, Precision: m}, qin, ref, tolPrecision[m])
					for i, k := range res.Module.Kernels {
						for _, a := range k.Shared {
							if a.DType != te.F16 && a.DType != te.BF16 {
								continue
							}
							b := out.Kernels[i].ArrayBanks[a.Name]
							t.Logf("kernel %s, %s: %d wavefronts, %d conflicts", k.Name, a.Name, b.Wavefronts, b.Conflicts)
							if b.Conflicts != 0 {
								t.Errorf("kernel %s: %d bank conflicts in %d wavefronts of shared %s", k.Name, b.Conflicts, b.Wavefronts, a.Name)
							}
						}
					}
				})
			}
		}
	}
}

// TestDecodeBanks simulates the Llama decode step (tiny, B = 1) at -O4 on
// the H100 model at f32 and bf16 and checks that no shared array of its
// kernel has bank conflicts: the matrix-vector stages' staged rows are
// written with 16-byte stores, where a thread's consecutive words stored
// one at a time put a warp's stores 8 to a bank (the profiler counted 160
// million conflicts in the full-size step on an H200 before).
func TestDecodeBanks(t *testing.T) {
	var ex examples.Example
	for _, e := range examples.All() {
		if e.Model == "decode" {
			ex = e
		}
	}
	defines := maps.Clone(ex.Tiny)
	defines["B"] = "1"
	p, diags := lang.Check(ex.File(), ex.Source(), lang.Config{Defines: defines, Model: ex.Model})
	if diags.HasErrors() {
		t.Fatalf("lang.Check:\n%v", diags.Error())
	}
	g, _ := gpu.Builtin("h100")
	for _, m := range []precision.Mode{precision.F32, precision.BF16} {
		t.Run(m.String(), func(t *testing.T) {
			res, err := pipeline.Build(p, pipeline.Options{Level: 4, GPU: g, Precision: m})
			if err != nil {
				t.Fatal(err)
			}
			out, err := sim.Run(res.Module, numeric.ConformFeeds(feeds(p, 1), precision.Apply(p, m)), sim.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for i, k := range res.Module.Kernels {
				for name, b := range out.Kernels[i].ArrayBanks {
					if b.Wavefronts == 0 || b.Conflicts != 0 {
						t.Errorf("kernel %s, shared %s: %d bank conflicts in %d wavefronts", k.Name, name, b.Conflicts, b.Wavefronts)
					}
				}
			}
		})
	}
}
