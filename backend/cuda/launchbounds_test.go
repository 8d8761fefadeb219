package cuda

import (
	"fmt"
	"strings"
	"testing"

	"tec/backend/internal/kirtest"
)

// TestLaunchBounds: a kernel's __launch_bounds__ carries its block size
// and, where the plan counts on them, its blocks per SM.
func TestLaunchBounds(t *testing.T) {
	for _, tc := range []struct {
		perSM int
		want  string
	}{
		{0, "__launch_bounds__(%d)\n"},
		{3, "__launch_bounds__(%d, 3)\n"},
	} {
		m := kirtest.Features()
		for _, k := range m.Kernels {
			k.BlocksPerSM = tc.perSM
		}
		files, err := Emit(m, sm80(t))
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range m.Kernels {
			if want := fmt.Sprintf(tc.want, k.Block); !strings.Contains(string(files.Source.Data), want) {
				t.Errorf("BlocksPerSM %d: no %q in the source", tc.perSM, want)
			}
		}
	}
}
