package te

import (
	"math"
	"math/rand/v2"
	"testing"
)

// tf32Bits rounds f as the emitters do: half a unit added to the bits and
// the 13 low fraction bits cleared (cvt.rna.tf32.f32), Inf and NaN kept.
func tf32Bits(f float32) float32 {
	u := math.Float32bits(f)
	if u&0x7f800000 != 0x7f800000 {
		u = (u + 0x1000) &^ 0x1fff
	}
	return math.Float32frombits(u)
}

func TestRoundTF32Value(t *testing.T) {
	tests := []struct{ in, want float64 }{
		{1, 1},
		{1 + 0x1p-11, 1 + 0x1p-10},   // a tie rounds away from zero
		{-1 - 0x1p-11, -1 - 0x1p-10}, // on both sides
		{1 + 0x1p-12, 1},
		{1 + 3*0x1p-11, 1 + 2*0x1p-10},      // away, not to even
		{0x1p-140, 0}, {0x1p-136, 0x1p-136}, // subnormals: the quantum is 2^-136
		{math.MaxFloat32, math.Inf(1)},
		{0, 0},
		{math.Inf(-1), math.Inf(-1)},
	}
	for _, tt := range tests {
		if got := RoundTF32Value(tt.in); got != tt.want {
			t.Errorf("RoundTF32Value(%g) = %g, want %g", tt.in, got, tt.want)
		}
	}
	if !math.IsNaN(RoundTF32Value(math.NaN())) {
		t.Error("RoundTF32Value(NaN) is not NaN")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		f := math.Float32frombits(rng.Uint32())
		if math.IsNaN(float64(f)) {
			continue
		}
		if got, want := RoundTF32Value(float64(f)), float64(tf32Bits(f)); got != want {
			t.Fatalf("RoundTF32Value(%g) = %g, the bit arithmetic gives %g", f, got, want)
		}
	}
}
