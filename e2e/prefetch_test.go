package e2e

import (
	"slices"
	"strings"
	"testing"

	"tec/backend/kir"
	"tec/backend/sim"
	"tec/gpu"
	"tec/internal/numeric"
	"tec/pipeline"
	"tec/precision"
	"tec/te"
)

// TestPrefetchL2 builds a small decode step (bf16, -O4, H100) whose
// latency-bound epochs leave blocks idle before the projections, and
// checks the L2 prefetches of the projections' weights that the plan
// places there (partition.Prefetch): each projection so served is priced
// with fewer bytes from DRAM, and in the simulator, on the plan's whole
// grid, the idle blocks prefetch every line of the weights' ranges
// exactly once, the outputs equal the reference's and the run is
// race-free; a prefetch past its buffer's end is reported.
func TestPrefetchL2(t *testing.T) {
	p := precision.Apply(llamaDecode(t, map[string]string{"B": "1", "T": "512", "L": "2", "D": "256", "NH": "4", "NKV": "4", "FF": "256", "V": "64"}), precision.BF16)
	g, _ := gpu.Builtin("h100")
	res, err := pipeline.Build(p, pipeline.Options{Level: pipeline.MaxLevel, GPU: g})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Plan.Kernels) != 1 {
		t.Fatalf("%d kernels; want the step in one", len(res.Plan.Kernels))
	}
	k := res.Plan.Kernels[0]
	want := map[string][]int{} // the lines of each weight that the plan prefetches
	for j, pf := range k.Prefetches {
		if pf.Busy >= k.Grid || pf.Bytes <= 0 || pf.Saved <= 0 {
			t.Errorf("prefetch before %s: %+v; want idle blocks, bytes and a saving", k.Stages[j].Name, pf)
		}
		for _, r := range pf.Ranges {
			per := 128 / r.Tensor.DType.Size()
			for i := r.Lo; i < r.Hi; i += per {
				want[r.Tensor.Name] = append(want[r.Tensor.Name], i)
			}
		}
	}
	if len(k.Prefetches) < 4 {
		t.Fatalf("%d prefetches; want the projections' weights prefetched after the small stages:\n%s", len(k.Prefetches), res.Plan)
	}
	in := numeric.SeededFeeds(p, 5)
	in["pos"].Data[0] = 300
	ref, err := te.Evaluate(p, in, te.EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := sim.Run(res.Module, in, sim.Options{Race: true, ResidentBlocks: k.Grid})
	if err != nil {
		t.Fatal(err)
	}
	if out.RaceCount > 0 {
		t.Errorf("%d races; first: %s", out.RaceCount, out.Races[0])
	}
	if e := numeric.RelError(out.Outputs["logits"], ref["logits"]); !(e <= 1e-2) {
		t.Errorf("logits' relative error %.3g against the reference, want <= 1e-2", e)
	}
	for name, lines := range want {
		got := slices.Clone(out.Prefetched[name])
		slices.Sort(got)
		slices.Sort(lines)
		if !slices.Equal(got, lines) {
			t.Errorf("%s: %d lines prefetched; want each of the plan's %d once", name, len(got), len(lines))
		}
	}
	if len(out.Prefetched) != len(want) {
		t.Errorf("prefetched %d buffers; want %d", len(out.Prefetched), len(want))
	}

	// The planted bug: one prefetch a whole buffer on.
	planted := false
	for _, kk := range res.Module.Kernels {
		kir.WalkStmts(kk.Body, func(s kir.Stmt) bool {
			if pf, ok := s.(*kir.Prefetch); ok && !planted {
				pf.Index = kir.Add(pf.Index, kir.I(pf.Buf.Len()))
				planted = true
			}
			return true
		})
	}
	if !planted {
		t.Fatal("no prefetch in the module")
	}
	if _, err := sim.Run(res.Module, in, sim.Options{ResidentBlocks: k.Grid}); err == nil || !strings.Contains(err.Error(), "prefetch of") {
		t.Errorf("a prefetch out of bounds: %v; want it reported", err)
	}
}
