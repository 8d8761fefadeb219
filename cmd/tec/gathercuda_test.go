package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tec/internal/tensorio"
	"tec/internal/testkit/tooltest"
	"tec/te"
)

// TestRunCUDABadIndex: tec run --device cuda with an id outside its table
// fails with the message of the error record that the kernels write and
// the runtime reads (on the fake GPU, which runs the kernels' clamping and
// reporting path in the simulator).
func TestRunCUDABadIndex(t *testing.T) {
	tooltest.Require(t, "LLVM (Debian: llvm)", "llc", "llc-16")
	dir := t.TempDir()
	src := filepath.Join(dir, "embed.te")
	const model = `model embed {
  input ids: i32[4]
  param wte: f32[10, 8]
  e[s, d] = wte[ids[s], d] * 2.0
  output e
}
`
	if err := os.WriteFile(src, []byte(model), 0o644); err != nil {
		t.Fatal(err)
	}
	ids := te.NewArray(te.I32, []int{4})
	copy(ids.Data, []float64{1, 9, 0, 50000})
	in := filepath.Join(dir, "ids.npz")
	if err := tensorio.WriteNPZ(in, map[string]*te.Array{"ids": ids}); err != nil {
		t.Fatal(err)
	}
	mod := buildModule(t, src, nil, 4, "f32")
	code, _, stderr := runTecCUDA(t, map[string]string{"TEC_CUDA": os.Args[0]}, fakeTecCUDA(t, mod),
		"run", "--device", "cuda", "-O4", "--inputs", in, "--fill", "random", src)
	const want = "gather index ids[3] = 50000 is outside wte's dimension 0 [0, 10)"
	if code == exitOK || !strings.Contains(stderr, want) {
		t.Errorf("status %d, stderr:\n%s\nwant a failure with %q", code, stderr, want)
	}
}
