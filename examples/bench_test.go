package examples

import (
	"testing"

	"tec/internal/numeric"
	"tec/lang"
	"tec/te"
)

// BenchmarkCheck lowers every example at full size: parse, check, unroll,
// inline and lower to a TE program.
func BenchmarkCheck(b *testing.B) {
	for _, ex := range All() {
		src := ex.Source()
		b.Run(ex.Name, func(b *testing.B) {
			for b.Loop() {
				if _, diags := lang.Check(ex.File(), src, lang.Config{Model: ex.Model}); diags.HasErrors() {
					b.Fatal(diags)
				}
			}
		})
	}
}

// BenchmarkCheckLSTMSteps lowers the LSTM example at 100 and 1,000 time steps
// (10 layers, hidden 256): 1,000 and 10,000 cells.
func BenchmarkCheckLSTMSteps(b *testing.B) {
	ex, _ := Lookup("lstm")
	for _, steps := range []string{"100", "1000"} {
		b.Run("T="+steps, func(b *testing.B) {
			for b.Loop() {
				if _, diags := lang.Check(ex.File(), ex.Source(), lang.Config{Defines: map[string]string{"T": steps}}); diags.HasErrors() {
					b.Fatal(diags)
				}
			}
		})
	}
}

// BenchmarkEvaluateBERT evaluates the full 12-layer BERT-base example
// (sequence 384, hidden 768) with the reference evaluator on random weights.
// Run it with -benchtime=1x: one evaluation takes seconds.
func BenchmarkEvaluateBERT(b *testing.B) {
	ex, _ := Lookup("bert")
	p, diags := lang.Check(ex.File(), ex.Source(), lang.Config{Model: ex.Model})
	if diags.HasErrors() {
		b.Fatal(diags)
	}
	feeds := map[string]*te.Array{}
	for _, t := range p.Placeholders() {
		feeds[t.Name] = numeric.NewFilled(t, numeric.Random, 1)
	}
	for b.Loop() {
		if _, err := te.Evaluate(p, feeds, te.EvalOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
