package lang

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"tec/lang/syntax"
	"tec/te"
)

// Info records what the checker learnt about the identifiers of the files it
// read, for editors: the text to show on hover and where each name is
// defined. Fill it by setting Config.Info; Check resets it first.
type Info struct {
	// Idents holds every identifier the checker resolved, by file, sorted by
	// position. An identifier inside a loop or a function called several times
	// is recorded once, as first seen.
	Idents map[string][]Ident
	// Programs holds the programs of the models lowered, in order; with
	// Config.AllModels, one per model of the main file. A program is complete
	// only when the check found no errors.
	Programs []*te.Program

	byPos map[identKey]*Ident
	vars  map[*Ident]*te.Var
}

// Ident is one identifier in the source and the thing it denotes.
type Ident struct {
	Span   syntax.Span
	Symbol Symbol
}

// SymbolKind says what kind of thing a name denotes.
type SymbolKind int

// The kinds of symbol.
const (
	SymConst  SymbolKind = iota // a constant (top-level or local)
	SymFunc                     // a function
	SymModel                    // a model
	SymTensor                   // a tensor or a view of one
	SymIndex                    // an index variable or reduction axis
	SymList                     // a list
	SymValue                    // any other value (a tuple, a type)
)

// Symbol describes a named thing.
type Symbol struct {
	Name string
	Kind SymbolKind
	// Detail is the text to show on hover: "const D = 768",
	// "x: f32[128, 768]", "i in 0..128",
	// "fn linear(x: f32[M, K], w: f32[K, N], b: f32[N]) -> f32[M, N]".
	Detail string
	// File and Def locate the name's definition; Def is the zero Span for
	// builtins.
	File string
	Def  syntax.Span
	// Type is a tensor's type as written in the language, "f32[4, 8]"; it is
	// empty for other kinds.
	Type string
	// Tensor is the tensor first bound to the name (the one of the first
	// iteration of a loop, or of the first call of a function); nil for other
	// kinds.
	Tensor *te.Tensor
	// Extent is the range 0..Extent of an index variable or reduction axis.
	Extent int
}

type identKey struct {
	file   string
	offset int
}

func (in *Info) reset() {
	in.Idents = map[string][]Ident{}
	in.Programs = nil
	in.byPos = map[identKey]*Ident{}
	in.vars = map[*Ident]*te.Var{}
}

// At returns the identifier of file that contains the byte offset, or nil.
func (in *Info) At(file string, offset int) *Ident {
	ids := in.Idents[file]
	i := sort.Search(len(ids), func(i int) bool { return ids[i].Span.End.Offset > offset })
	if i < len(ids) && ids[i].Span.Start.Offset <= offset {
		return &ids[i]
	}
	return nil
}

// finish sorts the identifiers and fills in the ranges of index variables.
func (in *Info) finish() {
	for id, v := range in.vars {
		id.Symbol.Detail = fmt.Sprintf("%s in 0..%d", id.Symbol.Name, v.Extent)
		id.Symbol.Extent = v.Extent
	}
	count := map[string]int{}
	for k := range in.byPos {
		count[k.file]++
	}
	in.Idents = make(map[string][]Ident, len(count))
	for file, n := range count {
		in.Idents[file] = make([]Ident, 0, n)
	}
	for k, id := range in.byPos {
		in.Idents[k.file] = append(in.Idents[k.file], *id)
	}
	for _, ids := range in.Idents {
		slices.SortFunc(ids, func(a, b Ident) int { return a.Span.Start.Offset - b.Span.Start.Offset })
	}
}

// record notes an identifier, keeping the first record at each position.
func (in *Info) record(file string, id syntax.Ident, sym Symbol) *Ident {
	k := identKey{file, id.Span.Start.Offset}
	if old, ok := in.byPos[k]; ok {
		return old
	}
	x := &Ident{Span: id.Span, Symbol: sym}
	in.byPos[k] = x
	return x
}

// symbolOf describes a value bound to name.
func symbolOf(name string, v Value, file string, def syntax.Span) Symbol {
	s := Symbol{Name: name, Kind: SymValue, File: file, Def: def}
	switch v := v.(type) {
	case number:
		s.Kind, s.Detail = SymConst, fmt.Sprintf("%s = %s", name, v)
	case *tensorVal:
		s.Kind, s.Detail = SymTensor, fmt.Sprintf("%s: %s", name, v.typeString())
		s.Type, s.Tensor = v.typeString(), v.t
		if v.isView() {
			s.Detail += fmt.Sprintf(" (a view of %s)", v.t.Name)
		}
	case *listVal:
		s.Kind, s.Detail = SymList, fmt.Sprintf("%s: list of %s", name, plural(len(v.elems), "element"))
	case *indexVar:
		s.Kind, s.Detail = SymIndex, name
	default:
		s.Detail = fmt.Sprintf("%s: %s", name, describe(v))
	}
	return s
}

// noteUse records a use of a local binding.
func (c *checker) noteUse(file string, id syntax.Ident, b *binding) {
	if c.info == nil {
		return
	}
	x := c.info.record(file, id, symbolOf(id.Name, b.val, b.file, b.def))
	if iv, ok := b.val.(*indexVar); ok {
		c.info.vars[x] = iv.v
	}
}

// noteDefBinding records the defining occurrence of a local name.
func (c *checker) noteDefBinding(file string, id syntax.Ident, b *binding) {
	c.noteUse(file, id, b)
}

// noteIndexVar records the declaration of an index variable.
func (c *checker) noteIndexVar(file string, id syntax.Ident, iv *indexVar) {
	if c.info == nil {
		return
	}
	x := c.info.record(file, id, Symbol{Name: id.Name, Kind: SymIndex, Detail: id.Name, File: file, Def: id.Span})
	c.info.vars[x] = iv.v
}

// noteWhere records the variable of a where clause as a use of the index
// variable or reduction axis whose range it states.
func (c *checker) noteWhere(file string, id syntax.Ident, iv *indexVar) {
	if c.info == nil {
		return
	}
	x := c.info.record(file, id, Symbol{Name: id.Name, Kind: SymIndex, Detail: id.Name, File: iv.file, Def: iv.span})
	c.info.vars[x] = iv.v
}

// noteDef records the declaration of a model.
func (c *checker) noteDef(file string, id syntax.Ident, sym *Symbol) {
	if c.info == nil {
		return
	}
	sym.File, sym.Def = file, id.Span
	c.info.record(file, id, *sym)
}

// noteConstUse records a use of a top-level constant.
func (c *checker) noteConstUse(file string, id syntax.Ident, d *constDecl, v Value) {
	if c.info == nil {
		return
	}
	detail := "const " + d.decl.Name.Name
	if n, ok := v.(number); ok {
		detail += " = " + n.String()
	}
	c.info.record(file, id, Symbol{Name: id.Name, Kind: SymConst, Detail: detail, File: d.file, Def: d.decl.Name.Span})
}

// noteFnUse records a use of a function.
func (c *checker) noteFnUse(file string, id syntax.Ident, fn *fnDecl) {
	if c.info == nil {
		return
	}
	c.info.record(file, id, Symbol{Name: id.Name, Kind: SymFunc, Detail: c.signature(fn), File: fn.file, Def: fn.decl.Name.Span})
}

// signature formats a function's signature as written.
func (c *checker) signature(fn *fnDecl) string {
	d := fn.decl
	var b strings.Builder
	b.WriteString("fn " + d.Name.Name + "(")
	for i, p := range d.Params {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c.text(fn.file, p.Span))
	}
	b.WriteString(")")
	switch len(d.Results) {
	case 0:
	case 1:
		b.WriteString(" -> " + c.text(fn.file, d.Results[0].Span))
	default:
		b.WriteString(" -> (")
		for i, r := range d.Results {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(c.text(fn.file, r.Span))
		}
		b.WriteString(")")
	}
	return b.String()
}
