package e2e

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"tec/backend/kir"
	"tec/backend/sim"
	"tec/examples"
	"tec/generate"
	"tec/internal/numeric"
	"tec/lang"
	"tec/pipeline"
	"tec/te"
)

// generateSteps is the number of decode steps of TestGenerateLlama: with the
// prefill's token, 17 greedy tokens per sequence.
const generateSteps = 16

// llamaPair returns llama.te's prefill and decode models at the tiny
// configuration with B sequences.
func llamaPair(t *testing.T, b int) (*te.Program, *te.Program) {
	t.Helper()
	var ps [2]*te.Program
	for i, name := range []string{"llama/prefill", "llama/decode"} {
		ex, ok := examples.Lookup(name)
		if !ok {
			t.Fatalf("no example %s", name)
		}
		defines := maps.Clone(ex.Tiny)
		defines["B"] = fmt.Sprint(b)
		p, diags := lang.Check(ex.File(), ex.Source(), lang.Config{Defines: defines, Model: ex.Model})
		if diags.HasErrors() {
			t.Fatalf("%s: %v", name, diags.Error())
		}
		ps[i] = p
	}
	return ps[0], ps[1]
}

// generation is a run of generate.Generate and the prefill's outputs.
type generation struct {
	res     *generate.Result
	prefill map[string]*te.Array
}

// generateWith runs the generation with eval as the device, and keeps the
// outputs of the prefill.
func generateWith(t *testing.T, pl *generate.Plan, shared map[string]*te.Array, prompt *te.Array, eval generate.EvalFunc) generation {
	t.Helper()
	var g generation
	keep := func(p *te.Program, feeds map[string]*te.Array) (map[string]*te.Array, error) {
		outs, err := eval(p, feeds)
		if p == pl.Prefill {
			g.prefill = outs
		}
		return outs, err
	}
	h, err := generate.NewHost(pl, shared, keep)
	if err != nil {
		t.Fatal(err)
	}
	if g.res, err = generate.Generate(h, pl, prompt, generateSteps); err != nil {
		t.Fatal(err)
	}
	return g
}

// TestGenerateLlama is the acceptance test of tec generate on the
// simulator: the tiny Llama, B = 1 and B = 4, at every level, the kernels
// simulated with race detection step after step with the caches carried
// between them, give the reference evaluator's prefill logits and the same
// greedy tokens. (bench/gpu/peers.py --generate-check compares the
// reference's tokens with PyTorch's.)
func TestGenerateLlama(t *testing.T) {
	for _, b := range []int{1, 4} {
		pre, dec := llamaPair(t, b)
		pl, err := generate.NewPlan(pre, dec)
		if err != nil {
			t.Fatal(err)
		}
		// Filled as tec generate --fill random --seed 1 fills them.
		shared := map[string]*te.Array{}
		for _, x := range pl.Shared {
			shared[x.Name] = numeric.NewFilled(x, numeric.Random, 1)
		}
		ids := pre.Lookup(generate.IDs)
		prompt := numeric.NewFilledIndex(ids, numeric.Random, 1, [2]int{0, pl.Vocab})
		ref := generateWith(t, pl, shared, prompt, func(p *te.Program, feeds map[string]*te.Array) (map[string]*te.Array, error) {
			return te.Evaluate(p, feeds, te.EvalOptions{})
		})
		for s, toks := range ref.res.Tokens {
			if len(toks) != generateSteps+1 {
				t.Fatalf("B=%d: sequence %d has %d tokens, want %d", b, s, len(toks), generateSteps+1)
			}
			if distinct := len(slices.Compact(slices.Sorted(slices.Values(toks)))); distinct < 2 {
				t.Errorf("B=%d: sequence %d is one token repeated (%v): a test that cannot tell a step from another", b, s, toks)
			}
		}
		t.Logf("B=%d: reference tokens %v", b, ref.res.Tokens)
		for level := 0; level <= pipeline.MaxLevel; level++ {
			t.Run(fmt.Sprintf("B%d/O%d", b, level), func(t *testing.T) {
				t.Parallel()
				mods := map[*te.Program]*kir.Module{}
				for _, p := range []*te.Program{pre, dec} {
					res, err := pipeline.Build(p, pipeline.Options{Level: level})
					if err != nil {
						t.Fatal(err)
					}
					mods[p] = res.Module
				}
				got := generateWith(t, pl, shared, prompt, func(p *te.Program, feeds map[string]*te.Array) (map[string]*te.Array, error) {
					r := simulate(t, mods[p], feeds, sim.Options{Race: true})
					if r.RaceCount > 0 {
						t.Errorf("model %s: %d races; first: %s", p.Name, r.RaceCount, r.Races[0])
					}
					outs := map[string]*te.Array{}
					for i, o := range p.Outputs {
						outs[o.Name] = r.Outputs[mods[p].Outputs[i].Name]
					}
					return outs, nil
				})
				for _, name := range []string{"logits", "next"} {
					mm, err := numeric.Compare(got.prefill[name], ref.prefill[name], tolModel)
					if err != nil {
						t.Fatalf("prefill %s: %v", name, err)
					}
					if mm != nil {
						t.Errorf("prefill %s: %s", name, mm)
					}
				}
				if !slices.EqualFunc(got.res.Tokens, ref.res.Tokens, slices.Equal) {
					t.Errorf("tokens %v, reference %v", got.res.Tokens, ref.res.Tokens)
				}
			})
		}
	}
}
