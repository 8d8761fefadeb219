package kir_test

import (
	"path/filepath"
	"strings"
	"testing"

	"tec/backend/internal/kirtest"
	"tec/backend/kir"
	"tec/gpu"
	"tec/internal/testkit/golden"
	"tec/te"
)

// TestWarpGolden checks the text form of the warp-level and 16-byte
// statements.
func TestWarpGolden(t *testing.T) {
	got := kirtest.Pipeline(kirtest.PipelineBugs{}).String() + "\n" + kirtest.MMA(kir.M16N8K8, te.F32, kirtest.ISAFragIndex).String()
	golden.CheckString(t, filepath.Join("testdata", "pipeline.kir"), got)
}

// TestVerifyWarp checks that the verifier accepts the warp-level test
// modules and rejects each malformed statement with a clear message.
func TestVerifyWarp(t *testing.T) {
	for _, m := range []*kir.Module{kirtest.Pipeline(kirtest.PipelineBugs{}), kirtest.Vectors(0),
		kirtest.MMA(kir.M16N8K16, te.BF16, kirtest.ISAFragIndex), kirtest.MMA(kir.M16N8K8, te.F32, kirtest.ISAFragIndex)} {
		if err := kir.Verify(m); err != nil {
			t.Errorf("%s: %v", m.Name, err)
		}
	}
	tests := []struct {
		name   string
		mutate func(k *kir.Kernel)
		want   string
	}{
		{"mma of f32 in m16n8k16", func(k *kir.Kernel) {
			m := first[*kir.MMA](k)
			m.In = te.F32
		}, "mma.m16n8k16 of f32 (want f16 or bf16)"},
		{"fragment too short", func(k *kir.Kernel) {
			m := first[*kir.MMA](k)
			m.A.Off = 2
		}, "mma.m16n8k16 fragment a of 8 elements at 2 is out of bounds of fa f16[8]"},
		{"accumulator of f16", func(k *kir.Kernel) {
			m := first[*kir.MMA](k)
			m.C = m.A
		}, "mma.m16n8k16 fragment c in f16 array fa (want f32)"},
		{"ldmatrix.x3", func(k *kir.Kernel) {
			l := first[*kir.LdMatrix](k)
			l.Num = 3
		}, "ldmatrix.x3 (want x1, x2 or x4)"},
		{"misaligned ldmatrix row", func(k *kir.Kernel) {
			l := first[*kir.LdMatrix](k)
			l.Index = kir.I(4)
		}, "misaligned ldmatrix row sa[4]: the index is not a multiple of 8"},
		{"misaligned vector copy", func(k *kir.Kernel) {
			v := first[*kir.VecCopy](k)
			v.SrcIndex = kir.I(12)
		}, "misaligned 16-byte access to a[12]: the index is not a multiple of 8"},
		{"cp.async from shared", func(k *kir.Kernel) {
			k.Body = append(k.Body, &kir.CopyAsync{Dst: k.Shared[0], DstIndex: kir.I(0), Src: k.Shared[0], SrcIndex: kir.I(8)})
		}, "cp.async from shared sa to shared sa (want global to shared)"},
		{"vector copy between types", func(k *kir.Kernel) {
			k.Body = append(k.Body, &kir.VecCopy{Dst: k.Locals[2], DstIndex: kir.I(0), Src: k.Shared[0], SrcIndex: kir.I(0)})
		}, "vector copy from f16 sa to f32 acc: the types differ"},
		{"wait_group 9", func(k *kir.Kernel) { k.Body = append(k.Body, &kir.WaitGroup{N: 9}) }, "cp.async.wait_group 9 (want 0 to 7)"},
	}
	for _, tc := range tests {
		m := kirtest.Pipeline(kirtest.PipelineBugs{})
		tc.mutate(m.Kernels[0])
		err := kir.Verify(m)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
}

// first returns the first statement of type T of k's body.
func first[T kir.Stmt](k *kir.Kernel) T {
	for _, s := range k.Body {
		if x, ok := s.(T); ok {
			return x
		}
	}
	panic("no statement to mutate")
}

// TestVerifyArch: a module compiled for sm_75 may use neither cp.async,
// nor the m16n8k16 MMA, nor bf16 or tf32 MMAs; the f16 m16n8k8 it has.
func TestVerifyArch(t *testing.T) {
	turing, _ := gpu.Builtin("t4")
	for _, tc := range []struct {
		name string
		mod  *kir.Module
		want string
	}{
		{"pipeline", kirtest.Pipeline(kirtest.PipelineBugs{}), "cp.async needs sm_80 or later; the module is compiled for sm_75"},
		{"m16n8k16", kirtest.MMA(kir.M16N8K16, te.F16, kirtest.ISAFragIndex), "mma.m16n8k16 needs sm_80"},
		{"bf16", kirtest.MMA(kir.M16N8K16, te.BF16, kirtest.ISAFragIndex), "buffer a is bf16, which sm_75 has no arithmetic for"},
		{"tf32", kirtest.MMA(kir.M16N8K8, te.F32, kirtest.ISAFragIndex), "the tf32 mma.m16n8k8 needs sm_80"},
		{"f16 m16n8k8", kirtest.MMA(kir.M16N8K8, te.F16, kirtest.ISAFragIndex), ""},
	} {
		if err := kir.Verify(tc.mod); err != nil {
			t.Errorf("%s without a GPU: %v", tc.name, err)
		}
		tc.mod.GPU = &turing
		err := kir.Verify(tc.mod)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s on sm_75: Verify = %v, want %q", tc.name, err, tc.want)
		}
	}
}
