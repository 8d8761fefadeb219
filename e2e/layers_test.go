package e2e

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// layers lists the module's packages from the bottom up, as
// docs/architecture.md draws them. A package's non-test files may import
// packages of lower layers and of its own; TestLayers fails on an import
// upward, and on a package missing from the table, so that a new package
// is placed on purpose.
var layers = [][]string{
	{"te", "internal/safefile", "internal/jsonobject", "lang/syntax/internal/telexer", "frontend/onnx/onnxpb", "lang/stdlib", "tokenizer",
		"internal/testkit/golden", "internal/testkit/testmem", "internal/testkit/tooltest", "internal/testkit/longprog"},
	{"gpu", "internal/numeric", "internal/tensorio", "internal/safetensors", "generate", "internal/testkit/tebuild"},
	{"lang/syntax", "lang/diag"},
	{"lang", "frontend/onnx", "frontend/hf"},
	{"analysis", "precision", "schedule"},
	{"transform", "contraction"},
	{"cost"},
	{"partition"},
	{"backend/kir"},
	{"backend/internal/dedup", "backend/internal/ident", "backend/internal/sign", "backend/lower", "backend/sim", "backend/report"},
	{"backend/cuda", "backend/llvm", "backend/gpurun", "backend/internal/kirtest"},
	{"backend/gpurun/fakegpu"},
	{"pipeline"},
	{"driver", "lang/lsp", "examples"},
	{"cmd/tecfuzz/internal/progfuzz"},
	{"cmd/tec", "cmd/tec-cuda", "cmd/tecfuzz", "bench/levels", "bench/samecode", "bench/scaling", "e2e"},
}

// frontEnds are the packages that read what users write; the compiler
// proper (from analysis to pipeline) works on te programs and never
// imports them.
var frontEnds = []string{"lang", "lang/syntax", "lang/diag", "lang/stdlib", "frontend/onnx", "frontend/onnx/onnxpb", "frontend/hf"}

// TestLayers checks the import graph of the module's non-test files
// against layers: no package imports one above it, the compiler below the
// driver imports no front end, te imports nothing of the module's, and
// backend/kir neither the planner nor the cost model.
func TestLayers(t *testing.T) {
	imports := moduleImports(t, "..")
	layer := map[string]int{}
	for i, l := range layers {
		for _, p := range l {
			layer[p] = i
		}
	}
	for pkg, deps := range imports {
		li, ok := layer[pkg]
		if !ok {
			t.Errorf("package %s is in no layer: place it in e2e/layers_test.go and docs/architecture.md", pkg)
			continue
		}
		for _, d := range deps {
			ld, ok := layer[d]
			if ok && ld > li {
				t.Errorf("%s (layer %d) imports %s (layer %d), a package above it", pkg, li, d, ld)
			}
			if slices.Contains(frontEnds, d) && li >= layer["analysis"] && li <= layer["pipeline"] {
				t.Errorf("%s imports the front end %s: the compiler below the driver works on te programs", pkg, d)
			}
		}
	}
	if len(imports["te"]) > 0 {
		t.Errorf("te imports %v; it must import nothing of the module's", imports["te"])
	}
	for _, d := range imports["backend/kir"] {
		if d == "partition" || d == "cost" {
			t.Errorf("backend/kir imports %s; the kernel IR must not depend on the planner or its prices", d)
		}
	}
}

// moduleImports returns, for each package of the module under root (by
// path relative to it), the module's packages its non-test files import.
func moduleImports(t *testing.T, root string) map[string][]string {
	t.Helper()
	const module = "tec/"
	out := map[string][]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); p != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		dir, _ := filepath.Rel(root, filepath.Dir(p))
		pkg := filepath.ToSlash(dir)
		if _, ok := out[pkg]; !ok {
			out[pkg] = nil
		}
		for _, imp := range f.Imports {
			ip, _ := strconv.Unquote(imp.Path.Value)
			if dep, ok := strings.CutPrefix(ip, module); ok && !slices.Contains(out[pkg], dep) {
				out[pkg] = append(out[pkg], dep)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 20 {
		t.Fatalf("found %d packages under %s; is the test running in e2e/?", len(out), root)
	}
	return out
}
