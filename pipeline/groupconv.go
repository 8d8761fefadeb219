package pipeline

import (
	"fmt"

	"tec/contraction"
	"tec/te"
	"tec/transform"
)

// groupConvolutions splits the output channels of p's grouped
// convolutions into their groups (transform.GroupConvolutions) where that
// makes a contraction of what was none and the cost model predicts the
// convolution faster so: a batched implicit GEMM, one per group, that the
// partitioner tiles (on tensor cores where the precision allows), instead
// of the convolution computed point by point. Each convolution is priced
// alone (transform.Subprogram), as it is and grouped, once for all those
// of the same text (a model's repeated blocks). It returns the choices it
// priced, in program order.
func groupConvolutions(p *te.Program, opts Options) (*te.Program, []GroupChoice, error) {
	opts = opts.withDefaultGPU()
	priced := map[string]GroupChoice{} // by the convolution's canonical text
	want := map[*te.Tensor]bool{}
	var choices []GroupChoice
	for _, t := range p.Tensors {
		dim, g := transform.ConvGroups(t)
		if g <= 1 {
			continue
		}
		if _, ok := contraction.Of(t); ok {
			continue
		}
		sub := transform.Subprogram([]*te.Tensor{t}, []*te.Tensor{t})
		key := canonicalText(sub)
		c, ok := priced[key]
		if !ok {
			var err error
			if c, err = groupedChoice(sub, opts); err != nil {
				return nil, nil, fmt.Errorf("grouped convolution %s: %w", t.Name, err)
			}
			priced[key] = c
		}
		if c.Time == 0 {
			continue // no contraction once grouped
		}
		c.Conv, c.Groups, c.Channels = t.Name, t.Shape[dim]/g, g
		choices = append(choices, c)
		if c.Grouped {
			want[t] = true
		}
	}
	if len(want) == 0 {
		return p, choices, nil // nothing to split: no copy of the program
	}
	q, _ := transform.GroupConvolutions(p, func(t *te.Tensor) bool { return want[t] })
	return q, choices, nil
}

// GroupChoice is what the groups pass chose for one grouped convolution
// (Conv names its tensor) of Groups groups of Channels output channels
// each: split into them (Grouped) or not, with the predictions, in
// seconds, of its stage alone grouped (Time) and as it is (AsIs).
type GroupChoice struct {
	Conv             string
	Groups, Channels int
	Grouped          bool
	Time, AsIs       float64
}

// String describes the choice in words, as tec explain --plan prints it.
func (c GroupChoice) String() string {
	what := "an output at a time"
	if c.Grouped {
		what = "a batched contraction, a batch a group"
	}
	return fmt.Sprintf("%s, %d groups of %d channels: %s (predicted alone %.2f µs grouped; %.2f µs an output at a time)",
		c.Conv, c.Groups, c.Channels, what, c.Time*1e6, c.AsIs*1e6)
}

// groupedChoice prices sub, a program of one grouped convolution t (its
// output), grouped and as it is, and chooses grouped where that is a
// contraction predicted faster, by rewriteMargin at least; Time is 0
// where grouping makes no contraction. The stages are compared alone,
// without the copy of the grouped output back into t's shape that the
// subprogram needs and a whole program does not (t's readers load it
// grouped).
func groupedChoice(sub *te.Program, opts Options) (GroupChoice, error) {
	t := sub.Outputs[0]
	q, nu := transform.GroupConvolutions(sub, func(*te.Tensor) bool { return true })
	if _, ok := contraction.Of(nu[t]); !ok {
		return GroupChoice{}, nil
	}
	as, err := stageTime(sub, opts, t.Name)
	if err != nil {
		return GroupChoice{}, err
	}
	grouped, err := stageTime(q, opts, nu[t].Name)
	if err != nil {
		return GroupChoice{}, err
	}
	return GroupChoice{Grouped: grouped < as*rewriteMargin, Time: grouped, AsIs: as}, nil
}

// stageTime returns the predicted time of the stage computing the tensor
// named name in p's plan (planSubprogram), alone.
func stageTime(p *te.Program, opts Options, name string) (float64, error) {
	pl, err := planSubprogram(p, opts)
	if err != nil {
		return 0, err
	}
	for _, k := range pl.Kernels {
		for i, st := range k.Stages {
			if st.Name == name && i < len(k.StageCosts) {
				return k.StageCosts[i].Time, nil
			}
		}
	}
	return 0, fmt.Errorf("no stage computes %s in\n%s", name, pl)
}
