package lsp

import (
	"unicode/utf16"
	"unicode/utf8"

	"go.lsp.dev/protocol"

	"tec/lang/syntax"
)

// mapper converts between byte offsets in a text and LSP positions (0-based
// line, UTF-16 code units within the line).
type mapper struct {
	src   []byte
	lines []int // byte offset of the start of each line
}

func newMapper(src []byte) *mapper {
	lines := make([]int, 1, 64)
	for i, b := range src {
		if b == '\n' {
			lines = append(lines, i+1)
		}
	}
	return &mapper{src: src, lines: lines}
}

// offset returns the byte offset of p, clamped to the text: a line past the
// end gives the end of the text, a character past the end of its line the
// end of the line.
func (m *mapper) offset(p protocol.Position) int {
	line := int(p.Line)
	if line >= len(m.lines) {
		return len(m.src)
	}
	start, end := m.lines[line], len(m.src)
	if line+1 < len(m.lines) {
		end = m.lines[line+1] - 1 // the '\n'
	}
	want := int(p.Character)
	units, i := 0, start
	for i < end && units < want {
		r, n := utf8.DecodeRune(m.src[i:end])
		if w := utf16.RuneLen(r); w > 0 {
			units += w
		} else {
			units++
		}
		i += n
	}
	return i
}

// position returns the LSP position of byte offset off, clamped to the text.
func (m *mapper) position(off int) protocol.Position {
	off = max(0, min(off, len(m.src)))
	// the last line that starts at or before off
	lo, hi := 0, len(m.lines)
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if m.lines[mid] <= off {
			lo = mid
		} else {
			hi = mid
		}
	}
	units := 0
	for i := m.lines[lo]; i < off; {
		r, n := utf8.DecodeRune(m.src[i:off])
		if w := utf16.RuneLen(r); w > 0 {
			units += w
		} else {
			units++
		}
		i += n
	}
	return protocol.Position{Line: uint32(lo), Character: uint32(units)}
}

// rng returns the LSP range of a span of the text.
func (m *mapper) rng(sp syntax.Span) protocol.Range {
	return protocol.Range{Start: m.position(sp.Start.Offset), End: m.position(sp.End.Offset)}
}

// offsetRange returns the LSP range of the bytes [start, end).
func (m *mapper) offsetRange(start, end int) protocol.Range {
	return protocol.Range{Start: m.position(start), End: m.position(end)}
}
