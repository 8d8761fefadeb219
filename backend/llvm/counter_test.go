package llvm

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"tec/backend/internal/kirtest"
	"tec/gpu"
	"tec/internal/testkit/tooltest"
)

// TestCounterPTX emits a kernel of two stages joined by per-tile counters
// and, where llc and ptxas are installed, compiles it for sm_80 and sm_90:
// the PTX has the release reduction and the acquire load at GPU scope,
// and the machine code a GPU-scope barrier before a strong reduction and
// a strong load followed by an L1 invalidation (RED, or REDG on sm_90).
func TestCounterPTX(t *testing.T) {
	m := kirtest.Counters(6, 10, 0, kirtest.NoCounterBug)
	for _, tname := range gpu.ArchNames() {
		tg := lookup(t, tname)
		t.Run(tname, func(t *testing.T) {
			mod, err := Emit(m, tg)
			if err != nil {
				t.Fatal(err)
			}
			ir := mod.String()
			for _, want := range []string{"asm sideeffect \"" + signalAsm + "\"", "asm sideeffect \"" + acquireAsm + "\""} {
				if !strings.Contains(ir, want) {
					t.Errorf("no %q in the IR", want)
				}
			}
			tooltest.PTXAS(t)
			tooltest.Require(t, "LLVM ("+strings.Join(tg.LLC, " or ")+")", tg.LLC...)
			ptx, err := PTX(context.Background(), []byte(ir), tg)
			if err != nil {
				t.Fatal(err)
			}
			cubin, err := Assemble(context.Background(), ptx, tg)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"red.release.gpu.global.add.u32", "ld.acquire.gpu.global.u32"} {
				if !strings.Contains(string(ptx), want) {
					t.Errorf("no %q in the PTX", want)
				}
			}
			cuobjdump := tooltest.Require(t, "Debian's nvidia-cuda-toolkit", "cuobjdump")
			path := filepath.Join(t.TempDir(), "counters.cubin")
			if err := os.WriteFile(path, cubin, 0o644); err != nil {
				t.Fatal(err)
			}
			sass, err := exec.Command(cuobjdump, "-sass", path).CombinedOutput()
			if err != nil {
				t.Fatalf("cuobjdump: %v\n%s", err, sass)
			}
			for _, want := range []string{"MEMBAR.ALL.GPU", "E.ADD.STRONG.GPU [", "LDG.E.STRONG.GPU", "CCTL.IVALL"} {
				if !strings.Contains(string(sass), want) {
					t.Errorf("no %s in the SASS", want)
				}
			}
		})
	}
}
