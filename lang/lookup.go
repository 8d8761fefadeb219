package lang

import (
	"sort"

	"tec/lang/diag"
	"tec/lang/syntax"
	"tec/te"
)

// builtinVal is a builtin function or type: an element function, a cast, a
// compile-time function, a tensor constructor or a dtype.
type builtinVal struct{ b *builtin }

func (builtinVal) kind() string { return "a builtin function" }
func (*fnDecl) kind() string    { return "a function" }

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
	if b := lookupBuiltin(id.Name); b != nil {
		if b.lower.form == lowerConstant {
			return b.lower.value
		}
		return builtinVal{b}
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
	dt, ok := dtypeNamed(name)
	if !ok || (sc.file != nil && sc.file.lookupTop(name) != nil) {
		return 0, false
	}
	return dt, true
}
