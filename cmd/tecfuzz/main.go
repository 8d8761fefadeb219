// Command tecfuzz is tec's differential program fuzzer: it generates random,
// well-typed, in-bounds .te programs, checks each against the reference
// evaluator at every optimisation level on several GPU descriptions (see
// package progfuzz), reduces the first program of each failure class to a
// minimal one and prints a table of the failure classes.
//
// A campaign:
//
//	go run ./cmd/tecfuzz -n 20000 -seed 1 -j 2 -out /tmp/fuzz
//
// A program (a reduced failure, say) at one configuration, or at all of a
// seed's configurations without -O:
//
//	go run ./cmd/tecfuzz -repro /tmp/fuzz/001-sim/reduced.te -O 3 -gpu /tmp/fuzz/001-sim/gpu.json
package main

import (
	"cmp"
	"flag"
	"fmt"
	"os"
	"time"

	"tec/cmd/tecfuzz/internal/progfuzz"
	"tec/gpu"
	"tec/partition"
)

func main() {
	n := flag.Int("n", 1000, "the number of programs")
	seed := flag.Uint64("seed", 1, "the first program's seed (program i has seed+i)")
	jobs := flag.Int("j", 1, "programs checked at once")
	out := flag.String("out", "", "write each failure class's programs and configuration into this directory")
	noReduce := flag.Bool("no-reduce", false, "do not reduce failing programs")
	reduceKnown := flag.Bool("reduce-known", false, "also reduce failures of the known defects (package progfuzz, knownDefects)")
	tries := flag.Int("max-tries", 3000, "the most candidates the reducer tries per failure")
	noEmit := flag.Bool("no-emit", false, "skip the CUDA and LLVM emitters")
	noFmt := flag.Bool("no-fmt", false, "skip the formatter's checks")
	repro := flag.String("repro", "", "check this .te file instead of generated programs")
	level := flag.Int("O", -1, "with -repro: only this level")
	gpu := flag.String("gpu", "", "with -repro and -O: the GPU (a built-in name or a .json file)")
	det := flag.Bool("deterministic", false, "with -repro and -O: deterministic reductions")
	counters := flag.String("counters", "cost", "with -repro and -O: where -O3 and -O4 kernels wait on per-tile counters: cost or everywhere")
	show := flag.Bool("print", false, "print the program of -seed and exit")
	focusName := flag.String("focus", "", "draw one feature in every program: decode, update or precision")
	flag.Parse()
	focus, err := progfuzz.ParseFocus(*focusName)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tecfuzz: -focus:", err)
		os.Exit(2)
	}
	if *show {
		os.Stdout.Write(progfuzz.GenerateFocus(*seed, focus).Src)
		return
	}
	if *repro != "" {
		mode := partition.CountersByCost
		switch *counters {
		case "cost":
		case "everywhere":
			mode = partition.CountersWherever
		default:
			fmt.Fprintf(os.Stderr, "tecfuzz: -counters %s: want cost or everywhere\n", *counters)
			os.Exit(2)
		}
		os.Exit(reproduce(*repro, *seed, *level, *gpu, *det, mode, !*noReduce, *tries))
	}
	sum, err := progfuzz.Campaign(progfuzz.CampaignOptions{
		N: *n, Seed: *seed, Focus: focus, Jobs: *jobs, Out: *out,
		Reduce: !*noReduce, ReduceKnown: *reduceKnown, MaxReduceTries: *tries,
		NoEmit: *noEmit, NoFmt: *noFmt,
		Progress: os.Stderr, ProgressEvery: 10 * time.Second,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "tecfuzz:", err)
		os.Exit(2)
	}
	sum.WriteTable(os.Stdout)
	if sum.Failing > 0 {
		os.Exit(1)
	}
}

// reproduce checks one file and reduces its first failure.
func reproduce(path string, seed uint64, level int, gpuSpec string, det bool, counters partition.CounterMode, reduce bool, tries int) int {
	src, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tecfuzz:", err)
		return 2
	}
	configs := progfuzz.Configs(seed)
	if level >= 0 {
		spec := cmp.Or(gpuSpec, gpu.Default)
		g, err := gpu.Resolve(spec, "")
		if err != nil {
			fmt.Fprintln(os.Stderr, "tecfuzz: -gpu:", err)
			return 2
		}
		name := g.Name
		if _, builtin := gpu.Builtin(spec); builtin {
			name = spec
		}
		configs = []progfuzz.Config{{Level: level, GPUName: name, GPU: *g, Deterministic: det, Counters: counters}}
	}
	fails := progfuzz.Run(src, progfuzz.Options{Configs: configs, Emit: true, Fmt: true})
	if len(fails) == 0 {
		fmt.Println("no failure")
		return 0
	}
	for _, f := range fails {
		k := f.Known
		if k == "" {
			k = "NEW"
		}
		fmt.Printf("%s %s\n", k, f)
	}
	if reduce {
		fmt.Printf("\nreduced (%s):\n%s", fails[0].Class(), progfuzz.Reduce(src, fails[0], tries))
	}
	return 1
}
