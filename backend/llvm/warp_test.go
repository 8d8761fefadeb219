package llvm

import (
	"context"
	"strings"
	"testing"

	"tec/backend/internal/kirtest"
	"tec/backend/kir"
	"tec/gpu"
	"tec/internal/testkit/tooltest"
	"tec/te"
)

// TestWarpPTX emits the warp-level test modules through the NVVM
// intrinsics, and, where llc and ptxas are installed, compiles them for
// every architecture and checks that the PTX has the instructions the
// kernel IR asks for; a module using what sm_75 lacks is refused for it.
func TestWarpPTX(t *testing.T) {
	ms := map[string]*kir.Module{
		"pipeline": kirtest.Pipeline(kirtest.PipelineBugs{}),
		"bf16":     kirtest.MMA(kir.M16N8K16, te.BF16, kirtest.ISAFragIndex),
		"tf32":     kirtest.MMA(kir.M16N8K8, te.F32, kirtest.ISAFragIndex),
		"f16 k8":   kirtest.MMA(kir.M16N8K8, te.F16, kirtest.ISAFragIndex),
		"vectors":  kirtest.Vectors(0),
		"vecloads": kirtest.VectorLoads(),
	}
	want := map[string][]string{
		"pipeline": {"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
			"ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16", "cp.async.cg.shared.global", "cp.async.commit_group", "cp.async.wait_group 0",
			"ld.global.v4.u32", "st.shared.v4.u32"},
		"bf16":     {"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"},
		"tf32":     {"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"},
		"f16 k8":   {"mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32"},
		"vectors":  {"ld.global.v4.u32", "st.shared.v4.u32", "ld.shared.v4.u32", "st.global.v4.u32"},
		"vecloads": {"ld.global.v4.u32"},
	}
	for _, tname := range gpu.ArchNames() {
		tg := lookup(t, tname)
		t.Run(tname, func(t *testing.T) {
			tooltest.PTXAS(t)
			tooltest.Require(t, "LLVM ("+strings.Join(tg.LLC, " or ")+")", tg.LLC...)
			for name, m := range ms {
				mod, err := Emit(m, tg)
				if lacks := kir.CheckArch(m, tg); lacks != nil {
					// sm_75: no cp.async, m16n8k16, bf16 or tf32.
					if err == nil || !strings.Contains(err.Error(), lacks.Error()) {
						t.Errorf("%s for %s: Emit = %v, want the refusal %q", name, tg.Name, err, lacks)
					}
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				ptx, err := PTX(context.Background(), []byte(mod.String()), tg)
				if err == nil {
					_, err = Assemble(context.Background(), ptx, tg)
				}
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				for _, w := range want[name] {
					if !strings.Contains(string(ptx), w) {
						t.Errorf("%s: no %q in the PTX", name, w)
					}
				}
			}
		})
	}
}
