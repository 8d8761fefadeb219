package sim

import (
	"cmp"
	"strings"
	"testing"

	"tec/backend/internal/kirtest"
	"tec/te"
)

// TestCounters runs counterPipe right and with each planted mistake: a
// missing wait, a wait on the wrong tile's counter, a target one too low
// and zeroing not ordered before the signals are races (named by kernel,
// stage, buffer, element, blocks and threads); a target that can never be
// reached and counters nobody zeroed are deadlocks, reported, not hung.
func TestCounters(t *testing.T) {
	const w = 10
	tests := []struct {
		name    string
		n, skip int
		bug     kirtest.CounterBug
		race    string // in the first race reported
		err     string // in the run's error
	}{
		{name: "right", bug: kirtest.NoCounterBug},
		{name: "missing wait", bug: kirtest.MissingWait, race: "kernel pipe, stage z: "},
		{name: "wrong tile", bug: kirtest.WrongTile, race: "kernel pipe, stage z: race on global y["},
		{name: "target too low", bug: kirtest.LowTarget, race: "kernel pipe, stage z: "},
		// One pair of rows, by blocks 0 and 1; block 2 adds them after
		// both have signalled, but its wait for one signal orders only
		// block 0's row before it.
		{name: "target too low, late", n: 1, skip: 2, bug: kirtest.LowTarget,
			race: "kernel pipe, stage z: race on global y[10]: write by block 1 thread 0 (stage y), then read by block 2 thread 0"},
		{name: "zeroing unordered", bug: kirtest.ZeroUnordered, race: "race on global c["},
		{name: "target too high", bug: kirtest.HighTarget, err: "deadlock: counter wait for c[5] >= 3 never satisfied (it stays 2"},
		{name: "never zeroed", bug: kirtest.Unzeroed, err: "deadlock: counter wait for c[5] >= 2 never satisfied (it stays NaN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := cmp.Or(tt.n, 6)
			x := iota(te.F32, 2*n, w)
			res, err := Run(kirtest.Counters(n, w, tt.skip, tt.bug), map[string]*te.Array{"x": x}, Options{Race: true, ResidentBlocks: 3})
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.race == "" {
				if res.RaceCount > 0 {
					t.Fatalf("%d races, first: %s", res.RaceCount, res.Races[0])
				}
				z := res.Outputs["z"]
				for r := range n {
					for f := range w {
						want := 2 * (x.Data[2*r*w+f] + x.Data[(2*r+1)*w+f])
						if got := z.Data[r*w+f]; got != want {
							t.Fatalf("z[%d, %d] = %v, want %v", r, f, got, want)
						}
					}
				}
				k := res.Kernels[0]
				if k.CounterSignals != int64(2*n) || k.CounterWaits != int64(n) || k.GridSyncs != 1 {
					t.Errorf("%d signals, %d waits, %d grid syncs; want %d, %d, 1", k.CounterSignals, k.CounterWaits, k.GridSyncs, 2*n, n)
				}
				return
			}
			if res.RaceCount == 0 {
				t.Fatalf("no race reported, want %q", tt.race)
			}
			// A consumer that does not wait long enough reads rows that
			// other blocks write later (an uninitialised read, under the
			// simulator's schedule) or have written unordered (a race).
			got := res.Races[0].String()
			if !strings.Contains(got, tt.race) || !strings.Contains(got, "by block") ||
				!strings.Contains(got, " y[") && !strings.Contains(got, " c[") {
				t.Errorf("race %q, want one containing %q", got, tt.race)
			}
		})
	}
}
