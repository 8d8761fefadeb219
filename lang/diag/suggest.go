package diag

import (
	"strings"
	"unicode/utf8"
)

// Suggest returns the candidate that name is most likely a misspelling of, or
// "" if none is close enough. Closeness is the optimal-string-alignment
// (restricted Damerau–Levenshtein) distance: a candidate qualifies when it
// differs only in letter case, or when the distance is at most a third of the
// name's length (at least 1 for names of 3 or more characters), and less than
// the candidate's length. Ties go to the smaller distance, then to the
// candidate first in lexical order, so the result does not depend on the order
// of candidates.
func Suggest(name string, candidates []string) string {
	n := utf8.RuneCountInString(name)
	limit := n / 3
	if n >= 3 {
		limit = max(limit, 1)
	}
	best, bestDist := "", limit+2
	for _, c := range candidates {
		if c == name || c == "" {
			continue
		}
		d := 0
		if !strings.EqualFold(c, name) {
			d = distance(name, c)
			if d > limit || d >= utf8.RuneCountInString(c) {
				continue
			}
			d++ // a case-only difference is the closest of all
		}
		if d < bestDist || d == bestDist && c < best {
			best, bestDist = c, d
		}
	}
	return best
}

// distance returns the optimal-string-alignment distance between a and b,
// counting runes: the fewest insertions, deletions, substitutions and swaps of
// adjacent runes that turn a into b, editing no substring twice.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// Three rolling rows of the dynamic-programming table.
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
