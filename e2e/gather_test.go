package e2e

import (
	"fmt"
	"strings"
	"testing"

	"tec/backend/sim"
	"tec/gpu"
	"tec/internal/numeric"
	"tec/lang"
	"tec/pipeline"
	"tec/te"
)

// gatherSource gathers rows of a table (whose rows are computed, so that
// the gather reads a stage of the same program), with an offset, and picks
// the best column of each row with argmax and argmin.
const gatherSource = `
model g {
  input ids: i32[6]
  param wte: f32[9, 40]
  param w: f32[40, 40]
  t[v, d] = wte[v, d] * 2.0 + 1.0
  e[s, d] = t[ids[s], d] + wte[ids[s] + 1, d]
  h[s, j] = sum[k](e[s, k] * w[k, j])
  best[s] = argmax[d](h[s, d])
  worst[s] = argmin[d](h[s, d])
  pick[s, d] = e[best[s] % 6, d]
  output h, best, worst, pick
}
`

// TestGather checks gathers and argmax at every level against the
// reference, and that an id outside its table is an error naming it at
// every level.
func TestGather(t *testing.T) {
	p, diags := lang.Check("g.te", []byte(gatherSource), lang.Config{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	in := numeric.SeededFeeds(p, 3)
	for i, v := range in["ids"].Data {
		if v < 0 || v >= 8 {
			t.Fatalf("SeededFeeds gave ids[%d] = %g, outside [0, 8)", i, v)
		}
	}
	want, err := te.Evaluate(p, in, te.EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bad := map[string]*te.Array{"ids": te.NewArray(te.I32, []int{6}), "wte": in["wte"], "w": in["w"]}
	copy(bad["ids"].Data, []float64{1, 2, 3, 8, 0, 0}) // ids[3] + 1 = 9 is past wte's 9 rows
	const wantErr = "gather index from ids[3] = 9 is outside wte's dimension 0 [0, 9)"
	if _, err := te.Evaluate(p, bad, te.EvalOptions{}); err == nil || !strings.Contains(err.Error(), wantErr) {
		t.Errorf("reference with an id out of range: %v", err)
	}
	g, _ := gpu.Builtin("a100")
	for level := 0; level <= pipeline.MaxLevel; level++ {
		t.Run(fmt.Sprintf("O%d", level), func(t *testing.T) {
			opts := pipeline.Options{Level: level, GPU: g}
			buildAndCompare(t, p, opts, in, want, tolModel)
			res, err := pipeline.Build(p, opts)
			if err != nil {
				t.Fatal(err)
			}
			_, err = sim.Run(res.Module, bad, sim.Options{ResidentBlocks: resident})
			if err == nil || !strings.Contains(err.Error(), wantErr) {
				t.Errorf("simulator with an id out of range: %v, want %q", err, wantErr)
			}
		})
	}
}
