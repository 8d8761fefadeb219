package syntax_test

import (
	"io/fs"
	"strings"
	"testing"

	"tec/examples"
	"tec/lang/stdlib"
)

// TestFormatExamplesClean checks that every example model and every stdlib
// file is formatted: Format gives back its text unchanged (`tec fmt -l`
// lists none of them), and checkFormat's guarantees hold for it.
func TestFormatExamplesClean(t *testing.T) {
	for _, set := range []struct {
		dir string
		fs  fs.FS
	}{{"examples", examples.FS()}, {"lang/stdlib", stdlib.FS()}} {
		names, err := fs.Glob(set.fs, "*.te")
		if err != nil || len(names) == 0 {
			t.Fatalf("%s: no .te files: %v", set.dir, err)
		}
		for _, name := range names {
			file := set.dir + "/" + name
			t.Run(file, func(t *testing.T) {
				src, err := fs.ReadFile(set.fs, name)
				if err != nil {
					t.Fatal(err)
				}
				out := checkFormat(t, file, src)
				if string(out) != string(src) {
					t.Errorf("%s is not formatted (run tec fmt -w %s):\n%s", file, file, lineDiff(string(src), string(out)))
				}
			})
		}
	}
}

// lineDiff lists the lines of want and got that differ, position by position.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := range max(len(w), len(g)) {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			b.WriteString("-" + wl + "\n+" + gl + "\n")
		}
	}
	return b.String()
}
