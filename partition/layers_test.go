package partition

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// layers are the package's files in the order in which they build on one
// another (see the package comment): each uses only names that it or the
// files before it declare.
var layers = []string{
	"stage.go", "loadpath.go", "serial.go", "rows.go", "tiledep.go", "matvec.go", "matvecmma.go", "schedule.go", "tensorcore.go", "recompute.go",
	"options.go", "plan.go", "canon.go", "counters_matvec.go", "blocklocal.go", "counters.go", "prefetch.go",
	"search.go", "pipeline.go", "streams.go", "resident.go", "verify.go", "partition.go",
}

// TestLayers checks that no file of the package uses a name (a function,
// type, constant, variable or method) that a later file of layers
// declares, and that every file has its place in layers.
func TestLayers(t *testing.T) {
	rank := map[string]int{}
	for i, f := range layers {
		rank[f] = i
	}
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		if _, ok := rank[n]; !ok {
			t.Errorf("%s has no place in layers", n)
		}
		f, err := parser.ParseFile(fset, n, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	// The imports are empty packages: only the package's own names
	// matter, and the type errors that the empty imports cause do not.
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: emptyImporter{}, Error: func(error) {}}
	pkg, _ := conf.Check("tec/partition", fset, files, info)
	var bad []string
	for id, obj := range info.Uses {
		if obj == nil || obj.Pkg() != pkg {
			continue
		}
		if obj.Parent() != pkg.Scope() {
			fn, isFunc := obj.(*types.Func)
			if !isFunc || fn.Type().(*types.Signature).Recv() == nil {
				continue // not a package-level name or a method
			}
		}
		from := filepath.Base(fset.Position(id.Pos()).Filename)
		to := filepath.Base(fset.Position(obj.Pos()).Filename)
		if rank[to] > rank[from] {
			bad = append(bad, from+" uses "+obj.Name()+" of "+to)
		}
	}
	slices.Sort(bad)
	for _, b := range slices.Compact(bad) {
		t.Error(b)
	}
}

// emptyImporter imports every path as an empty package.
type emptyImporter struct{}

func (emptyImporter) Import(path string) (*types.Package, error) {
	p := types.NewPackage(path, filepath.Base(path))
	p.MarkComplete()
	return p, nil
}
