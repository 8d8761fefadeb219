package lang

import (
	"os"
	"testing"
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
