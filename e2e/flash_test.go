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
	"tec/pipeline"
	"tec/te"
	"tec/transform"
)

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
	src, err := os.ReadFile("../examples/llama.te")
	if err != nil {
		t.Fatal(err)
	}
	defs := map[string]string{"B": "4", "T": "256", "L": "2", "D": "32", "NH": "4", "NKV": "2", "FF": "64", "V": "64"}
	p, diags := lang.Check("llama.te", src, lang.Config{Model: "decode", Defines: defs})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
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
					if strings.HasSuffix(u.Name, "/chunk") {
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

// TestFlashExamples splits the softmax of every example that has one
// (transform.SoftmaxSites, at its tiny configuration) in the fewest
// chunks that divide its axis, at every level, and compares the
// simulator's outputs (race-free) with the reference of the unsplit
// program.
func TestFlashExamples(t *testing.T) {
	g, _ := gpu.Builtin("a100")
	tried := 0
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
		for level := 0; level <= pipeline.MaxLevel; level++ {
			t.Run(fmt.Sprintf("%s/C%d/O%d", ex.Name, chunks, level), func(t *testing.T) {
				res, _ := buildAndCompare(t, p, pipeline.Options{Level: level, GPU: g, FlashChunks: chunks}, in, want, tolModel)
				if !strings.Contains(res.Program.String(), "/chunk") {
					t.Errorf("not split")
				}
			})
		}
	}
	if tried < 3 {
		t.Errorf("%d examples with a softmax to split; want at least 3 (attention, BERT, Llama)", tried)
	}
}
