package cuda

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"tec/backend/internal/kirtest"
	"tec/backend/kir"
	"tec/gpu"
	"tec/internal/testkit/tooltest"
	"tec/te"
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

// TestTuringSASS compiles an f16 m16n8k8 MMA, two of which make each
// m16n8k16 step on sm_75, with nvcc for sm_75 and checks that its machine
// code is Turing's tensor-core HMMA.1688; the emitter refuses what sm_75
// lacks (cp.async, the m16n8k16 shape, bf16) with the reason.
func TestTuringSASS(t *testing.T) {
	turing, err := gpu.LookupArch("sm_75")
	if err != nil {
		t.Fatal(err)
	}
	for m, want := range map[*kir.Module]string{
		kirtest.Pipeline(kirtest.PipelineBugs{}):                 "cp.async needs sm_80 or later; the module is compiled for sm_75",
		kirtest.MMA(kir.M16N8K16, te.F16, kirtest.ISAFragIndex):  "mma.m16n8k16 needs sm_80",
		kirtest.MMA(kir.M16N8K16, te.BF16, kirtest.ISAFragIndex): "is bf16, which sm_75 has no arithmetic for",
	} {
		if _, err := Emit(m, turing); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s for sm_75: %v, want an error containing %q", m.Name, err, want)
		}
	}
	nvcc := tooltest.NVCC(t)
	cuobjdump := tooltest.Require(t, "Debian's nvidia-cuda-toolkit", "cuobjdump")
	files, err := Emit(kirtest.MMA(kir.M16N8K8, te.F16, kirtest.ISAFragIndex), turing)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, f := range files.All() {
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cubin := filepath.Join(dir, "sm_75.cubin")
	if out, err := exec.Command(nvcc, "-cubin", "-arch=sm_75", "-o", cubin, filepath.Join(dir, files.Source.Name)).CombinedOutput(); err != nil {
		t.Fatalf("nvcc -arch=sm_75: %v\n%s", err, out)
	}
	sass, err := exec.Command(cuobjdump, "-sass", cubin).CombinedOutput()
	if err != nil {
		t.Fatalf("cuobjdump: %v\n%s", err, sass)
	}
	if !strings.Contains(string(sass), "HMMA.1688.F32") {
		t.Errorf("no HMMA.1688.F32 in the sm_75 SASS:\n%s", sass)
	}
}
