package e2e

import (
	"fmt"
	"testing"

	"tec/backend/sim"
	"tec/examples"
	"tec/internal/numeric"
	"tec/lang"
	"tec/partition"
	"tec/pipeline"
	"tec/te"
)

// TestMechanisms runs examples at configurations, larger than tiny, where
// the pipeline's mechanisms that tiny shapes do not reach come into play,
// and checks that they did and that the result is still right: row
// reductions consumed by Rows stages and kept in shared memory (-O4), and
// split reductions with atomics or, deterministically, partials (-O3 on
// the A100, whose grid outnumbers the outputs).
func TestMechanisms(t *testing.T) {
	for _, tt := range []struct {
		example       string
		defines       map[string]string
		gpu           string
		level         int
		deterministic bool
		want          func(*partition.Plan) bool
		what          string
	}{
		{"layernorm", map[string]string{"S": "16", "D": "128"}, "small", 4, false, hasRows, "Rows stages"},
		{"layernorm", map[string]string{"S": "16", "D": "128"}, "small", 4, false, hasOnChip, "results on chip"},
		{"softmax", map[string]string{"N": "16", "D": "128"}, "small", 4, false, hasBlockSync, "block-barrier reuse"},
		{"bert", map[string]string{"L": "1", "S": "16", "D": "128", "NH": "2", "FF": "256"}, "small", 4, false, hasRows, "Rows stages"},
		{"softmax", map[string]string{"N": "4", "D": "4096"}, "a100", 3, false, hasSplit, "split reductions"},
		{"softmax", map[string]string{"N": "4", "D": "4096"}, "a100", 4, true, hasSplit, "split reductions"},
		{"layernorm", map[string]string{"S": "2", "D": "4096"}, "h100", 4, true, hasSplit, "split reductions"},
	} {
		name := fmt.Sprintf("%s/%v/%s/O%d/det=%v/%s", tt.example, tt.defines, tt.gpu, tt.level, tt.deterministic, tt.what)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ex, _ := examples.Lookup(tt.example)
			p, diags := lang.Check(ex.File(), ex.Source(), lang.Config{Defines: tt.defines})
			if diags.HasErrors() {
				t.Fatal(diags.Error())
			}
			in := feeds(p, 2)
			want, err := te.Evaluate(p, in, te.EvalOptions{})
			if err != nil {
				t.Fatal(err)
			}
			g, _ := partition.BuiltinGPU(tt.gpu)
			res, err := pipeline.Build(p, pipeline.Options{Level: tt.level, GPU: g, Deterministic: tt.deterministic})
			if err != nil {
				t.Fatal(err)
			}
			if !tt.want(res.Plan) {
				t.Errorf("no %s in the plan:\n%s", tt.what, res.Plan)
			}
			var first map[string]*te.Array
			for run := range 2 {
				out, err := sim.Run(res.Module, in, sim.Options{Race: true, ResidentBlocks: resident})
				if err != nil {
					t.Fatal(err)
				}
				if out.RaceCount > 0 {
					t.Fatalf("%d races; first: %s", out.RaceCount, out.Races[0])
				}
				for _, o := range p.Outputs {
					mm, err := numeric.Compare(out.Outputs[o.Name], want[o.Name], tolModel)
					if err != nil || mm != nil {
						t.Fatalf("output %s: %v %v", o.Name, err, mm)
					}
				}
				if run == 1 && tt.deterministic {
					for n, a := range out.Outputs {
						for i := range a.Data {
							if a.Data[i] != first[n].Data[i] {
								t.Fatalf("output %s[%d] differs between runs", n, i)
							}
						}
					}
				}
				first = out.Outputs
			}
		})
	}
}

func stageKinds(pl *partition.Plan, f func(k *partition.Kernel, i int, s *partition.Schedule) bool) bool {
	for _, k := range pl.Kernels {
		for i, t := range k.Stages {
			if f(k, i, pl.Schedules[t]) {
				return true
			}
		}
	}
	return false
}

func hasRows(pl *partition.Plan) bool {
	return stageKinds(pl, func(_ *partition.Kernel, _ int, s *partition.Schedule) bool { return s.Kind == partition.Rows })
}

func hasSplit(pl *partition.Plan) bool {
	return stageKinds(pl, func(_ *partition.Kernel, _ int, s *partition.Schedule) bool { return s.Kind == partition.SplitReduce })
}

func hasBlockSync(pl *partition.Plan) bool {
	return stageKinds(pl, func(k *partition.Kernel, i int, _ *partition.Schedule) bool { return k.Sync[i] == partition.BlockSync })
}

func hasOnChip(pl *partition.Plan) bool {
	for _, k := range pl.Kernels {
		if len(k.OnChip) > 0 {
			return true
		}
	}
	return false
}
