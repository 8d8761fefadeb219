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
	ranges := []PrefetchRange{{Tensor: a, Lo: 1024, Hi: 3072}, {Tensor: b, Lo: 0, Hi: 4096}} // 4,096 B, then 16,384 B
	tests := []struct {
		budget int64
		want   []PrefetchRange
		bytes  int64
	}{
		{0, nil, 0},
		{127, nil, 0},
		{128, []PrefetchRange{{Tensor: a, Lo: 1024, Hi: 1088}}, 128},
		{4000, []PrefetchRange{{Tensor: a, Lo: 1024, Hi: 3008}}, 3968},
		{4096, []PrefetchRange{{Tensor: a, Lo: 1024, Hi: 3072}}, 4096},
		{4096 + 300, []PrefetchRange{{Tensor: a, Lo: 1024, Hi: 3072}, {Tensor: b, Lo: 0, Hi: 64}}, 4096 + 256},
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

// TestFirstOfRows checks the first elements of each row of a stage's
// weights that fit a prefetch budget: the same whole lines of every row of
// every range, none where a range has no rows or not a line a row fits.
func TestFirstOfRows(t *testing.T) {
	a := &te.Tensor{Name: "a", DType: te.BF16, Shape: []int{8, 512}}
	b := &te.Tensor{Name: "b", DType: te.BF16, Shape: []int{4, 512}}
	ranges := []PrefetchRange{{Tensor: a, Lo: 0, Hi: 4096, Row: 512}, {Tensor: b, Lo: 1024, Hi: 2048, Row: 512}} // 8 and 2 rows
	tests := []struct {
		budget int64
		len    int // elements of each row
		bytes  int64
	}{
		{10*128 - 1, 0, 0},
		{10 * 128, 64, 10 * 128},
		{10*256 + 100, 128, 10 * 256},
		{10 * 1024, 512, 0}, // whole rows: no partial prefetch
	}
	for _, tt := range tests {
		got, bytes := firstOfRows(ranges, tt.budget)
		if bytes != tt.bytes {
			t.Errorf("budget %d: %v, %d B; want %d elements a row, %d B", tt.budget, got, bytes, tt.len, tt.bytes)
			continue
		}
		for _, r := range got {
			if r.Len != tt.len || r.Row != 512 {
				t.Errorf("budget %d: range %+v; want the first %d of each row of 512", tt.budget, r, tt.len)
			}
		}
	}
	if _, bytes := firstOfRows([]PrefetchRange{{Tensor: a, Lo: 0, Hi: 4096}}, 1<<20); bytes != 0 {
		t.Errorf("a range without rows: %d B; want none", bytes)
	}
}
