package pipeline

import (
	"errors"
	"fmt"

	"tec/te"
)

// verify checks the structure that every pass must leave: the program's
// tensors in definition order, and the plan, once made, a partition of
// that program that keeps its own promises (partition.Plan.Verify). It
// runs after every pass and checks what the pass made anew: each program
// and plan once. The program's check is linear in its size (shared
// sub-expressions counted once).
func (b *build) verify() error {
	if b.prog != b.checked.prog {
		if err := verifyProgram(b.prog); err != nil {
			return err
		}
		b.checked.prog = b.prog
	}
	if b.plan == nil || b.plan == b.checked.plan {
		return nil
	}
	if b.plan.Program != b.prog {
		return errors.New("the plan partitions another program")
	}
	seen := map[*te.Tensor]bool{}
	pos := positions(b.prog)
	for k, kern := range b.plan.Kernels {
		for _, s := range kern.Stages {
			if _, ok := pos[s]; !ok || s.Kind != te.Compute {
				return fmt.Errorf("kernel %d: stage %s is no compute tensor of the program", k, s.Name)
			}
			if seen[s] {
				return fmt.Errorf("kernel %d: stage %s is computed twice", k, s.Name)
			}
			seen[s] = true
		}
	}
	if err := b.plan.Verify(); err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	b.checked.plan = b.plan
	return nil
}

// verifyProgram checks that every compute tensor of p has a body over as
// many axes as it has dimensions, that every load reads a tensor defined
// before its reader with an index per dimension, and that every output
// is a tensor of p.
func verifyProgram(p *te.Program) error {
	pos := positions(p)
	for i, t := range p.Tensors {
		if t.Kind != te.Compute {
			continue
		}
		if t.Body == nil || len(t.Axes) != len(t.Shape) {
			return fmt.Errorf("tensor %s: want a body over %d axes", t.Name, len(t.Shape))
		}
		if err := verifyLoads(t, i, pos); err != nil {
			return fmt.Errorf("tensor %s: %w", t.Name, err)
		}
	}
	for _, o := range p.Outputs {
		if _, ok := pos[o]; !ok {
			return fmt.Errorf("output %s is no tensor of the program", o.Name)
		}
	}
	return nil
}

// verifyLoads checks the loads of t, the tensor at position at.
func verifyLoads(t *te.Tensor, at int, pos map[*te.Tensor]int) error {
	var err error
	te.Contains(t.Body, func(x te.Expr) bool {
		l, ok := x.(*te.Load)
		if !ok {
			return false
		}
		switch i, defined := pos[l.Tensor]; {
		case !defined:
			err = fmt.Errorf("loads %s, no tensor of the program", l.Tensor.Name)
		case i >= at:
			err = fmt.Errorf("loads %s, defined after it", l.Tensor.Name)
		case len(l.Index) != len(l.Tensor.Shape):
			err = fmt.Errorf("loads %s with %d indexes, want %d", l.Tensor.Name, len(l.Index), len(l.Tensor.Shape))
		}
		return err != nil
	})
	return err
}

// positions returns the position of each tensor in p.Tensors.
func positions(p *te.Program) map[*te.Tensor]int {
	pos := make(map[*te.Tensor]int, len(p.Tensors))
	for i, t := range p.Tensors {
		pos[t] = i
	}
	return pos
}
