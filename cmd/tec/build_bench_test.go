package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"tec/driver"
	"tec/examples"
	"tec/gpu"
	"tec/lang"
	"tec/pipeline"
)

// BenchmarkBuild measures "tec build" of every example at full size,
// through the front end, the pipeline and both emitters, without llc or
// nvcc: the work "tec build --emit cu,ll,host" does, at -O0, -O2 and -O4
// unless $TEC_BENCH_LEVELS lists others ("0,4"). docs/benchmarks.md,
// section Build, has the figures.
func BenchmarkBuild(b *testing.B) {
	benchBuild(b, map[string]bool{"cu": true, "ll": true, "host": true}, []int{0, 2, 4})
}

// BenchmarkBuildCU measures "tec build --emit cu" of every example at full
// size at every level: the front end, the pipeline and the CUDA emitter.
// docs/benchmarks.md, section Compile time of the examples, has the
// figures; the target is under a second each.
func BenchmarkBuildCU(b *testing.B) {
	var levels []int
	for l := 0; l <= pipeline.MaxLevel; l++ {
		levels = append(levels, l)
	}
	benchBuild(b, map[string]bool{"cu": true}, levels)
}

// BenchmarkBuildLSTMSteps measures "tec build --emit cu" of the LSTM
// example at 1,000 time steps (-D T=1000: 10,000 cells) at -O0, -O2 and
// -O4 unless $TEC_BENCH_LEVELS lists others. Run it with -benchtime=1x:
// one build takes seconds.
func BenchmarkBuildLSTMSteps(b *testing.B) {
	ex, ok := examples.Lookup("lstm")
	if !ok {
		b.Fatal("no lstm example")
	}
	for _, level := range benchLevels([]int{0, 2, 4}) {
		b.Run(fmt.Sprintf("T=1000/O%d", level), func(b *testing.B) {
			buildOnce(b, ex, map[string]string{"T": "1000"}, level, map[string]bool{"cu": true})
		})
	}
}

// benchBuild benchmarks building every example at the levels of
// benchLevels(def), emitting what emit asks for.
func benchBuild(b *testing.B, emit map[string]bool, def []int) {
	for _, ex := range examples.All() {
		for _, level := range benchLevels(def) {
			b.Run(fmt.Sprintf("%s/O%d", ex.Name, level), func(b *testing.B) {
				buildOnce(b, ex, nil, level, emit)
			})
		}
	}
}

// buildOnce builds ex b.N times with the constants defines overrides.
func buildOnce(b *testing.B, ex examples.Example, defines map[string]string, level int, emit map[string]bool) {
	tg, err := gpu.LookupArch(gpu.DefaultArch())
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		p, diags := lang.Check(ex.File(), ex.Source(), lang.Config{Defines: defines, Model: ex.Model})
		if diags.HasErrors() {
			b.Fatal(diags)
		}
		res, err := driver.Compile(p, pipeline.Options{Level: level})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := driver.Emit(context.Background(), res, tg, emitOutputs(emit)); err != nil {
			b.Fatal(err)
		}
	}
}

// benchLevels returns the levels to benchmark: those listed in
// $TEC_BENCH_LEVELS ("0,4"), or def.
func benchLevels(def []int) []int {
	env := os.Getenv("TEC_BENCH_LEVELS")
	if env == "" {
		return def
	}
	var levels []int
	for _, f := range strings.Split(env, ",") {
		if n, err := strconv.Atoi(f); err == nil {
			levels = append(levels, n)
		}
	}
	return levels
}
