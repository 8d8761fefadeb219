package pipeline

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"tec/gpu"
	"tec/lang"
	"tec/precision"
	"tec/transform"
)

// TestFlashSplitFor checks the cost model's choice for the full-size
// Llama decode step's attention (bf16, H100 model, one layer: every layer
// is the same site), over a cache of 8192 positions: the candidates
// (unsplit, then 2 to 64 chunks, each with the scores whole, whole with
// the query heads of a key head as the rows of their tiles, and split)
// and the split chosen. At position 8191 the chunks put more blocks, and
// so more loads in flight, on the positions, and the scores stay whole
// and grouped, each key read once for its four query heads (B = 8: 2
// chunks; B = 1: 8). At position 127 the scores are split with the
// chunks (B = 8: 2; B = 1: 8), a chunk's scores and partials one block's
// chain, its masked scores on a warp's lanes, and the merge one stage. A
// split's kernel's two launches are charged only where the chunks hold
// fewer blocks per SM than the unsplit site.
func TestFlashSplitFor(t *testing.T) {
	src, err := os.ReadFile("../examples/llama.te")
	if err != nil {
		t.Fatal(err)
	}
	g, _ := gpu.Builtin("h100")
	for _, tc := range []struct {
		b, context           int
		split, scores, group bool
	}{{8, 8192, true, false, true}, {8, 128, true, true, false}, {1, 8192, true, false, true}, {1, 128, true, true, false}} {
		p, diags := lang.Check("llama.te", src, lang.Config{Model: "decode", Defines: map[string]string{"T": "8192", "L": "1", "B": fmt.Sprint(tc.b)}})
		if diags.HasErrors() {
			t.Fatal(diags.Error())
		}
		p = precision.Apply(p, precision.BF16)
		sites := transform.SoftmaxSites(p)
		if len(sites) != 1 {
			t.Fatalf("%d softmax sites; want 1", len(sites))
		}
		opts := Options{Level: 4, GPU: g, Context: tc.context}
		cands, err := FlashCandidates(sites[0], opts)
		if err != nil {
			t.Fatal(err)
		}
		// unsplit, whole and grouped, then 2 to 64 chunks, each with the
		// scores whole, whole and grouped, and split
		if len(cands) != 20 || cands[0].Chunks != 1 || cands[0].Group || !cands[1].Group || cands[1].Chunks != 1 ||
			cands[17].Chunks != 64 || cands[17].Scores || cands[17].Group || !cands[18].Group || !cands[19].Scores {
			t.Fatalf("B=%d context %d: candidates %+v; want 1, and 2 to 64 with the scores whole, grouped and split", tc.b, tc.context, cands)
		}
		sp, err := FlashSplitFor(sites[0], opts)
		if err != nil || (sp.Chunks > 1) != tc.split || sp.Scores != tc.scores || sp.Group != tc.group {
			t.Errorf("B=%d context %d: %+v, %v; want a split: %v, the scores split: %v, grouped: %v (candidates %+v)", tc.b, tc.context, sp, err, tc.split, tc.scores, tc.group, cands)
		}
		t.Logf("B=%d context %d: %+v", tc.b, tc.context, sp)
	}
}

// attentionSource is a decode step's attention over 64 positions, masked
// past the run-time pos[b].
const attentionSource = `
model decode {
  input pos: i32[2]
  input q: f32[2, 2, 8]
  input kc: f32[2, 2, 64, 8]
  input vc: f32[2, 2, 64, 8]
  sc[b, n, t] = select(t <= pos[b], sum[e](q[b, n, e] * kc[b, n, t, e]), -inf) where t in 0..64
  mx[b, n] = max[t](sc[b, n, t])
  pr[b, n, t] = exp(sc[b, n, t] - mx[b, n])
  den[b, n] = sum[t](pr[b, n, t])
  ctx[b, n, e] = sum[t](pr[b, n, t] * vc[b, n, t, e]) / den[b, n]
  output ctx
}
`

// TestFlashChunksOption checks what Options.FlashChunks does at each
// level: a count splits at every level where it divides the axis, 1 and
// a count that does not divide never split, 0 leaves -O0 to -O2 alone,
// and a negative count is an error.
func TestFlashChunksOption(t *testing.T) {
	p, diags := lang.Check("attn.te", []byte(attentionSource), lang.Config{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	for _, tc := range []struct {
		level, chunks int
		split         bool
		err           string
	}{
		{0, 4, true, ""}, {2, 8, true, ""}, {4, 16, true, ""},
		{4, 1, false, ""}, {0, 3, false, ""}, {2, 0, false, ""},
		{4, -2, false, "flash-decoding: -2 chunks"},
	} {
		res, err := Build(p, Options{Level: tc.level, FlashChunks: tc.chunks})
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("-O%d, %d chunks: err %v; want %q", tc.level, tc.chunks, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("-O%d, %d chunks: %v", tc.level, tc.chunks, err)
		}
		split := strings.Contains(res.Program.String(), "/chunk")
		if split != tc.split {
			t.Errorf("-O%d, %d chunks: split %v; want %v", tc.level, tc.chunks, split, tc.split)
		}
	}
}

// TestGroupedTiles checks the tiles of one full-size Llama decode layer
// (bf16, H100 model, B = 8, T = 1024) with its attention grouped in 8
// chunks: where a tile of the group's rows reads a select of the new key
// or value and the cache, the planner prices several columns a thread
// (scalar loads, each staged element read once for them) and one column
// a thread (16-byte loads) and keeps each where the cost model prefers
// it: the scores one column a thread on a warp's lanes, the partial
// contexts (positions of 128, columns along a value) several columns a
// thread, which the cost model prices below one column a thread (made
// 4 columns a thread with 16-byte loads across them, MatVec.ColVec).
// Before both were priced, the several-columns candidate was lost and
// the contexts took the vectors across columns.
func TestGroupedTiles(t *testing.T) {
	src, err := os.ReadFile("../examples/llama.te")
	if err != nil {
		t.Fatal(err)
	}
	p, diags := lang.Check("llama.te", src, lang.Config{Model: "decode", Defines: map[string]string{"L": "1", "B": "8"}})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	p = precision.Apply(p, precision.BF16)
	p, err = transform.SplitSoftmax(p, func(*transform.SoftmaxSite) transform.Split { return transform.Split{Chunks: 8, Group: true} })
	if err != nil {
		t.Fatal(err)
	}
	g, _ := gpu.Builtin("h100")
	res, err := Build(p, Options{Level: 4, GPU: g, FlashChunks: 1})
	if err != nil {
		t.Fatal(err)
	}
	sc, ctx := res.Plan.Schedules[res.Program.Lookup("sc")], res.Plan.Schedules[res.Program.Lookup("ctx/chunk")]
	if sc == nil || sc.MatVec == nil || sc.MatVec.Cols > 1 || !sc.MatVec.KLanes || sc.TileM != 4 {
		t.Errorf("sc: %v; want a tile of the 4 heads, a column a thread on a warp's lanes", sc)
	}
	if ctx == nil || ctx.MatVec == nil || ctx.MatVec.Cols < 2 || ctx.MatVec.ColVec != 0 || ctx.TileM != 4 {
		t.Errorf("ctx/chunk: %v; want a tile of the 4 heads, several columns a thread, each read alone", ctx)
	}
}
