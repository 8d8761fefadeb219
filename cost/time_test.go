package cost

import (
	"math"
	"testing"

	"tec/gpu"
	"tec/schedule"
	"tec/te"
)

// TestTensorPeak checks the dense tensor-core rates of the built-in GPUs:
// f16 and bf16 at the FP16 peak, TF32 at half of it.
func TestTensorPeak(t *testing.T) {
	for _, tt := range []struct {
		gpu  string
		in   te.DType
		want float64
	}{
		{"a100", te.F16, 312e12},
		{"a100", te.BF16, 312e12},
		{"a100", te.F32, 156e12},
		{"h100", te.F16, 989.5e12},
		{"h100", te.F32, 494.7e12},
	} {
		g, ok := gpu.Builtin(tt.gpu)
		if !ok {
			t.Fatalf("no built-in %s", tt.gpu)
		}
		if got := TensorPeak(g, tt.in); got != tt.want {
			t.Errorf("%s %s: tensor peak %g, want %g", tt.gpu, tt.in, got, tt.want)
		}
	}
}

// TestEfficiency checks the fraction of the FP32 peak that a
// contraction's register tile reaches, and that other stages run at all
// of it.
func TestEfficiency(t *testing.T) {
	for _, tt := range []struct {
		kind   schedule.Kind
		rm, rn int
		mv     *schedule.MatVec
		want   float64
	}{
		{schedule.Contraction, 1, 1, nil, 0.25},
		{schedule.Contraction, 2, 2, nil, 0.5},
		{schedule.Contraction, 4, 1, nil, 0.4},
		{schedule.Contraction, 4, 4, nil, 1},
		{schedule.Elementwise, 0, 0, nil, 1},
		// Eight rows, two columns a thread: 4 columns a tile of bf16
		// vectors, two lanes' vectors to a bank; 8 columns, none.
		{schedule.Contraction, 8, 2, &schedule.MatVec{TileF: 4, Cols: 2, Vec: 8}, 16.0 / 18 / 2},
		{schedule.Contraction, 8, 2, &schedule.MatVec{TileF: 8, Cols: 2, Vec: 8}, 0.8},
		{schedule.Contraction, 8, 1, &schedule.MatVec{TileF: 8, Vec: 8, MMA: true}, 8.0 / 9 / 2},
	} {
		s := &schedule.Schedule{Kind: tt.kind, RegM: tt.rm, RegN: tt.rn, MatVec: tt.mv}
		if got := Efficiency(s); got != tt.want {
			t.Errorf("%s %dx%d: efficiency %v, want %v", tt.kind, tt.rm, tt.rn, got, tt.want)
		}
	}
}

// TestPays checks the planner's yes-or-no questions at their extremes on
// the A100 model (108 SMs, a grid sync of about a microsecond): a stage of
// few bytes pays a Rows stage on one block and not a split, a large one
// the reverse.
func TestPays(t *testing.T) {
	g, _ := gpu.Builtin("a100")
	for _, tt := range []struct {
		name    string
		bytes   int64
		split   bool
		fewRows bool
	}{
		{"8 KB", 8 << 10, false, true},
		{"64 MB", 64 << 20, true, false},
	} {
		if got := SplitPays(g, tt.bytes, 1, 8); got != tt.split {
			t.Errorf("%s: SplitPays %v, want %v", tt.name, got, tt.split)
		}
		if got := FewRowsPay(g, tt.bytes, 1); got != tt.fewRows {
			t.Errorf("%s: FewRowsPay %v, want %v", tt.name, got, tt.fewRows)
		}
	}
}

// TestSplitArgStageTime checks the price of the greedy token of a
// 128256-word vocabulary on the H100 model, its logits in L2: a block's
// row reduction takes the whole stage on one SM, the split into 126
// chunks of pairs a 126th of it plus two grid syncs (the one between its
// phases and its finishing pass), several times less.
func TestSplitArgStageTime(t *testing.T) {
	g, _ := gpu.Builtin("h100")
	const vocab = 128256
	p := &Price{FLOPs: vocab, Bytes: 4 * vocab}
	row := &schedule.Schedule{Kind: schedule.RowReduce, Threads: 256, Tiles: 1}
	split := &schedule.Schedule{Kind: schedule.SplitReduce, Threads: 256, Tiles: 126, Chunks: 126}
	whole, parts := StageTime(g, row, p, 4, 2, 264), StageTime(g, split, p, 4, 2, 264)
	load := float64(p.Bytes) / g.L2Bandwidth
	if want := load * float64(g.SMs); math.Abs(whole-want) > 1e-3*want {
		t.Errorf("row reduction: %.3g s, want %.3g", whole, want)
	}
	if want := load*float64(g.SMs)/126 + 2*g.GridSyncCost; math.Abs(parts-want) > 1e-3*want {
		t.Errorf("split: %.3g s, want %.3g", parts, want)
	}
	if 3*parts > whole {
		t.Errorf("split %.3g s, row reduction %.3g s: want the split several times faster", parts, whole)
	}
}
