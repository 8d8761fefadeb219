package diag

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"tec/lang/syntax"
)

// maxSnippet is the most characters of a source line that Render shows; a
// longer line is cut to a window around the span, marked with "...".
const maxSnippet = 120

// ANSI escapes used when rendering in color.
const (
	ansiReset  = "\x1b[0m"
	ansiBold   = "\x1b[1m"
	ansiRed    = "\x1b[1;31m"
	ansiYellow = "\x1b[1;33m"
	ansiCyan   = "\x1b[1;36m"
	ansiGreen  = "\x1b[1;32m"
)

// Render writes the diagnostics for people, in the order of the list:
//
//	model.te:3:9: error[syntax]: unexpected "}", expected an expression
//	    y = }
//	        ^
//	  hint: ...
//	model.te:1:9: note: the '{' is opened here
//	    model m {
//	            ^
//
// The first line of each span is shown with a caret line under it (tabs are
// kept so that the caret lines up); the underline of a span over several lines
// runs to the end of its first line, and a very long line is cut to a window
// around the span. src returns the contents of a file, or nil when it is not
// available, in which case only the messages are written; src itself may be
// nil. With color set, Render uses ANSI escapes.
func (l List) Render(w io.Writer, src func(file string) []byte, color bool) error {
	if src == nil {
		src = func(string) []byte { return nil }
	}
	var b bytes.Buffer
	for _, d := range l {
		d.render(&b, src, color)
	}
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("writing diagnostics: %w", err)
	}
	return nil
}

func (d *Diagnostic) render(b *bytes.Buffer, src func(string) []byte, color bool) {
	paint := func(code, s string) string {
		if !color {
			return s
		}
		return code + s + ansiReset
	}
	sevColor := map[Severity]string{Error: ansiRed, Warning: ansiYellow, Note: ansiCyan}[d.Severity]
	sev := d.Severity.String()
	if d.Code != "" {
		sev += "[" + d.Code + "]"
	}
	b.WriteString(paint(ansiBold, location(d.File, d.Span)))
	b.WriteString(paint(sevColor, sev))
	b.WriteString(paint(ansiBold, ": "+d.Message))
	b.WriteByte('\n')
	writeSnippet(b, src(d.File), d.Span, paint(sevColor, "^"), sevColor, color)
	if d.Hint != "" {
		fmt.Fprintf(b, "  %s %s\n", paint(ansiCyan, "hint:"), d.Hint)
	}
	for _, r := range d.Related {
		b.WriteString(paint(ansiBold, location(r.File, r.Span)))
		b.WriteString(paint(ansiCyan, "note"))
		b.WriteString(": " + r.Message + "\n")
		writeSnippet(b, src(r.File), r.Span, paint(ansiGreen, "^"), ansiGreen, color)
	}
}

// writeSnippet writes the first line of span sp, indented, and a caret line
// under the span. It writes nothing if the line is not in src.
func writeSnippet(b *bytes.Buffer, src []byte, sp syntax.Span, caret, caretColor string, color bool) {
	line, ok := lineText(src, sp.Start.Line)
	if !ok {
		return
	}
	line = strings.TrimSuffix(line, "\r")
	runes := []rune(line)
	n := len(runes)
	start := min(max(sp.Start.Col-1, 0), n)
	end := start + 1
	switch {
	case sp.End.Line > sp.Start.Line:
		end = max(n, end)
	case sp.End.Line == sp.Start.Line && sp.End.Col-1 > start:
		end = sp.End.Col - 1
	}
	// Choose the window [lo, hi) of runes to show.
	lo, hi := 0, n
	if n > maxSnippet {
		lo = max(0, start-maxSnippet/3)
		hi = min(n, lo+maxSnippet)
		lo = max(0, hi-maxSnippet)
	}
	end = min(end, max(hi, start+1))
	var text, under strings.Builder
	text.WriteString("    ")
	under.WriteString("    ")
	if lo > 0 {
		text.WriteString("...")
		under.WriteString("   ")
	}
	for i, r := range runes[lo:hi] {
		i += lo
		switch {
		case r == '\t':
			text.WriteRune(r)
		case !unicode.IsPrint(r):
			text.WriteRune(utf8.RuneError)
			r = utf8.RuneError
		default:
			text.WriteRune(r)
		}
		if i < start {
			if r == '\t' {
				under.WriteByte('\t')
			} else {
				under.WriteString(strings.Repeat(" ", runeWidth(r)))
			}
		}
	}
	if hi < n {
		text.WriteString("...")
	}
	tildes := 0
	for i := start + 1; i < end; i++ {
		tildes += max(runeWidth(runeAt(runes, i)), 1)
	}
	if start < n {
		tildes += runeWidth(runes[start]) - 1
	}
	under.WriteString(caret)
	if tildes > 0 {
		t := strings.Repeat("~", tildes)
		if color {
			t = caretColor + t + ansiReset
		}
		under.WriteString(t)
	}
	b.WriteString(strings.TrimRight(text.String(), " "))
	b.WriteByte('\n')
	b.WriteString(under.String())
	b.WriteByte('\n')
}

func runeAt(rs []rune, i int) rune {
	if i < len(rs) {
		return rs[i]
	}
	return ' '
}

// lineText returns line number n (1-based) of src, without its newline.
func lineText(src []byte, n int) (string, bool) {
	if src == nil || n <= 0 {
		return "", false
	}
	for i := 1; i < n; i++ {
		j := bytes.IndexByte(src, '\n')
		if j < 0 {
			return "", false
		}
		src = src[j+1:]
	}
	if j := bytes.IndexByte(src, '\n'); j >= 0 {
		src = src[:j]
	}
	return string(src), true
}

// runeWidth returns the number of terminal columns r takes: 0 for combining
// marks, 2 for wide East Asian characters and emoji, 1 otherwise.
func runeWidth(r rune) int {
	switch {
	case unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r) || r == 0x200B:
		return 0
	case r >= 0x1100 && r <= 0x115F, r >= 0x2E80 && r <= 0xA4CF && r != 0x303F,
		r >= 0xAC00 && r <= 0xD7A3, r >= 0xF900 && r <= 0xFAFF, r >= 0xFE30 && r <= 0xFE4F,
		r >= 0xFF00 && r <= 0xFF60, r >= 0xFFE0 && r <= 0xFFE6,
		r >= 0x1F300 && r <= 0x1F64F, r >= 0x1F900 && r <= 0x1F9FF,
		r >= 0x20000 && r <= 0x3FFFD:
		return 2
	}
	return 1
}
