package tooltest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// FakeNVCC writes to a new directory an nvcc that compiles nothing: it
// writes an empty file for -o and, for every kernel of the CUDA C++ it is
// given (the name after each __launch_bounds__ line), prints what nvcc
// -Xptxas -v prints of an entry function that took regs registers per
// thread and spilled spill bytes each way. It returns the directory, to
// put on PATH (alone, or before the real nvcc).
func FakeNVCC(t testing.TB, regs, spill int) string {
	t.Helper()
	dir := t.TempDir()
	script := fmt.Sprintf(`#!/bin/sh
PATH="$PATH:/usr/bin:/bin"
out= src=
while [ $# -gt 0 ]; do
  case "$1" in
    -o) out="$2"; shift ;;
    *.cu) src="$1" ;;
  esac
  shift
done
: > "$out"
grep -A1 '__launch_bounds__' "$src" | sed -n 's/^\([A-Za-z_][A-Za-z0-9_]*\)(.*/\1/p' | while read k; do
  echo "ptxas info    : Compiling entry function '$k' for 'sm_80'"
  echo "ptxas info    : Function properties for $k"
  echo "    0 bytes stack frame, %[2]d bytes spill stores, %[2]d bytes spill loads"
  echo "ptxas info    : Used %[1]d registers, 384 bytes cmem[0]"
done
`, regs, spill)
	if err := os.WriteFile(filepath.Join(dir, "nvcc"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
