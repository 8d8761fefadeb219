package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"tec/lang"
	"tec/lang/diag"
)

func docCommand() *command {
	c := &command{
		name:    "doc",
		summary: "show the standard library and the builtins",
		usage:   "[--json] [NAME]",
		help: `Doc lists the functions of the standard library (lang/stdlib/*.te, visible
in every file without an import), each with its signature and the first
line of its doc comment, and the builtins of the language (element
functions, reductions, dtypes and tensor constructors).

With a NAME it shows where that function is declared and its .te source,
doc comment included, or a builtin's signature and description. An unknown NAME is an error with the nearest name as a hint.

--json prints the same as one JSON object.`,
	}
	c.run = func(e *env, args []string) int {
		fs := newFlagSet(c)
		asJSON := fs.Bool("json", false, "print the documentation as one JSON object")
		pos, code, ok := e.parse(c, fs, args)
		if !ok {
			return code
		}
		if len(pos) > 1 {
			return e.usageError(c, "want at most one NAME, got %d arguments", len(pos))
		}
		var err error
		if len(pos) == 0 {
			err = writeDocIndex(e.stdout, *asJSON)
		} else {
			var found bool
			if found, err = writeDocOf(e.stdout, pos[0], *asJSON); err == nil && !found {
				return e.unknownDocName(pos[0], *asJSON)
			}
		}
		if err != nil {
			fmt.Fprintf(e.stderr, "tec doc: %v\n", err)
			return exitUser
		}
		return exitOK
	}
	return c
}

// funcJSON is a standard library function in "tec doc --json".
type funcJSON struct {
	Name      string `json:"name"`
	Signature string `json:"signature"`
	Doc       string `json:"doc"`
	File      string `json:"file"`
	Line      int    `json:"line"`
	Source    string `json:"source,omitempty"`
}

// builtinJSON is a builtin in "tec doc --json".
type builtinJSON struct {
	Name      string `json:"name"`
	Signature string `json:"signature"`
	Doc       string `json:"doc"`
	Kind      string `json:"kind"`
}

func newFuncJSON(f lang.FuncDoc, withSource bool) funcJSON {
	j := funcJSON{Name: f.Name, Signature: f.Signature, Doc: f.Doc, File: f.File, Line: f.Line}
	if withSource {
		j.Source = f.Source
	}
	return j
}

func newBuiltinJSON(b lang.BuiltinDoc) builtinJSON {
	return builtinJSON{Name: b.Name, Signature: b.Signature, Doc: b.Doc, Kind: builtinKindName(b.Kind)}
}

// builtinKindName names a builtin kind in "tec doc" output.
func builtinKindName(k lang.BuiltinKind) string {
	switch k {
	case lang.Reduction:
		return "reduction"
	case lang.DType:
		return "dtype"
	case lang.Constructor:
		return "constructor"
	case lang.Constant:
		return "constant"
	default:
		return "function"
	}
}

// writeDocIndex lists the standard library functions and the builtins.
func writeDocIndex(w io.Writer, asJSON bool) error {
	funcs, builtins := lang.StdlibFuncs(), lang.Builtins()
	if asJSON {
		out := struct {
			Functions []funcJSON    `json:"functions"`
			Builtins  []builtinJSON `json:"builtins"`
		}{Functions: []funcJSON{}, Builtins: []builtinJSON{}}
		for _, f := range funcs {
			out.Functions = append(out.Functions, newFuncJSON(f, false))
		}
		for _, b := range builtins {
			out.Builtins = append(out.Builtins, newBuiltinJSON(b))
		}
		return writeJSON(w, out)
	}
	var b strings.Builder
	b.WriteString("Standard library (lang/stdlib/*.te, visible in every file):\n\n")
	for _, f := range funcs {
		fmt.Fprintf(&b, "  %s\n      %s\n", f.Signature, f.Summary())
	}
	b.WriteString("\nBuiltins:\n\n")
	for _, bi := range builtins {
		fmt.Fprintf(&b, "  %s\n      %s: %s\n", bi.Signature, builtinKindName(bi.Kind), bi.Doc)
	}
	b.WriteString("\nRun 'tec doc NAME' for a function's doc comment and source.\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// writeDocOf shows the function or builtin called name, and reports
// whether there is one.
func writeDocOf(w io.Writer, name string, asJSON bool) (bool, error) {
	for _, f := range lang.StdlibFuncs() {
		if f.Name != name {
			continue
		}
		if asJSON {
			return true, writeJSON(w, newFuncJSON(f, true))
		}
		// The declaration as the file has it, doc comment included, under
		// a comment that says where.
		var b strings.Builder
		fmt.Fprintf(&b, "# %s:%d\n\n", f.File, f.Line)
		for _, l := range strings.Split(f.Doc, "\n") {
			b.WriteString(strings.TrimRight("# "+l, " ") + "\n")
		}
		b.WriteString(f.Source + "\n")
		_, err := io.WriteString(w, b.String())
		return true, err
	}
	for _, b := range lang.Builtins() {
		if b.Name != name {
			continue
		}
		if asJSON {
			return true, writeJSON(w, newBuiltinJSON(b))
		}
		_, err := fmt.Fprintf(w, "%s\n    builtin %s\n\n%s\n", b.Signature, builtinKindName(b.Kind), b.Doc)
		return true, err
	}
	return false, nil
}

// unknownDocName reports that no function or builtin is called name, with
// the nearest name as a hint.
func (e *env) unknownDocName(name string, asJSON bool) int {
	var names []string
	for _, f := range lang.StdlibFuncs() {
		names = append(names, f.Name)
	}
	for _, b := range lang.Builtins() {
		names = append(names, b.Name)
	}
	msg := fmt.Sprintf("no standard library function or builtin named %q", name)
	hint := ""
	if s := diag.Suggest(name, names); s != "" {
		hint = fmt.Sprintf("did you mean '%s'?", s)
	}
	if asJSON {
		out := struct {
			Error string `json:"error"`
			Hint  string `json:"hint,omitempty"`
		}{msg, hint}
		if err := writeJSON(e.stdout, out); err != nil {
			fmt.Fprintf(e.stderr, "tec doc: %v\n", err)
		}
		return exitUser
	}
	fmt.Fprintf(e.stderr, "tec doc: %s\n", msg)
	if hint != "" {
		fmt.Fprintf(e.stderr, "  hint: %s\n", hint)
	}
	fmt.Fprintln(e.stderr, "Run 'tec doc' for the list.")
	return exitUser
}

// writeJSON writes v as indented JSON, '<', '>' and '&' as they are.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
