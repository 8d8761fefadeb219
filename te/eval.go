package te

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
)

// EvalOptions controls Evaluate.
type EvalOptions struct {
	// KeepAll makes Evaluate also return every compute tensor, not only the
	// outputs, and keep every intermediate array alive until the end.
	KeepAll bool
	// Workers is the number of goroutines that evaluate a tensor's elements
	// or a batch of small matrix products; 0 (or less) means
	// runtime.GOMAXPROCS(0). A single large matrix product is split by gonum,
	// which uses runtime.GOMAXPROCS(0) goroutines.
	Workers int

	// noGEMM disables the matrix-multiplication fast path (tests compare the
	// two paths).
	noGEMM bool
	// stats, when non-nil, receives counts of what the evaluator did.
	stats *evalStats
}

// evalStats counts the evaluator's decisions, for tests.
type evalStats struct {
	gemms int // contractions evaluated with blas64.Gemm
}

// Evaluate runs the program p on the CPU and returns the value of each of
// p.Outputs, keyed by tensor name (and of every compute tensor too when
// opts.KeepAll is set). It is the reference semantics of the IR, the oracle
// against which every later stage of the compiler is checked.
//
// feeds must hold an array for every Input and Param placeholder, by name, with
// exactly the placeholder's dtype and shape, and nothing else. An output that
// is a placeholder is returned as the fed array itself.
//
// Compute tensors are evaluated in p.Tensors order. Arithmetic is done in
// float64; reductions start from their ReduceOp's Identity and accumulate in
// float64; f32 tensors are stored unrounded (so the reference is more accurate
// than any device it checks), other dtypes are rounded on store with Round.
// Select evaluates only the branch its condition chooses. On i32 operands Div
// is floor division and Mod floor modulo; on floats Mod is x - y·floor(x/y).
// Comparisons and logic give 0 or 1.
//
// Contractions of the form sum[k...](A[...] * B[...]) with affine indexes,
// anywhere in a body, are evaluated as (batched) matrix products with gonum's
// BLAS; everything else is compiled once per tensor into closures and run in
// parallel over the tensor's elements.
//
// A load out of bounds at run time, an integer division by zero or a
// malformed program is reported as an error naming the tensor.
func Evaluate(p *Program, feeds map[string]*Array, opts EvalOptions) (map[string]*Array, error) {
	ev, err := newEvaluator(p, feeds, opts)
	if err != nil {
		return nil, err
	}
	for i, t := range p.Tensors {
		if t.Kind != Compute {
			continue
		}
		a, err := ev.compute(t)
		if err != nil {
			return nil, fmt.Errorf("te: evaluating tensor %q: %w", t.Name, err)
		}
		ev.vals[i] = a
		ev.release(i)
	}
	if err := ev.applyUpdates(); err != nil {
		return nil, err
	}
	out := make(map[string]*Array, len(p.Outputs))
	for _, t := range p.Outputs {
		out[t.Name] = ev.vals[ev.pos[t]]
	}
	if opts.KeepAll {
		for i, t := range p.Tensors {
			if t.Kind == Compute {
				out[t.Name] = ev.vals[i]
			}
		}
	}
	return out, nil
}

// evaluator holds the state of one Evaluate call.
type evaluator struct {
	p       *Program
	opts    EvalOptions
	workers int
	pos     map[*Tensor]int // position in p.Tensors
	vals    []*Array        // value of each tensor by position; nil once freed
	readers [][]int         // positions of the tensors whose last use is at a position
	keep    []bool          // outputs, never freed
}

func newEvaluator(p *Program, feeds map[string]*Array, opts EvalOptions) (*evaluator, error) {
	if p == nil {
		return nil, errors.New("te: Evaluate of a nil program")
	}
	ev := &evaluator{
		p:       p,
		opts:    opts,
		workers: opts.Workers,
		pos:     make(map[*Tensor]int, len(p.Tensors)),
		vals:    make([]*Array, len(p.Tensors)),
		readers: make([][]int, len(p.Tensors)),
		keep:    make([]bool, len(p.Tensors)),
	}
	if ev.workers <= 0 {
		ev.workers = runtime.GOMAXPROCS(0)
	}
	names := make(map[string]bool, len(p.Tensors))
	for i, t := range p.Tensors {
		if t == nil {
			return nil, fmt.Errorf("te: program %q: tensor %d is nil", p.Name, i)
		}
		if names[t.Name] {
			return nil, fmt.Errorf("te: program %q: two tensors are named %q", p.Name, t.Name)
		}
		names[t.Name] = true
		if _, err := CheckShape(t.Shape); err != nil {
			return nil, fmt.Errorf("te: program %q: tensor %q: %w", p.Name, t.Name, err)
		}
		ev.pos[t] = i
	}
	for _, t := range p.Outputs {
		i, ok := ev.pos[t]
		if !ok {
			return nil, fmt.Errorf("te: program %q: output %q is not one of its tensors", p.Name, t.Name)
		}
		ev.keep[i] = true
	}
	for i, t := range p.Tensors {
		if t.Update == nil {
			continue
		}
		// Scattered after every tensor is computed: the update, its
		// target and the tensors its run-time indexes read stay.
		ev.keep[i] = true
		for _, x := range append([]*Tensor{t.Update.Target}, updateReads(t.Update)...) {
			if j, ok := ev.pos[x]; ok {
				ev.keep[j] = true
			}
		}
	}

	// Feeds: exactly the placeholders, each with its dtype and shape.
	fed := 0
	for i, t := range p.Tensors {
		if t.Kind == Compute {
			continue
		}
		a, ok := feeds[t.Name]
		if !ok || a == nil {
			return nil, fmt.Errorf("te: no feed for %s %q (%s)", t.Kind, t.Name, t.TypeString())
		}
		if err := a.CheckType(t.DType, t.Shape); err != nil {
			return nil, fmt.Errorf("te: feed for %s %q: %w", t.Kind, t.Name, err)
		}
		if len(a.Data) != t.NumElements() {
			return nil, fmt.Errorf("te: feed for %s %q: %d elements for shape %s", t.Kind, t.Name, len(a.Data), shapeList(a.Shape))
		}
		ev.vals[i] = a
		fed++
	}
	if fed != len(feeds) {
		var extra []string
		for name := range feeds {
			if t := p.Lookup(name); t == nil || t.Kind == Compute {
				extra = append(extra, fmt.Sprintf("%q", name))
			}
		}
		slices.Sort(extra)
		return nil, fmt.Errorf("te: feeds %s name no placeholder of program %q", strings.Join(extra, ", "), p.Name)
	}

	// Last uses, for freeing intermediates.
	if !opts.KeepAll {
		last := make([]int, len(p.Tensors))
		for i := range last {
			last[i] = -1
		}
		for i, t := range p.Tensors {
			if t.Kind != Compute || t.Body == nil {
				continue
			}
			for _, u := range Inputs(t.Body) {
				if j, ok := ev.pos[u]; ok && j < i {
					last[j] = i
				}
			}
		}
		for j, i := range last {
			if i >= 0 && !ev.keep[j] {
				ev.readers[i] = append(ev.readers[i], j)
			}
		}
	}
	return ev, nil
}

// release drops the arrays whose last reader is the tensor at position i.
func (ev *evaluator) release(i int) {
	for _, j := range ev.readers[i] {
		ev.vals[j] = nil
	}
}

// value returns the array of a tensor that t's body loads.
func (ev *evaluator) value(u *Tensor) (*Array, error) {
	j, ok := ev.pos[u]
	if !ok {
		return nil, fmt.Errorf("load of tensor %q, which is not in the program", u.Name)
	}
	if ev.vals[j] == nil {
		return nil, fmt.Errorf("load of tensor %q before its definition", u.Name)
	}
	return ev.vals[j], nil
}

// runtimeError is a failure inside a compiled body (an out-of-bounds load, an
// integer division by zero). Compiled closures panic with it; the worker that
// runs them recovers it and returns it as an error.
type runtimeError struct {
	msg string
}

func (e *runtimeError) Error() string { return e.msg }

// compute evaluates the compute tensor t.
func (ev *evaluator) compute(t *Tensor) (*Array, error) {
	if t.Body == nil {
		return nil, errors.New("compute tensor has no body")
	}
	if len(t.Axes) != len(t.Shape) {
		return nil, fmt.Errorf("%d axes for %d dimensions", len(t.Axes), len(t.Shape))
	}
	c := &compiler{ev: ev, t: t, slots: map[*Var]int{}}
	for d, v := range t.Axes {
		if v.Extent != t.Shape[d] {
			return nil, fmt.Errorf("axis %s has extent %d for dimension %d of size %d", v.Name, v.Extent, d, t.Shape[d])
		}
		if err := c.bind(v); err != nil {
			return nil, err
		}
	}
	if !ev.opts.noGEMM {
		if err := c.contractions(t.Body); err != nil {
			return nil, err
		}
	}
	body, err := c.expr(t.Body)
	if err != nil {
		return nil, err
	}
	out := NewArray(t.DType, t.Shape)
	n := len(out.Data)
	if n == 0 {
		return out, nil
	}
	chunks := min(ev.workers, n)
	if n*c.cost(t.Body) < 1<<15 {
		chunks = 1 // not worth a goroutine
	}
	errs := make([]error, chunks)
	run := func(w int) {
		lo, hi := n*w/chunks, n*(w+1)/chunks
		env := make([]int, c.nslots)
		defer func() {
			if r := recover(); r != nil {
				re, ok := r.(*runtimeError)
				if !ok {
					panic(r)
				}
				errs[w] = fmt.Errorf("at %s%v: %w", t.Name, env[:len(t.Axes)], re)
			}
		}()
		ev.fill(t, out, body, env, lo, hi)
	}
	if chunks == 1 {
		run(0)
	} else {
		var wg sync.WaitGroup
		for w := range chunks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				run(w)
			}()
		}
		wg.Wait()
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// fill stores body's value at elements [lo, hi) of out, in row-major order.
// Slots 0 .. rank-1 of env hold the output axes.
func (ev *evaluator) fill(t *Tensor, out *Array, body scalarFn, env []int, lo, hi int) {
	rank := len(t.Shape)
	rem := lo
	for d := rank - 1; d >= 0; d-- {
		env[d] = rem % t.Shape[d]
		rem /= t.Shape[d]
	}
	data := out.Data
	round := t.DType != F32
	for i := lo; i < hi; i++ {
		v := body(env)
		if round {
			v = Round(t.DType, v)
		}
		data[i] = v
		for d := rank - 1; d >= 0; d-- {
			env[d]++
			if env[d] < t.Shape[d] || d == 0 {
				break
			}
			env[d] = 0
		}
	}
}
