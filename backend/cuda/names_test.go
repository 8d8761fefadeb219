package cuda

import (
	"fmt"
	"strings"
	"testing"
)

// TestKernelNames: every kernel's name is the name of a __global__
// function of the emitted source.
func TestKernelNames(t *testing.T) {
	ms := modules(t)
	for _, name := range sortedNames(ms) {
		m := ms[name]
		files, err := Emit(m, sm80(t))
		if err != nil {
			t.Fatal(err)
		}
		src := string(files.Source.Data)
		for k, fn := range KernelNames(m) {
			if !strings.Contains(src, fmt.Sprintf("static __global__ void __launch_bounds__(%d)\n%s(", k.Block, fn)) {
				t.Errorf("%s: kernel %s: no __global__ function %s", name, k.Name, fn)
			}
		}
	}
}
