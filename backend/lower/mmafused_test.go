package lower

import (
	"fmt"
	"math"
	"testing"

	"tec/analysis"
	"tec/backend/kir"
	"tec/backend/report"
	"tec/backend/sim"
	"tec/gpu"
	"tec/partition"
	"tec/precision"
	"tec/schedule"
	"tec/te"
)

// halfMLP is y = tanh(h·w2 + b2) + r with h = f16(tanh(x·w1 + b1)): two
// contractions of f16 operands, the second reading the first, each with an
// epilogue.
func halfMLP(M, K, H, N int) *te.Program { return halfMLPOf(te.F16, M, K, H, N) }

// halfMLPOf is halfMLP with operands and h of type dt (te.F16 or te.BF16).
func halfMLPOf(dt te.DType, M, K, H, N int) *te.Program {
	b := newBuilder("half_mlp")
	x := b.input("x", dt, M, K)
	w1, b1 := b.param("w1", dt, K, H), b.param("b1", te.F32, H)
	w2, b2 := b.param("w2", dt, H, N), b.param("b2", te.F32, N)
	r := b.input("r", te.F32, M, N)
	h := b.compute("h", dt, shp(M, H), func(a []te.Index) te.Expr {
		s := sum1(K, func(k te.Index) te.Expr { return mul(ld(x, a[0], k), ld(w1, k, a[1])) })
		return un(te.Tanh, add(s, ld(b1, a[1])))
	})
	y := b.f32("y", shp(M, N), func(a []te.Index) te.Expr {
		s := sum1(H, func(k te.Index) te.Expr { return mul(ld(h, a[0], k), ld(w2, k, a[1])) })
		return add(un(te.Tanh, add(s, ld(b2, a[1]))), ld(r, a[0], a[1]))
	})
	return b.outputs(y)
}

// halfCausal is sc[h, i, j] = select(j <= i, sum[e](q·k) · 0.125, -1e30)
// over f16 queries and keys: a masked contraction.
func halfCausal(H, S, E int) *te.Program {
	b := newBuilder("half_causal")
	q, k := b.input("q", te.F16, H, S, E), b.input("k", te.F16, H, S, E)
	sc := b.f32("sc", shp(H, S, S), func(a []te.Index) te.Expr {
		s := sum1(E, func(e te.Index) te.Expr { return mul(ld(q, a[0], a[1], e), ld(k, a[0], a[2], e)) })
		return sel(bin(te.Le, ix(a[2]), ix(a[1])), mul(s, cf(0.125)), cf(-1e30))
	})
	return b.outputs(sc)
}

// fusedPlan plans p for -O4 on the GPU model named gpuName with blocks of threads threads.
func fusedPlan(t *testing.T, p *te.Program, gpuName string, threads int) *partition.Plan {
	t.Helper()
	a, err := analysis.Analyze(p, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := gpu.Builtin(gpuName)
	pl, err := partition.Partition(a, g, partition.Options{Split: true, Reuse: true, Threads: threads})
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

// TestFusedTensorCores plans programs with contractions of f16 operands
// for the fused levels (-O4) with blocks of 128, 256 and 512 threads: every
// contraction gets a tensor-core schedule over the kernel's warps (the
// cost model prefers it to the SIMT tile at these sizes), the
// persistent kernels issue MMAs and equal the reference in the simulator
// with race detection (h is rounded to f16 at the same point in both; the
// tolerance, 2^-10 of the output's magnitude, allows an f16 rounding of h
// that a sum in another order tips the other way), and the static report
// counts what the simulator does. The causal scores skip the tiles above
// the diagonal: with 32×32 tiles of 96 positions, 3 of 9 per head, so
// the MMAs are those of the 6 others. Forced blocks of 3 and 4 cp.async
// stages pipeline their copies (one wait_group a step, on all but the
// stages − 2 youngest groups).
func TestFusedTensorCores(t *testing.T) {
	for _, tc := range []struct {
		name    string
		p       *te.Program
		gpu     string
		threads int
		// force, when set, replaces every contraction's block (an
		// unsliced grid of 2×4 warps, which the cost model does not pick at
		// these sizes).
		force *schedule.TCBlock
	}{
		{"mlp/128", halfMLP(96, 64, 128, 80), "a100", 128, nil},
		{"mlp/256", halfMLP(96, 64, 128, 80), "a100", 256, nil},
		{"mlp/512", halfMLP(1024, 32, 128, 64), "h100", 512, nil},
		{"causal/256", halfCausal(2, 96, 32), "a100", 256, nil},
		{"mlp/2x4 warps", halfMLP(96, 64, 128, 80), "a100", 256, &schedule.TCBlock{TM: 64, TN: 64, WGM: 2, WGN: 4, Slices: 1}},
		// cp.async pipelines of 3 and 4 stages: K = 64 is 2 steps of 32
		// (fewer than 4 − 1: the prologue's last group is empty), H = 128
		// is 4.
		{"mlp/3 stages", halfMLP(96, 64, 128, 80), "a100", 256, &schedule.TCBlock{TM: 64, TN: 64, WGM: 2, WGN: 4, Slices: 1, Stages: 3}},
		{"mlp/4 stages", halfMLP(96, 64, 128, 80), "a100", 256, &schedule.TCBlock{TM: 64, TN: 64, WGM: 2, WGN: 4, Slices: 1, Stages: 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl := fusedPlan(t, tc.p, tc.gpu, tc.threads)
			for _, k := range pl.Kernels {
				for _, st := range k.Stages {
					s := pl.Schedules[st]
					if s.Kind == schedule.Contraction && !s.TensorCores {
						t.Errorf("stage %s: %s, want tensor cores", st.Name, s)
					}
					if b := tc.force; b != nil && s.TensorCores {
						s.TileM, s.TileN, s.WarpsM, s.WarpsN, s.KSlices, s.PipelineStages = b.TM, b.TN, b.WGM, b.WGN, b.Slices, b.Stages
						s.Tiles = s.Batch * te.CeilDiv(s.M, b.TM) * te.CeilDiv(s.N, b.TN)
					}
				}
			}
			m, err := Fused(tc.p, pl, FusedOptions{})
			if err != nil {
				t.Fatal(err)
			}
			feeds := randFeeds(tc.p, 5)
			want, err := te.Evaluate(tc.p, feeds, te.EvalOptions{})
			if err != nil {
				t.Fatal(err)
			}
			res, err := sim.Run(m, feeds, sim.Options{Race: true})
			if err != nil {
				t.Fatal(err)
			}
			if res.RaceCount > 0 {
				t.Fatalf("%d races; first: %s", res.RaceCount, res.Races[0])
			}
			for _, o := range tc.p.Outputs {
				got, ref := res.Outputs[o.Name].Data, want[o.Name].Data
				scale := 0.0
				for _, v := range ref {
					scale = max(scale, math.Abs(v))
				}
				for i := range ref {
					if math.Abs(got[i]-ref[i]) > scale*0x1p-10 {
						t.Fatalf("%s[%d] = %v, want %v", o.Name, i, got[i], ref[i])
					}
				}
			}
			total := res.Total()
			if total.MMAs == 0 {
				t.Errorf("no MMAs")
			}
			if b := tc.force; b != nil {
				// Each k step of a cp.async pipeline waits for its own
				// group with stages − 2 younger ones in flight.
				waits := 0
				for _, k := range m.Kernels {
					kir.WalkStmts(k.Body, func(s kir.Stmt) bool {
						if w, ok := s.(*kir.WaitGroup); ok && w.N == b.PipelineStages()-2 {
							waits++
						}
						return true
					})
				}
				if waits == 0 {
					t.Errorf("no cp.async.wait_group %d in the module:\n%s", b.PipelineStages()-2, m)
				}
			}
			if rep := report.Module(m, report.Config{}); rep.Total != total {
				t.Errorf("static report counts %v, the simulator %v", rep.Total, total)
			}
			for _, k := range m.Kernels {
				if k.Block != tc.threads {
					t.Errorf("kernel %s has blocks of %d threads, want the plan's %d", k.Name, k.Block, tc.threads)
				}
			}
		})
	}
}

// TestMaskedTensorCores checks that a masked contraction of f16 operands
// runs on tensor cores in a kernel of its own and in a fused one, and
// that its tiles above the diagonal issue no MMAs: causal scores of 2
// heads × 128 positions, head dimension 32, are 2×2 tiles of 64×64 per
// head unfused (3 live, 64 MMAs each: 32 m16n8 tiles × 2 k steps of 16),
// and the fused plan's tiles as its schedule says.
func TestMaskedTensorCores(t *testing.T) {
	const heads, S, E = 2, 128, 32
	p := halfCausal(heads, S, E)
	feeds := randFeeds(p, 9)
	want, err := te.Evaluate(p, feeds, te.EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	unfused, err := Unfused(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	pl := fusedPlan(t, p, "a100", 256)
	s := pl.Schedules[p.Outputs[0]]
	if !s.TensorCores || s.Mask == nil {
		t.Fatalf("fused schedule %s, want a masked tensor-core one", s)
	}
	fused, err := Fused(p, pl, FusedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	perTile := func(tm, tn int) int64 { return int64(tm / 16 * tn / 8 * E / 16) }
	fusedLive := int64(s.Tiles - s.Skipped)
	for _, tc := range []struct {
		name string
		m    *kir.Module
		mmas int64
	}{
		{"unfused", unfused, heads * 3 * perTile(64, 64)},
		{"fused", fused, fusedLive * perTile(s.TileM, s.TileN)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := sim.Run(tc.m, feeds, sim.Options{Race: true})
			if err != nil {
				t.Fatal(err)
			}
			if res.RaceCount > 0 {
				t.Fatalf("%d races; first: %s", res.RaceCount, res.Races[0])
			}
			got, ref := res.Outputs["sc"].Data, want["sc"].Data
			for i := range ref {
				if math.Abs(got[i]-ref[i]) > math.Abs(ref[i])*0x1p-20+0x1p-20 {
					t.Fatalf("sc[%d] = %v, want %v", i, got[i], ref[i])
				}
			}
			if n := res.Total().MMAs; n != tc.mmas {
				t.Errorf("%d MMAs, want %d (%s)", n, tc.mmas, fmt.Sprint(s))
			}
			if rep := report.Module(tc.m, report.Config{}); rep.Total != res.Total() {
				t.Errorf("static report counts %v, the simulator %v", rep.Total, res.Total())
			}
		})
	}
}

// TestSplitKTensorCores plans MLPs whose contractions have few output
// tiles and long reductions (K of 1024 and 2048 for one or two 64×64
// tiles; 48×40 outputs of K 1152 for ragged tiles), which the cost model
// splits over blocks along K (KSplit, each block an equal chunk of whole
// staged k steps; in TF32, with 36 columns, the operands are
// staged element by element, not by cp.async), and checks in the simulator, with race
// detection, that the partials combined after the grid sync, with the
// epilogue applied once to their sum, equal the reference, in f16 and
// bf16 and TF32, deterministic or not (the combine is ordered either way, so two
// runs agree to the bit); and that the MMAs are those of the unsplit
// contractions: no chunk computes another's steps.
func TestSplitKTensorCores(t *testing.T) {
	for _, tc := range []struct {
		name          string
		p             *te.Program
		deterministic bool
	}{
		{"f16", halfMLPOf(te.F16, 64, 1024, 2048, 64), false},
		{"f16/deterministic", halfMLPOf(te.F16, 64, 1024, 2048, 64), true},
		{"bf16/ragged", halfMLPOf(te.BF16, 48, 1152, 96, 40), false},
		{"tf32/ragged", precision.Apply(halfMLPOf(te.F32, 48, 1152, 96, 36), precision.TF32), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl := fusedPlan(t, tc.p, "a100", 128)
			split, mmas := 0, int64(0)
			for _, k := range pl.Kernels {
				for _, st := range k.Stages {
					s := pl.Schedules[st]
					if !s.TensorCores {
						continue
					}
					if s.KSplit > 1 {
						split++
					}
					mt, nt := s.TCBlock().WarpTile()
					warps := int64(s.WarpsM * s.WarpsN * max(s.KSlices, 1))
					mk := 16 // an MMA's k
					if s.TensorIn == te.F32 {
						mk = 8
					}
					mmas += int64(s.Batch*te.CeilDiv(s.M, s.TileM)*te.CeilDiv(s.N, s.TileN)) * warps * int64(mt*nt) * int64(te.CeilDiv(s.K, 32)*32/mk/max(s.KSlices, 1))
				}
			}
			if split == 0 {
				t.Fatalf("no contraction splits its K:\n%s", pl)
			}
			m, err := Fused(tc.p, pl, FusedOptions{Deterministic: tc.deterministic})
			if err != nil {
				t.Fatal(err)
			}
			feeds := randFeeds(tc.p, 3)
			want, err := te.Evaluate(tc.p, feeds, te.EvalOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var first []float64
			for run := range 2 {
				res, err := sim.Run(m, feeds, sim.Options{Race: true})
				if err != nil {
					t.Fatal(err)
				}
				if res.RaceCount > 0 {
					t.Fatalf("%d races; first: %s", res.RaceCount, res.Races[0])
				}
				got, ref := res.Outputs["y"].Data, want["y"].Data
				scale := 0.0
				for _, v := range ref {
					scale = max(scale, math.Abs(v))
				}
				for i := range ref {
					if math.Abs(got[i]-ref[i]) > scale*0x1p-7 {
						t.Fatalf("y[%d] = %v, want %v", i, got[i], ref[i])
					}
				}
				if run == 1 {
					for i := range got {
						if got[i] != first[i] {
							t.Fatalf("run 2: y[%d] = %v, run 1 %v", i, got[i], first[i])
						}
					}
				}
				first = got
				if n := res.Total().MMAs; n != mmas {
					t.Errorf("%d MMAs, want %d", n, mmas)
				}
				if rep := report.Module(m, report.Config{}); rep.Total != res.Total() {
					t.Errorf("static report counts %v, the simulator %v", rep.Total, res.Total())
				}
			}
		})
	}
}
