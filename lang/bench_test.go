package lang

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"tec/internal/numeric"
	"tec/te"
)

// benchCheck checks the benchmark model at path with the given constants.
func benchCheck(b *testing.B, path string, defines map[string]string, wantTensors int) {
	src, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	cfg := Config{Defines: defines}
	b.ReportAllocs()
	for b.Loop() {
		p, ds := Check(path, src, cfg)
		if ds.HasErrors() {
			b.Fatalf("check failed:\n%s", render(path, src, ds))
		}
		if len(p.Tensors) != wantTensors {
			b.Fatalf("%d tensors, want %d", len(p.Tensors), wantTensors)
		}
	}
}

// BenchmarkLSTM100 lowers a 10-layer LSTM of hidden size 256 over 100 steps:
// 1,000 cells of 3 tensors.
func BenchmarkLSTM100(b *testing.B) {
	benchCheck(b, "testdata/bench/lstm.te", nil, 4+2*10+3*1000+1)
}

// BenchmarkLSTM1000 lowers the same LSTM over 1,000 steps: 10,000 cells.
func BenchmarkLSTM1000(b *testing.B) {
	benchCheck(b, "testdata/bench/lstm.te", map[string]string{"T": "1000"}, 4+2*10+3*10000+1)
}

// BenchmarkBERT lowers a 12-layer BERT-base encoder.
func BenchmarkBERT(b *testing.B) {
	benchCheck(b, "testdata/bench/bert.te", nil, 13+12*22)
}

// chainSource returns a model whose output is the sum of n terms x + x +
// ... + x, as an element-wise definition (y[i] = x[i] + ...) or as a
// whole-tensor expression (y = x + ...).
func chainSource(n int, elementwise bool) string {
	var b strings.Builder
	b.WriteString("model m {\n  input x: f32[4]\n")
	if elementwise {
		b.WriteString("  y[i] = x[i]" + strings.Repeat(" + x[i]", n-1))
	} else {
		b.WriteString("  y = x" + strings.Repeat(" + x", n-1))
	}
	b.WriteString("\n  output y\n}\n")
	return b.String()
}

// lowerChain checks src, types every node of the program's bodies as the
// later stages do (te.TypeOf node by node) and evaluates it.
func lowerChain(tb testing.TB, src string) {
	p, ds := Check("chain.te", []byte(src), Config{})
	if ds.HasErrors() {
		tb.Fatalf("check failed:\n%s", render("chain.te", []byte(src), ds))
	}
	for _, t := range p.Tensors {
		if t.Body != nil {
			te.Walk(t.Body, func(e te.Expr) bool { te.TypeOf(e); return true })
		}
	}
	if _, err := te.Evaluate(p, numeric.SeededFeeds(p, 1), te.EvalOptions{Workers: 1}); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkChain checks, types and evaluates x + x + ... + x at 5,000 to
// 40,000 terms (issue 23: typing was quadratic), reporting the time per
// term, which stays flat.
func BenchmarkChain(b *testing.B) {
	for _, n := range []int{5000, 10000, 20000, 40000} {
		for _, elementwise := range []bool{false, true} {
			name := fmt.Sprintf("whole/%d", n)
			if elementwise {
				name = fmt.Sprintf("elementwise/%d", n)
			}
			src := chainSource(n, elementwise)
			b.Run(name, func(b *testing.B) {
				for b.Loop() {
					lowerChain(b, src)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/term")
			})
		}
	}
}

// TestChainLinear checks that checking, typing and evaluating x + x + ... +
// x takes time linear in the number of terms: the time per term at 40,000
// terms is within 2.5 times that at 5,000 (the best of three runs each;
// quadratic typing made it 8.6 times, and BenchmarkChain shows it flat
// within 1.5 times on a quiet machine). The bound leaves room for a busy
// one.
func TestChainLinear(t *testing.T) {
	if testing.Short() {
		t.Skip("times 40,000-term programs")
	}
	perTerm := func(n int) time.Duration {
		src := chainSource(n, true)
		best := time.Duration(math.MaxInt64)
		for range 3 {
			start := time.Now()
			lowerChain(t, src)
			best = min(best, time.Since(start))
		}
		return best / time.Duration(n)
	}
	small, large := perTerm(5000), perTerm(40000)
	t.Logf("per term: %v at 5,000 terms, %v at 40,000", small, large)
	if large > small*5/2 {
		t.Errorf("per term: %v at 40,000 terms, more than 2.5 times the %v at 5,000", large, small)
	}
}
