// Package examples holds example models written in the .te language, from
// small kernels (softmax, layernorm, attention) to the six models of the
// Souffle evaluation (BERT, ResNeXt, LSTM, EfficientNet, Swin, MMoE) at their
// published shapes.
//
// Every file starts with a comment block that says what it is and gives a tiny
// configuration, a line of -D flags at which the reference evaluator runs the
// model in well under a second:
//
//	# tiny: -D S=8 -D D=16 -D NH=2
//
// Tests, the CLI and other packages use All to find the files and their tiny
// configurations, and FS to read them. A file with several models (llama.te:
// prefill and decode) is one example per model, named FILE/MODEL, whose Model
// says which one to lower (lang.Config.Model, the CLI's --model).
package examples

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"
)

//go:embed *.te
var files embed.FS

// FS returns the example files, NAME.te for each example.
func FS() fs.FS { return files }

// Example describes one example file.
type Example struct {
	// Name is the file's name without ".te", followed for a file with
	// several models by "/" and the model's name ("llama/decode").
	Name string
	// Model names the model to lower, as lang.Config.Model and --model do;
	// empty for a file with one model.
	Model string
	// Tiny holds the tiny configuration: constant name -> value text, as given
	// to lang.Config.Defines (and to the CLI as -D NAME=VALUE).
	Tiny map[string]string
	// Doc is the header comment's text before the tiny line, without the '#'.
	Doc string
}

// File returns the example's file name in FS.
func (e Example) File() string {
	base, _, _ := strings.Cut(e.Name, "/")
	return base + ".te"
}

// Source returns the example's source text.
func (e Example) Source() []byte {
	b, err := fs.ReadFile(files, e.File())
	if err != nil {
		panic(err) // cannot happen: All lists embedded files only
	}
	return b
}

// TinyFlags returns the tiny configuration as command-line arguments,
// "-D", "NAME=VALUE", ..., sorted by name, then "--model", Model when the
// file has several models.
func (e Example) TinyFlags() []string {
	var args []string
	for _, k := range e.tinyOrder() {
		args = append(args, "-D", k+"="+e.Tiny[k])
	}
	if e.Model != "" {
		args = append(args, "--model", e.Model)
	}
	return args
}

func (e Example) tinyOrder() []string {
	keys := make([]string, 0, len(e.Tiny))
	for k := range e.Tiny {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// All returns every example, sorted by name: one per file, or one per model
// of a file with several.
func All() []Example {
	ents, err := fs.ReadDir(files, ".")
	if err != nil {
		panic(err)
	}
	var out []Example
	for _, ent := range ents {
		if path.Ext(ent.Name()) != ".te" {
			continue
		}
		src, err := fs.ReadFile(files, ent.Name())
		if err != nil {
			panic(err)
		}
		ex, err := ParseHeader(strings.TrimSuffix(ent.Name(), ".te"), src)
		if err != nil {
			panic(err) // the tests check every header
		}
		models := ModelNames(src)
		if len(models) < 2 {
			out = append(out, ex)
			continue
		}
		for _, m := range models {
			one := ex
			one.Name, one.Model = ex.Name+"/"+m, m
			out = append(out, one)
		}
	}
	return out
}

// modelDecl matches a model declaration at the start of a line.
var modelDecl = regexp.MustCompile(`(?m)^model\s+([A-Za-z_][A-Za-z0-9_]*)\s*\{`)

// ModelNames returns the names of the models src declares at the start of
// a line (as the examples do), in order.
func ModelNames(src []byte) []string {
	var names []string
	for _, m := range modelDecl.FindAllSubmatch(src, -1) {
		names = append(names, string(m[1]))
	}
	return names
}

// Lookup returns the example called name ("lstm", "llama/decode"), and false
// if there is none.
func Lookup(name string) (Example, bool) {
	for _, e := range All() {
		if e.Name == name {
			return e, true
		}
	}
	return Example{}, false
}

// ParseHeader reads the leading comment block of a .te file: its text, and the
// tiny configuration on a line "# tiny: -D NAME=VALUE ...". It is an error if
// the block has no tiny line or the line is malformed.
func ParseHeader(name string, src []byte) (Example, error) {
	ex := Example{Name: name}
	var doc []string
	found := false
	for _, line := range strings.Split(string(src), "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "#") {
			break
		}
		text := strings.TrimSpace(strings.TrimPrefix(line, "#"))
		rest, ok := strings.CutPrefix(text, "tiny:")
		if !ok {
			if !found {
				doc = append(doc, text)
			}
			continue
		}
		if found {
			return ex, fmt.Errorf("%s.te: two tiny lines", name)
		}
		found = true
		tiny, err := parseDefines(strings.Fields(rest))
		if err != nil {
			return ex, fmt.Errorf("%s.te: tiny line: %v", name, err)
		}
		ex.Tiny = tiny
	}
	if !found {
		return ex, fmt.Errorf("%s.te: the header comment has no \"# tiny: -D NAME=VALUE ...\" line", name)
	}
	ex.Doc = strings.TrimSpace(strings.Join(doc, "\n"))
	return ex, nil
}

// parseDefines parses "-D" "NAME=VALUE" pairs.
func parseDefines(args []string) (map[string]string, error) {
	defs := map[string]string{}
	for i := 0; i < len(args); i += 2 {
		if args[i] != "-D" || i+1 == len(args) {
			return nil, fmt.Errorf("want -D NAME=VALUE, found %q", strings.Join(args[i:], " "))
		}
		k, v, ok := strings.Cut(args[i+1], "=")
		if !ok || k == "" || v == "" {
			return nil, fmt.Errorf("want NAME=VALUE, found %q", args[i+1])
		}
		if _, dup := defs[k]; dup {
			return nil, fmt.Errorf("%s is defined twice", k)
		}
		defs[k] = v
	}
	if len(defs) == 0 {
		return nil, fmt.Errorf("no -D flags")
	}
	return defs, nil
}
