package e2e

import (
	"slices"
	"strings"
	"testing"

	"tec/backend/kir"
	"tec/backend/lower"
	"tec/backend/sim"
	"tec/gpu"
	"tec/internal/numeric"
	"tec/partition"
	"tec/pipeline"
	"tec/precision"
	"tec/te"
)

// TestPrefetchL2 builds a small decode step (bf16, -O4, H100) whose
// latency-bound epochs leave blocks idle before the projections, and
// checks the L2 prefetches of the projections' weights that the plan
// places there (partition.Prefetch): in the simulator, on the plan's
// whole grid, the idle blocks prefetch every line of the weights' ranges
// exactly once, the outputs equal the reference's and the run is
// race-free — as the plan places them (whole weights) and with each range
// cut to the first half of each of its rows (the form of a partial
// prefetch of an [out, in] weight); a prefetch past its buffer's end is
// reported.
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
	if len(k.Prefetches) < 4 {
		t.Fatalf("%d prefetches; want the projections' weights prefetched after the small stages:\n%s", len(k.Prefetches), res.Plan)
	}
	for j, pf := range k.Prefetches {
		if pf.Busy >= k.Grid || pf.Bytes <= 0 || pf.Saved <= 0 {
			t.Errorf("prefetch before %s: %+v; want idle blocks, bytes and a saving", k.Stages[j].Name, pf)
		}
	}
	in := numeric.SeededFeeds(p, 5)
	in["pos"].Data[0] = 300
	ref, err := te.Evaluate(p, in, te.EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("whole", func(t *testing.T) { checkPrefetches(t, res.Module, k, in, ref) })
	t.Run("first of rows", func(t *testing.T) {
		halved := 0
		for _, pf := range k.Prefetches {
			for i, r := range pf.Ranges {
				if r.Row > 0 && r.Len == 0 {
					pf.Ranges[i].Len = r.Row / 2
					halved++
				}
			}
		}
		if halved == 0 {
			t.Fatal("no prefetched weight has rows")
		}
		m, err := lower.Fused(res.Program, res.Plan, lower.FusedOptions{})
		if err != nil {
			t.Fatal(err)
		}
		checkPrefetches(t, m, k, in, ref)
	})

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

// checkPrefetches runs m, lowered from a plan whose one kernel is k, on
// k's whole grid and checks that it prefetches every line of k's
// prefetch ranges once, and that its logits are ref's, race-free.
func checkPrefetches(t *testing.T, m *kir.Module, k *partition.Kernel, in, ref map[string]*te.Array) {
	t.Helper()
	want := map[string][]int{} // the lines of each weight that the plan prefetches
	for _, pf := range k.Prefetches {
		for _, r := range pf.Ranges {
			per := 128 / r.Tensor.DType.Size()
			row, n := r.Hi-r.Lo, r.Hi-r.Lo
			if r.Len > 0 {
				row, n = r.Row, r.Len
			}
			for at := r.Lo; at < r.Hi; at += row {
				for i := 0; i < n; i += per {
					want[r.Tensor.Name] = append(want[r.Tensor.Name], at+i)
				}
			}
		}
	}
	out, err := sim.Run(m, in, sim.Options{Race: true, ResidentBlocks: k.Grid})
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
}

// TestPrefetchDecode checks the prefetches the plan of the full-size
// decode step (Llama-3.2-1B, bf16, -O4, the H100 model, B = 1) places:
// each layer's output projection's weights whole after its attention,
// and the leading weights of each gate and up projection, a stage of
// several waves bound by DRAM, after the output projection, which then
// reads its own from L2; each so served is priced with those bytes fewer
// from DRAM, and the kernel's prediction falls by what they save.
func TestPrefetchDecode(t *testing.T) {
	if testing.Short() {
		t.Skip("plans the full-size decode step")
	}
	p := precision.Apply(llamaDecode(t, nil), precision.BF16)
	g, _ := gpu.Builtin("h100")
	res, err := pipeline.Build(p, pipeline.Options{Level: pipeline.MaxLevel, GPU: g})
	if err != nil {
		t.Fatal(err)
	}
	k := res.Plan.Kernels[0]
	whole, leading := 0, 0
	for j, pf := range k.Prefetches {
		f := slices.Index(k.Stages, pf.For)
		if f < j {
			t.Errorf("prefetch before %s for %s, which is not in the epoch after it", k.Stages[j].Name, pf.For.Name)
		}
		switch {
		case strings.HasPrefix(pf.For.Name, "x.") && pf.Ranges[0].Tensor.Name == "wo":
			if pf.Bytes != 2048*2048*2 {
				t.Errorf("%s: %d bytes prefetched; want all of its layer's wo, %d", pf.For.Name, pf.Bytes, 2048*2048*2)
			}
			if k.StageCosts[f].DRAM >= pf.Bytes {
				t.Errorf("%s: %d bytes from DRAM with its %d prefetched", pf.For.Name, k.StageCosts[f].DRAM, pf.Bytes)
			}
			whole++
		case strings.HasPrefix(pf.For.Name, "hcat_gate"):
			r := pf.Ranges[0]
			if len(pf.Ranges) != 1 || r.Tensor.Name != "w_gate" || r.Lo%(2048*8192) != 0 || pf.Bytes <= 0 || pf.Bytes >= 2048*8192*2 {
				t.Errorf("%s: %+v; want the leading part of its layer's w_gate", pf.For.Name, pf)
			}
			if want := 2*2048*8192*2 - pf.Bytes; k.StageCosts[f].DRAM > want+1<<20 {
				t.Errorf("%s: %d bytes from DRAM; want its weights less the %d prefetched, about %d", pf.For.Name, k.StageCosts[f].DRAM, pf.Bytes, want)
			}
			leading++
		}
	}
	if whole != 16 || leading != 16 {
		t.Errorf("%d output projections prefetched whole and %d gate and up projections in part; want 16 and 16:\n%s", whole, leading, res.Plan)
	}
}
