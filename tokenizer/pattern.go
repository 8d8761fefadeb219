package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/dlclark/regexp2/v2"
)

// pattern is what a Split pre-tokenizer or a Replace normalizer or decoder
// looks for: a literal string or a regular expression. Hugging Face
// compiles the expressions with Oniguruma; regexp2's default (.NET-like)
// syntax reads the ones tokenizers use the same way, lookahead and Unicode
// classes included, and its \s is Unicode's White_Space, as Oniguruma's is.
type pattern struct {
	literal string
	re      *regexp2.Regexp
}

// patternJSON is a pattern as tokenizer.json writes it: {"String": "..."}
// or {"Regex": "..."}.
type patternJSON struct {
	String *string `json:"String"`
	Regex  *string `json:"Regex"`
}

func parsePattern(raw json.RawMessage) (pattern, error) {
	var pj patternJSON
	if err := decodeStrict(raw, &pj); err != nil {
		return pattern{}, fmt.Errorf("pattern: %w", err)
	}
	switch {
	case pj.String != nil && pj.Regex == nil:
		if *pj.String == "" {
			return pattern{}, errors.New("pattern: empty string")
		}
		return pattern{literal: *pj.String}, nil
	case pj.Regex != nil && pj.String == nil:
		re, err := compileRegex(*pj.Regex)
		if err != nil {
			return pattern{}, err
		}
		return pattern{re: re}, nil
	}
	return pattern{}, fmt.Errorf("pattern: want one of String and Regex, have %s", raw)
}

func compileRegex(expr string) (*regexp2.Regexp, error) {
	re, err := regexp2.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("regex %q: %w", expr, err)
	}
	return re, nil
}

// findAll returns the byte ranges of the non-overlapping matches of p in
// s, left to right.
func (p pattern) findAll(s string) ([][]int, error) {
	if p.re != nil {
		return findAllRegex(p.re, s)
	}
	var out [][]int
	for i := 0; ; {
		j := strings.Index(s[i:], p.literal)
		if j < 0 {
			return out, nil
		}
		out = append(out, []int{i + j, i + j + len(p.literal)})
		i += j + len(p.literal)
	}
}

func findAllRegex(re *regexp2.Regexp, s string) ([][]int, error) {
	m, err := re.FindAllStringIndex(s, -1)
	if err != nil {
		return nil, fmt.Errorf("regex %q on %q: %w", re.String(), truncate(s), err)
	}
	return m, nil
}

// replaceAll replaces every match of p in s with content, taken literally.
func (p pattern) replaceAll(s, content string) (string, error) {
	if p.re == nil {
		return strings.ReplaceAll(s, p.literal, content), nil
	}
	m, err := findAllRegex(p.re, s)
	if err != nil || len(m) == 0 {
		return s, err
	}
	var sb strings.Builder
	last := 0
	for _, r := range m {
		sb.WriteString(s[last:r[0]])
		sb.WriteString(content)
		last = r[1]
	}
	sb.WriteString(s[last:])
	return sb.String(), nil
}

// splitIsolated splits s at the matches of re, each match a piece of its
// own, dropping empty pieces: Hugging Face's Split with the behaviour
// "Isolated".
func splitIsolated(re *regexp2.Regexp, s string) ([]string, error) {
	return pattern{re: re}.split(s, nil)
}

// split appends to dst the pieces of s between and at the matches of p,
// the empty ones dropped.
func (p pattern) split(s string, dst []string) ([]string, error) {
	m, err := p.findAll(s)
	if err != nil {
		return nil, err
	}
	last := 0
	for _, r := range m {
		if r[0] > last {
			dst = append(dst, s[last:r[0]])
		}
		if r[1] > r[0] {
			dst = append(dst, s[r[0]:r[1]])
		}
		last = r[1]
	}
	if last < len(s) {
		dst = append(dst, s[last:])
	}
	return dst, nil
}

// truncate shortens s for an error message.
func truncate(s string) string {
	const n = 60
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !isRuneStart(s[i]) {
		i--
	}
	return s[:i] + "..."
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
