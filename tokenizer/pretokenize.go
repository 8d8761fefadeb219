package tokenizer

import (
	"encoding/json"
	"fmt"
	"unicode"
)

// A preTokenizer splits the pieces of a normalized text into the words the
// model encodes one by one; it may rewrite them too (ByteLevel spells their
// bytes). Empty pieces are dropped.
type preTokenizer interface {
	split(pieces []string) ([]string, error)
}

// preTokenizerSeq applies its pre-tokenizers in order.
type preTokenizerSeq []preTokenizer

func (q preTokenizerSeq) split(pieces []string) ([]string, error) {
	for _, p := range q {
		var err error
		if pieces, err = p.split(pieces); err != nil {
			return nil, err
		}
	}
	return pieces, nil
}

// splitPre is the Split pre-tokenizer with the behaviour "Isolated": every
// match of its pattern a piece, and every stretch between them.
type splitPre struct{ pattern pattern }

func (p splitPre) split(pieces []string) ([]string, error) {
	var out []string
	for _, s := range pieces {
		var err error
		if out, err = p.pattern.split(s, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// digitsPre is the Digits pre-tokenizer: numeric characters (Unicode's N
// categories, Rust's char::is_numeric) split off, each alone or in runs.
type digitsPre struct{ individual bool }

func (p digitsPre) split(pieces []string) ([]string, error) {
	var out []string
	for _, s := range pieces {
		start := 0
		prevDigit := false
		for i, r := range s {
			d := unicode.IsNumber(r)
			if i > start && (d != prevDigit || d && p.individual) {
				out = append(out, s[start:i])
				start = i
			}
			prevDigit = d
		}
		if start < len(s) {
			out = append(out, s[start:])
		}
	}
	return out, nil
}

// parsePreTokenizer reads a tokenizer.json "pre_tokenizer"; a null one is
// nil.
func parsePreTokenizer(raw json.RawMessage, bl *byteLevel) (preTokenizer, error) {
	if isNull(raw) {
		return nil, nil
	}
	typ, err := typeOf(raw)
	if err != nil {
		return nil, err
	}
	switch typ {
	case "Sequence":
		parts, err := parseSequence(raw, "pretokenizers", func(r json.RawMessage) (preTokenizer, error) { return parsePreTokenizer(r, bl) })
		return preTokenizerSeq(parts), err
	case "Split":
		var v struct {
			Type     string          `json:"type"`
			Pattern  json.RawMessage `json:"pattern"`
			Behavior string          `json:"behavior"`
			Invert   bool            `json:"invert"`
		}
		if err := decodeStrict(raw, &v); err != nil {
			return nil, fmt.Errorf("Split: %w", err)
		}
		if v.Behavior != "Isolated" {
			return nil, fmt.Errorf("Split: unsupported behavior %q (only Isolated)", v.Behavior)
		}
		if v.Invert {
			return nil, fmt.Errorf("Split: unsupported invert true")
		}
		p, err := parsePattern(v.Pattern)
		if err != nil {
			return nil, fmt.Errorf("Split: %w", err)
		}
		return splitPre{p}, nil
	case "ByteLevel":
		v := struct {
			Type           string `json:"type"`
			AddPrefixSpace *bool  `json:"add_prefix_space"`
			TrimOffsets    bool   `json:"trim_offsets"` // offsets only
			UseRegex       *bool  `json:"use_regex"`
		}{}
		if err := decodeStrict(raw, &v); err != nil {
			return nil, fmt.Errorf("ByteLevel: %w", err)
		}
		if v.AddPrefixSpace == nil {
			return nil, fmt.Errorf("ByteLevel: no add_prefix_space")
		}
		p := &byteLevelPre{bl: bl, addPrefixSpace: *v.AddPrefixSpace}
		if v.UseRegex == nil || *v.UseRegex {
			if p.re, err = compileRegex(gpt2Pattern); err != nil {
				return nil, fmt.Errorf("ByteLevel: %w", err)
			}
		}
		return p, nil
	case "Digits":
		var v struct {
			Type             string `json:"type"`
			IndividualDigits bool   `json:"individual_digits"`
		}
		if err := decodeStrict(raw, &v); err != nil {
			return nil, fmt.Errorf("Digits: %w", err)
		}
		return digitsPre{individual: v.IndividualDigits}, nil
	}
	return nil, fmt.Errorf("unsupported type %q", typ)
}
