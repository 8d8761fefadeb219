package pipeline

import (
	"os"
	"testing"

	"tec/lang"
	"tec/partition"
	"tec/precision"
	"tec/transform"
)

// TestFlashChunksFor checks the cost model's view of the full-size Llama
// decode step's attention (bf16, H100 model, one layer: every layer is
// the same site). Over a cache of 8192 positions at position 8191 the
// site alone is predicted faster split (the grouped query heads' rows
// share each load of the value cache) but its tiles take 56 registers a
// thread, 4 blocks per SM against 6, so the split is not made; at
// position 127, where the positions past pos are skipped, every split is
// predicted slower.
func TestFlashChunksFor(t *testing.T) {
	src, err := os.ReadFile("../examples/llama.te")
	if err != nil {
		t.Fatal(err)
	}
	p, diags := lang.Check("llama.te", src, lang.Config{Model: "decode", Defines: map[string]string{"T": "8192", "L": "1"}})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	p = precision.Apply(p, precision.BF16)
	sites := transform.SoftmaxSites(p)
	if len(sites) != 1 {
		t.Fatalf("%d softmax sites; want 1", len(sites))
	}
	g, _ := partition.BuiltinGPU("h100")
	for _, tc := range []struct {
		context     int
		fasterSplit bool
	}{{8192, true}, {128, false}} {
		opts := Options{Level: 4, GPU: g, Context: tc.context}
		cands, err := FlashCandidates(sites[0], opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(cands) != 7 || cands[0].Chunks != 1 || cands[6].Chunks != 64 {
			t.Fatalf("context %d: candidates %+v; want 1 and 2 to 64", tc.context, cands)
		}
		faster := false
		for _, c := range cands[1:] {
			faster = faster || c.Time < cands[0].Time*flashMargin
			if c.BlocksPerSM >= cands[0].BlocksPerSM {
				t.Errorf("context %d, %d chunks: %d blocks per SM, unsplit %d; want fewer", tc.context, c.Chunks, c.BlocksPerSM, cands[0].BlocksPerSM)
			}
		}
		if faster != tc.fasterSplit {
			t.Errorf("context %d: candidates %+v; want a split predicted faster: %v", tc.context, cands, tc.fasterSplit)
		}
		if c, err := FlashChunksFor(sites[0], opts, nil); err != nil || c != 1 {
			t.Errorf("context %d: %d chunks, %v; want 1", tc.context, c, err)
		}
	}
}
