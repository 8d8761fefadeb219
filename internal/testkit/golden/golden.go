// Package golden compares what a test produces with a golden file, a file
// beside the test (under testdata, mostly) that holds the output expected,
// and rewrites the file instead when the tests run with -update:
//
//	go test ./backend/cuda -run '^TestGolden$' -update
//	git diff backend/cuda/testdata
//
// Importing the package registers -update, once for the whole test binary,
// so that one flag rewrites every golden file of a package. A golden file
// that differs fails its test with the lines that differ and the command
// that rewrites it.
package golden

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// update is the -update flag.
var update = flag.Bool("update", false, "rewrite the golden files instead of comparing with them")

// maxLines is how many lines of each side Diff shows.
const maxLines = 12

// Check compares got with the golden file at path, a path relative to the
// test's package directory, and reports whether they are equal. Under
// -update it writes got to path instead, making its directory if need be,
// and reports true. A missing file ends the test; a file that differs
// fails it.
func Check(t testing.TB, path string, got []byte) bool {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
			return false
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
			return false
		}
		return true
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v\nto create it: %s", err, command(t))
		return false
	}
	if bytes.Equal(got, want) {
		return true
	}
	t.Errorf("%s differs from the output (-%s +output), %sto accept the output: %s", path, path, Diff(string(want), string(got)), command(t))
	return false
}

// CheckString is Check of a string.
func CheckString(t testing.TB, path, got string) bool {
	t.Helper()
	return Check(t, path, []byte(got))
}

// Diff describes briefly how got differs from want, line by line: it
// leaves out the lines they start and end with alike, and shows at most
// a dozen of each side's lines between, want's prefixed with "-" and got's
// with "+". It returns "" where they are equal.
func Diff(want, got string) string {
	if want == got {
		return ""
	}
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	p := 0
	for p < len(w) && p < len(g) && w[p] == g[p] {
		p++
	}
	s := 0
	for s < len(w)-p && s < len(g)-p && w[len(w)-1-s] == g[len(g)-1-s] {
		s++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "from line %d:\n", p+1)
	writeLines(&b, "-", w[p:len(w)-s])
	writeLines(&b, "+", g[p:len(g)-s])
	return b.String()
}

// writeLines writes at most maxLines of lines to b, each after sign.
func writeLines(b *strings.Builder, sign string, lines []string) {
	for i, l := range lines {
		if i == maxLines {
			fmt.Fprintf(b, "%s ... and %d more lines\n", sign, len(lines)-i)
			return
		}
		fmt.Fprintf(b, "%s%s\n", sign, l)
	}
}

// command returns the command that rewrites the golden files of t's
// top-level test.
func command(t testing.TB) string {
	name, _, _ := strings.Cut(t.Name(), "/")
	return fmt.Sprintf("go test %s -run '^%s$' -update", packageDir(), name)
}

// packageDir returns the working directory, the test's package directory,
// as go test names it from the root of the module: "./backend/cuda".
func packageDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			rel, err := filepath.Rel(dir, wd)
			if err != nil || rel == "." {
				return "."
			}
			return "./" + filepath.ToSlash(rel)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "."
		}
		dir = parent
	}
}
