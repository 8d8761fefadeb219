package lang

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"

	"tec/internal/safefile"
	"tec/lang/diag"
	"tec/lang/stdlib"
	"tec/lang/syntax"
)

// fileScope is the top-level scope of a source file: the constants and
// functions it declares, the files it imports, and the prelude behind them.
// The prelude itself is one fileScope holding every standard library file.
type fileScope struct {
	path    string         // the name diagnostics use
	names   map[string]any // *constDecl or *fnDecl
	order   []string       // names in declaration order
	imports []*fileScope
	// importSpans locates the import declaration of each of imports.
	importSpans []syntax.Span
	prelude     *fileScope // nil for the prelude itself
	models      []*syntax.ModelDecl
}

// constDecl is a top-level constant, evaluated on first use.
type constDecl struct {
	file  string
	scope *fileScope
	decl  *syntax.ConstDecl
	state int // 0 not evaluated, 1 being evaluated, 2 done
	val   Value
	// override is the value given with -D, if any.
	override *number
}

// fnDecl is a function declaration.
type fnDecl struct {
	file      string
	scope     *fileScope
	decl      *syntax.FnDecl
	recursive bool // part of a call cycle, already reported
}

func (f *fnDecl) name() string { return f.decl.Name.Name }

// sourceFile is one file's text and syntax tree.
type sourceFile struct {
	src []byte
	ast *syntax.File
}

// preludeFile is a parsed standard library file.
type preludeFile struct {
	name string
	src  []byte
	ast  *syntax.File
	err  error
}

// parsedPrelude parses the standard library once per process: the files are
// embedded in the binary, and the syntax trees are never modified.
var parsedPrelude = sync.OnceValue(func() []preludeFile {
	fsys := stdlib.FS()
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return []preludeFile{{name: "stdlib", err: err}}
	}
	var out []preludeFile
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".te") {
			continue
		}
		src, err := fs.ReadFile(fsys, e.Name())
		pf := preludeFile{name: "stdlib/" + e.Name(), src: src, err: err}
		if err == nil {
			pf.ast, pf.err = syntax.Parse(pf.name, src)
		}
		out = append(out, pf)
	}
	return out
})

// loadPrelude builds the prelude scope from the standard library.
func (c *checker) loadPrelude() {
	p := &fileScope{path: "stdlib", names: map[string]any{}}
	c.prelude = p
	for _, pf := range parsedPrelude() {
		c.files[pf.name] = &sourceFile{src: pf.src, ast: pf.ast}
		if pf.err != nil {
			c.syntaxError(pf.name, pf.err)
			continue
		}
		c.declare(p, pf.name, pf.ast)
	}
}

// syntaxError reports err, an error of syntax.Parse or of reading a file.
func (c *checker) syntaxError(file string, err error) {
	var se *syntax.Error
	if errors.As(err, &se) {
		d := diag.FromSyntax(err)
		if d != nil {
			c.diags.Add(d)
			return
		}
	}
	c.errorAt(file, syntax.Span{}, "syntax", "", "%v", err)
}

// loadMain parses and declares the main file and, recursively, its imports.
func (c *checker) loadMain(filename string, src []byte) *fileScope {
	state := map[string]int{} // 1 loading, 2 done
	return c.loadFile(filename, src, state, nil)
}

// importStack is the chain of files being loaded, for cycle messages.
type importStack struct {
	path string
	prev *importStack
}

func (c *checker) loadFile(path string, src []byte, state map[string]int, stack *importStack) *fileScope {
	state[path] = 1
	f := &fileScope{path: path, names: map[string]any{}, prelude: c.prelude}
	ast, err := syntax.Parse(path, src)
	c.files[path] = &sourceFile{src: src, ast: ast}
	c.scopes[path] = f
	if err != nil {
		c.syntaxError(path, err)
		state[path] = 2
		return f
	}
	stack = &importStack{path: path, prev: stack}
	for _, d := range ast.Decls {
		imp, ok := d.(*syntax.ImportDecl)
		if !ok {
			continue
		}
		target := filepath.Join(filepath.Dir(path), filepath.FromSlash(imp.Path))
		if filepath.IsAbs(imp.Path) {
			target = filepath.Clean(imp.Path)
		}
		switch state[target] {
		case 1:
			chain := []string{target}
			for s := stack; s != nil && s.path != target; s = s.prev {
				chain = append(chain, s.path)
			}
			chain = append(chain, target)
			for i, j := 0, len(chain)-1; i < j; i, j = i+1, j-1 {
				chain[i], chain[j] = chain[j], chain[i]
			}
			c.errorAt(path, imp.Span, "import", "move the shared declarations into a third file that both import",
				"import cycle: %s", strings.Join(chain, " imports "))
			continue
		case 2:
			if g := c.scopes[target]; g != nil {
				f.imports = append(f.imports, g)
				f.importSpans = append(f.importSpans, imp.Span)
			}
			continue
		}
		data, err := c.readImport(target)
		var nr *NotRegularError
		switch {
		case errors.As(err, &nr):
			c.errorAt(path, imp.PathSpan, "import", "an import names a .te source file",
				"cannot import %q: it is %s", imp.Path, nr.kind())
			continue
		case err != nil:
			c.errorAt(path, imp.PathSpan, "import", "the path is relative to the importing file",
				"cannot read import %q: %v", imp.Path, unwrapPathError(err))
			continue
		}
		f.imports = append(f.imports, c.loadFile(target, data, state, stack))
		f.importSpans = append(f.importSpans, imp.Span)
	}
	c.declare(f, path, ast)
	c.checkImportConflicts(f)
	state[path] = 2
	return f
}

func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// MaxSourceBytes bounds a file that Check imports when Config.ReadFile is
// nil: 16 MiB, the limit of tec's commands for a source file.
const MaxSourceBytes = 16 << 20

// readImport reads an imported file. Whatever reads it (Config.ReadFile, or
// ReadSource), a path that names something other than a regular file is
// refused before it is opened: an import of /dev/stdin, /proc/self/fd/0, a
// terminal or a named pipe would otherwise read the stream of the process
// that checks (a language server's own protocol), or wait for ever on a
// pipe nobody writes to. A path that does not exist on disk goes to
// Config.ReadFile, which may know it (an editor's unsaved document).
func (c *checker) readImport(path string) ([]byte, error) {
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		return nil, &NotRegularError{Path: path, Mode: st.Mode()}
	}
	if c.cfg.ReadFile != nil {
		return c.cfg.ReadFile(path)
	}
	return ReadSource(path, MaxSourceBytes)
}

// NotRegularError reports a source file that is not a regular file: a
// directory, a device, a named pipe or a socket.
type NotRegularError struct {
	Path string
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is %s", e.Path, e.kind())
}

// kind says what the file is instead of a regular file.
func (e *NotRegularError) kind() string {
	var what string
	switch m := e.Mode; {
	case m.IsDir():
		what = "a directory"
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	case m&fs.ModeCharDevice != 0:
		what = "a character device (a terminal, or a device such as /dev/null)"
	case m&fs.ModeDevice != 0:
		what = "a block device"
	default:
		return "not a regular file"
	}
	return what + ", not a regular file"
}

// ReadSource reads the source file at path: a regular file of at most limit
// bytes (a longer one is a *safefile.TooLargeError). Anything else is a
// *NotRegularError. The file is opened without blocking and checked once
// open, so that a named pipe that nobody writes to, or a path swapped for
// one after a check, is refused rather than waited on.
func ReadSource(path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, &NotRegularError{Path: path, Mode: st.Mode()}
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, &safefile.TooLargeError{Path: path, Limit: limit}
	}
	return data, nil
}

// declare adds the constants, functions and models of a file to scope f.
func (c *checker) declare(f *fileScope, file string, ast *syntax.File) {
	for _, d := range ast.Decls {
		var id syntax.Ident
		var decl any
		switch d := d.(type) {
		case *syntax.ConstDecl:
			id, decl = d.Name, &constDecl{file: file, scope: f, decl: d}
		case *syntax.FnDecl:
			id, decl = d.Name, &fnDecl{file: file, scope: f, decl: d}
		case *syntax.ModelDecl:
			for _, m := range f.models {
				if m.Name.Name == d.Name.Name {
					e := c.errorAt(file, d.Name.Span, "redefined", "", "model %s is declared twice", d.Name.Name)
					related(e, file, m.Name.Span, "the first declaration of %s", d.Name.Name)
				}
			}
			f.models = append(f.models, d)
			c.noteDef(file, d.Name, &Symbol{Name: d.Name.Name, Kind: SymModel, Detail: "model " + d.Name.Name})
			continue
		default:
			continue
		}
		if prev, ok := f.names[id.Name]; ok {
			pfile, pspan := declSite(prev)
			e := c.errorAt(file, id.Span, "redefined", "rename one of them", "%s is declared twice", id.Name)
			related(e, pfile, pspan, "the first declaration of %s", id.Name)
			continue
		}
		f.names[id.Name] = decl
		f.order = append(f.order, id.Name)
	}
}

// declSite returns where a top-level declaration's name is.
func declSite(d any) (string, syntax.Span) {
	switch d := d.(type) {
	case *constDecl:
		return d.file, d.decl.Name.Span
	case *fnDecl:
		return d.file, d.decl.Name.Span
	}
	return "", syntax.Span{}
}

// checkImportConflicts reports a name that two imports of f both declare and
// f does not declare itself.
func (c *checker) checkImportConflicts(f *fileScope) {
	owner := map[string]*fileScope{}
	for k, g := range f.imports {
		names := append([]string(nil), g.order...)
		sort.Strings(names)
		for _, n := range names {
			if _, own := f.names[n]; own {
				continue
			}
			if h, ok := owner[n]; ok && h != g {
				c.errorAt(f.path, f.importSpans[k], "redefined", "declare the one you mean in this file, or rename one",
					"%s is declared by both %s and %s", n, h.path, g.path)
				continue
			}
			owner[n] = g
		}
	}
}

// lookupTop finds a top-level name visible in f: f's own declarations, then
// its imports', then the prelude's.
func (f *fileScope) lookupTop(name string) any {
	if d, ok := f.names[name]; ok {
		return d
	}
	for _, g := range f.imports {
		if d, ok := g.names[name]; ok {
			return d
		}
	}
	if f.prelude != nil {
		if d, ok := f.prelude.names[name]; ok {
			return d
		}
	}
	return nil
}

// topNames returns every top-level name visible in f, for suggestions.
func (f *fileScope) topNames() []string {
	var ns []string
	ns = append(ns, f.order...)
	for _, g := range f.imports {
		ns = append(ns, g.order...)
	}
	if f.prelude != nil {
		ns = append(ns, f.prelude.order...)
	}
	return ns
}

// modelNames lists the models of f.
func (f *fileScope) modelNames() []string {
	var ns []string
	for _, m := range f.models {
		ns = append(ns, m.Name.Name)
	}
	return ns
}
