package sim

import (
	"cmp"
	"strings"
	"testing"

	"tec/backend/kir"
	"tec/te"
)

// counterBug is a mistake planted in counterPipe's module.
type counterBug int

const (
	noBug         counterBug = 0
	missingWait   counterBug = 1 // the consumer does not wait
	wrongTile     counterBug = 2 // it waits on the next tile's counter
	lowTarget     counterBug = 3 // it waits for one signal of the two
	highTarget    counterBug = 4 // it waits for three signals of the two
	unzeroed      counterBug = 5 // nothing zeroes the counters
	zeroUnordered counterBug = 6 // the zeroing is not ordered before the signals
)

// counterPipe is a persistent kernel of two stages joined by counters,
// rows of w elements: stage y doubles x a row per tile (2n tiles), each
// tile signalling counter c[t/2]; stage z, a tile per pair of rows taken
// in reverse order so that a pair's rows were written by other blocks,
// waits for c[u] >= 2 and adds the two rows. The counters are zeroed
// before a grid sync at the start. The consumer's first skip tiles do
// nothing, so that its work starts on block skip mod the grid.
func counterPipe(n, w, skip int, bug counterBug) *kir.Module {
	x := &kir.Buffer{Name: "x", Role: kir.Input, DType: te.F32, Shape: []int{2 * n, w}}
	y := &kir.Buffer{Name: "y", Role: kir.Temp, DType: te.F32, Shape: []int{2 * n, w}}
	z := &kir.Buffer{Name: "z", Role: kir.Output, DType: te.F32, Shape: []int{n, w}}
	c := &kir.Buffer{Name: "c", Role: kir.Temp, DType: te.I32, Shape: []int{n}}
	i, t, e := kir.NewVar("i", te.I32), kir.NewVar("t", te.I32), kir.NewVar("e", te.I32)
	u, r, f := kir.NewVar("u", te.I32), kir.NewVar("r", te.I32), kir.NewVar("f", te.I32)
	var body []kir.Stmt
	if bug != unzeroed {
		body = append(body, &kir.Stage{Name: "counters", Body: []kir.Stmt{
			&kir.For{Var: i, Kind: kir.ThreadStride, Lo: kir.I(0), Hi: kir.I(n), Body: []kir.Stmt{
				&kir.Store{Buf: c, Index: i, Value: kir.I(0)},
			}},
		}})
		if bug != zeroUnordered {
			body = append(body, &kir.GridSync{})
		}
	}
	at := func(row kir.Expr, col *kir.Var) kir.Expr { return kir.Add(kir.Mul(row, kir.I(w)), col) }
	body = append(body, &kir.Stage{Name: "y", Body: []kir.Stmt{
		&kir.For{Var: t, Kind: kir.GridStride, Lo: kir.I(0), Hi: kir.I(2 * n), Body: []kir.Stmt{
			&kir.For{Var: e, Kind: kir.BlockStride, Lo: kir.I(0), Hi: kir.I(w), Body: []kir.Stmt{
				&kir.Store{Buf: y, Index: at(t, e), Value: kir.Mul(kir.Ld(x, at(t, e)), kir.F(2))},
			}},
			&kir.Signal{Counter: c, Index: kir.Div(t, kir.I(2))},
		}},
	}})
	var wait kir.Stmt = &kir.Wait{Counter: c, Index: r, Target: kir.I(2)}
	switch bug {
	case missingWait:
		wait = &kir.SyncThreads{}
	case wrongTile:
		wait = &kir.Wait{Counter: c, Index: kir.Mod(kir.Add(r, kir.I(1)), kir.I(n)), Target: kir.I(2)}
	case lowTarget:
		wait = &kir.Wait{Counter: c, Index: r, Target: kir.I(1)}
	case highTarget:
		wait = &kir.Wait{Counter: c, Index: r, Target: kir.I(3)}
	}
	body = append(body, &kir.Stage{Name: "z", Body: []kir.Stmt{
		&kir.For{Var: u, Kind: kir.GridStride, Lo: kir.I(0), Hi: kir.I(n + skip), Body: []kir.Stmt{
			&kir.Let{Var: r, Value: kir.Sub(kir.I(n-1+skip), u)},
			&kir.If{Cond: kir.Lt(r, kir.I(n)), Then: []kir.Stmt{
				wait,
				&kir.For{Var: f, Kind: kir.BlockStride, Lo: kir.I(0), Hi: kir.I(w), Body: []kir.Stmt{
					&kir.Store{Buf: z, Index: at(r, f), Value: kir.Add(
						kir.Ld(y, at(kir.Mul(r, kir.I(2)), f)),
						kir.Ld(y, at(kir.Add(kir.Mul(r, kir.I(2)), kir.I(1)), f)))},
				}},
			}},
		}},
	}})
	bufs := []*kir.Buffer{x, y, z, c}
	return &kir.Module{
		Name: "counters", Buffers: bufs, Outputs: []*kir.Buffer{z},
		Kernels: []*kir.Kernel{{Name: "pipe", Grid: kir.Grid{Resident: true}, Block: 8, Params: bufs, Body: body}},
	}
}

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
		bug     counterBug
		race    string // in the first race reported
		err     string // in the run's error
	}{
		{name: "right", bug: noBug},
		{name: "missing wait", bug: missingWait, race: "kernel pipe, stage z: "},
		{name: "wrong tile", bug: wrongTile, race: "kernel pipe, stage z: race on global y["},
		{name: "target too low", bug: lowTarget, race: "kernel pipe, stage z: "},
		// One pair of rows, by blocks 0 and 1; block 2 adds them after
		// both have signalled, but its wait for one signal orders only
		// block 0's row before it.
		{name: "target too low, late", n: 1, skip: 2, bug: lowTarget,
			race: "kernel pipe, stage z: race on global y[10]: write by block 1 thread 0 (stage y), then read by block 2 thread 0"},
		{name: "zeroing unordered", bug: zeroUnordered, race: "race on global c["},
		{name: "target too high", bug: highTarget, err: "deadlock: counter wait for c[5] >= 3 never satisfied (it stays 2"},
		{name: "never zeroed", bug: unzeroed, err: "deadlock: counter wait for c[5] >= 2 never satisfied (it stays NaN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := cmp.Or(tt.n, 6)
			x := iota(te.F32, 2*n, w)
			res, err := Run(counterPipe(n, w, tt.skip, tt.bug), map[string]*te.Array{"x": x}, Options{Race: true, ResidentBlocks: 3})
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
