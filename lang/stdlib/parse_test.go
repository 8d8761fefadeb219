package stdlib

import (
	"io/fs"
	"testing"

	"tec/lang/syntax"
)

// TestParse checks that every standard library file is syntactically valid
// and that every function in it is documented by a comment just above it.
func TestParse(t *testing.T) {
	names, err := fs.Glob(FS(), "*.te")
	if err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 {
		t.Fatal("no .te files")
	}
	for _, name := range names {
		src, err := fs.ReadFile(FS(), name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := syntax.Parse(name, src)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		commented := map[int]bool{} // lines that end a comment
		for _, c := range f.Comments {
			commented[c.Span.End.Line] = true
		}
		for _, d := range f.Decls {
			fn, ok := d.(*syntax.FnDecl)
			if !ok {
				continue
			}
			if line := fn.Span.Start.Line; !commented[line-1] {
				t.Errorf("%s:%d: fn %s has no doc comment", name, line, fn.Name.Name)
			}
		}
	}
}
