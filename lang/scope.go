package lang

import (
	"sort"

	"tec/lang/syntax"
)

// scope is a local scope: the body of a model or function call, a statement's
// index variables, a reduction's axes, a comprehension's variable, or the
// parameters of an inlined scalar function. Names not found in a scope's
// chain are looked up in its file's top-level scope and then among the
// builtins.
type scope struct {
	parent *scope
	file   *fileScope
	path   string // the file whose text the scope's code is in
	vars   map[string]*binding
}

// binding is a name bound in a local scope.
type binding struct {
	val Value
	// file and def locate the name where it was bound.
	file string
	def  syntax.Span
	// decl is the declaring statement for names that may be declared only once
	// (constants, inputs and params); a loop that runs the same declaration again
	// re-binds it.
	decl syntax.Node
}

func newScope(parent *scope, f *fileScope, path string) *scope {
	return &scope{parent: parent, file: f, path: path, vars: make(map[string]*binding, 4)}
}

// child returns a new scope nested in s, in the same file.
func (s *scope) child() *scope { return newScope(s, s.file, s.path) }

// lookupLocal finds name in s and its parents.
func (s *scope) lookupLocal(name string) *binding {
	for ; s != nil; s = s.parent {
		if b, ok := s.vars[name]; ok {
			return b
		}
	}
	return nil
}

// bind binds name to v in s.
func (s *scope) bind(name string, v Value, def syntax.Span, decl syntax.Node) *binding {
	b := &binding{val: v, file: s.path, def: def, decl: decl}
	s.vars[name] = b
	return b
}

// names returns every name visible from s, for did-you-mean suggestions.
func (s *scope) names() []string {
	var ns []string
	for t := s; t != nil; t = t.parent {
		for n := range t.vars {
			ns = append(ns, n)
		}
	}
	sort.Strings(ns)
	if s.file != nil {
		ns = append(ns, s.file.topNames()...)
	}
	ns = append(ns, builtinNames()...)
	return ns
}
