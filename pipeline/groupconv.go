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
// of the same text (a model's repeated blocks).
func groupConvolutions(p *te.Program, opts Options) (*te.Program, error) {
	opts = opts.withDefaultGPU()
	priced := map[string]bool{} // by the convolution's canonical text
	want := map[*te.Tensor]bool{}
	for _, t := range p.Tensors {
		if _, g := transform.ConvGroups(t); g <= 1 {
			continue
		}
		if _, ok := contraction.Of(t); ok {
			continue
		}
		sub := transform.Subprogram([]*te.Tensor{t}, []*te.Tensor{t})
		key := canonicalText(sub)
		faster, ok := priced[key]
		if !ok {
			var err error
			if faster, err = groupedFaster(sub, opts); err != nil {
				return nil, fmt.Errorf("grouped convolution %s: %w", t.Name, err)
			}
			priced[key] = faster
		}
		want[t] = faster
	}
	if len(want) == 0 {
		return p, nil
	}
	q, _ := transform.GroupConvolutions(p, func(t *te.Tensor) bool { return want[t] })
	return q, nil
}

// groupedFaster reports whether sub, a program of one grouped
// convolution t (its output), is a contraction once grouped and its stage
// predicted faster so, by rewriteMargin at least. The stages are compared
// alone, without the copy of the grouped output back into t's shape that
// the subprogram needs and a whole program does not (t's readers load it
// grouped).
func groupedFaster(sub *te.Program, opts Options) (bool, error) {
	t := sub.Outputs[0]
	q, nu := transform.GroupConvolutions(sub, func(*te.Tensor) bool { return true })
	if _, ok := contraction.Of(nu[t]); !ok {
		return false, nil
	}
	as, err := stageTime(sub, opts, t.Name)
	if err != nil {
		return false, err
	}
	grouped, err := stageTime(q, opts, nu[t].Name)
	if err != nil {
		return false, err
	}
	return grouped < as*rewriteMargin, nil
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
