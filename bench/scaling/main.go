// Command scaling prints how the compiler's time grows with program length,
// as Markdown for docs/benchmarks.md: for generated programs of several
// sizes (internal/testkit/longprog) and the LSTM example over several step counts,
// the median time of "tec te", "tec check" or "tec build -O4 --emit cu,ll"
// in process, the time per statement, and its ratio to the smallest size's.
// Time that grows linearly with length keeps the ratio near 1.
//
// Usage:
//
//	go run ./bench/scaling [-runs 3] [-sizes 5000,10000,20000] [-steps 25,50,100,200]
//	go run ./bench/scaling -print chain:20000 > chain20000.te
//
// -print writes one generated program (chain, mixed or sum, and its size)
// instead, for timing the tec command itself.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"tec/examples"
	"tec/internal/testkit/longprog"
)

func main() {
	runs := flag.Int("runs", 3, "runs per measurement; the median is shown")
	sizes := flag.String("sizes", "5000,10000,20000", "comma-separated statement counts of the generated programs")
	steps := flag.String("steps", "25,50,100,200", "comma-separated step counts of the LSTM")
	spec := flag.String("print", "", "write the generated program KIND:SIZE (chain, mixed, sum) and exit")
	flag.Parse()
	log.SetFlags(0)
	if *spec != "" {
		if err := printProgram(os.Stdout, *spec); err != nil {
			log.Fatalf("-print: %v", err)
		}
		return
	}
	ns, err := ints(*sizes)
	if err != nil {
		log.Fatalf("-sizes: %v", err)
	}
	ts, err := ints(*steps)
	if err != nil {
		log.Fatalf("-steps: %v", err)
	}
	if err := run(os.Stdout, *runs, ns, ts); err != nil {
		log.Fatal(err)
	}
}

// printProgram writes the program that spec, KIND:SIZE, names.
func printProgram(w io.Writer, spec string) error {
	kind, size, ok := strings.Cut(spec, ":")
	if !ok {
		return fmt.Errorf("%q: want KIND:SIZE, e.g. chain:5000", spec)
	}
	n, err := strconv.Atoi(size)
	if err != nil {
		return fmt.Errorf("%q: the size is not a number", spec)
	}
	src, err := longprog.Generate(longprog.Kind(kind), n)
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, src)
	return err
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive count", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// A job is one measured command on a program of a given size.
type job struct {
	what string // the command
	prog string // the program family
	unit string // what size counts
	size int
	run  func() error
}

func run(w io.Writer, runs int, sizes, steps []int) error {
	var jobs []job
	for _, n := range sizes {
		src, err := longprog.Generate(longprog.Chain, n)
		if err != nil {
			return err
		}
		jobs = append(jobs, job{"tec te", "chain", "statements", n, func() error { _, err := teText(src, nil); return err }})
	}
	for _, k := range []longprog.Kind{longprog.Chain, longprog.Mixed} {
		for _, n := range sizes {
			src, err := longprog.Generate(k, n)
			if err != nil {
				return err
			}
			jobs = append(jobs, job{"tec build -O4", string(k), "statements", n, func() error { return build(src, nil, 4) }})
		}
	}
	for _, n := range sizes {
		src, err := longprog.Generate(longprog.Sum, 5*n)
		if err != nil {
			return err
		}
		jobs = append(jobs, job{"tec check", "x + x + ...", "terms", 5 * n, func() error { _, err := check(src, nil); return err }})
	}
	ex, ok := examples.Lookup("lstm")
	if !ok {
		return fmt.Errorf("no lstm example")
	}
	for _, t := range steps {
		defines := map[string]string{"T": strconv.Itoa(t)}
		jobs = append(jobs, job{"tec build -O4", "lstm.te", "steps", t, func() error { return build(string(ex.Source()), defines, 4) }})
	}
	fmt.Fprintln(w, "| command | program | size | median s | µs per unit | per unit / smallest's |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	var base float64
	for i, j := range jobs {
		d, err := median(runs, j.run)
		if err != nil {
			return fmt.Errorf("%s on %s of %d %s: %w", j.what, j.prog, j.size, j.unit, err)
		}
		per := d.Seconds() / float64(j.size)
		if i == 0 || jobs[i-1].what != j.what || jobs[i-1].prog != j.prog {
			base = per
		}
		fmt.Fprintf(w, "| `%s` | %s | %d %s | %.2f | %.1f | %.2f |\n", j.what, j.prog, j.size, j.unit, d.Seconds(), per*1e6, per/base)
	}
	return nil
}

// median runs f runs times and returns the median time.
func median(runs int, f func() error) (time.Duration, error) {
	ds := make([]time.Duration, max(runs, 1))
	for i := range ds {
		start := time.Now()
		if err := f(); err != nil {
			return 0, err
		}
		ds[i] = time.Since(start)
	}
	slices.Sort(ds)
	return ds[len(ds)/2], nil
}
