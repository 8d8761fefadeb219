package main

import (
	"fmt"
	"testing"
	"time"

	"tec/examples"
	"tec/internal/longprog"
)

// maxGrowth bounds how much longer a run on a program four times as long
// may take: 4 for linear time, 16 for quadratic. The bound between leaves
// room for a loaded machine and for the constant costs that make the small
// run relatively slow.
const maxGrowth = 8.0

// TestLinearTime fails when the time of a command grows faster than about
// linearly with program length: each case is timed (the fastest of three
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
		// te.TypeOf walked the whole expression at every node.
		{"check/sum", 4000, func(n int) error { _, err := check(gen(longprog.Sum, n), nil); return err }},
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
			small, err := fastest(func() error { return c.run(c.n) })
			if err != nil {
				t.Fatal(err)
			}
			large, err := fastest(func() error { return c.run(4 * c.n) })
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

// fastest returns the least time of three runs of f.
func fastest(f func() error) (time.Duration, error) {
	var best time.Duration
	for i := range 3 {
		start := time.Now()
		if err := f(); err != nil {
			return 0, err
		}
		if d := time.Since(start); i == 0 || d < best {
			best = d
		}
	}
	return best, nil
}
