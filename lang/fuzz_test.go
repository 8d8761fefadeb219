package lang

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"tec/examples"
)

// FuzzCheck checks arbitrary text: whatever the input, Check must not panic
// (the recover in Check would turn a panic into an "internal" diagnostic,
// which the fuzzer reports as a failure), and a program comes back exactly
// when there is no error. The corpus is seeded with the bad-input corpus,
// the programs of the newest syntax that TestHostileNewSyntax garbles
// (update, run-time positions, **, sin and cos, argmax, gathers, params
// declared in a loop), the blocks of the language reference and the
// examples.
func FuzzCheck(f *testing.F) {
	for _, dir := range []string{"testdata/errors", "testdata/lower", "testdata/hostile"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.te"))
		for _, path := range files {
			if src, err := os.ReadFile(path); err == nil {
				f.Add(src)
			}
		}
	}
	for _, b := range docBlocks(f) {
		if b.tag == "te" || b.tag == "te-error" {
			f.Add([]byte(b.text))
		}
	}
	fsys := examples.FS()
	names, _ := fs.Glob(fsys, "*.te")
	for _, n := range names {
		if src, err := fs.ReadFile(fsys, n); err == nil {
			f.Add(src)
		}
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		cfg := Config{ReadFile: func(string) ([]byte, error) { return nil, fs.ErrNotExist }}
		p, ds := Check("fuzz.te", src, cfg)
		for _, d := range ds {
			if d.Code == "internal" {
				t.Fatalf("internal error: %s\n%s", d.Message, d.Hint)
			}
		}
		if (p != nil) == ds.HasErrors() {
			t.Fatalf("program %v with errors %v", p != nil, ds.HasErrors())
		}
	})
}
