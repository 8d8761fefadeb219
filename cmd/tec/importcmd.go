package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"tec/frontend/onnx"
	"tec/internal/safefile"
	"tec/internal/tensorio"
	"tec/lang"
)

// The largest .onnx file tec import reads: 2 GiB, the most a protobuf
// message may hold; from a device or a pipe, whose size is not known
// before it is read, 64 MiB (so that /dev/zero fails fast).
const (
	maxONNXBytes       = 2 << 30
	maxONNXStreamBytes = 64 << 20
)

// readONNX reads the model file at path within the limits above.
func readONNX(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	limit := int64(maxONNXBytes)
	if !st.Mode().IsRegular() {
		limit = maxONNXStreamBytes
	} else if st.Size() > limit {
		return nil, &safefile.TooLargeError{Path: path, Limit: limit}
	}
	return safefile.ReadFile(path, limit)
}

func importCommand() *command {
	c := &command{
		name:    "import",
		summary: "translate an ONNX model into a .te program and its weights",
		usage:   "[flags] MODEL.onnx",
		help: `Import translates an ONNX model (opsets 13 to 21, as torch.onnx.export
and the ONNX tools write them) into a readable .te program, one statement
per node named after the ONNX values, and writes the initializers (the
weights) to an .npz file under the names the program declares as params:

  tec import model.onnx -o model.te --params model.npz
  tec run model.te --params model.npz --inputs in.npz

Shapes are static: they come from the graph's inputs, whose symbolic
dimensions (an export's dynamic axes) take the sizes --dim NAME=SIZE gives
(1 without, with a warning), and every node
whose inputs are all known at import (Constant, Shape, ConstantOfShape
and the shape arithmetic on them) is folded. An unsupported operator or
attribute is an error naming the node, its op type and its position. The
written program is checked before import succeeds; -o and --params may
name neither the model nor each other. docs/import.md lists the
operators and the naming scheme.`,
	}
	c.run = func(e *env, args []string) int {
		fs := newFlagSet(c)
		out := fs.String("o", "", "the .te file to write (default: MODEL.te)")
		params := fs.String("params", "", "the .npz file of the weights (default: the -o file with .npz)")
		model := fs.String("model", "", "the name of the .te model (default: the file's base name)")
		diagFormat := fs.String("diagnostics", "text", "how to print errors: text or json")
		dims := map[string]int{}
		fs.Func("dim", "NAME=SIZE: the size of the inputs' symbolic dimension NAME (repeatable; default 1, with a warning)", func(s string) error {
			name, value, ok := strings.Cut(s, "=")
			size, err := strconv.Atoi(value)
			if !ok || name == "" || err != nil {
				return fmt.Errorf("want NAME=SIZE, e.g. batch=8, not %q", s)
			}
			if _, dup := dims[name]; dup {
				return fmt.Errorf("%s is given twice", name)
			}
			dims[name] = size
			return nil
		})
		pos, code, ok := e.parse(c, fs, args)
		if !ok {
			return code
		}
		e.setJSON(*diagFormat, isSet(fs, "diagnostics"), false)
		if *diagFormat != "text" && *diagFormat != "json" {
			return e.usageError(c, "-diagnostics must be text or json")
		}
		if len(pos) != 1 {
			return e.usageError(c, "want one MODEL.onnx, got %d arguments", len(pos))
		}
		file := pos[0]
		base := strings.TrimSuffix(file, filepath.Ext(file))
		if *out == "" {
			*out = base + ".te"
		}
		if *params == "" {
			*params = strings.TrimSuffix(*out, filepath.Ext(*out)) + ".npz"
		}
		if *model == "" {
			*model = filepath.Base(base)
		}
		if err := checkImportPaths(file, *out, *params); err != nil {
			return e.usageError(c, "%v", err)
		}
		return e.importONNX(c, file, *out, *params, *model, dims)
	}
	return c
}

func (e *env) importONNX(c *command, file, out, params, model string, dims map[string]int) int {
	data, err := readONNX(file)
	if err != nil {
		return e.failf(c, exitUser, &failure{code: codeIO, file: file, err: err})
	}
	m, err := onnx.Decode(data)
	if err != nil {
		return e.failf(c, exitUser, &failure{code: codeImport, file: file, err: fmt.Errorf("%s: %w", file, err)})
	}
	res, err := onnx.Import(m, onnx.Options{Model: model, Source: filepath.Base(file), Dims: dims})
	if err != nil {
		return e.failf(c, exitUser, &failure{code: codeImport, file: file, err: fmt.Errorf("%s: %w", file, err)})
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(e.stderr, "tec import: warning: %s\n", w)
	}
	// The program must check: a failure here is a bug of the importer.
	if _, diags := lang.Check(out, res.Program, lang.Config{}); diags.HasErrors() {
		return e.failf(c, exitUser, &failure{code: codeInternal, file: file,
			err: fmt.Errorf("the imported program does not check: %s%splease report this with the model", firstError(diags.Error()), hintSep)})
	}
	if err := safefile.WriteFile(out, res.Program, 0o644); err != nil {
		return e.failf(c, exitUser, &failure{code: codeIO, file: out, err: err})
	}
	if err := tensorio.WriteNPZ(params, res.Params); err != nil {
		return e.failf(c, exitUser, &failure{code: codeIO, file: params, err: err})
	}
	if !e.json {
		values := 0
		for _, a := range res.Params {
			values += a.Len()
		}
		fmt.Fprintf(e.stdout, "wrote %s and %s (%d params, %d values)\n", out, params, len(res.Params), values)
	}
	return exitOK
}

// checkImportPaths refuses outputs that would overwrite the model or each
// other: the program and the weights written over the .onnx being read, or
// the weights written over the program.
func checkImportPaths(model, out, params string) error {
	switch {
	case samePath(out, model):
		return fmt.Errorf("-o %s is the model being imported, which it would overwrite%sname the .te file to write, e.g. -o %s",
			out, hintSep, strings.TrimSuffix(model, filepath.Ext(model))+".te")
	case samePath(params, model):
		return fmt.Errorf("--params %s is the model being imported, which it would overwrite%sname the .npz file to write, e.g. --params %s",
			params, hintSep, strings.TrimSuffix(model, filepath.Ext(model))+".npz")
	case samePath(params, out):
		return fmt.Errorf("--params %s and -o %s are the same file: the weights would overwrite the program%sname another .npz file, e.g. --params %s",
			params, out, hintSep, strings.TrimSuffix(out, filepath.Ext(out))+".npz")
	}
	return nil
}

// samePath reports whether the paths a and b name one file: the same path
// once made absolute and cleaned, or, where both exist, the same file
// under two names (a link, a relative and an absolute spelling).
func samePath(a, b string) bool {
	if aa, err := filepath.Abs(a); err == nil {
		if bb, err := filepath.Abs(b); err == nil && aa == bb {
			return true
		}
	}
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}

// firstError returns the first line of a diagnostics text.
func firstError(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}
