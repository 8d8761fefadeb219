package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"tec/backend/target"
	"tec/examples"
	"tec/lang"
	"tec/pipeline"
)

// BenchmarkBuild measures "tec build" of every example at full size,
// through the front end, the pipeline and both emitters, without llc or
// nvcc: the work "tec build --emit cu,ll,host" does, at -O0 unless
// $TEC_BENCH_LEVELS says otherwise. docs/benchmarks.md, section Build, has the
// figures.
func BenchmarkBuild(b *testing.B) {
	tg, err := target.Lookup(target.Default)
	if err != nil {
		b.Fatal(err)
	}
	emit := map[string]bool{"cu": true, "ll": true, "host": true}
	for _, ex := range examples.All() {
		for _, level := range benchLevels() {
			b.Run(fmt.Sprintf("%s/O%d", ex.Name, level), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					p, diags := lang.Check(ex.File(), ex.Source(), lang.Config{})
					if diags.HasErrors() {
						b.Fatal(diags)
					}
					res, err := pipeline.Build(p, pipeline.Options{Level: level})
					if err != nil {
						b.Fatal(err)
					}
					if _, err := buildFiles(context.Background(), res.Module, tg, emit, nil, func(string, string) {}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// benchLevels returns the levels to benchmark: 0, or those listed in
// $TEC_BENCH_LEVELS ("0,4").
func benchLevels() []int {
	env := os.Getenv("TEC_BENCH_LEVELS")
	if env == "" {
		return []int{0}
	}
	var levels []int
	for _, f := range strings.Split(env, ",") {
		if n, err := strconv.Atoi(f); err == nil {
			levels = append(levels, n)
		}
	}
	return levels
}
