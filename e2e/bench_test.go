package e2e

import (
	"testing"

	"tec/examples"
	"tec/gpu"
	"tec/lang"
	"tec/pipeline"
)

// BenchmarkPipeline times the compiler after the front end (transforms,
// analysis, partitioning, lowering to kernel IR) on the six Souffle models
// at full size, at -O4 for the A100; the front end is timed by the
// examples package's BenchmarkCheck.
func BenchmarkPipeline(b *testing.B) {
	g, _ := gpu.Builtin("a100")
	for _, name := range []string{"bert", "resnext", "lstm", "efficientnet", "swin", "mmoe"} {
		ex, _ := examples.Lookup(name)
		p, diags := lang.Check(ex.File(), ex.Source(), lang.Config{Model: ex.Model})
		if diags.HasErrors() {
			b.Fatal(diags)
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := pipeline.Build(p, pipeline.Options{Level: pipeline.MaxLevel, GPU: g}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCompile times the whole compiler, source to kernel IR, on the
// same models.
func BenchmarkCompile(b *testing.B) {
	g, _ := gpu.Builtin("a100")
	for _, name := range []string{"bert", "resnext", "lstm", "efficientnet", "swin", "mmoe"} {
		ex, _ := examples.Lookup(name)
		src := ex.Source()
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				p, diags := lang.Check(ex.File(), src, lang.Config{Model: ex.Model})
				if diags.HasErrors() {
					b.Fatal(diags)
				}
				if _, err := pipeline.Build(p, pipeline.Options{Level: pipeline.MaxLevel, GPU: g}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
