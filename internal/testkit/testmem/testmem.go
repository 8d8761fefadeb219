// Package testmem keeps the heaviest test binaries of the suite well
// within its memory budget (each process of go test ./... under 1 GB; see
// "Test suite memory" in docs/testing.md).
//
// A Go process lets its heap grow to twice what was live after the last
// collection (GOGC=100) before it collects again, so a test binary that
// briefly holds 400 MB may reach 1 GB of resident memory, and how far it
// gets depends on when collections happen to fall: the precision package's
// tests peaked anywhere from 0.87 to 1.06 GB from run to run. A soft
// memory limit makes the collector run sooner as the heap nears it, which
// bounds the peak by what is live rather than by twice that, for a little
// more collection work.
package testmem

import (
	"os"
	"runtime/debug"
	"testing"
)

// SoftLimit is the soft memory limit that Main sets.
const SoftLimit = 512 << 20

// Main sets the Go runtime's soft memory limit to SoftLimit, unless the
// GOMEMLIMIT environment variable sets one, runs the tests and returns
// their exit code: a package's TestMain is os.Exit(testmem.Main(m)).
func Main(m *testing.M) int {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(SoftLimit)
	}
	return m.Run()
}
