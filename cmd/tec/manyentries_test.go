package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"tec/te"
)

// TestManyExtraArrays checks that an archive of thousands of arrays that
// are no input or param gives a few warnings, the rest counted, where it
// printed a line each (issue 23: many_entries.npz, 20,000 lines).
func TestManyExtraArrays(t *testing.T) {
	tests := []struct {
		extra, lines int
		count        string
	}{
		{1, 1, ""},
		{6, 6, ""},
		{7, 6, "2 more arrays (e5, e6, ...)"},
		{2000, 6, "1995 more arrays (e0005, e0006, e0007, ...)"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.extra), func(t *testing.T) {
			arrays := map[string]*te.Array{"x": f32([]int{3}, 1, 2, 3)}
			for i := range tt.extra {
				name := fmt.Sprintf("e%d", i)
				if tt.extra > 100 {
					name = fmt.Sprintf("e%04d", i)
				}
				arrays[name] = f32([]int{1}, 0)
			}
			file := filepath.Join(t.TempDir(), "many.npz")
			writeNPZ(t, file, arrays)
			code, _, stderr := runTec(t, "run", "testdata/scale.te", "--inputs", file, "--fill", "zeros")
			if code != exitOK {
				t.Fatalf("status %d\n%s", code, stderr)
			}
			if n := strings.Count(stderr, "no input or param of model scale"); n != tt.lines {
				t.Errorf("%d warnings, want %d:\n%s", n, tt.lines, stderr)
			}
			if !strings.Contains(stderr, tt.count) {
				t.Errorf("stderr lacks %q:\n%s", tt.count, stderr)
			}
		})
	}
}
