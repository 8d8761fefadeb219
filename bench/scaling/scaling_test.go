package main

import (
	"fmt"
	"testing"

	"tec/examples"
	"tec/internal/testkit/longprog"
)

func generate(tb testing.TB, k longprog.Kind, n int) string {
	tb.Helper()
	src, err := longprog.Generate(k, n)
	if err != nil {
		tb.Fatal(err)
	}
	return src
}

// BenchmarkTE measures "tec te" on element-wise chains of 5,000, 10,000
// and 20,000 statements.
func BenchmarkTE(b *testing.B) {
	for _, n := range []int{5000, 10000, 20000} {
		src := generate(b, longprog.Chain, n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				if _, err := teText(src, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkBuild measures "tec build -O4 --emit cu,ll" on element-wise
// chains.
func BenchmarkBuild(b *testing.B) {
	for _, n := range []int{5000, 10000, 20000} {
		src := generate(b, longprog.Chain, n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				if err := build(src, nil, 4); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLSTM measures "tec build -O4 --emit cu,ll" on the full LSTM
// example over T = 25, 50, 100 and 200 steps.
func BenchmarkLSTM(b *testing.B) {
	ex, ok := examples.Lookup("lstm")
	if !ok {
		b.Fatal("no lstm example")
	}
	for _, steps := range []int{25, 50, 100, 200} {
		b.Run(fmt.Sprint(steps), func(b *testing.B) {
			for b.Loop() {
				if err := build(string(ex.Source()), map[string]string{"T": fmt.Sprint(steps)}, 4); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCheckSum measures "tec check" on y = x + x + ... of 25,000,
// 50,000 and 100,000 terms.
func BenchmarkCheckSum(b *testing.B) {
	for _, n := range []int{25000, 50000, 100000} {
		src := generate(b, longprog.Sum, n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				if _, err := check(src, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkBuildMixed measures "tec build -O4 --emit cu,ll" on programs
// mixing reductions and matrix products into element-wise chains.
func BenchmarkBuildMixed(b *testing.B) {
	for _, n := range []int{5000, 10000, 20000} {
		src := generate(b, longprog.Mixed, n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				if err := build(src, nil, 4); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
