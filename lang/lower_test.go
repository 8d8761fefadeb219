package lang

import (
	"path/filepath"
	"strings"
	"testing"

	"tec/internal/testkit/golden"
)

// TestLower lowers each program of testdata/lower/*.te and compares the
// printed program (as `tec te` shows it) with its .golden file.
func TestLower(t *testing.T) {
	files, err := filepath.Glob("testdata/lower/*.te")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".te")
		t.Run(name, func(t *testing.T) {
			p, ds, out := checkPath(t, path)
			if ds.HasErrors() || p == nil {
				t.Fatalf("check failed:\n%s", out)
			}
			golden.CheckString(t, strings.TrimSuffix(path, ".te")+".golden", out+p.String())
		})
	}
}
