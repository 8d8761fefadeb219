package lower

import (
	"testing"

	"tec/backend/kir"
	"tec/backend/report"
	"tec/backend/sim"
	"tec/internal/numeric"
	"tec/te"
)

// Tolerances of the differential tests. The reference evaluates in float64
// and keeps f32 tensors unrounded; the kernels compute in f32 and round every
// operation, so results differ by the rounding error of f32 accumulation:
// about √K·2⁻²⁴ relative for a sum of K terms of one sign, more where terms
// cancel, and the error of f32 exp/tanh. K stays below a few thousand in the
// tests, so 1e-4 relative with 1e-5 absolute (for results near zero after
// cancellation) leaves a margin of ten. A result stored in f16 or bf16 may
// round to the neighbouring value when the f32 and float64 results straddle
// a rounding boundary: one unit in the last place, 2⁻¹⁰ (f16) or 2⁻⁷ (bf16)
// relative.
var (
	tolF32  = numeric.Tolerance{Rtol: 1e-4, Atol: 1e-5}
	tolF16  = numeric.Tolerance{Rtol: 1.0 / 1024, Atol: 1e-4}
	tolBF16 = numeric.Tolerance{Rtol: 1.0 / 128, Atol: 1e-3}
)

func tolerance(dt te.DType) numeric.Tolerance {
	switch dt {
	case te.F16:
		return tolF16
	case te.BF16:
		return tolBF16
	}
	return tolF32
}

var programs = []struct {
	name string
	p    *te.Program
}{
	{"matmul_bias", matmulBias(20, 24, 18)},
	{"matmul_bias_large_k", matmulBias(9, 70, 33)},
	{"matvec", matmulBias(1, 100, 5)},
	{"bmm", batchMatmul(3, 10, 12, 9)},
	{"softmax_small", softmax(3, 10)},
	{"softmax_large", softmax(4, 150)},
	{"layernorm", layernorm(5, 96)},
	{"conv2d", conv2d(1, 3, 9, 9, 8, 3, 3, 1, 1, 1)},
	{"conv2d_stride_groups", conv2d(2, 4, 8, 7, 6, 3, 3, 2, 1, 2)},
	{"conv2d_1x1", conv2d(1, 16, 5, 5, 12, 1, 1, 1, 0, 1)},
	{"depthwise", depthwise(1, 5, 8, 8, 3, 3, 2, 1)},
	{"lstm_cell", lstmCell(1, 40)},
	{"lstm_cell_large", lstmCell(2, 80)},
	{"reductions_small", reductions(3, 4, 5)},
	{"reductions_large", reductions(2, 9, 20)},
	{"dtypes", dtypes(12, 20, 10)},
	{"reshapes", reshapes(3, 4, 5)},
}

// TestDifferential lowers each program, simulates it with race detection and
// compares every output with the reference evaluator's.
func TestDifferential(t *testing.T) {
	for _, tt := range programs {
		t.Run(tt.name, func(t *testing.T) {
			differential(t, tt.p, 1)
		})
	}
}

func differential(t *testing.T, p *te.Program, seed uint64) *sim.Result {
	t.Helper()
	feeds := randFeeds(p, seed)
	want, err := te.Evaluate(p, feeds, te.EvalOptions{})
	if err != nil {
		t.Fatalf("te.Evaluate: %v", err)
	}
	m, err := Unfused(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(m, feeds, sim.Options{Race: true})
	if err != nil {
		t.Fatalf("%v\n%s", err, m)
	}
	if res.RaceCount > 0 {
		t.Errorf("%d races; first: %s", res.RaceCount, res.Races[0])
	}
	for _, o := range p.Outputs {
		got := res.Outputs[o.Name]
		mm, err := numeric.Compare(got, want[o.Name], tolerance(o.DType))
		if err != nil {
			t.Fatalf("output %s: %v", o.Name, err)
		}
		if mm != nil {
			t.Errorf("output %s: %s", o.Name, mm)
		}
	}
	checkReport(t, m, res)
	return res
}

// checkReport checks that the static report's counts equal the simulator's,
// kernel by kernel.
func checkReport(t *testing.T, m *kir.Module, res *sim.Result) {
	t.Helper()
	rep := report.Module(m, report.Config{ResidentBlocks: sim.DefaultResidentBlocks})
	for i, k := range rep.Kernels {
		got := res.Kernels[i]
		if !k.Exact {
			t.Errorf("kernel %s: report not exact", k.Name)
		}
		if k.Counts != got.Counts || k.Blocks != got.Blocks || k.Threads != got.Threads {
			t.Errorf("kernel %s: report %d×%d %v\nsimulator %d×%d %v", k.Name, k.Blocks, k.Threads, k.Counts, got.Blocks, got.Threads, got.Counts)
		}
	}
}
