package lang

import (
	"path/filepath"
	"strings"
	"testing"

	"tec/internal/testkit/golden"
)

// TestErrors checks each file of the bad-input corpus testdata/errors/*.te and
// compares the rendered diagnostics with its .golden file.
func TestErrors(t *testing.T) {
	files, err := filepath.Glob("testdata/errors/*.te")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 30 {
		t.Errorf("the corpus has %d files, want at least 30", len(files))
	}
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".te")
		t.Run(name, func(t *testing.T) {
			p, ds, got := checkPath(t, path)
			if !ds.HasErrors() {
				t.Fatalf("no error reported")
			}
			if p != nil {
				t.Errorf("a program was returned despite errors")
			}
			for _, d := range ds {
				if d.Code == "internal" {
					t.Errorf("internal error: %s", d.Message)
				}
			}
			golden.CheckString(t, strings.TrimSuffix(path, ".te")+".golden", got)
		})
	}
}
