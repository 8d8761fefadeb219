package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestExplainPlan checks that "tec explain --plan" shows every kernel
// boundary of the full-size BERT with its reason and numbers, as text and as
// JSON.
func TestExplainPlan(t *testing.T) {
	code, stdout, stderr := runTec(t, "explain", "../../examples/bert.te", "--plan", "--summary", "--json")
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
		t.Fatalf("plan %+v: want several kernels for the full BERT", r.Plan)
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

	code, stdout, _ = runTec(t, "explain", "../../examples/bert.te", "--plan", "--summary", "-O0")
	if code != exitOK || !strings.Contains(stdout, "partition at -O0:") {
		t.Fatalf("text plan at -O0: status %d\n%s", code, stdout)
	}
	if code, _, stderr := runTec(t, "explain", "../../examples/bert.te", "--plan", "--gpu", "tpu"); code != exitUsage || !strings.Contains(stderr, "--gpu") {
		t.Errorf("unknown GPU: status %d, stderr %q", code, stderr)
	}
}
