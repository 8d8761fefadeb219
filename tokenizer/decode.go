package tokenizer

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A decoder turns the tokens of a sequence of ids back into text, as a
// chain: each decoder maps the list of token strings to a new list, and the
// text is the last list joined.
type decoder interface {
	decodeChain(tokens []string) ([]string, error)
}

// decoderSeq applies its decoders in order.
type decoderSeq []decoder

func (q decoderSeq) decodeChain(tokens []string) ([]string, error) {
	for _, d := range q {
		var err error
		if tokens, err = d.decodeChain(tokens); err != nil {
			return nil, err
		}
	}
	return tokens, nil
}

// byteLevelDec maps byte-level characters back to bytes and the bytes of
// all tokens to one string, ill-formed UTF-8 replaced with U+FFFD.
type byteLevelDec struct{ bl *byteLevel }

func (d byteLevelDec) decodeChain(tokens []string) ([]string, error) {
	var b []byte
	for _, t := range tokens {
		b = d.bl.decode(b, t)
	}
	return []string{lossyUTF8(b)}, nil
}

// replaceDec replaces a pattern in every token.
type replaceDec replace

func (d replaceDec) decodeChain(tokens []string) ([]string, error) {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		var err error
		if out[i], err = d.pattern.replaceAll(t, d.content); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// byteFallbackDec turns runs of <0xXX> tokens into the text their bytes
// spell, or, where the bytes are not valid UTF-8, one U+FFFD per byte, as
// Hugging Face's ByteFallback decoder does.
type byteFallbackDec struct{}

func (byteFallbackDec) decodeChain(tokens []string) ([]string, error) {
	var out []string
	var run []byte
	flush := func() {
		if len(run) == 0 {
			return
		}
		if s := string(run); utf8.ValidString(s) {
			out = append(out, s)
		} else {
			for range run {
				out = append(out, "\uFFFD")
			}
		}
		run = run[:0]
	}
	for _, t := range tokens {
		if b, ok := byteToken(t); ok {
			run = append(run, b)
			continue
		}
		flush()
		out = append(out, t)
	}
	flush()
	return out, nil
}

// byteToken reports whether t is a byte-fallback token, <0xXX>, and its
// byte.
func byteToken(t string) (byte, bool) {
	if len(t) != 6 || !strings.HasPrefix(t, "<0x") || t[5] != '>' {
		return 0, false
	}
	v, err := strconv.ParseUint(t[3:5], 16, 8)
	if err != nil {
		return 0, false
	}
	return byte(v), true
}

// fuseDec joins all tokens into one.
type fuseDec struct{}

func (fuseDec) decodeChain(tokens []string) ([]string, error) {
	return []string{strings.Join(tokens, "")}, nil
}

// stripDec removes up to start leading and stop trailing copies of a
// character from every token.
type stripDec struct {
	content     rune
	start, stop int
}

func (d stripDec) decodeChain(tokens []string) ([]string, error) {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		r := []rune(t)
		lo, hi := 0, len(r)
		for lo < d.start && lo < hi && r[lo] == d.content {
			lo++
		}
		for k := 0; k < d.stop && hi > lo && r[hi-1] == d.content; k++ {
			hi--
		}
		out[i] = string(r[lo:hi])
	}
	return out, nil
}

// parseDecoder reads a tokenizer.json "decoder"; a null one is nil.
func parseDecoder(raw json.RawMessage, bl *byteLevel) (decoder, error) {
	if isNull(raw) {
		return nil, nil
	}
	typ, err := typeOf(raw)
	if err != nil {
		return nil, err
	}
	switch typ {
	case "Sequence":
		parts, err := parseSequence(raw, "decoders", func(r json.RawMessage) (decoder, error) { return parseDecoder(r, bl) })
		return decoderSeq(parts), err
	case "ByteLevel":
		var v struct {
			Type           string `json:"type"`
			AddPrefixSpace bool   `json:"add_prefix_space"` // encoding only
			TrimOffsets    bool   `json:"trim_offsets"`     // offsets only
			UseRegex       bool   `json:"use_regex"`        // encoding only
		}
		if err := decodeStrict(raw, &v); err != nil {
			return nil, fmt.Errorf("ByteLevel: %w", err)
		}
		return byteLevelDec{bl}, nil
	case "Replace":
		r, err := parseReplace(raw)
		if err != nil {
			return nil, fmt.Errorf("Replace: %w", err)
		}
		return replaceDec(r), nil
	case "ByteFallback", "Fuse":
		var v struct {
			Type string `json:"type"`
		}
		if err := decodeStrict(raw, &v); err != nil {
			return nil, fmt.Errorf("%s: %w", typ, err)
		}
		if typ == "Fuse" {
			return fuseDec{}, nil
		}
		return byteFallbackDec{}, nil
	case "Strip":
		var v struct {
			Type    string `json:"type"`
			Content string `json:"content"`
			Start   int    `json:"start"`
			Stop    int    `json:"stop"`
		}
		if err := decodeStrict(raw, &v); err != nil {
			return nil, fmt.Errorf("Strip: %w", err)
		}
		r := []rune(v.Content)
		if len(r) != 1 {
			return nil, fmt.Errorf("Strip: content %q is not one character", v.Content)
		}
		if v.Start < 0 || v.Stop < 0 {
			return nil, fmt.Errorf("Strip: negative start %d or stop %d", v.Start, v.Stop)
		}
		return stripDec{content: r[0], start: v.Start, stop: v.Stop}, nil
	}
	return nil, fmt.Errorf("unsupported type %q", typ)
}
