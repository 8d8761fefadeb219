package tooltest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that records Skipf and Fatalf instead of ending
// the test.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper() {}

func (r *recorder) Skipf(format string, args ...any) { r.skipped = fmt.Sprintf(format, args...) }

func (r *recorder) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

// TestRequire checks that a tool found in $PATH is used only if its probe
// succeeds: a tool that is there but broken (Graphviz or nvcc while Debian
// is still installing them) skips the test with what the probe answered,
// or fails it in CI, instead of letting the test fail on the tool.
func TestRequire(t *testing.T) {
	tests := []struct {
		name    string
		tools   map[string]string // name -> shell script body
		want    []string          // the names Require is asked for
		ci      bool
		found   string // the tool found, or ""
		skipped string // in the skip message, or "" for none
		failed  string // in the failure message, or "" for none
	}{
		{"working", map[string]string{"llc": "exit 0"}, []string{"llc"}, false, "llc", "", ""},
		{"missing", nil, []string{"llc"}, false, "", "[llc] not found in $PATH: install X", ""},
		{"missing in CI", nil, []string{"llc"}, true, "", "", "CI=true requires it: install X"},
		{"dot -V fails", map[string]string{"dot": `[ "$1" = -V ] && { echo "dot: cannot load plugins" >&2; exit 1; }; exit 0`}, []string{"dot"}, false, "",
			"does not work (-V: exit status 1): dot: cannot load plugins: reinstall X", ""},
		{"dot -V works", map[string]string{"dot": `[ "$1" = -V ] && exit 0; exit 1`}, []string{"dot"}, false, "dot", "", ""},
		{"nvcc cannot compile", map[string]string{"nvcc": `[ "$1" = --version ] && exit 0; echo "nvcc fatal: cannot find cicc" >&2; exit 1`}, []string{"nvcc"}, false, "",
			"nvcc fatal: cannot find cicc", ""},
		{"nvcc compiles", map[string]string{"nvcc": `for a; do case $a in *.cu) while read -r l; do case $l in *__global__*) ok=1;; esac; done <"$a";; esac; done; [ "$ok" = 1 ]`}, []string{"nvcc"}, false, "nvcc", "", ""},
		{"broken in CI", map[string]string{"ptxas": "exit 3"}, []string{"ptxas"}, true, "", "", "does not work (--version: exit status 3), and CI=true requires it"},
		{"first broken, second works", map[string]string{"llc": "exit 1", "llc-16": "exit 0"}, []string{"llc", "llc-16"}, false, "llc-16", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, body := range tt.tools {
				if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			t.Setenv("PATH", dir)
			ci := ""
			if tt.ci {
				ci = "true"
			}
			t.Setenv("CI", ci)
			r := &recorder{TB: t}
			got := Require(r, "X", tt.want...)
			if want := ""; tt.found != "" {
				want = filepath.Join(dir, tt.found)
				if got != want {
					t.Errorf("Require = %q, want %q", got, want)
				}
			} else if got != want {
				t.Errorf("Require = %q, want none", got)
			}
			if tt.skipped == "" && r.skipped != "" || !strings.Contains(r.skipped, tt.skipped) {
				t.Errorf("skipped with %q, want %q", r.skipped, tt.skipped)
			}
			if tt.failed == "" && r.failed != "" || !strings.Contains(r.failed, tt.failed) {
				t.Errorf("failed with %q, want %q", r.failed, tt.failed)
			}
		})
	}
}
