package e2e

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"tec/examples"
	"tec/gpu"
	"tec/internal/numeric"
	"tec/lang"
	"tec/partition"
	"tec/pipeline"
	"tec/precision"
	"tec/te"
	"tec/transform"
)

// llamaDecode returns examples/llama.te's decode step with the constants
// defs.
func llamaDecode(t *testing.T, defs map[string]string) *te.Program {
	t.Helper()
	src, err := os.ReadFile("../examples/llama.te")
	if err != nil {
		t.Fatal(err)
	}
	p, diags := lang.Check("llama.te", src, lang.Config{Model: "decode", Defines: defs})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	return p
}

// TestFlashDecodeLlama runs the tiny Llama's decode step over a cache of
// 256 positions with its attention split across blocks in 8 chunks of 32
// positions (flash-decoding, pipeline.Options.FlashChunks), at every level
// in the simulator (race-free) against the reference of the unsplit
// program, for positions at the first, a middle and the last slot and
// mixed per sequence (B = 4): whole chunks past pos[b] are dropped from
// the merge, and the kept ones rescaled to the merged max (without the
// rescale 15 of the 20 runs fail), and the value cache past pos[b] is not
// loaded.
func TestFlashDecodeLlama(t *testing.T) {
	p := llamaDecode(t, map[string]string{"B": "4", "T": "256", "L": "2", "D": "32", "NH": "4", "NKV": "2", "FF": "64", "V": "64"})
	g, _ := gpu.Builtin("h100")
	full := map[int]int64{} // loads with every position at the last slot
	for _, pos := range [][]float64{{255, 255, 255, 255}, {0, 0, 0, 0}, {127, 128, 129, 64}, {255, 0, 77, 200}} {
		in := numeric.SeededFeeds(p, 11)
		copy(in["pos"].Data, pos)
		want, err := te.Evaluate(p, in, te.EvalOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for level := 0; level <= pipeline.MaxLevel; level++ {
			t.Run(fmt.Sprintf("pos%v/O%d", pos, level), func(t *testing.T) {
				res, out := buildAndCompare(t, p, pipeline.Options{Level: level, GPU: g, FlashChunks: 8}, in, want, tolModel)
				// The value cache past pos[b] is never loaded: with every
				// position at slot 0, 255 of each row's 256 values (DH = 8
				// f32 each, for each layer, sequence and key/value head)
				// fewer than at the last slot, at least.
				loads := out.Total().LoadBytes
				switch pos[0] {
				case 255:
					full[level] = loads
				case 0:
					if dead := int64(2 * 4 * 2 * 255 * 8 * 4); full[level]-loads < dead {
						t.Errorf("%d bytes fewer loaded than at the last slot; want at least the %d of the value cache past pos", full[level]-loads, dead)
					}
				}
				chunks := 0
				for _, u := range res.Program.Tensors {
					// the scores split too or not, as the cost model
					// predicts faster
					if strings.HasSuffix(u.Name, "/chunk") && !strings.HasPrefix(u.Name, "sc") {
						chunks++
					}
				}
				if chunks != 3*2 { // m_c, l_c and o_c of each layer
					t.Errorf("%d partial tensors; want 6 (flash-decoding not applied)", chunks)
				}
			})
		}
	}
}

// TestFlashDecodeScores runs a small Llama's decode step (B = 16, a cache
// of 512 positions, heads of 64, positions mixed per sequence and some
// chunks wholly past pos[b]) with its attention split in 4 chunks of 128
// positions, the scores split with them (transform.Split.Scores), at every
// level in the simulator (race-free) against the reference of the unsplit
// program; and at -O4 in bf16, as the decode step is built, against the
// bf16 reference, where a chunk's scores, max, sum and context are one
// block's chain, as at full size: block barriers between them, no grid
// sync, a tile per chunk of each head.
func TestFlashDecodeScores(t *testing.T) {
	p := llamaDecode(t, map[string]string{"B": "16", "T": "512", "L": "1", "D": "256", "NH": "4", "NKV": "4", "FF": "64", "V": "64"})
	split := func(p *te.Program) *te.Program {
		q, err := transform.SplitSoftmax(p, func(*transform.SoftmaxSite) transform.Split { return transform.Split{Chunks: 4, Scores: true} })
		if err != nil {
			t.Fatal(err)
		}
		if q.Lookup("sc/chunk") == nil {
			t.Fatalf("the scores not split:\n%s", q)
		}
		return q
	}
	g, _ := gpu.Builtin("h100")
	in := numeric.SeededFeeds(p, 11)
	copy(in["pos"].Data, []float64{300, 511, 0, 127, 128, 255, 400, 64, 1, 2, 3, 4, 200, 310, 450, 500})
	want, err := te.Evaluate(p, in, te.EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q := split(p)
	for level := 0; level <= pipeline.MaxLevel; level++ {
		t.Run(fmt.Sprintf("O%d", level), func(t *testing.T) {
			buildAndCompare(t, q, pipeline.Options{Level: level, GPU: g, FlashChunks: 1}, in, want, tolModel)
		})
	}
	t.Run("bf16", func(t *testing.T) {
		half := split(precision.Apply(p, precision.BF16))
		res, hin, want := buildBF16(t, half, in, g)
		chain := []string{"sc/chunk", "mx/chunk", "den/chunk", "ctx/chunk"}
		k, at := stageOf(res.Plan, chain[0])
		if k == nil {
			t.Fatalf("no stage sc/chunk in the plan")
		}
		for i, name := range chain {
			if at+i >= len(k.Stages) || k.Stages[at+i].Name != name {
				t.Fatalf("stage %d after sc/chunk is not %s:\n%s", i, name, res.Plan)
			}
			if s := res.Plan.Schedules[k.Stages[at+i]]; s.Tiles != 16*4*4 {
				t.Errorf("%s: %d tiles; want one per chunk of each head, 256", name, s.Tiles)
			}
			if i > 0 && k.Sync[at+i] == partition.GridSync {
				t.Errorf("a grid sync before %s: want the chunk's chain in one block", name)
			}
		}
		// The merge waits for its heads' chunks on the partial contexts'
		// counters alone: the block that signals a chunk's context
		// computed its max and denominator before it.
		if km, m := stageOf(res.Plan, "ctx"); km != k || m < 0 {
			t.Errorf("the merge is not in the chain's kernel")
		} else if deps := k.Counters[m]; len(deps) != 1 || deps[0].Producer.Name != "ctx/chunk" {
			t.Errorf("the merge waits on %v; want the counters of ctx/chunk alone:\n%s", deps, res.Plan)
		}
		checkLogitsBF16(t, res, hin, want)
		// Each chunk's denominator computed on the block after its
		// context's: the merge's counters no longer order it.
		misaligned(t, res.Module, hin, "den/chunk", "ctx")
	})
}

// TestGroupedDecodeScores runs a small Llama's decode step (B = 8, a
// cache of 128 positions, eight query heads of 64, four sharing each of
// two key/value heads, positions mixed per sequence) with its scores' query heads
// grouped (transform.Split.Group: sc[b, g, h, t], h the rows of one
// tile), the site unsplit (its context grouped too) and in 4 chunks (its
// partial contexts grouped), at every level in the simulator (race-free)
// against the reference of the ungrouped program; and at -O4 in bf16,
// where the scores are a matrix-vector tile of the group's 4 rows on a
// warp's lanes, against the bf16 reference.
func TestGroupedDecodeScores(t *testing.T) {
	p := llamaDecode(t, map[string]string{"B": "8", "T": "128", "L": "1", "D": "512", "NH": "8", "NKV": "2", "FF": "64", "V": "64"})
	group := func(p *te.Program, chunks int) *te.Program {
		q, err := transform.SplitSoftmax(p, func(*transform.SoftmaxSite) transform.Split {
			return transform.Split{Chunks: chunks, Group: true}
		})
		if err != nil {
			t.Fatal(err)
		}
		if sc := q.Lookup("sc"); sc == nil || len(sc.Shape) != 4 || sc.Shape[2] != 4 {
			t.Fatalf("the scores not grouped:\n%s", q)
		}
		return q
	}
	g, _ := gpu.Builtin("h100")
	in := numeric.SeededFeeds(p, 13)
	copy(in["pos"].Data, []float64{127, 0, 63, 64, 31, 100, 32, 126})
	want, err := te.Evaluate(p, in, te.EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, chunks := range []int{1, 4} {
		q := group(p, chunks)
		for level := 0; level <= pipeline.MaxLevel; level++ {
			t.Run(fmt.Sprintf("%d chunks O%d", chunks, level), func(t *testing.T) {
				buildAndCompare(t, q, pipeline.Options{Level: level, GPU: g, FlashChunks: 1}, in, want, tolModel)
			})
		}
		t.Run(fmt.Sprintf("%d chunks bf16", chunks), func(t *testing.T) {
			half := group(precision.Apply(p, precision.BF16), chunks)
			res, hin, want := buildBF16(t, half, in, g)
			k, at := stageOf(res.Plan, "sc")
			if k == nil {
				t.Fatalf("no stage sc in the plan")
			}
			if s := res.Plan.Schedules[k.Stages[at]]; s.MatVec == nil || !s.MatVec.KLanes || s.TileM != 4 {
				t.Errorf("sc: %s; want a matrix-vector tile of 4 rows on a warp's lanes", s)
			}
			checkLogitsBF16(t, res, hin, want)
		})
	}
}

// buildBF16 builds the bf16 program half at the top level as given (no
// flash pass) and evaluates it in the reference on the feeds in, made
// half's types: the build, the feeds and the reference's outputs.
func buildBF16(t *testing.T, half *te.Program, in map[string]*te.Array, g gpu.Model) (*pipeline.Result, map[string]*te.Array, map[string]*te.Array) {
	t.Helper()
	hin := numeric.ConformFeeds(in, half)
	want, err := te.Evaluate(half, hin, te.EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := pipeline.Build(half, pipeline.Options{Level: pipeline.MaxLevel, GPU: g, FlashChunks: 1})
	if err != nil {
		t.Fatal(err)
	}
	return res, hin, want
}

// checkLogitsBF16 runs res in the simulator on in and checks it race-free
// and its logits within 1 % of the bf16 reference's, want.
func checkLogitsBF16(t *testing.T, res *pipeline.Result, in, want map[string]*te.Array) {
	t.Helper()
	checkHalf(t, res, in, want, "logits")
}

// TestFlashExamples splits the softmax of every example that has one
// (transform.SoftmaxSites, at its tiny configuration) in the fewest
// chunks that divide its axis, its scores whole and, where the site owns
// them (transform.SoftmaxSite.OwnScores), split too, at every level, and
// compares the simulator's outputs (race-free) with the reference of the
// unsplit program.
func TestFlashExamples(t *testing.T) {
	g, _ := gpu.Builtin("a100")
	tried, scores := 0, 0
	for _, ex := range examples.All() {
		p, diags := lang.Check(ex.File(), ex.Source(), lang.Config{Defines: ex.Tiny, Model: ex.Model})
		if diags.HasErrors() {
			t.Fatalf("%s: lang.Check:\n%v", ex.Name, diags.Error())
		}
		sites := transform.SoftmaxSites(p)
		if len(sites) == 0 {
			continue
		}
		chunks := 0
		for c := 2; c <= sites[0].Length; c++ {
			if sites[0].Length%c == 0 {
				chunks = c
				break
			}
		}
		if chunks == 0 {
			continue
		}
		tried++
		in := feeds(p, 1)
		want, err := te.Evaluate(p, in, te.EvalOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, split := range []bool{false, true} {
			if split && !sites[0].OwnScores {
				continue
			}
			sp := transform.Split{Chunks: chunks, Scores: split}
			q, err := transform.SplitSoftmax(p, func(s *transform.SoftmaxSite) transform.Split {
				if s.Length%chunks != 0 {
					return transform.Split{Chunks: 1}
				}
				return sp
			})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(q.String(), "/chunk") || (q.Lookup(sites[0].Scores.Name+"/chunk") != nil) != split {
				t.Fatalf("%s: not split as %+v:\n%s", ex.Name, sp, q)
			}
			if split {
				scores++
			}
			for level := 0; level <= pipeline.MaxLevel; level++ {
				t.Run(fmt.Sprintf("%s/C%d/scores=%v/O%d", ex.Name, chunks, split, level), func(t *testing.T) {
					buildAndCompare(t, q, pipeline.Options{Level: level, GPU: g, FlashChunks: 1}, in, want, tolModel)
				})
			}
		}
	}
	if scores < 3 {
		t.Errorf("%d examples with the scores split; want at least 3", scores)
	}
	if tried < 3 {
		t.Errorf("%d examples with a softmax to split; want at least 3 (attention, BERT, Llama)", tried)
	}
}
