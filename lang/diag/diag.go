// Package diag holds compiler diagnostics: errors, warnings and notes tied to
// spans of source text, and their rendering for people (source line and
// caret), for tools (one JSON object per line, with LSP ranges) and as Go
// errors. Every front-end stage reports through it.
package diag

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"tec/lang/syntax"
)

// Severity says how serious a diagnostic is.
type Severity int

// The severities, most serious first.
const (
	Error Severity = iota
	Warning
	Note
)

// String returns "error", "warning" or "note".
func (s Severity) String() string {
	switch s {
	case Error:
		return "error"
	case Warning:
		return "warning"
	case Note:
		return "note"
	}
	return fmt.Sprintf("Severity(%d)", int(s))
}

// Diagnostic is one message about a span of a source file.
type Diagnostic struct {
	File     string
	Span     syntax.Span
	Severity Severity
	Code     string // a short stable identifier, such as "syntax" or "undefined"
	Message  string
	Hint     string // optional advice, such as "did you mean 'rsqrt'?"
	Related  []Related
}

// Related points at another place that explains a diagnostic, such as "the
// other definition is here".
type Related struct {
	File    string
	Span    syntax.Span
	Message string
}

// Error formats the diagnostic on one line as file:line:col: severity[code]:
// message, so that a *Diagnostic can be used as an error.
func (d *Diagnostic) Error() string {
	var b strings.Builder
	b.WriteString(location(d.File, d.Span))
	b.WriteString(d.Severity.String())
	if d.Code != "" {
		fmt.Fprintf(&b, "[%s]", d.Code)
	}
	b.WriteString(": ")
	b.WriteString(d.Message)
	return b.String()
}

// location returns "file:line:col: ", leaving out what is unknown.
func location(file string, sp syntax.Span) string {
	switch {
	case sp.Start.Line <= 0 && file == "":
		return ""
	case sp.Start.Line <= 0:
		return file + ": "
	}
	return fmt.Sprintf("%s:%d:%d: ", file, sp.Start.Line, sp.Start.Col)
}

// List is a list of diagnostics. It implements error; use Err to get an
// error value that is nil when there is nothing to report.
type List []*Diagnostic

// Add appends d to the list.
func (l *List) Add(d *Diagnostic) { *l = append(*l, d) }

// Errorf adds an error at span of file and returns it, so that the caller can
// set a Hint or Related places.
func (l *List) Errorf(file string, span syntax.Span, code, format string, args ...any) *Diagnostic {
	d := &Diagnostic{File: file, Span: span, Severity: Error, Code: code, Message: fmt.Sprintf(format, args...)}
	l.Add(d)
	return d
}

// Warnf adds a warning at span of file and returns it.
func (l *List) Warnf(file string, span syntax.Span, code, format string, args ...any) *Diagnostic {
	d := l.Errorf(file, span, code, format, args...)
	d.Severity = Warning
	return d
}

// HasErrors reports whether any diagnostic in the list is an error.
func (l List) HasErrors() bool {
	return slices.ContainsFunc(l, func(d *Diagnostic) bool { return d.Severity == Error })
}

// Sort sorts the list by file, then by position, then by severity, keeping
// the order of diagnostics that compare equal.
func (l List) Sort() {
	slices.SortStableFunc(l, func(a, b *Diagnostic) int {
		return cmp.Or(
			cmp.Compare(a.File, b.File),
			cmp.Compare(a.Span.Start.Line, b.Span.Start.Line),
			cmp.Compare(a.Span.Start.Col, b.Span.Start.Col),
			cmp.Compare(a.Severity, b.Severity),
		)
	})
}

// Error returns the diagnostics one per line, each followed by its hint.
func (l List) Error() string {
	var b strings.Builder
	for i, d := range l {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(d.Error())
		if d.Hint != "" {
			b.WriteString("\n  hint: ")
			b.WriteString(d.Hint)
		}
	}
	return b.String()
}

// Err returns nil if the list holds no errors, and the list otherwise.
func (l List) Err() error {
	if !l.HasErrors() {
		return nil
	}
	return l
}

// FromSyntax converts an error from syntax.Parse into a diagnostic with code
// "syntax"; the notes of a *syntax.Error become Related places in the same
// file. Any other error becomes a diagnostic with no position. FromSyntax
// returns nil for a nil error.
func FromSyntax(err error) *Diagnostic {
	if err == nil {
		return nil
	}
	var se *syntax.Error
	if !errors.As(err, &se) {
		return &Diagnostic{Severity: Error, Code: "syntax", Message: err.Error()}
	}
	d := &Diagnostic{File: se.File, Span: se.Span, Severity: Error, Code: "syntax", Message: se.Msg, Hint: se.Hint}
	for _, n := range se.Notes {
		d.Related = append(d.Related, Related{File: se.File, Span: n.Span, Message: n.Msg})
	}
	return d
}
