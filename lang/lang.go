// Package lang turns .te source into a te.Program: it resolves names, folds
// constants, unrolls loops and lists, inlines functions, infers ranges, shapes
// and dtypes, checks that every index is quasi-affine and every access in
// bounds, and lowers the chosen model to tensor expressions.
//
// The checker evaluates a model body statement by statement, the way an
// interpreter would: names are bound to compile-time values (numbers, tensors,
// views, lists, tuples), loops are unrolled and functions inlined at each
// call. A tensor definition's body is lowered to a te.Expr over fresh
// variables; its ranges are inferred from the accesses, and every access is
// proven in bounds before the tensor is added to the program.
//
// Index arithmetic is exact only within ±2^53, the integers the reference
// evaluator's float64 holds. The bounds proof (bounds.go) checks it before
// anything else, with checked arithmetic: an int constant beyond 2^53 meeting
// an index, or a constant or coefficient that + or * would carry past it, is
// an error where the index is built (so building never wraps in int64), and
// once the ranges are known every computed sub-expression of an access's
// index, and the index itself, must stay within ±2^53 for every value of its
// variables (te.Index.ExactBounds). Only then are the ranges compared with
// the dimensions, in arithmetic that can no longer overflow. Index values
// used as data or compared (f32(i * 4), select(i * 4 < n, ...)) are held to
// the same bound when their tensor is made.
//
// Constant folding computes what run time would: a cast of a compile-time
// number applies the cast's rounding (f16(0.3) is 0.300048828125), so a
// folded expression equals the unfolded one. A select whose condition the
// ranges decide (select(i - 2 >= 0, x[i - 2], 0.0) where i in 0..1) is folded
// to the branch it takes: the other branch, which may load out of bounds,
// never reaches the program.
//
// Tensors are named after the source (names.go; docs/language.md, "Tensor
// names"): a tensor takes the name of the statement that binds it (f in
// f = linear(...)), and the tensors made inside a call are named call/name by
// the call and their own statement (a/scores, and a/p/mx in softmax called as
// p = softmax(scores)), with .1, .2, ... added where loops and calls repeat a
// name. Inputs, params and outputs keep their names exactly. The names may
// hold '/' and '.', so the backends make identifiers of them, turning every
// other character into '_' (a/p/mx is a_p_mx in CUDA and LLVM IR).
package lang

import (
	"fmt"
	"os"
	"runtime/debug"

	"tec/lang/diag"
	"tec/lang/syntax"
	"tec/te"
)

// Config controls a compilation.
type Config struct {
	// Defines overrides top-level constants of the main file: NAME -> value text
	// ("128", "0.5"), as given by -D NAME=VALUE.
	Defines map[string]string
	// Model names the model to lower; empty means the file's only model.
	Model string
	// AllModels checks every model of the main file instead of lowering one;
	// Check then returns no program. Editors use it to report every error.
	AllModels bool
	// ReadFile reads imported files; nil means ReadSource, up to
	// MaxSourceBytes. Whatever reads them, a path that exists and is not
	// a regular file is refused first (see readImport).
	ReadFile func(path string) ([]byte, error)
	// Info, when not nil, is filled with what the checker learns about each
	// identifier, for editors (hover, go to definition).
	Info *Info
}

// Check parses and checks the file named filename with contents src, and lowers
// the selected model. It returns every diagnostic found, sorted; the program
// is nil when any of them is an error.
func Check(filename string, src []byte, cfg Config) (prog *te.Program, diags diag.List) {
	c := &checker{
		cfg:    cfg,
		seen:   map[diagKey]bool{},
		files:  map[string]*sourceFile{},
		scopes: map[string]*fileScope{},
		info:   cfg.Info,
	}
	if c.info != nil {
		c.info.reset()
	}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(abort); !ok {
				c.diags.Add(&diag.Diagnostic{File: filename, Severity: diag.Error, Code: "internal",
					Message: fmt.Sprintf("internal error in the checker: %v", r), Hint: "please report this with the input file\n" + string(debug.Stack())})
			}
			prog = nil
		}
		if c.info != nil {
			c.info.finish()
		}
		c.diags.Sort()
		diags = c.diags
		if diags.HasErrors() {
			prog = nil
		}
	}()
	c.loadPrelude()
	c.main = c.loadMain(filename, src)
	c.applyDefines(c.main, cfg.Defines)
	all := []*fileScope{c.prelude}
	for _, f := range c.scopes {
		all = append(all, f)
	}
	sortScopes(all[1:])
	c.checkRecursion(all)
	// A function that a top-level constant calls may make tensors: they go
	// to a scratch program, which the model's replaces.
	c.prog = newBuilder(c)
	c.checkConsts(c.main)
	if c.files[filename].ast == nil {
		return nil, nil // a syntax error, already reported
	}
	if cfg.AllModels {
		for _, m := range c.main.models {
			p := c.lowerModel(m)
			if c.info != nil {
				c.info.Programs = append(c.info.Programs, p)
			}
		}
		return nil, nil
	}
	m := c.selectModel()
	if m == nil {
		return nil, nil
	}
	p := c.lowerModel(m)
	if c.info != nil {
		c.info.Programs = append(c.info.Programs, p)
	}
	return p, nil
}

// checkConsts evaluates every constant of the main file, so that errors in
// unused ones are reported too.
func (c *checker) checkConsts(f *fileScope) {
	for _, n := range f.order {
		if d, ok := f.names[n].(*constDecl); ok {
			v := c.constValue(d, d.decl.Name.Span, d.file)
			c.noteConstUse(d.file, d.decl.Name, d, v)
		} else if fn, ok := f.names[n].(*fnDecl); ok {
			c.noteFnUse(fn.file, fn.decl.Name, fn)
		}
	}
}

// selectModel picks the model that Config.Model names, or the only one.
func (c *checker) selectModel() *syntax.ModelDecl {
	f := c.main
	names := f.modelNames()
	if c.cfg.Model == "" {
		switch len(f.models) {
		case 1:
			return f.models[0]
		case 0:
			c.errorAt(f.path, syntax.Span{}, "model", "declare one: model NAME { ... }", "%s has no model", f.path)
		default:
			c.errorAt(f.path, f.models[1].Name.Span, "model", "choose one with --model NAME",
				"%s has %s (%s); which one to lower is ambiguous", f.path, plural(len(names), "model"), joinNames(names))
		}
		return nil
	}
	for _, m := range f.models {
		if m.Name.Name == c.cfg.Model {
			return m
		}
	}
	hint := suggest(c.cfg.Model, names)
	if hint == "" && len(names) > 0 {
		hint = "the models are " + joinNames(names)
	}
	if len(names) == 0 {
		c.errorAt(f.path, syntax.Span{}, "model", "", "--model %s: %s has no model", c.cfg.Model, f.path)
		return nil
	}
	c.errorAt(f.path, syntax.Span{}, "model", hint, "--model %s: %s has no model %s; it has %s", c.cfg.Model, f.path, c.cfg.Model, joinNames(names))
	return nil
}

func joinNames(ns []string) string {
	s := ""
	for i, n := range ns {
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s
}

// lowerModel runs a model's body and returns its program.
func (c *checker) lowerModel(m *syntax.ModelDecl) *te.Program {
	c.prog = newBuilder(c)
	c.frame = &frame{}
	c.scopeNames, c.scopeSnap = nil, nil
	sc := newScope(nil, c.main, c.main.path)
	c.execBlock(sc, m.Body)
	if len(c.prog.outputs) == 0 && len(c.prog.updatedInputs) == 0 && !c.diags.HasErrors() {
		c.errorAt(c.main.path, m.Name.Span, "type", "add an output statement: output y", "model %s has no output", m.Name.Name)
	}
	p := c.prog.finish(m.Name.Name)
	c.frame = nil
	return p
}

func sortScopes(fs []*fileScope) {
	for i := 1; i < len(fs); i++ {
		for j := i; j > 0 && fs[j].path < fs[j-1].path; j-- {
			fs[j], fs[j-1] = fs[j-1], fs[j]
		}
	}
}

// SourceFunc returns the text of the files a check of filename reads, for
// diag.List.Render and WriteJSON: src for filename, the embedded standard
// library for "stdlib/..." names, and other files (imports) from read, or
// os.ReadFile when read is nil. A file that cannot be read gives nil.
func SourceFunc(filename string, src []byte, read func(string) ([]byte, error)) func(string) []byte {
	if read == nil {
		read = os.ReadFile
	}
	return func(file string) []byte {
		if file == filename {
			return src
		}
		for _, pf := range parsedPrelude() {
			if pf.name == file {
				return pf.src
			}
		}
		b, err := read(file)
		if err != nil {
			return nil
		}
		return b
	}
}
