package lang

import (
	"fmt"
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

// TestExactIndexArithmetic checks that index arithmetic whose values may
// leave ±2^53 is an error at the sub-expression (the bounds proof computed
// i + K with K = 2^63 - 2 in wrapping int64 and let it pass), and that
// products up to 2^40 and more stay accepted.
func TestExactIndexArithmetic(t *testing.T) {
	const plusK = "const K = 0\nmodel m {\n  input x: f32[4]\n  y[i] = x[i + K] where i in 0..4\n  output y\n}\n"
	const timesK = "const K = 0\nmodel m {\n  input x: f32[4]\n  y[i] = x[i * K] where i in 0..4\n  output y\n}\n"
	body := func(def string) string {
		return "model m {\n  input x: f32[4]\n  " + def + "\n  output y\n}\n"
	}
	tests := []struct {
		name    string
		src     string
		defines map[string]string
		want    string // the error's position and message, or "" for none
	}{
		{"-D K past 2^62 in a sum", plusK, map[string]string{"K": "9223372036854775806"},
			"4:12: index arithmetic i + K exceeds 2^53: K = 9223372036854775806 is beyond ±9007199254740992"},
		{"-D K = 2^62 in a product", timesK, map[string]string{"K": "4611686018427387904"},
			"4:12: index arithmetic i * K exceeds 2^53: K = 4611686018427387904 is beyond ±9007199254740992"},
		{"literal 2^62 in a product", body("y[i] = x[i * 4611686018427387904] where i in 0..4"), nil,
			"3:12: index arithmetic i * 4611686018427387904 exceeds 2^53: the constant 4611686018427387904 is beyond ±9007199254740992"},
		{"-D K = -2^63 + 2", plusK, map[string]string{"K": "-9223372036854775806"},
			"4:12: index arithmetic i + K exceeds 2^53: K = -9223372036854775806 is beyond ±9007199254740992"},
		{"-D K small is fine", plusK, map[string]string{"K": "0"}, ""},
		{"range of a product", body("y[i] = x[(i * 1125899906842624 + 4) % 4] where i in 0..16"), nil,
			"3:13: index arithmetic i * 1125899906842624 exceeds 2^53: it ranges over 0..16888498602639360 for i in 0..16"},
		{"product of constants", body("y[i] = x[(i + 1099511627776) * 1048576 % 4] where i in 0..4"), nil,
			"3:12: index arithmetic (i + 1099511627776) * 1048576 exceeds 2^53: its constant term is 1152921504606846976, beyond ±9007199254740992"},
		{"coefficient", body("y[i] = x[i * 134217728 * 134217728 % 4] where i in 0..4"), nil,
			"3:12: index arithmetic i * 134217728 * 134217728 exceeds 2^53: its coefficient of i is 18014398509481984, beyond ±9007199254740992"},
		{"sub-expression that cancels", body("y[i] = x[i + 4503599627370496 + 4503599627370496 - 9007199254740992] where i in 0..4"), nil,
			"3:12: index arithmetic i + 4503599627370496 + 4503599627370496 exceeds 2^53: it ranges over 9007199254740992..9007199254740995 for i in 0..4"},
		{"in a guard's branch", body("y[i] = select(i < 2, x[(i * 4503599627370496) % 4], 0.0) where i in 0..4"), nil,
			"3:27: index arithmetic i * 4503599627370496 exceeds 2^53: it ranges over 0..13510798882111488 for i in 0..4"},
		{"update slot", "model m {\n  input c: f32[4, 4]\n  input v: f32[4]\n  update c[i, (i * 4503599627370496) % 4] = v[i]\n  output c\n}\n", nil,
			"4:16: index arithmetic i * 4503599627370496 exceeds 2^53: it ranges over 0..13510798882111488 for i in 0..4"},
		{"lone constant", body("y[i] = x[9007199254740993] where i in 0..4"), nil,
			"3:10: index arithmetic x[9007199254740993] exceeds 2^53: it is 9007199254740993"},
		{"index value", body("y[i] = x[i] + f32(i * 4503599627370496) where i in 0..4"), nil,
			"3:3: index arithmetic i*4503599627370496 exceeds 2^53: it ranges over 0..13510798882111488 for i in 0..4"},
		{"index value compared", body("y[i] = select(i * 4503599627370496 + 1 < 5, x[i], 0.0) where i in 0..4"), nil,
			"3:3: index arithmetic i*4503599627370496 + 1 exceeds 2^53: it ranges over 1..13510798882111489 for i in 0..4"},
		{"index value near 2^40", body("y[i] = x[i] + f32(i * 1099511627776) where i in 0..4"), nil, ""},
		{"products near 2^31", body("y[i] = x[(i * 1500000001) % 3] + 10.0 * x[(i * 3000000001) % 3] where i in 0..3"), nil, ""},
		{"products near 2^40", body("y[i] = x[(i * 1099511627777 + 5) % 4] where i in 0..4"), nil, ""},
		{"sum at 2^53", body("y[i] = x[(i * 2251799813685248 + 2251799813685248) % 4] where i in 0..4"), nil, ""},
		{"comparison with a large constant", body("y[i] = select(i < 9223372036854775807, x[i], 0.0) where i in 0..4"), nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ds := Check("m.te", []byte(tt.src), Config{Defines: tt.defines})
			var got []string
			for _, d := range ds {
				got = append(got, fmt.Sprintf("%s: %s", d.Span.Start, d.Message))
				if d.Code != "bounds" || d.Hint == "" {
					t.Errorf("code %q, hint %q; want bounds with a hint", d.Code, d.Hint)
				}
			}
			switch {
			case tt.want == "" && len(got) > 0:
				t.Errorf("errors %q, want none", got)
			case tt.want != "" && (len(got) != 1 || got[0] != tt.want):
				t.Errorf("errors %q, want %q", got, tt.want)
			}
		})
	}
}
