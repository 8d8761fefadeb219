package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// A DecodeStream decodes ids one at a time, as a model generates them,
// and returns the text each completes. A character whose bytes are split
// across tokens is held back until its last byte arrives, and the
// decoder's context (a leading space that Strip removes only at the start
// of the text) is kept, so that the pieces joined are Decode of all ids.
// The exception is a token that changes the text of earlier ones (a byte
// token after a run of them that was valid UTF-8 and is not with it, which
// ByteFallback replaces whole): the stream returns what follows the part
// of the text that stayed.
type DecodeStream struct {
	t           *Tokenizer
	skipSpecial bool
	ids         []int  // the window: ids since the start of the last text returned
	prefix      string // the text of ids[:done]
	done        int    // ids of the window already returned as text
}

// NewDecodeStream returns a stream decoding with t, leaving out special
// tokens with skipSpecial.
func (t *Tokenizer) NewDecodeStream(skipSpecial bool) *DecodeStream {
	return &DecodeStream{t: t, skipSpecial: skipSpecial}
}

// Step adds id and returns the text it completes, "" while a character is
// incomplete (the text so far ends in U+FFFD).
func (s *DecodeStream) Step(id int) (string, error) {
	s.ids = append(s.ids, id)
	text, err := s.t.Decode(s.ids, s.skipSpecial)
	if err != nil {
		s.ids = s.ids[:len(s.ids)-1]
		return "", err
	}
	if len(text) <= len(s.prefix) || strings.HasSuffix(text, "\uFFFD") {
		return "", nil
	}
	return s.emit(text)
}

// Flush returns the text held back, an incomplete character as U+FFFD,
// and ends the stream: ids stepped after it are decoded as a new text.
func (s *DecodeStream) Flush() (string, error) {
	text, err := s.t.Decode(s.ids, s.skipSpecial)
	if err != nil {
		return "", err
	}
	out := ""
	if len(text) > len(s.prefix) {
		out = text[commonPrefix(text, s.prefix):]
	}
	s.ids, s.prefix, s.done = s.ids[:0], "", 0
	return out, nil
}

// emit returns what text adds to the prefix and moves the window on: the
// ids already returned before this step leave it, those of this text stay
// as the next text's context.
func (s *DecodeStream) emit(text string) (string, error) {
	out := text[commonPrefix(text, s.prefix):]
	s.ids = append(s.ids[:0], s.ids[s.done:]...)
	s.done = len(s.ids)
	prefix, err := s.t.Decode(s.ids, s.skipSpecial)
	if err != nil {
		return "", err
	}
	s.prefix = prefix
	return out, nil
}

// commonPrefix returns the length of the longest common prefix of a and b
// that ends at a character boundary.
func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	for n > 0 && n < len(a) && !utf8.RuneStart(a[n]) {
		n--
	}
	return n
}
