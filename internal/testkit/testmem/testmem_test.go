package testmem

import (
	"math"
	"os"
	"runtime/debug"
	"testing"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// TestLimitSet checks that Main set the limit, or left GOMEMLIMIT's.
func TestLimitSet(t *testing.T) {
	got := debug.SetMemoryLimit(-1) // -1 reads it
	switch {
	case os.Getenv("GOMEMLIMIT") != "":
		if got == math.MaxInt64 {
			t.Errorf("no limit, though GOMEMLIMIT=%s", os.Getenv("GOMEMLIMIT"))
		}
	case got != SoftLimit:
		t.Errorf("limit %d, want %d", got, SoftLimit)
	}
}
