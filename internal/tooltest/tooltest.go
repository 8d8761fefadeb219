// Package tooltest finds the external tools (nvcc, llc, ptxas) that tests
// of emitted code need. Where a tool is missing a test is skipped with a
// message that says what to install, except in CI (CI=true), where every
// such test must run and a missing tool fails it.
package tooltest

import (
	"os"
	"os/exec"
	"testing"
)

// CI reports whether the tests run in continuous integration (CI=true).
func CI() bool { return os.Getenv("CI") == "true" }

// Find returns the path of the first of names found in $PATH, or "".
func Find(names ...string) string {
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// Require returns the path of the first of names found in $PATH. If none
// is, it skips t, or fails it in CI, saying that install would provide it.
func Require(t testing.TB, install string, names ...string) string {
	t.Helper()
	if p := Find(names...); p != "" {
		return p
	}
	if CI() {
		t.Fatalf("%v not found in $PATH, and CI=true requires it: install %s (.ci/run does)", names, install)
	}
	t.Skipf("%v not found in $PATH: install %s to run this test (CI=true makes it required)", names, install)
	return ""
}

// NVCC returns the path of nvcc, as Require does.
func NVCC(t testing.TB) string { return Require(t, "Debian's nvidia-cuda-toolkit", "nvcc") }

// PTXAS returns the path of ptxas, as Require does.
func PTXAS(t testing.TB) string { return Require(t, "Debian's nvidia-cuda-toolkit", "ptxas") }
