package syntax_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"tec/lang/syntax"
)

// FuzzParse checks that Parse never panics, that its errors are *Error with
// a sensible position, and that whatever parses also formats, idempotently,
// to text that parses to the same tree.
func FuzzParse(f *testing.F) {
	for _, dir := range []string{"errors", "format", "lang"} {
		for _, file := range testFiles(f, dir) {
			src, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(src)
		}
	}
	// the programs of the newest syntax (update, run-time positions, **,
	// argmax, params declared in a loop) that lang's TestHostileNewSyntax
	// garbles
	hostile, _ := filepath.Glob("../testdata/hostile/*.te")
	if len(hostile) == 0 {
		f.Fatal("no programs in lang/testdata/hostile")
	}
	for _, file := range hostile {
		src, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		file, err := syntax.Parse("fuzz.te", src)
		if err != nil {
			se, ok := err.(*syntax.Error)
			if !ok {
				t.Fatalf("error %T, want *syntax.Error: %v", err, err)
			}
			if se.Span.Start.Line < 1 || se.Span.Start.Offset > len(src) || bytes.Contains([]byte(se.Msg), []byte("internal error")) {
				t.Fatalf("bad error: %+v", se)
			}
			return
		}
		if len(file.Decls) == 0 && len(bytes.TrimSpace(src)) > 0 && len(file.Comments) == 0 {
			t.Fatalf("non-blank input parsed to nothing")
		}
		checkFormat(t, "fuzz.te", src)
	})
}
