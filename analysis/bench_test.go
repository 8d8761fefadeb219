package analysis

import (
	"testing"

	"tec/te"
)

// The benchmarks analyse whole models at the Souffle evaluation's shapes
// (DESIGN.md), built in Go with the structure the front end gives the
// examples. docs/benchmarks.md records the figures.

func benchAnalyze(b *testing.B, build func() *te.Program) {
	p := build()
	for b.Loop() {
		if _, err := Analyze(p, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(p.Tensors)), "tensors")
}

// BenchmarkAnalyze covers the four models of the issue; lstm-100 is the
// paper's LSTM (10 layers × 100 steps = 1,000 cells) and lstm-1000 the same
// with ten times the steps, to show how the analysis scales.
func BenchmarkAnalyze(b *testing.B) {
	models := []struct {
		name  string
		build func() *te.Program
	}{
		{"lstm-100", func() *te.Program { return lstm(100, 10, 256, false) }},
		{"lstm-1000", func() *te.Program { return lstm(1000, 10, 256, false) }},
		{"lstm-gates-100", func() *te.Program { return lstm(100, 10, 256, true) }},
		{"lstm-gates-1000", func() *te.Program { return lstm(1000, 10, 256, true) }},
		{"bert-base", func() *te.Program { return bert(12, 384, 768, 12, 3072) }},
		{"swin-b", func() *te.Program { return swin([]int{2, 2, 18, 2}, []int{4, 8, 16, 32}, 128, 224, 4, 7) }},
		{"resnext-101", func() *te.Program { return resnext([]int{3, 4, 23, 3}, 224) }},
	}
	for _, m := range models {
		b.Run(m.name, func(b *testing.B) { benchAnalyze(b, m.build) })
	}
}
