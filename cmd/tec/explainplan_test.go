package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tec/examples"
)

// TestExplainPlan checks that "tec explain --plan" shows every kernel
// boundary of the full-size EfficientNet at f16 with its reason and
// numbers, and what bounds each stage, as text and as JSON.
func TestExplainPlan(t *testing.T) {
	code, stdout, stderr := runTec(t, "explain", "../../examples/efficientnet.te", "--precision", "f16", "--ptxas", "off", "--plan", "--summary", "--json")
	if code != exitOK {
		t.Fatalf("status %d\n%s", code, stderr)
	}
	var r struct {
		Plan *planReport `json:"plan"`
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	if r.Plan == nil || len(r.Plan.Kernels) < 2 {
		t.Fatalf("plan %+v: want several kernels for the full EfficientNet", r.Plan)
	}
	if r.Plan.Level != 4 || r.Plan.GPU == "" {
		t.Errorf("plan at -O%d on %q, want -O4 on the default GPU", r.Plan.Level, r.Plan.GPU)
	}
	for i, k := range r.Plan.Kernels {
		if len(k.Stages) == 0 || k.Grid <= 0 || k.Threads <= 0 || k.PredictedMS <= 0 {
			t.Errorf("kernel %d: %+v", i, k)
		}
		switch {
		case i == 0 && k.Boundary != nil:
			t.Errorf("kernel 0 has a boundary: %+v", k.Boundary)
		case i > 0 && (k.Boundary == nil || k.Boundary.Reason == "" || k.Boundary.Before != k.Stages[0]):
			t.Errorf("kernel %d: boundary %+v, first stage %s", i, k.Boundary, k.Stages[0])
		}
		checkStageCosts(t, i, k)
	}

	// The LSTM's steps read their weights through the weight cache.
	code, stdout, stderr = runTec(t, "explain", "../../examples/lstm.te", "-D", "T=4", "-D", "L=3", "-D", "H=16", "--gpu", "small", "--plan", "--summary", "--json")
	r.Plan = nil
	if err := json.Unmarshal([]byte(stdout), &r); code != exitOK || err != nil {
		t.Fatalf("LSTM: status %d, %v\n%s", code, err, stderr)
	}
	if k := r.Plan.Kernels; len(k) != 1 || k[0].WeightCache == nil || k[0].WeightCache.Slices != 3 ||
		k[0].WeightCache.Resident != 3 || len(k[0].WeightCache.Stages) == 0 {
		t.Errorf("LSTM plan: %+v; want one kernel whose weight cache holds all 3 slices", k)
	}

	code, stdout, _ = runTec(t, "explain", "../../examples/mmoe.te", "--plan", "--summary", "--ptxas", "off")
	if code != exitOK || !strings.Contains(stdout, "from DRAM, bound: ") {
		t.Errorf("text plan: status %d, no stage's bound\n%s", code, stdout)
	}

	code, stdout, _ = runTec(t, "explain", "../../examples/bert.te", "--plan", "--summary", "-O0")
	if code != exitOK || !strings.Contains(stdout, "partition at -O0:") {
		t.Fatalf("text plan at -O0: status %d\n%s", code, stdout)
	}
	if code, _, stderr := runTec(t, "explain", "../../examples/bert.te", "--plan", "--gpu", "tpu"); code != exitUsage || !strings.Contains(stderr, "--gpu") {
		t.Errorf("unknown GPU: status %d, stderr %q", code, stderr)
	}
}

// checkStageCosts checks the predictions of kernel i's stages, k: one
// per stage in its order, each with a bound the cost model names, a time
// (but a stage in another's epilogue) and its loads described.
func checkStageCosts(t *testing.T, i int, k planKernel) {
	t.Helper()
	bounds := map[string]bool{"DRAM": true, "L2": true, "tensor": true, "FP32 issue": true, "latency": true, "grid syncs": true, "L1 wavefronts": true, "none (in an epilogue)": true}
	if len(k.StageCosts) != len(k.Stages) {
		t.Errorf("kernel %d: %d stage costs for %d stages", i, len(k.StageCosts), len(k.Stages))
		return
	}
	for j, sc := range k.StageCosts {
		epilogue := sc.Bound == "none (in an epilogue)"
		if sc.Stage != k.Stages[j] || !bounds[sc.Bound] || (sc.PredictedUS > 0) == epilogue || sc.LoadBytes <= 0 || sc.LoadsInFlight <= 0 {
			t.Errorf("kernel %d, stage %d (%s): %+v", i, j, k.Stages[j], sc)
		}
	}
}

// TestExplainPlanGridMatchesReport checks, for every example at full size
// (the LSTM at 4 steps) at -O4 and at its tiny size at -O0,
// that the grid "tec explain --plan" reports for each kernel is the grid
// that "tec build --report" counts, and that a grid other than the plan's
// says why.
func TestExplainPlanGridMatchesReport(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every example at full size")
	}
	for _, ex := range examples.All() {
		for _, level := range []string{"-O0", "-O4"} {
			t.Run(ex.Name+level, func(t *testing.T) {
				file := filepath.Join("..", "..", "examples", ex.File())
				var args []string
				switch {
				case level == "-O0":
					args = ex.TinyFlags() // one kernel per TE: the tiny model has every kind
				case ex.Name == "lstm":
					// Full-size widths, 4 of the 100 steps: explaining 1,000
					// cells takes minutes.
					args = []string{"-D", "T=4"}
				}
				if level != "-O0" && ex.Model != "" {
					args = append(args, "--model", ex.Model)
				}
				code, stdout, stderr := runTec(t, append([]string{"explain", file, "--plan", "--summary", "--json", level}, args...)...)
				if code != exitOK {
					t.Fatalf("explain: status %d\n%s", code, stderr)
				}
				var plan struct {
					Plan planReport `json:"plan"`
				}
				if err := json.Unmarshal([]byte(stdout), &plan); err != nil {
					t.Fatalf("explain: not JSON: %v", err)
				}
				dir := t.TempDir()
				rpath := filepath.Join(dir, "report.json")
				code, _, stderr = runTec(t, append([]string{"build", file, "--emit", "cu", "-o", dir, "--report", rpath, level}, args...)...)
				if code != exitOK {
					t.Fatalf("build: status %d\n%s", code, stderr)
				}
				var rep struct {
					Kernels []struct {
						Name     string `json:"name"`
						Blocks   int    `json:"blocks"`
						Resident bool   `json:"resident"`
					} `json:"kernels"`
				}
				data, err := os.ReadFile(rpath)
				if err == nil {
					err = json.Unmarshal(data, &rep)
				}
				if err != nil {
					t.Fatalf("report: %v", err)
				}
				if n := len(rep.Kernels); n == len(plan.Plan.Kernels)+1 && rep.Kernels[n-1].Name == "update" {
					rep.Kernels = rep.Kernels[:n-1] // in-place updates, applied after the plan's kernels
				}
				if len(rep.Kernels) != len(plan.Plan.Kernels) {
					t.Fatalf("explain --plan has %d kernels, the report %d", len(plan.Plan.Kernels), len(rep.Kernels))
				}
				for i, k := range plan.Plan.Kernels {
					r := rep.Kernels[i]
					if k.Grid != r.Blocks || k.Resident != r.Resident {
						t.Errorf("kernel %d (%s): explain --plan says grid %d (resident %v), the report %d blocks (resident %v)",
							i, r.Name, k.Grid, k.Resident, r.Blocks, r.Resident)
					}
					if (k.Grid != k.PlanGrid) != (k.GridReason != "") {
						t.Errorf("kernel %d (%s): grid %d, plan's grid %d, reason %q", i, r.Name, k.Grid, k.PlanGrid, k.GridReason)
					}
				}
			})
		}
	}
}

// TestExplainPlanGridReason checks the text plan of the full-size softmax,
// whose 128 rows launch 128 of the 864 blocks that the plan's all-resident
// grid would hold.
func TestExplainPlanGridReason(t *testing.T) {
	code, stdout, stderr := runTec(t, "explain", "../../examples/softmax.te", "--plan", "--summary")
	if code != exitOK {
		t.Fatalf("status %d\n%s", code, stderr)
	}
	want := "kernel 0: 3 stages, grid 128 (planned 864, 8/SM: the kernel has work for 128 blocks only), "
	if !strings.Contains(stdout, want) {
		t.Errorf("text plan lacks %q:\n%s", want, stdout)
	}
}

// TestExplainPlanFlash checks that "tec explain --plan" says what the
// flash pass chose for a decode step's attention, one line for the
// layers' sites of one choice, as text and as JSON: the tiny Llama's at
// B = 8, a cache of 512, its two layers' sites split in chunks and
// priced below the unsplit site.
func TestExplainPlanFlash(t *testing.T) {
	args := []string{"explain", "../../examples/llama.te", "--model", "decode", "-D", "B=8", "-D", "T=512", "-D", "L=2",
		"-D", "D=512", "-D", "NH=8", "-D", "NKV=2", "-D", "FF=64", "-D", "V=64", "--precision", "bf16", "--gpu", "h100",
		"--ptxas", "off", "--plan", "--summary"}
	code, stdout, stderr := runTec(t, args...)
	if code != exitOK {
		t.Fatalf("status %d\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "flash-decoding, as the cost model chose it") || !strings.Contains(stdout, "mx over 512 positions: ") ||
		!strings.Contains(stdout, "; and 1 site like it (mx.1)") {
		t.Errorf("no line of the flash pass's choice for mx and mx.1:\n%s", stdout)
	}
	code, stdout, stderr = runTec(t, append(args, "--json")...)
	var r struct {
		Plan *planReport `json:"plan"`
	}
	if err := json.Unmarshal([]byte(stdout), &r); code != exitOK || err != nil {
		t.Fatalf("status %d, %v\n%s", code, err, stderr)
	}
	if f := r.Plan.Flash; len(f) != 1 || len(f[0].Sites) != 2 || f[0].Positions != 512 || f[0].Chunks < 2 ||
		!(f[0].PredictedUS > 0 && f[0].PredictedUS < f[0].UnsplitUS) {
		t.Errorf("flash %+v; want one choice for mx and mx.1, split, predicted faster than unsplit", f)
	}
}

// TestExplainPlanGroups checks that "tec explain --plan" says what the
// groups pass chose for a grouped convolution, as text and as JSON: 16
// groups of 16 channels at 14×14 pixels, grouped, priced below the
// convolution an output at a time.
func TestExplainPlanGroups(t *testing.T) {
	stdout, plan := explainPlanF16(t, "conv.te", `model m {
  input x: f32[1, 128, 14, 14]
  param w: f32[256, 8, 3, 3]
  param b: f32[256]
  z = conv2d(x, w, 1, 1, 1, 16)
  y[n, o, i, j] = max(z[n, o, i, j] + b[o], 0)
  output y
}
`)
	if !strings.Contains(stdout, "grouped convolutions, as the cost model chose them:\n  z, 16 groups of 16 channels: a batched contraction") {
		t.Errorf("no line of the groups pass's choice for z:\n%s", stdout)
	}
	if g := plan.Groups; len(g) != 1 || len(g[0].Convolutions) != 1 || g[0].Convolutions[0] != "z" || g[0].Groups != 16 ||
		g[0].Channels != 16 || !g[0].Grouped || !(g[0].PredictedUS > 0 && g[0].PredictedUS < g[0].AsIsUS) {
		t.Errorf("groups %+v; want z's, 16 groups of 16 channels, grouped, predicted faster than as it is", g)
	}
}

// explainPlanF16 writes the model src to a file name and returns what
// "tec explain --plan --summary" prints of it at f16 for the A100 model
// (ptxas off), and its plan with --json.
func explainPlanF16(t *testing.T, name, src string) (string, *planReport) {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"explain", path, "--precision", "f16", "--gpu", "a100", "--ptxas", "off", "--plan", "--summary"}
	code, text, stderr := runTec(t, args...)
	if code != exitOK {
		t.Fatalf("status %d\n%s", code, stderr)
	}
	code, stdout, stderr := runTec(t, append(args, "--json")...)
	var r struct {
		Plan *planReport `json:"plan"`
	}
	if err := json.Unmarshal([]byte(stdout), &r); code != exitOK || err != nil || r.Plan == nil {
		t.Fatalf("status %d, %v\n%s", code, err, stderr)
	}
	return text, r.Plan
}

// TestExplainPlanPads checks the pad pass's choice in "tec explain
// --plan": a window attention over 49 positions in f16, priced padded to
// 56 and as it is, both predictions given and the choice the cheaper one's
// (by 2 % at least for the padding), in words and in --json.
func TestExplainPlanPads(t *testing.T) {
	stdout, plan := explainPlanF16(t, "win.te", `model win {
  input q: f32[16, 4, 49, 32]
  input k: f32[16, 4, 49, 32]
  input v: f32[16, 4, 49, 32]
  sc[w, h, i, j] = sum[e](q[w, h, i, e] * k[w, h, j, e]) * 0.17677669 where e in 0..32
  mx[w, h, i] = max[j](sc[w, h, i, j])
  p[w, h, i, j] = exp(sc[w, h, i, j] - mx[w, h, i])
  den[w, h, i] = sum[j](p[w, h, i, j])
  ctx[w, h, i, e] = sum[j](p[w, h, i, j] * v[w, h, j, e]) / den[w, h, i] where e in 0..32
  output ctx
}
`)
	if !strings.Contains(stdout, "softmax axes padded to 16-byte rows, as the cost model chose them:\n  mx over 49 positions: ") {
		t.Errorf("no line of the pad pass's choice for mx:\n%s", stdout)
	}
	if p := plan.Pads; len(p) != 1 || len(p[0].Sites) != 1 || p[0].Sites[0] != "mx" || p[0].Positions != 49 || p[0].PaddedTo != 56 ||
		!(p[0].PredictedUS > 0 && p[0].AsIsUS > 0) || p[0].Padded != (p[0].PredictedUS < 0.98*p[0].AsIsUS) {
		t.Errorf("pads %+v; want mx's, 49 positions padded to 56, both predicted, padded where predicted faster", p)
	}
}
