package lang

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tec/lang/diag"
	"tec/te"
)

// configOf reads a test file's configuration from its leading "# check:"
// comment: -D NAME=VALUE and --model NAME, as on the command line.
func configOf(src []byte) Config {
	var cfg Config
	for _, line := range strings.Split(string(src), "\n") {
		rest, ok := strings.CutPrefix(line, "# check:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		for i := 0; i < len(f); i++ {
			switch {
			case f[i] == "-D" && i+1 < len(f):
				name, val, _ := strings.Cut(f[i+1], "=")
				if cfg.Defines == nil {
					cfg.Defines = map[string]string{}
				}
				cfg.Defines[name] = val
				i++
			case f[i] == "--model" && i+1 < len(f):
				cfg.Model = f[i+1]
				i++
			}
		}
	}
	return cfg
}

// checkPath checks the file at path with the configuration its header gives
// and returns the program and the rendered diagnostics.
func checkPath(t *testing.T, path string) (*te.Program, diag.List, string) {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.ToSlash(path)
	p, ds := Check(name, src, configOf(src))
	return p, ds, render(name, src, ds)
}

func render(name string, src []byte, ds diag.List) string {
	var b bytes.Buffer
	if err := ds.Render(&b, SourceFunc(name, src, nil), false); err != nil {
		panic(err)
	}
	return b.String()
}
