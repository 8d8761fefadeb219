package tokenizer

import (
	"sort"
	"unicode"
	"unicode/utf8"
)

// addedToken is an entry of tokenizer.json's "added_tokens": a string that
// is split out of the text before the model sees it, and encoded as its id.
type addedToken struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"` // only where no word character touches it
	LStrip     bool   `json:"lstrip"`      // it takes the whitespace on its left
	RStrip     bool   `json:"rstrip"`      // and on its right
	Normalized bool   `json:"normalized"`  // matched in the normalized text, not the raw one
	Special    bool   `json:"special"`     // skipped by Decode when asked to
}

// segment is a piece of the text: an added token (id ≥ 0) or text for the
// model (id < 0).
type segment struct {
	text string
	id   int
}

// matcher finds added tokens in a text, leftmost first and the longest
// among those starting there, as Hugging Face's Aho-Corasick automaton
// does (MatchKind::LeftmostLongest).
type matcher struct {
	patterns []string
	tokens   []*addedToken
	byFirst  [256][]int // pattern indexes by first byte, longest first
}

func newMatcher(patterns []string, tokens []*addedToken) *matcher {
	m := &matcher{patterns: patterns, tokens: tokens}
	for i, p := range patterns {
		if p != "" {
			m.byFirst[p[0]] = append(m.byFirst[p[0]], i)
		}
	}
	for _, idx := range m.byFirst {
		sort.SliceStable(idx, func(a, b int) bool { return len(patterns[idx[a]]) > len(patterns[idx[b]]) })
	}
	return m
}

// next returns the first match at or after from: its range and pattern
// index, or ok false.
func (m *matcher) next(s string, from int) (start, end, pat int, ok bool) {
	for i := from; i < len(s); i++ {
		for _, p := range m.byFirst[s[i]] {
			if len(s)-i >= len(m.patterns[p]) && s[i:i+len(m.patterns[p])] == m.patterns[p] {
				return i, i + len(m.patterns[p]), p, true
			}
		}
	}
	return 0, 0, 0, false
}

// split appends to dst the segments of s: the added tokens found, with the
// options of each applied as Hugging Face applies them (single_word
// rejects a match touching a word character; lstrip and rstrip widen it
// over whitespace, lstrip not past the previous token), and the text
// between them. Empty text is dropped.
func (m *matcher) split(s string, dst []segment) []segment {
	if m == nil || len(m.patterns) == 0 {
		if s != "" {
			dst = append(dst, segment{text: s, id: -1})
		}
		return dst
	}
	done := 0 // end of the last token taken
	for from := 0; ; {
		start, end, p, ok := m.next(s, from)
		if !ok {
			break
		}
		from = end
		tok := m.tokens[p]
		if tok.SingleWord {
			if start > 0 && endsWithWord(s[:start]) || end < len(s) && startsWithWord(s[end:]) {
				continue
			}
		}
		if tok.LStrip {
			start = max(trailingSpaceStart(s[:start]), done)
		}
		if tok.RStrip {
			end += leadingSpaceLen(s[end:])
		}
		if done < start {
			dst = append(dst, segment{text: s[done:start], id: -1})
		}
		dst = append(dst, segment{text: s[start:end], id: tok.ID})
		done = max(done, end)
	}
	if done < len(s) {
		dst = append(dst, segment{text: s[done:], id: -1})
	}
	return dst
}

// isWord reports whether r is a word character of Rust's Unicode \w:
// alphabetic, a mark, a decimal digit, a connector punctuation or a join
// control.
func isWord(r rune) bool {
	return unicode.In(r, unicode.L, unicode.Nl, unicode.Other_Alphabetic, unicode.M, unicode.Nd, unicode.Pc, unicode.Join_Control)
}

func endsWithWord(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return isWord(r)
}

func startsWithWord(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return isWord(r)
}

// trailingSpaceStart returns where the whitespace at the end of s starts.
func trailingSpaceStart(s string) int {
	i := len(s)
	for i > 0 {
		r, size := utf8.DecodeLastRuneInString(s[:i])
		if !unicode.IsSpace(r) {
			break
		}
		i -= size
	}
	return i
}

// leadingSpaceLen returns the length of the whitespace at the start of s.
func leadingSpaceLen(s string) int {
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !unicode.IsSpace(r) {
			break
		}
		i += size
	}
	return i
}
