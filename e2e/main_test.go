package e2e

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"tec/internal/testkit/testmem"
)

// peakBudget is the most resident memory the package's tests may reach,
// three times what they take today (0.3 GB with GOMAXPROCS 2; the
// simulations of parallel subtests are bounded by simBudget whatever the
// number of cores), so that go test ./... fits a laptop: see "Test suite
// memory" in docs/testing.md.
const peakBudget = 1 << 30

// TestMain runs the tests and then fails the package if its peak resident
// memory passed peakBudget. The check holds only where it measures what
// the budget is for: on Linux (which reports the peak), without the race
// detector (which multiplies memory), with the collector's default pacing
// (GOGC=100) and when no benchmark ran.
func TestMain(m *testing.M) {
	code := testmem.Main(m)
	if code == 0 && budgetApplies() {
		peak, err := peakRSS()
		switch {
		case err != nil && !errors.Is(err, os.ErrNotExist):
			fmt.Fprintf(os.Stderr, "e2e: peak memory: %v\n", err)
			code = 1
		case err == nil && peak > peakBudget:
			fmt.Fprintf(os.Stderr, "e2e: the tests peaked at %d MB of resident memory, over the budget of %d MB (see \"Test suite memory\" in docs/testing.md)\n", peak>>20, peakBudget>>20)
			code = 1
		}
	}
	os.Exit(code)
}

func budgetApplies() bool {
	gc := debug.SetGCPercent(100)
	debug.SetGCPercent(gc)
	bench := flag.Lookup("test.bench")
	return !raceEnabled && gc == 100 && (bench == nil || bench.Value.String() == "")
}

// peakRSS returns the process's peak resident memory in bytes, from
// /proc/self/status (VmHWM) on Linux; elsewhere an error satisfying
// errors.Is(err, os.ErrNotExist).
func peakRSS() (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return parseVmHWM(f)
}

// parseVmHWM reads the VmHWM line of a /proc/PID/status file, in kB, and
// returns it in bytes.
func parseVmHWM(r io.Reader) (int64, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("VmHWM line %q: %w", sc.Text(), err)
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no VmHWM line: %w", os.ErrNotExist)
}

func TestParseVmHWM(t *testing.T) {
	for _, tt := range []struct {
		status string
		want   int64
		err    string
	}{
		{"Name:\te2e.test\nVmPeak:\t 2000 kB\nVmHWM:\t  315220 kB\nVmRSS:\t 1 kB\n", 315220 << 10, ""},
		{"Name:\te2e.test\n", 0, "no VmHWM line"},
		{"VmHWM:\t many kB\n", 0, `VmHWM line "VmHWM:\t many kB"`},
	} {
		got, err := parseVmHWM(strings.NewReader(tt.status))
		switch {
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("parseVmHWM(%q) = %d, %v; want %d", tt.status, got, err, tt.want)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("parseVmHWM(%q) error %v, want one containing %q", tt.status, err, tt.err)
		}
	}
}
