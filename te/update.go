package te

import "fmt"

// Update describes an in-place update of an input, as XLA's input/output
// aliasing and JAX's donate_argnums do: the compute tensor that carries it
// (Tensor.Update) is computed as any other, and each of its elements is
// then written into Target, an input, at the position Index and Gather give
// for it — `update k_cache[b, pos[b], d] = knew[b, d]` writes element
// [b, d] to k_cache[b, pos[b], d]. Only those elements of the input change;
// it is never copied.
//
// Every read of Target in the program sees its values as the caller gave
// them: the updates take effect when the step ends, after every read. The
// updated input is an output of the program under its own name. The
// positions of one tensor's elements are distinct (every axis is the whole
// index of some dimension), and the updates of one input write disjoint
// slots; the front end proves both.
//
// Index has one entry per dimension of Target over the update tensor's
// axes; Gather, when not nil, one entry per dimension whose non-nil
// entries are run-time parts added to Index, as in a gather (Load). A
// run-time index is checked as a gather's is: the reference evaluator and
// the simulator report one outside its dimension, and a device clamps it.
type Update struct {
	Target *Tensor
	Index  []Index
	Gather []Expr
}

// Dest returns the element of Target that the update writes, as a load of
// it, for printing and for the index arithmetic shared with gathers.
func (u *Update) Dest() *Load {
	return &Load{Tensor: u.Target, Index: u.Index, Gather: u.Gather}
}

// Updates returns p's update tensors, in program order.
func (p *Program) Updates() []*Tensor {
	var us []*Tensor
	for _, t := range p.Tensors {
		if t.Update != nil {
			us = append(us, t)
		}
	}
	return us
}

// Updated reports whether some tensor of p updates the input t in place.
func (p *Program) Updated(t *Tensor) bool {
	for _, u := range p.Tensors {
		if u.Update != nil && u.Update.Target == t {
			return true
		}
	}
	return false
}

// applyUpdates writes every update tensor's elements into a copy of its
// target's array, which replaces the target's value in ev, so that the
// caller's arrays are not changed. Every position is checked: one outside
// the target is an error naming the index, e.g. "update index pos[1] = 9
// is outside k_cache's dimension 1 [0, 8)".
func (ev *evaluator) applyUpdates() error {
	copied := map[*Tensor]*Array{}
	for i, t := range ev.p.Tensors {
		u := t.Update
		if u == nil {
			continue
		}
		j, ok := ev.pos[u.Target]
		if !ok || u.Target.Kind != Input {
			return fmt.Errorf("te: update %q: its target %q is not an input of the program", t.Name, u.Target.Name)
		}
		dst := copied[u.Target]
		if dst == nil {
			src := ev.vals[j]
			dst = NewArray(src.DType, src.Shape)
			copy(dst.Data, src.Data)
			copied[u.Target] = dst
		}
		if err := ev.scatter(t, ev.vals[i], dst); err != nil {
			return fmt.Errorf("te: update %q: %w", t.Name, err)
		}
	}
	for t, a := range copied {
		ev.vals[ev.pos[t]] = a
	}
	return nil
}

// scatter writes the elements of src, the value of the update tensor t,
// into dst at their positions.
func (ev *evaluator) scatter(t *Tensor, src, dst *Array) error {
	u := t.Update
	shape := u.Target.Shape
	if len(u.Index) != len(shape) || (len(u.Gather) != 0 && len(u.Gather) != len(shape)) {
		return fmt.Errorf("%d indexes for the %d dimensions of %s", len(u.Index), len(shape), u.Target.Name)
	}
	c := &compiler{ev: ev, t: t, slots: map[*Var]int{}}
	for _, v := range t.Axes {
		if err := c.bind(v); err != nil {
			return err
		}
	}
	dest := u.Dest()
	static := make([]indexFn, len(shape))
	dyn := make([]scalarFn, len(shape))
	for d, x := range u.Index {
		var err error
		if static[d], err = c.index(x); err != nil {
			return err
		}
		if g := dest.Gathered(d); g != nil {
			if TypeOf(g) != I32 {
				return fmt.Errorf("update index %s is %s, not i32", FormatExpr(g), TypeOf(g))
			}
			if dyn[d], err = c.expr(g); err != nil {
				return err
			}
		}
	}
	describe := c.gatherIndexText(dest)
	strides := Strides(shape)
	env := make([]int, c.nslots)
	rank := len(t.Shape)
	for e, v := range src.Data {
		rem := e
		for d := rank - 1; d >= 0; d-- {
			env[d] = rem % t.Shape[d]
			rem /= t.Shape[d]
		}
		off, err := updateOffset(static, dyn, env, shape, strides, func(d, i int) error {
			return fmt.Errorf("at %s%v: update index %s = %d is outside %s's dimension %d [0, %d)",
				t.Name, env[:rank], describe(d, env), i, tensorName(u.Target), d, shape[d])
		})
		if err != nil {
			return err
		}
		dst.Data[off] = Round(u.Target.DType, v)
	}
	return nil
}

// updateOffset returns the flat offset of one update position, or the
// error outside reports for the first index outside its dimension.
func updateOffset(static []indexFn, dyn []scalarFn, env, shape, strides []int, outside func(d, i int) error) (off int, err error) {
	defer func() {
		if r := recover(); r != nil {
			re, ok := r.(*runtimeError)
			if !ok {
				panic(r)
			}
			err = re
		}
	}()
	for d, f := range static {
		i := f(env)
		if dyn[d] != nil {
			i += int(dyn[d](env))
		}
		if i < 0 || i >= shape[d] {
			return 0, outside(d, i)
		}
		off += i * strides[d]
	}
	return off, nil
}

// updateReads returns the tensors that u's run-time indexes read.
func updateReads(u *Update) []*Tensor {
	var ts []*Tensor
	for _, g := range u.Gather {
		if g != nil {
			ts = append(ts, Inputs(g)...)
		}
	}
	return ts
}
