package lang

import (
	"testing"
)

// TestNarrowToResidues checks the narrowing of a range by residue sets,
// written as strings of 'x' (allowed) and '.' (not) per residue.
func TestNarrowToResidues(t *testing.T) {
	set := func(s string) []bool {
		b := make([]bool, len(s))
		for i := range s {
			b[i] = s[i] == 'x'
		}
		return b
	}
	long := make([]bool, 4099) // 4099 is prime: with "x." the period exceeds maxModulus
	long[4098] = true
	tests := []struct {
		name string
		r    interval
		sets []string
		want interval
	}{
		{"no sets", interval{0, 7}, nil, interval{0, 7}},
		{"even", interval{0, 7}, []string{"x."}, interval{0, 6}},
		{"odd", interval{0, 7}, []string{".x"}, interval{1, 7}},
		{"1 or 2 mod 4", interval{0, 9}, []string{".xx."}, interval{1, 9}},
		{"0 mod 4, from 1", interval{1, 10}, []string{"x..."}, interval{4, 8}},
		{"contradiction", interval{0, 100}, []string{"x.", ".x"}, interval{1, 0}},
		{"2 mod 3 and even", interval{0, 20}, []string{"..x", "x."}, interval{2, 20}},
		{"none in range", interval{1, 3}, []string{"x...."}, interval{1, 0}},
		{"single value", interval{5, 5}, []string{".x"}, interval{5, 5}},
		{"empty stays empty", interval{3, 2}, []string{"x."}, interval{3, 2}},
	}
	for _, tt := range tests {
		var sets [][]bool
		for _, s := range tt.sets {
			sets = append(sets, set(s))
		}
		if got := narrowToResidues(tt.r, sets); got != tt.want && !(got.lo > got.hi && tt.want.lo > tt.want.hi) {
			t.Errorf("%s: narrowToResidues(%v, %v) = %v, want %v", tt.name, tt.r, tt.sets, got, tt.want)
		}
	}
	// An unknown period: the search gives up and keeps the range, which
	// stays sound, rather than calling it empty.
	r := interval{0, 100000}
	if got := narrowToResidues(r, [][]bool{set("x."), long}); got.lo > got.hi || got.lo > 4098 {
		t.Errorf("with a period beyond maxModulus: %v, want a non-empty range starting at most at 4098", got)
	}
}
