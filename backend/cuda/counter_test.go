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

// TestCounterSASS compiles a kernel of two stages joined by per-tile
// counters with nvcc for sm_75, sm_80, sm_86, sm_89 and sm_90 and checks that the machine code
// releases and acquires at GPU scope: a GPU-scope memory barrier before a
// strong reduction (red.release.gpu), and a strong load followed by an L1
// invalidation (ld.acquire.gpu).
func TestCounterSASS(t *testing.T) {
	nvcc := tooltest.NVCC(t)
	cuobjdump := tooltest.Require(t, "Debian's nvidia-cuda-toolkit", "cuobjdump")
	files, err := Emit(kirtest.Counters(6, 10, 0, kirtest.NoCounterBug), sm80(t))
	if err != nil {
		t.Fatal(err)
	}
	src := string(files.Source.Data)
	for _, want := range []string{
		"__syncthreads();\n    if (threadIdx.x == 0) tec_signal(&c[t / 2]);",
		"if (threadIdx.x == 0) tec_wait(&c[r], 2);\n      __syncthreads();",
		"red.release.gpu.global.add.u32", "ld.acquire.gpu.global.u32",
	} {
		if !strings.Contains(src, want) {
			t.Errorf("no %q in the CUDA source", want)
		}
	}
	dir := t.TempDir()
	for _, f := range files.All() {
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, arch := range []string{"sm_75", "sm_80", "sm_86", "sm_89", "sm_90"} {
		cubin := filepath.Join(dir, arch+".cubin")
		out, err := exec.Command(nvcc, "-cubin", "-arch="+arch, "-o", cubin, filepath.Join(dir, "counters.cu")).CombinedOutput()
		if err != nil {
			t.Fatalf("nvcc -arch=%s: %v\n%s", arch, err, out)
		}
		sass, err := exec.Command(cuobjdump, "-sass", cubin).CombinedOutput()
		if err != nil {
			t.Fatalf("cuobjdump: %v\n%s", err, sass)
		}
		for _, want := range []string{"MEMBAR.ALL.GPU", "E.ADD.STRONG.GPU [", "LDG.E.STRONG.GPU", "CCTL.IVALL"} {
			if !strings.Contains(string(sass), want) {
				t.Errorf("%s: no %s in the SASS", arch, want)
			}
		}
	}
}
