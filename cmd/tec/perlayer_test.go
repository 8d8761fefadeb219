package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tec/internal/tensorio"
	"tec/te"
)

// TestRunPerLayerParams runs testdata/stages.te, whose params are declared in
// a loop (w.0, b.0, w.1, ...): filled and saved under those names by
// --save-feeds, read back from an .npz by --params on the simulator at every
// level, named in the C interface of tec build, and a misspelt one is
// reported with the nearest name.
func TestRunPerLayerParams(t *testing.T) {
	const src = "testdata/stages.te"
	dir := t.TempDir()
	feeds := filepath.Join(dir, "feeds")
	ref := filepath.Join(dir, "ref.npz")
	code, stdout, stderr := runTec(t, "run", src, "--device", "ref", "--fill", "random", "--save-feeds", feeds, "--outputs", ref)
	if code != exitOK {
		t.Fatalf("ref: status %d\n%s", code, stderr)
	}
	names := []string{"w.0", "b.0", "w.1", "b.1", "w.2", "b.2", "fc", "fb"}
	if want := "filled with random (seed 0): x, " + strings.Join(names, ", "); !strings.Contains(stdout+stderr, want) {
		t.Errorf("want %q in\n%s%s", want, stdout, stderr)
	}
	params := map[string]*te.Array{}
	for _, n := range names {
		a, err := tensorio.ReadNPYFile(filepath.Join(feeds, n+".npy"), nil)
		if err != nil {
			t.Fatalf("--save-feeds: %v", err)
		}
		params[n] = a
	}
	if got := fmt.Sprint(params["w.1"].Shape); got != "[8 4 3 3]" {
		t.Errorf("w.1 has shape %s, want [8 4 3 3]", got)
	}
	x, err := tensorio.ReadNPYFile(filepath.Join(feeds, "x.npy"), nil)
	if err != nil {
		t.Fatal(err)
	}
	pnpz, xnpz := filepath.Join(dir, "params.npz"), filepath.Join(dir, "x.npz")
	writeNPZ(t, pnpz, params)
	writeNPZ(t, xnpz, map[string]*te.Array{"x": x})
	for level := 0; level <= 4; level++ {
		code, stdout, stderr := runTec(t, "run", src, "--device", "sim", fmt.Sprintf("-O%d", level),
			"--params", pnpz, "--inputs", xnpz, "--expected", ref)
		if code != exitOK || !strings.Contains(stdout, "match the expected values") {
			t.Errorf("-O%d: status %d\n%s%s", level, code, stdout, stderr)
		}
	}

	params["w.3"] = params["w.2"]
	misspelt := filepath.Join(dir, "misspelt.npz")
	writeNPZ(t, misspelt, params)
	_, stdout, stderr = runTec(t, "run", src, "--params", misspelt, "--inputs", xnpz)
	if want := `holds "w.3", which is no input or param of model stages (did you mean "w.`; !strings.Contains(stdout+stderr, want) {
		t.Errorf("want %q in\n%s%s", want, stdout, stderr)
	}

	out := filepath.Join(dir, "build")
	if code, _, stderr := runTec(t, "build", src, "-o", out); code != exitOK {
		t.Fatalf("build: status %d\n%s", code, stderr)
	}
	for file, want := range map[string]string{
		"stages.h":  "STAGES_PARAM_W_0 = 0,",
		"stages.cu": `{"w.0", TEC_F32, 4, tec_shape_params_w_0, 432}`,
	} {
		b, err := os.ReadFile(filepath.Join(out, file))
		if err != nil || !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %q (%v)", file, want, err)
		}
	}
}
