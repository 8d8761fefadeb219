package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"tec/analysis"
	"tec/internal/safefile"
)

func graphCommand() *command {
	c := &command{
		name:    "graph",
		summary: "draw the tensor-dependency graph of a model",
		usage:   "[flags] FILE",
		help: `Graph checks FILE, lowers its model and draws its tensor-dependency graph:
one node per tensor, labelled with its name and type; inputs blue, params
grey, compute-intensive TEs orange, memory-intensive TEs green, a double
border on one-relies-on-many TEs; each node's tooltip gives its source
location and analysis. An edge goes from each tensor to every TE that
reads it.

-o chooses the output by its extension: .dot or .gv writes the graph in
Graphviz's language; .svg, .png and .pdf run Graphviz's dot on it, which
must then be installed (apt-get install graphviz). Without -o the DOT text
goes to standard output.

--collapse keeps large graphs readable by merging the tensors of one scope
into one node: "call" merges each function call, "loop" each iteration of
the outermost loop (each step of an LSTM), N the first N levels of scope.`,
	}
	c.run = func(e *env, args []string) int {
		fs := newFlagSet(c)
		var af analysisFlags
		af.register(fs)
		out := fs.String("o", "", "write the graph to `FILE` (.dot, .gv, .svg, .png or .pdf)")
		collapse := fs.String("collapse", "none", "merge tensors by scope: none, call, loop or a depth N")
		pos, code, ok := e.parse(c, fs, args)
		if !ok {
			return code
		}
		e.setJSON(af.diagnostics, isSet(fs, "diagnostics"), false)
		if err := af.validate(); err != nil {
			return e.usageError(c, "%v", err)
		}
		if len(pos) != 1 {
			return e.usageError(c, "want one FILE, got %d arguments", len(pos))
		}
		col, err := analysis.ParseCollapse(*collapse)
		if err != nil {
			return e.usageError(c, "-%v", err)
		}
		format, err := graphFormat(*out)
		if err != nil {
			return e.usageError(c, "%v", err)
		}
		a, code := e.analyse(&af, pos[0])
		if a == nil {
			return code
		}
		dot, err := a.DOT(col)
		if err != nil {
			return e.failf(c, exitUser, fail(codeBuild, err))
		}
		if err := e.writeGraph(dot, *out, format); err != nil {
			return e.failf(c, exitUser, err)
		}
		return exitOK
	}
	return c
}

// graphFormat returns the Graphviz output format that the name of the output
// file asks for: "dot" for DOT text (also when there is no file).
func graphFormat(out string) (string, error) {
	switch ext := strings.ToLower(filepath.Ext(out)); ext {
	case "", ".dot", ".gv":
		if ext == "" && out != "" {
			return "", fmt.Errorf("-o %s: want a .dot, .gv, .svg, .png or .pdf file", out)
		}
		return "dot", nil
	case ".svg", ".png", ".pdf":
		return ext[1:], nil
	default:
		return "", fmt.Errorf("-o %s: cannot write %s files; want .dot, .gv, .svg, .png or .pdf", out, ext)
	}
}

// writeGraph writes the DOT text to out (standard output when empty), or
// renders it in format with Graphviz's dot.
func (e *env) writeGraph(dot []byte, out, format string) error {
	if format == "dot" {
		if out == "" {
			_, err := e.stdout.Write(dot)
			return fail(codeIO, err)
		}
		if err := safefile.WriteFile(out, dot, 0o644); err != nil {
			return &failure{code: codeIO, file: out, err: fmt.Errorf("writing %s: %w", out, err)}
		}
		return nil
	}
	bin, ok := e.lookPath("dot")
	if !ok {
		return fail(codeGraphviz, fmt.Errorf("writing %s needs Graphviz's dot command, which is not installed\n"+
			"  install it (Debian, Ubuntu: apt-get install graphviz; Fedora: dnf install graphviz;\n"+
			"  macOS: brew install graphviz), or write the graph as DOT text with -o %s",
			out, strings.TrimSuffix(out, filepath.Ext(out))+".dot"))
	}
	cmd := exec.Command(bin, "-T"+format, "-o", out)
	cmd.Stdin = bytes.NewReader(dot)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fail(codeGraphviz, fmt.Errorf("running %s -T%s: %v\n%s", bin, format, err, strings.TrimSpace(stderr.String())))
	}
	return nil
}

// lookPath finds an executable in the PATH that e.getenv gives, so that
// tests control what is installed.
func (e *env) lookPath(name string) (string, bool) {
	for _, dir := range filepath.SplitList(e.getenv("PATH")) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, true
		}
	}
	return "", false
}
