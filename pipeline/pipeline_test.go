package pipeline

import (
	"slices"
	"strings"
	"testing"

	"tec/gpu"
	tb "tec/internal/testkit/tebuild"
	"tec/precision"
	"tec/te"
)

func mlp() *te.Program {
	b := tb.New("mlp")
	x, w1, w2 := b.Input("x", 16, 32), b.Param("w1", 32, 32), b.Param("w2", 32, 8)
	h := b.Matmul("h", x, w1)
	r := b.Compute("r", tb.Shape(16, 32), func(ax []te.Index) te.Expr { return tb.Bin(te.Max, tb.Ld(h, ax...), tb.F(0)) })
	return b.Program(b.Matmul("y", r, w2))
}

func TestLevels(t *testing.T) {
	small, _ := gpu.Builtin("small")
	for _, tt := range []struct {
		level   int
		kernels int
		dumps   []string
	}{
		{0, 3, []string{"plan", "kir"}},
		{1, 3, []string{"horizontal", "plan", "kir"}},
		// relu becomes the first matmul's epilogue.
		{2, 2, []string{"horizontal", "vertical", "plan", "kir"}},
		{3, 1, []string{"groups", "flash", "pad", "horizontal", "vertical", "recompute", "plan", "kir"}},
		{4, 1, []string{"groups", "flash", "pad", "horizontal", "vertical", "recompute", "plan", "kir"}},
	} {
		var dumps []string
		res, err := Build(mlp(), Options{Level: tt.level, GPU: small, Dump: func(pass, text string) {
			dumps = append(dumps, pass)
			if text == "" {
				t.Errorf("-O%d: empty dump of %s", tt.level, pass)
			}
		}})
		if err != nil {
			t.Fatalf("-O%d: %v", tt.level, err)
		}
		if n := len(res.Module.Kernels); n != tt.kernels {
			t.Errorf("-O%d: %d kernels, want %d", tt.level, n, tt.kernels)
		}
		if !slices.Equal(dumps, tt.dumps) || !slices.Equal(Passes(tt.level), tt.dumps) || !slices.Equal(res.Passes, tt.dumps) {
			t.Errorf("-O%d: dumps %v, passes %v, ran %v, want %v", tt.level, dumps, Passes(tt.level), res.Passes, tt.dumps)
		}
		if len(res.Plan.Kernels) != len(res.Module.Kernels) {
			t.Errorf("-O%d: plan has %d kernels, module %d", tt.level, len(res.Plan.Kernels), len(res.Module.Kernels))
		}
	}
}

func TestBadLevel(t *testing.T) {
	for _, level := range []int{-1, MaxLevel + 1} {
		if _, err := Build(mlp(), Options{Level: level}); err == nil || !strings.Contains(err.Error(), "optimisation level") {
			t.Errorf("-O%d: err = %v", level, err)
		}
	}
}

// TestRefusedPrecision: a precision the target's architecture cannot run
// (bf16 and tf32 on sm_75) is refused with the numbers and a fix, never
// built another way; the others build.
func TestRefusedPrecision(t *testing.T) {
	for _, tc := range []struct {
		gpu, arch string
		mode      precision.Mode
		want      string
	}{
		{"t4", "", precision.BF16, "--precision bf16: sm_75 (compute capability 7.5, the T4-16GB) has no bf16 arithmetic or tensor cores, which need sm_80 or later; use --precision f16"},
		{"t4", "", precision.TF32, "--precision tf32: sm_75 (compute capability 7.5, the T4-16GB) has no tf32"},
		{"a100", "sm_75", precision.BF16, "--precision bf16: sm_75 (compute capability 7.5, the A100-SXM4-40GB)"},
		{"t4", "", precision.F16, ""},
		{"t4", "", precision.F32, ""},
		{"a100", "", precision.BF16, ""},
	} {
		g, err := gpu.Resolve(tc.gpu, tc.arch)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Build(mlp(), Options{Level: MaxLevel, GPU: *g, Precision: tc.mode})
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s %s %s: Build = %v, want %q", tc.gpu, tc.arch, tc.mode, err, tc.want)
		}
	}
	// A bf16 tensor the program declares, at any precision.
	b := tb.New("bf16_param")
	x, w := b.Input("x", 16, 32), b.ParamOf("w", te.BF16, 32, 8)
	p := b.Program(b.Compute("y", tb.Shape(16, 8), func(ax []te.Index) te.Expr {
		return tb.Bin(te.Mul, tb.Ld(x, ax[0], ax[1]), &te.Cast{To: te.F32, X: tb.Ld(w, ax[1], ax[1])})
	}))
	t4, _ := gpu.Builtin("t4")
	want := "param w is bf16, which sm_75 (compute capability 7.5, the T4-16GB) has no arithmetic for (sm_80 and later have); declare it f16 or f32"
	if _, err := Build(p, Options{GPU: t4}); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a bf16 param on sm_75: Build = %v, want %q", err, want)
	}
}
