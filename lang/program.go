package lang

import (
	"strconv"

	"tec/lang/syntax"
	"tec/te"
)

// builder collects the tensors of the program being lowered.
type builder struct {
	c            *checker
	tensors      []*te.Tensor
	placeholders map[string]*placeholderSite
	outputs      []outputSite
	outputNames  map[string]syntax.Span
	// bound holds the tensors named by the statement that binds them, whose
	// names are made unique before the others' (see names.go).
	bound map[*te.Tensor]bool
	// twice holds the declarations reported as declared twice, so that a
	// loop reports a clash once, not once per iteration.
	twice map[syntax.Node]bool
	// updates are the in-place updates so far; updatedInputs the inputs
	// they update, in order, which are outputs of the program.
	updates       []*updateSite
	updatedInputs []*te.Tensor
}

// updated records that an update writes the input t, which makes it an
// output of the program under its own name.
func (b *builder) updated(t *te.Tensor) {
	for _, u := range b.updatedInputs {
		if u == t {
			return
		}
	}
	b.updatedInputs = append(b.updatedInputs, t)
}

type placeholderSite struct {
	t    *te.Tensor
	decl syntax.Node
	file string
	span syntax.Span
}

type outputSite struct {
	name string
	t    *te.Tensor
}

func newBuilder(c *checker) *builder {
	return &builder{c: c, placeholders: map[string]*placeholderSite{}, outputNames: map[string]syntax.Span{}, bound: map[*te.Tensor]bool{}, twice: map[syntax.Node]bool{}}
}

// add appends a tensor, named provisionally name, with the current scope.
func (b *builder) add(t *te.Tensor, name, file string, span syntax.Span) *te.Tensor {
	b.c.tensors++
	b.c.work(file, span, tensorCost)
	b.c.checkSize(file, span, t.Shape)
	t.ID = len(b.tensors)
	if t.Body != nil {
		// A branch that no index reaches may be out of bounds (its
		// loads need no proof): it goes before any later stage sees it.
		t.Body = te.FoldSelects(t.Body)
	}
	t.Name = name
	t.Span = teSpan(file, span)
	t.Scope = b.c.currentScope()
	b.tensors = append(b.tensors, t)
	return t
}

// placeholder adds an input or param.
// name is its program name: placeholderName of the declared one.
func (b *builder) placeholder(s *syntax.PlaceholderStmt, name string, kind te.Kind, dt te.DType, dims []int, file string) *te.Tensor {
	t := b.add(&te.Tensor{Kind: kind, DType: dt, Shape: dims}, name, file, s.Span)
	t.Scope = nil
	b.placeholders[name] = &placeholderSite{t: t, decl: s, file: file, span: s.Name.Span}
	return t
}

// output makes tv an output named by the output item. A view, a placeholder
// or a tensor that is already an output is copied into a new tensor, so that
// every output is a compute tensor of its own (an input given back as it is
// keeps its name and is not copied).
func (b *builder) output(c *checker, it *syntax.OutputItem, tv *tensorVal, file string) {
	name := it.Name.Name
	if prev, dup := b.outputNames[name]; dup {
		d := c.errorAt(file, it.Name.Span, "redefined", "", "output %s is given twice", name)
		related(d, file, prev, "first given here")
		return
	}
	b.outputNames[name] = it.Name.Span
	if p := b.placeholders[name]; p != nil && p.t != tv.t {
		d := c.errorAt(file, it.Name.Span, "redefined", "give the output another name", "output %s has the name of %s %s", name, p.t.Kind, name)
		related(d, p.file, p.span, "%s is declared here", name)
		return
	}
	t := tv.t
	taken := false
	for _, o := range b.outputs {
		taken = taken || o.t == t
	}
	switch {
	case t.Kind != te.Compute && !tv.isView() && t.Name == name:
		// the placeholder itself, under its own name
	case tv.isView() || t.Kind != te.Compute || taken:
		t = c.copyTensor(file, it.Span, tv, name).t
	}
	b.outputs = append(b.outputs, outputSite{name: name, t: t})
}

// finish removes the tensors that no output needs (placeholders are kept:
// callers bind them by name), names the tensors uniquely and returns the
// program. Outputs and placeholders keep their names; then the tensors that
// statements name take theirs, and the tensors that expressions make take
// what is left, so that no intermediate takes a statement's name. A name
// taken already gets the first free suffix .1, .2, ...
func (b *builder) finish(model string) *te.Program {
	live := make([]bool, len(b.tensors))
	var stack []*te.Tensor
	for _, t := range b.tensors {
		if t.Update != nil {
			live[t.ID] = true
			stack = append(stack, t)
			for _, g := range t.Update.Gather {
				if g != nil {
					for _, u := range te.Inputs(g) {
						if !live[u.ID] {
							live[u.ID] = true
							stack = append(stack, u)
						}
					}
				}
			}
		}
	}
	for _, t := range b.updatedInputs {
		if _, named := b.outputNames[t.Name]; !named {
			b.outputs = append(b.outputs, outputSite{name: t.Name, t: t})
		}
	}
	for _, o := range b.outputs {
		if !live[o.t.ID] {
			live[o.t.ID] = true
			stack = append(stack, o.t)
		}
	}
	for len(stack) > 0 {
		t := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if t.Body == nil {
			continue
		}
		te.Walk(t.Body, func(e te.Expr) bool {
			if l, ok := e.(*te.Load); ok && !live[l.Tensor.ID] {
				live[l.Tensor.ID] = true
				stack = append(stack, l.Tensor)
			}
			return true
		})
	}
	p := &te.Program{Name: model}
	used := map[string]bool{}
	outName := map[*te.Tensor]string{}
	for _, o := range b.outputs {
		outName[o.t] = o.name
		used[o.name] = true
	}
	for _, t := range b.tensors {
		if t.Kind != te.Compute {
			used[t.Name] = true
		}
	}
	for _, t := range b.tensors {
		if t.Kind == te.Compute && !live[t.ID] {
			continue
		}
		t.ID = len(p.Tensors)
		p.Tensors = append(p.Tensors, t)
	}
	next := map[string]int{}
	for _, statement := range []bool{true, false} {
		for _, t := range p.Tensors {
			if t.Kind != te.Compute || b.bound[t] != statement {
				continue
			}
			if n, ok := outName[t]; ok {
				t.Name = n
				continue
			}
			t.Name = uniqueName(t.Name, used, next)
		}
	}
	for _, o := range b.outputs {
		p.Outputs = append(p.Outputs, o.t)
	}
	return p
}

// uniqueName returns base, or the first of base.1, base.2, ... not in used,
// and marks it used; next remembers, per base, the suffix to try next.
func uniqueName(base string, used map[string]bool, next map[string]int) string {
	n := base
	for used[n] {
		next[base]++
		n = base + "." + strconv.Itoa(next[base])
	}
	used[n] = true
	return n
}
