package main

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"tec/examples"
	"tec/internal/testkit/longprog"
)

// maxGrowth bounds how much longer a run on a program four times as long
// may take: 4 for linear time, 16 for quadratic. The bound between leaves
// room for a loaded machine (CI runs the packages' tests side by side on
// two cores), for the garbage collector's larger heaps and for the
// constant costs that make the small run relatively slow; the quadratic
// versions these cases come from grew 17 to 31 times.
const maxGrowth = 10.0

// TestLinearTime fails when the time of a command grows faster than about
// linearly with program length: each case is timed (the fastest of five
// runs, which a loaded machine disturbs least) at a size n and at 4n. Each
// case is a program on which an earlier version was quadratic.
func TestLinearTime(t *testing.T) {
	if testing.Short() {
		t.Skip("times whole compilations")
	}
	ex, ok := examples.Lookup("lstm")
	if !ok {
		t.Fatal("no lstm example")
	}
	gen := func(k longprog.Kind, n int) string {
		src, err := longprog.Generate(k, n)
		if err != nil {
			t.Fatal(err)
		}
		return src
	}
	cases := []struct {
		name string
		n    int
		run  func(n int) error
	}{
		// te.Fprint copied every tensor name into every tensor's namer.
		{"te/chain", 1500, func(n int) error { _, err := teText(gen(longprog.Chain, n), nil); return err }},
		// te.TypeOf walked the whole expression at every node (48 s at
		// 100,000 terms). The sum's expression tree is as deep as the sum is
		// long and every walk over it recurses that deep: past some 10,000
		// terms a single run's fresh stacks and heap cost more per term
		// (whole processes stay linear: tec check takes 0.14, 0.48 and
		// 1.90 s at 10,000, 40,000 and 160,000 terms), so the sizes stay
		// below that.
		{"check/sum", 2500, func(n int) error { _, err := check(gen(longprog.Sum, n), nil); return err }},
		// The partitioner grew a kernel from every stage to the end.
		{"build/chain", 1500, func(n int) error { return build(gen(longprog.Chain, n), nil, 4) }},
		// The horizontal transform searched the graph per pair.
		{"build/mixed", 400, func(n int) error { return build(gen(longprog.Mixed, n), nil, 4) }},
		{"build/lstm", 20, func(n int) error {
			return build(string(ex.Source()), map[string]string{"T": fmt.Sprint(n)}, 4)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			small, large, err := fastestPair(func() error { return c.run(c.n) }, func() error { return c.run(4 * c.n) })
			if err != nil {
				t.Fatal(err)
			}
			growth := large.Seconds() / small.Seconds()
			t.Logf("n=%d: %v, 4n: %v, growth %.1f", c.n, small, large, growth)
			if growth > maxGrowth {
				t.Errorf("4 times the program took %.1f times as long (%v, %v): want at most %.0f, about 4 for linear time", growth, small, large, maxGrowth)
			}
		})
	}
}

// fastestPair returns the least times of five rounds each of small and
// large, taken in turn so that both meet the same load on a shared
// machine. A round of small is four runs in a row, its time a quarter of
// theirs, so that a round of either size allocates about as much and pays
// as much of the garbage collector's and the allocator's costs: one run of
// small after a collection rarely meets a collection of its own, one of
// large (four times the garbage) does, and the pair would seem to grow
// faster than it does.
func fastestPair(small, large func() error) (ts, tl time.Duration, err error) {
	for i := range 5 {
		for _, r := range []struct {
			f    func() error
			runs int
			best *time.Duration
		}{{small, 4, &ts}, {large, 1, &tl}} {
			runtime.GC()
			start := time.Now()
			for range r.runs {
				if err := r.f(); err != nil {
					return 0, 0, err
				}
			}
			if d := time.Since(start) / time.Duration(r.runs); i == 0 || d < *r.best {
				*r.best = d
			}
		}
	}
	return ts, tl, nil
}
