package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tec/internal/tensorio"
)

// A softmax over long rows takes the two-phase split reduction at -O4 on the
// A100 model: atomics by default, per-block partials with --deterministic.
var splitSoftmax = []string{"../../examples/softmax.te", "-D", "N=4", "-D", "D=65536", "-O4", "--gpu", "a100"}

func TestBuildDeterministic(t *testing.T) {
	for _, tt := range []struct {
		flags       []string
		wantAtomics bool
	}{
		{nil, true},
		{[]string{"--deterministic"}, false},
	} {
		dir := t.TempDir()
		args := append(append([]string{"build"}, splitSoftmax...), "-o", dir, "--emit", "cu")
		args = append(args, tt.flags...)
		if code, _, stderr := runTec(t, args...); code != exitOK {
			t.Fatalf("tec %v: status %d\n%s", args, code, stderr)
		}
		cu, err := os.ReadFile(filepath.Join(dir, "softmax.cu"))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(cu), "atomicAdd"); got != tt.wantAtomics {
			t.Errorf("tec %v: atomicAdd in the kernel = %v, want %v", tt.flags, got, tt.wantAtomics)
		}
	}
}

// TestRunDeterministic checks that --deterministic simulations agree with the
// reference and are bit-identical from run to run.
func TestRunDeterministic(t *testing.T) {
	dir := t.TempDir()
	ref := filepath.Join(dir, "ref.npz")
	base := append([]string{"run"}, splitSoftmax...)
	base = append(base, "--fill", "random", "--seed", "5")
	// The reference takes no kernel flags (-O, --gpu): they would be an
	// error without --device sim.
	refArgs := append([]string{"run"}, splitSoftmax[:5]...)
	refArgs = append(refArgs, "--fill", "random", "--seed", "5")
	if code, _, stderr := runTec(t, append(refArgs, "--device", "ref", "--outputs", ref)...); code != exitOK {
		t.Fatalf("reference run: status %d\n%s", code, stderr)
	}
	var outs [2][]float64
	for i := range outs {
		out := filepath.Join(dir, "sim.npz")
		args := append(base, "--device", "sim", "--deterministic", "--expected", ref, "--outputs", out)
		if code, stdout, stderr := runTec(t, args...); code != exitOK {
			t.Fatalf("simulated run %d: status %d\n%s%s", i, code, stdout, stderr)
		}
		got, err := tensorio.ReadNPZ(out)
		if err != nil {
			t.Fatal(err)
		}
		outs[i] = got["y"].Data
	}
	for k := range outs[0] {
		if outs[0][k] != outs[1][k] {
			t.Fatalf("element %d differs between runs: %v, %v", k, outs[0][k], outs[1][k])
		}
	}
}
