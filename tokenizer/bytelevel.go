package tokenizer

import (
	"strings"
	"unicode/utf8"

	"github.com/dlclark/regexp2/v2"
)

// gpt2Pattern is the pre-tokenizing regular expression of GPT-2, which the
// ByteLevel pre-tokenizer applies when its use_regex is true.
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

// byteLevel is GPT-2's reversible map between bytes and printable
// characters: the byte-level pre-tokenizer writes each byte of the text as
// one character, so that every string is spelled by 256 vocabulary entries,
// and the byte-level decoder maps the characters back.
type byteLevel struct {
	char [256]rune     // byte → character
	byte map[rune]byte // character → byte
	str  [256]string   // byte → the character as a string
}

// newByteLevel builds the map: the printable Latin-1 bytes stand for
// themselves, and the others (controls, space, no-break and soft hyphen)
// for U+0100 onwards, in byte order.
func newByteLevel() *byteLevel {
	b := &byteLevel{byte: make(map[rune]byte, 256)}
	n := 0
	for i := range 256 {
		c := rune(i)
		if !(i >= '!' && i <= '~' || i >= 0xA1 && i <= 0xAC || i >= 0xAE && i <= 0xFF) {
			c = rune(256 + n)
			n++
		}
		b.char[i] = c
		b.byte[c] = byte(i)
		b.str[i] = string(c)
	}
	return b
}

// encode spells each byte of s as its character.
func (b *byteLevel) encode(s string) string {
	var sb strings.Builder
	sb.Grow(2 * len(s))
	for i := 0; i < len(s); i++ {
		sb.WriteString(b.str[s[i]])
	}
	return sb.String()
}

// decode maps the characters of token back to bytes. A token with a
// character outside the map (an added token such as "<|eot_id|>" is spelled
// with characters that map to themselves, but one need not be) is taken as
// its own UTF-8 bytes, as Hugging Face's decoder does.
func (b *byteLevel) decode(dst []byte, token string) []byte {
	n := len(dst)
	for _, c := range token {
		v, ok := b.byte[c]
		if !ok {
			return append(dst[:n], token...)
		}
		dst = append(dst, v)
	}
	return dst
}

// byteLevelPre is the ByteLevel pre-tokenizer: optionally a space before
// each piece, optionally GPT-2's split, and then every byte spelled as its
// character.
type byteLevelPre struct {
	bl             *byteLevel
	addPrefixSpace bool
	re             *regexp2.Regexp // GPT-2's pattern when use_regex, else nil
}

func (p *byteLevelPre) split(pieces []string) ([]string, error) {
	var out []string
	for _, s := range pieces {
		if p.addPrefixSpace && !strings.HasPrefix(s, " ") {
			s = " " + s
		}
		if p.re == nil {
			out = append(out, p.bl.encode(s))
			continue
		}
		parts, err := splitIsolated(p.re, s)
		if err != nil {
			return nil, err
		}
		for _, part := range parts {
			out = append(out, p.bl.encode(part))
		}
	}
	return out, nil
}

// lossyUTF8 converts b to a string, replacing each maximal ill-formed
// subsequence with U+FFFD, as Rust's String::from_utf8_lossy and the WHATWG
// decoder do (Go's conversion would keep the bytes; utf8.DecodeRune would
// replace every byte of a truncated sequence separately).
func lossyUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b) + 8)
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			sb.WriteByte(b[i])
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || size > 1 {
			sb.Write(b[i : i+size])
			i += size
			continue
		}
		// Invalid at i: skip the longest prefix of a well-formed sequence.
		i += maximalSubpart(b[i:])
		sb.WriteRune(utf8.RuneError)
	}
	return sb.String()
}

// maximalSubpart returns the length (at least 1) of the longest prefix of b
// that starts a well-formed UTF-8 sequence but does not complete one
// (Unicode's "maximal subpart of an ill-formed subsequence").
func maximalSubpart(b []byte) int {
	lead := b[0]
	var need int
	lo, hi := byte(0x80), byte(0xBF) // range of the second byte
	switch {
	case lead >= 0xC2 && lead <= 0xDF:
		need = 1
	case lead == 0xE0:
		need, lo = 2, 0xA0
	case lead >= 0xE1 && lead <= 0xEC, lead == 0xEE, lead == 0xEF:
		need = 2
	case lead == 0xED:
		need, hi = 2, 0x9F
	case lead == 0xF0:
		need, lo = 3, 0x90
	case lead >= 0xF1 && lead <= 0xF3:
		need = 3
	case lead == 0xF4:
		need, hi = 3, 0x8F
	default:
		return 1
	}
	n := 1
	for k := 0; k < need && n < len(b); k++ {
		c := b[n]
		if k == 0 && (c < lo || c > hi) || k > 0 && (c < 0x80 || c > 0xBF) {
			break
		}
		n++
	}
	return n
}
