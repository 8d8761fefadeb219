package main

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"tec/frontend/hf"
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
		summary: "translate an ONNX model or a Hugging Face checkpoint into a .te program",
		usage:   "[flags] MODEL.onnx|DIR",
		help: `Import translates an ONNX model (opsets 13 to 21, as torch.onnx.export
and the ONNX tools write them) into a readable .te program, one statement
per node named after the ONNX values, and writes the initializers (the
weights) to an .npz file under the names the program declares as params:

  tec import model.onnx -o model.te --params model.npz
  tec run model.te --params model.npz --inputs in.npz

Given a directory, import reads it as a Hugging Face checkpoint of the
Llama family (config.json and safetensors: Llama 2 and 3, SmolLM2,
Mistral, Qwen2, Qwen3) and writes the .te program of a prefill and a
decode step that tec generate runs, B sequences of P prompt tokens and
caches of T positions (--dim B=1 --dim P=128 --dim T=1024 by default,
fewer where the model's context is shorter). The weights stay in the
checkpoint: tec run and tec generate bind them with --params DIR.

  tec import Llama-3.2-1B -o llama.te --dim T=2048
  tec generate llama.te --params Llama-3.2-1B --prompt ids.npy

Shapes are static: they come from the graph's inputs, whose symbolic
dimensions (an export's dynamic axes) take the sizes --dim NAME=SIZE gives
(1 without, with a warning), and every node
whose inputs are all known at import (Constant, Shape, ConstantOfShape
and the shape arithmetic on them) is folded. An unsupported operator or
attribute is an error naming the node, its op type and its position. The
written program is checked before import succeeds; -o and --params may
name neither the model nor each other. docs/import.md lists the
operators and the naming scheme, and the config.json fields of a
checkpoint that tec honours and refuses.`,
	}
	c.run = func(e *env, args []string) int {
		fs := newFlagSet(c)
		out := fs.String("o", "", "the .te file to write (default: MODEL.te, or DIR.te)")
		params := fs.String("params", "", "the .npz file of the weights (default: the -o file with .npz; not with a DIR, whose weights stay in it)")
		model := fs.String("model", "", "the name of the .te model (default: the file's base name; not with a DIR, whose models are prefill and decode)")
		diagFormat := fs.String("diagnostics", "text", "how to print errors: text or json")
		dims := map[string]int{}
		fs.Func("dim", "NAME=SIZE: the size of the inputs' symbolic dimension NAME (repeatable; default 1, with a warning); of a DIR, B, P or T", func(s string) error {
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
			return e.usageError(c, "want one MODEL.onnx or DIR, got %d arguments", len(pos))
		}
		file := pos[0]
		if st, err := os.Stat(file); err == nil && st.IsDir() {
			switch {
			case isSet(fs, "params"):
				return e.usageError(c, "--params: the weights of %s stay in its safetensors%sbind them with tec run or tec generate --params %s", file, hintSep, file)
			case isSet(fs, "model"):
				return e.usageError(c, "--model: the program of a checkpoint has the models prefill and decode, which tec generate runs")
			}
			if *out == "" {
				*out = defaultHFOut(file)
			}
			if err := checkHFOut(file, *out); err != nil {
				return e.usageError(c, "%v", err)
			}
			return e.importHF(c, file, *out, dims)
		}
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

// importHF writes the .te program of the Hugging Face checkpoint in dir
// to out, at the sizes dims gives (B, P, T) or the defaults, after checking
// that the checkpoint's tensors fit the config.
func (e *env) importHF(c *command, dir, out string, dims map[string]int) int {
	cfgFile := filepath.Join(dir, hf.ConfigFile)
	cfg, err := hf.ReadConfig(dir)
	if err != nil {
		return e.failf(c, exitUser, &failure{code: codeImport, file: cfgFile, err: err})
	}
	opts := hf.Options{Source: filepath.Clean(dir)}
	opts.B, opts.P, opts.T = hf.DefaultSizes(cfg)
	for _, name := range slices.Sorted(maps.Keys(dims)) {
		size := dims[name]
		switch name {
		case "B":
			opts.B = size
		case "P":
			opts.P = size
		case "T":
			opts.T = size
		default:
			return e.usageError(c, "--dim %s: the program of a checkpoint has the sizes B (sequences), P (the prompt's tokens) and T (the caches' positions)", name)
		}
		if size < 1 {
			return e.usageError(c, "--dim %s=%d: want 1 or more", name, size)
		}
	}
	if _, ok := dims["P"]; !ok && opts.P > opts.T {
		opts.P = opts.T // a short context given: the default prompt fits it
	}
	if opts.P > opts.T {
		return e.usageError(c, "--dim P=%d is more than T=%d: the prompt must fit in the caches", opts.P, opts.T)
	}
	src, err := hf.Program(cfg, opts)
	if err != nil {
		return e.failf(c, exitUser, &failure{code: codeImport, file: cfgFile, err: fmt.Errorf("%s: %w", dir, err)})
	}
	if err := hf.CheckCheckpoint(dir, cfg); err != nil {
		return e.failf(c, exitUser, &failure{code: codeImport, file: dir, err: err})
	}
	// The program must check: a failure here is a bug of the importer.
	for _, m := range []string{"prefill", "decode"} {
		if _, diags := lang.Check(out, src, lang.Config{Model: m}); diags.HasErrors() {
			return e.failf(c, exitUser, &failure{code: codeInternal, file: dir,
				err: fmt.Errorf("the imported program does not check: %s%splease report this with the checkpoint's config.json", firstError(diags.Error()), hintSep)})
		}
	}
	if err := safefile.WriteFile(out, src, 0o644); err != nil {
		return e.failf(c, exitUser, &failure{code: codeIO, file: out, err: err})
	}
	if !e.json {
		fmt.Fprintf(e.stdout, "wrote %s: models prefill and decode of a %s (%d layers, %d params) at B = %d, P = %d, T = %d; bind its weights with --params %s\n",
			out, cfg.Architecture, cfg.Layers, len(hf.Params(cfg)), opts.B, opts.P, opts.T, dir)
	}
	return exitOK
}

// defaultHFOut returns the .te file that tec import DIR writes: DIR.te,
// beside the directory.
func defaultHFOut(dir string) string {
	clean := filepath.Clean(dir)
	if b := filepath.Base(clean); b == "." || b == ".." || b == string(filepath.Separator) {
		if abs, err := filepath.Abs(clean); err == nil {
			clean = abs
		}
	}
	return clean + ".te"
}

// checkHFOut refuses an -o that would overwrite a file of the checkpoint
// in dir: its config.json, index or safetensors.
func checkHFOut(dir, out string) error {
	files := []string{filepath.Join(dir, hf.ConfigFile), filepath.Join(dir, "model.safetensors.index.json")}
	entries, _ := os.ReadDir(dir)
	for _, en := range entries {
		if strings.HasSuffix(en.Name(), ".safetensors") {
			files = append(files, filepath.Join(dir, en.Name()))
		}
	}
	for _, f := range files {
		if samePath(out, f) {
			return fmt.Errorf("-o %s is a file of the checkpoint being imported, which it would overwrite%sname the .te file to write, e.g. -o %s", out, hintSep, defaultHFOut(dir))
		}
	}
	return nil
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
