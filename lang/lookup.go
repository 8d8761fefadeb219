package lang

import (
	"math"
	"sort"

	"tec/lang/diag"
	"tec/lang/syntax"
	"tec/te"
)

// builtinVal names a builtin function or type: an element function, a cast, a
// compile-time function, a tensor constructor or a dtype.
type builtinVal struct{ name string }

func (builtinVal) kind() string { return "a builtin function" }
func (*fnDecl) kind() string    { return "a function" }

// builtins lists the names of the universe scope, which every file sees behind
// its own declarations, its imports and the prelude.
var builtins = map[string]bool{
	"exp": true, "log": true, "sqrt": true, "rsqrt": true, "tanh": true, "sigmoid": true, "erf": true, "abs": true,
	"sin": true, "cos": true, "inf": true,
	"max": true, "min": true, "pow": true, "select": true,
	"f32": true, "f16": true, "bf16": true, "i32": true, "bool": true,
	"int": true, "float": true, "len": true,
	"zeros": true, "ones": true, "full": true, "stack": true,
	"sum": true, "prod": true, "argmax": true, "argmin": true,
}

// builtinConsts are the builtin names that stand for compile-time numbers.
var builtinConsts = map[string]number{"inf": floatNum(math.Inf(1))}

func builtinNames() []string {
	ns := make([]string, 0, len(builtins))
	for n := range builtins {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

// lookup resolves a name used in scope sc: a local binding, a top-level
// constant or function of the file, its imports or the prelude, or a
// builtin. It reports an undefined name (with a suggestion) and returns
// poison for it.
func (c *checker) lookup(sc *scope, id syntax.Ident) Value {
	if b := sc.lookupLocal(id.Name); b != nil {
		c.noteUse(sc.path, id, b)
		return b.val
	}
	if sc.file != nil {
		switch d := sc.file.lookupTop(id.Name).(type) {
		case *constDecl:
			v := c.constValue(d, id.Span, sc.path)
			c.noteConstUse(sc.path, id, d, v)
			return v
		case *fnDecl:
			c.noteFnUse(sc.path, id, d)
			return d
		}
	}
	if n, ok := builtinConsts[id.Name]; ok {
		return n
	}
	if builtins[id.Name] {
		return builtinVal{id.Name}
	}
	c.errorAt(sc.path, id.Span, "undefined", suggest(id.Name, sc.names()), "undefined name '%s'", id.Name)
	return poison{}
}

// suggest formats a did-you-mean hint for name among candidates, or "".
func suggest(name string, candidates []string) string {
	if s := diag.Suggest(name, candidates); s != "" {
		return "did you mean '" + s + "'?"
	}
	return ""
}

func sortStrings(s []string) { sort.Strings(s) }

// isDType reports whether name is a dtype name that sc does not shadow.
func (c *checker) isDType(sc *scope, name string) (te.DType, bool) {
	if b := sc.lookupLocal(name); b != nil {
		if v, ok := b.val.(dtypeVar); ok {
			return v.dt, true
		}
		return 0, false
	}
	dt, ok := castTypes[name]
	if !ok || (sc.file != nil && sc.file.lookupTop(name) != nil) {
		return 0, false
	}
	return dt, true
}
