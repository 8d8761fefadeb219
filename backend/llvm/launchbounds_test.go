package llvm

import (
	"fmt"
	"strings"
	"testing"

	"tec/backend/internal/kirtest"
)

// TestLaunchBounds: every kernel is annotated with its block size
// (maxntidx) and, where the plan counts on them, its blocks per SM
// (minctasm), which llc writes as .maxntid and .minnctapersm.
func TestLaunchBounds(t *testing.T) {
	for _, tc := range []struct {
		perSM int
		want  string
	}{
		{0, `!"maxntidx", i32 %d}`},
		{3, `!"maxntidx", i32 %d, !"minctasm", i32 3}`},
	} {
		m := kirtest.Features()
		for _, k := range m.Kernels {
			k.BlocksPerSM = tc.perSM
		}
		mod, err := Emit(m, lookup(t, "sm_80"))
		if err != nil {
			t.Fatal(err)
		}
		ll := mod.String()
		if !strings.Contains(ll, "!nvvm.annotations = !{") {
			t.Errorf("BlocksPerSM %d: no !nvvm.annotations", tc.perSM)
		}
		for _, k := range m.Kernels {
			if want := fmt.Sprintf(tc.want, k.Block); !strings.Contains(ll, want) {
				t.Errorf("BlocksPerSM %d: no %q in the IR", tc.perSM, want)
			}
		}
	}
}
