package diag

import (
	"encoding/json"
	"fmt"
	"io"
	"unicode/utf16"

	"tec/lang/syntax"
)

// Position is a position as the Language Server Protocol counts it: a
// 0-based line and a 0-based offset in UTF-16 code units within the line.
type Position struct {
	Line      int `json:"line"`
	Character int `json:"character"`
}

// Range is an LSP range, end exclusive.
type Range struct {
	Start Position `json:"start"`
	End   Position `json:"end"`
}

// JSONDiagnostic is the JSON form of a Diagnostic, as written by WriteJSON.
type JSONDiagnostic struct {
	File     string        `json:"file"`
	Range    Range         `json:"range"`
	Severity string        `json:"severity"`
	Code     string        `json:"code"`
	Message  string        `json:"message"`
	Hint     string        `json:"hint"`
	Related  []JSONRelated `json:"related"`
}

// JSONRelated is the JSON form of a Related place.
type JSONRelated struct {
	File    string `json:"file"`
	Range   Range  `json:"range"`
	Message string `json:"message"`
}

// LSPRange converts the diagnostic's span to an LSP range, using src, the
// contents of d.File, to count UTF-16 code units (a character outside the
// Basic Multilingual Plane, such as most emoji, counts 2). With src nil the
// columns are taken to count one unit per character.
func (d *Diagnostic) LSPRange(src []byte) Range { return lspRange(src, d.Span) }

func lspRange(src []byte, sp syntax.Span) Range {
	return Range{Start: lspPos(src, sp.Start), End: lspPos(src, sp.End)}
}

func lspPos(src []byte, p syntax.Pos) Position {
	if p.Line <= 0 {
		return Position{}
	}
	pos := Position{Line: p.Line - 1}
	line, ok := lineText(src, p.Line)
	if !ok {
		pos.Character = max(p.Col-1, 0)
		return pos
	}
	col := 1
	for _, r := range line {
		if col >= p.Col {
			break
		}
		if n := utf16.RuneLen(r); n > 0 {
			pos.Character += n
		} else {
			pos.Character++
		}
		col++
	}
	pos.Character += max(p.Col-col, 0) // a column past the end of the line
	return pos
}

// JSON returns the JSON form of d. src returns the contents of a file, or nil
// when it is not available; it may itself be nil.
func (d *Diagnostic) JSON(src func(file string) []byte) JSONDiagnostic {
	if src == nil {
		src = func(string) []byte { return nil }
	}
	j := JSONDiagnostic{
		File:     d.File,
		Range:    d.LSPRange(src(d.File)),
		Severity: d.Severity.String(),
		Code:     d.Code,
		Message:  d.Message,
		Hint:     d.Hint,
		Related:  []JSONRelated{},
	}
	for _, r := range d.Related {
		j.Related = append(j.Related, JSONRelated{File: r.File, Range: lspRange(src(r.File), r.Span), Message: r.Message})
	}
	return j
}

// WriteJSON writes the diagnostics as JSON, one object per line (JSON Lines),
// for notebooks and the language server:
//
//	{"file":"m.te","range":{"start":{"line":2,"character":8},"end":{...}},"severity":"error","code":"syntax","message":"...","hint":"","related":[]}
//
// Lines and characters are 0-based; characters count UTF-16 code units, as
// the LSP requires. src is as for JSON.
func (l List) WriteJSON(w io.Writer, src func(file string) []byte) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, d := range l {
		if err := enc.Encode(d.JSON(src)); err != nil {
			return fmt.Errorf("writing diagnostics as JSON: %w", err)
		}
	}
	return nil
}
