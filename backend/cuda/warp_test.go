package cuda

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"tec/backend/internal/kirtest"
	"tec/internal/testkit/tooltest"
)

// TestWarpSASS compiles the warp-level pipeline with nvcc for sm_80,
// sm_86, sm_89 and sm_90 and checks that its machine code has what the kernel IR asks for:
// a tensor-core HMMA, ldmatrix (LDSM, plain and transposed), cp.async
// (LDGSTS, bypassing L1) and 128-bit loads and stores, and no spills.
func TestWarpSASS(t *testing.T) {
	nvcc := tooltest.NVCC(t)
	cuobjdump := tooltest.Require(t, "Debian's nvidia-cuda-toolkit", "cuobjdump")
	files, err := Emit(kirtest.Pipeline(kirtest.PipelineBugs{}), sm80(t))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, f := range files.All() {
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, arch := range []string{"sm_80", "sm_86", "sm_89", "sm_90"} {
		cubin := filepath.Join(dir, arch+".cubin")
		out, err := exec.Command(nvcc, "-cubin", "-arch="+arch, "-Xptxas", "-v", "-o", cubin, filepath.Join(dir, "pipeline.cu")).CombinedOutput()
		if err != nil {
			t.Fatalf("nvcc -arch=%s: %v\n%s", arch, err, out)
		}
		if !strings.Contains(string(out), "0 bytes spill stores, 0 bytes spill loads") {
			t.Errorf("%s: ptxas reports spills:\n%s", arch, out)
		}
		sass, err := exec.Command(cuobjdump, "-sass", cubin).CombinedOutput()
		if err != nil {
			t.Fatalf("cuobjdump: %v\n%s", err, sass)
		}
		for _, want := range []string{"HMMA.16816.F32", "LDSM.16.M88.4", "LDSM.16.MT88.2", "LDGSTS.E.BYPASS.128", "LDG.E.128", "STS.128"} {
			if !strings.Contains(string(sass), want) {
				t.Errorf("%s: no %s in the SASS", arch, want)
			}
		}
	}
}
