package partition

import (
	"testing"

	"tec/te"
)

// TestLeading checks the leading elements of a stage's weights that fit a
// prefetch budget: whole ranges in order, then whole 128-byte lines of the
// next, nothing past the budget.
func TestLeading(t *testing.T) {
	a := &te.Tensor{Name: "a", DType: te.BF16, Shape: []int{4096}}
	b := &te.Tensor{Name: "b", DType: te.F32, Shape: []int{4096}}
	ranges := []PrefetchRange{{a, 1024, 3072}, {b, 0, 4096}} // 4,096 B, then 16,384 B
	tests := []struct {
		budget int64
		want   []PrefetchRange
		bytes  int64
	}{
		{0, nil, 0},
		{127, nil, 0},
		{128, []PrefetchRange{{a, 1024, 1088}}, 128},
		{4000, []PrefetchRange{{a, 1024, 3008}}, 3968},
		{4096, []PrefetchRange{{a, 1024, 3072}}, 4096},
		{4096 + 300, []PrefetchRange{{a, 1024, 3072}, {b, 0, 64}}, 4096 + 256},
		{1 << 20, ranges, 4096 + 16384},
	}
	for _, tt := range tests {
		got, bytes := leading(ranges, tt.budget)
		if bytes != tt.bytes || len(got) != len(tt.want) {
			t.Errorf("budget %d: %v, %d B; want %v, %d B", tt.budget, got, bytes, tt.want, tt.bytes)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("budget %d: range %d is %v, want %v", tt.budget, i, got[i], tt.want[i])
			}
		}
	}
}
