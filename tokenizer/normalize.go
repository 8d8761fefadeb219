package tokenizer

import (
	"encoding/json"
	"fmt"

	"golang.org/x/text/unicode/norm"
)

// A normalizer rewrites a piece of text before it is pre-tokenized (the
// pieces between added tokens are normalized one by one).
type normalizer interface {
	normalize(s string) (string, error)
}

// normalizerSeq applies its normalizers in order.
type normalizerSeq []normalizer

func (q normalizerSeq) normalize(s string) (string, error) {
	for _, n := range q {
		var err error
		if s, err = n.normalize(s); err != nil {
			return "", err
		}
	}
	return s, nil
}

// prepend puts a string before a non-empty text (SentencePiece's "dummy
// prefix", "▁").
type prepend string

func (p prepend) normalize(s string) (string, error) {
	if s == "" {
		return s, nil
	}
	return string(p) + s, nil
}

// replace replaces every match of a pattern with a literal string.
type replace struct {
	pattern pattern
	content string
}

func (r replace) normalize(s string) (string, error) { return r.pattern.replaceAll(s, r.content) }

// nfc is Unicode normalization form C.
type nfc struct{}

func (nfc) normalize(s string) (string, error) { return norm.NFC.String(s), nil }

// parseNormalizer reads a tokenizer.json "normalizer"; a null one is nil.
func parseNormalizer(raw json.RawMessage) (normalizer, error) {
	if isNull(raw) {
		return nil, nil
	}
	typ, err := typeOf(raw)
	if err != nil {
		return nil, err
	}
	switch typ {
	case "Sequence":
		parts, err := parseSequence(raw, "normalizers", parseNormalizer)
		return normalizerSeq(parts), err
	case "Prepend":
		var v struct {
			Type    string  `json:"type"`
			Prepend *string `json:"prepend"`
		}
		if err := decodeStrict(raw, &v); err != nil {
			return nil, fmt.Errorf("Prepend: %w", err)
		}
		if v.Prepend == nil {
			return nil, fmt.Errorf("Prepend: no prepend")
		}
		return prepend(*v.Prepend), nil
	case "Replace":
		r, err := parseReplace(raw)
		if err != nil {
			return nil, fmt.Errorf("Replace: %w", err)
		}
		return r, nil
	case "NFC":
		var v struct {
			Type string `json:"type"`
		}
		if err := decodeStrict(raw, &v); err != nil {
			return nil, fmt.Errorf("NFC: %w", err)
		}
		return nfc{}, nil
	}
	return nil, fmt.Errorf("unsupported type %q", typ)
}

// parseReplace reads a Replace normalizer or decoder (the same fields).
func parseReplace(raw json.RawMessage) (replace, error) {
	var v struct {
		Type    string          `json:"type"`
		Pattern json.RawMessage `json:"pattern"`
		Content *string         `json:"content"`
	}
	if err := decodeStrict(raw, &v); err != nil {
		return replace{}, err
	}
	if v.Content == nil {
		return replace{}, fmt.Errorf("no content")
	}
	p, err := parsePattern(v.Pattern)
	if err != nil {
		return replace{}, err
	}
	return replace{pattern: p, content: *v.Content}, nil
}
