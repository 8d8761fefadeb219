package pipeline

import (
	"slices"
	"strings"
	"testing"

	"tec/gpu"
	tb "tec/internal/testkit/tebuild"
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
		{3, 1, []string{"flash", "horizontal", "vertical", "recompute", "plan", "kir"}},
		{4, 1, []string{"flash", "horizontal", "vertical", "recompute", "plan", "kir"}},
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
