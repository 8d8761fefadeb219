package lsp

import (
	"sort"
	"unicode/utf16"
	"unicode/utf8"

	"go.lsp.dev/protocol"

	"tec/lang/syntax"
)

// mapper converts between byte offsets in a text and LSP positions (0-based
// line, UTF-16 code units within the line).
//
// position costs a binary search whatever the length of the line: a byte
// is one code unit, except in a valid UTF-8 sequence of more than one byte,
// which is one or two units, and wide records each such sequence's end with
// the units saved up to it. (Walking from the start of the line, as offset
// does, made the semantic tokens of a one-line x + x + ... + x quadratic.)
type mapper struct {
	src   []byte
	lines []int // byte offset of the start of each line
	wide  []int // the end offset of each multi-byte UTF-8 sequence, ascending
	saved []int // saved[k]: bytes less code units in sequences 0..k
}

func newMapper(src []byte) *mapper {
	lines := make([]int, 1, 64)
	var wide, saved []int
	total := 0
	for i := 0; i < len(src); {
		b := src[i]
		if b < utf8.RuneSelf {
			if b == '\n' {
				lines = append(lines, i+1)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(src[i:])
		i += n
		if n == 1 {
			continue // not UTF-8: one unit per byte
		}
		units := 1
		if utf16.RuneLen(r) == 2 {
			units = 2
		}
		total += n - units
		wide = append(wide, i)
		saved = append(saved, total)
	}
	return &mapper{src: src, lines: lines, wide: wide, saved: saved}
}

// savedBefore returns the bytes less code units of the multi-byte sequences
// that end at or before off.
func (m *mapper) savedBefore(off int) int {
	k := sort.SearchInts(m.wide, off+1) // the sequences ending at or before off
	if k == 0 {
		return 0
	}
	return m.saved[k-1]
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
// An offset inside a multi-byte sequence counts the sequence's bytes before
// it as one unit each, as decoding the line up to off would.
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
	start := m.lines[lo] // no sequence spans a line start, which follows a '\n'
	units := off - start - (m.savedBefore(off) - m.savedBefore(start))
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
