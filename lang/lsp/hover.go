package lsp

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"go.lsp.dev/protocol"

	"tec/lang"
	"tec/lang/diag"
	"tec/lang/syntax"
	"tec/te"
)

// hover answers textDocument/hover: the type and facts of the name under
// the cursor, or the documentation of a builtin or keyword.
func (s *server) hover(ctx context.Context, doc *document, raw json.RawMessage) (any, error) {
	snap, off, err := s.at(ctx, doc, raw)
	if err != nil {
		return nil, err
	}
	if id := identAt(snap, off); id != nil {
		r := snap.m.rng(id.Span)
		return &protocol.Hover{Contents: markdown(s.describe(snap, id)), Range: &r}, nil
	}
	start, end := wordAt(snap.doc.text, off)
	word := string(snap.doc.text[start:end])
	if word == "" {
		return nil, nil
	}
	r := snap.m.offsetRange(start, end)
	if b, ok := lang.LookupBuiltin(word); ok {
		return &protocol.Hover{Contents: markdown(codeBlock(b.Signature) + b.Doc + " (builtin)"), Range: &r}, nil
	}
	for _, k := range keywords() {
		if k[0] == word {
			return &protocol.Hover{Contents: markdown(codeBlock(k[0]) + k[1]), Range: &r}, nil
		}
	}
	return nil, nil
}

func markdown(s string) protocol.MarkupContent {
	return protocol.MarkupContent{Kind: protocol.Markdown, Value: s}
}

func codeBlock(s string) string { return "```te\n" + s + "\n```\n" }

// describe returns the hover text of an identifier.
func (s *server) describe(snap *snapshot, id *lang.Ident) string {
	sym := id.Symbol
	var b strings.Builder
	switch sym.Kind {
	case lang.SymConst:
		b.WriteString(codeBlock(sym.Detail))
		if v, ok := snap.defines[sym.Name]; ok && strings.HasPrefix(sym.Detail, "const ") {
			fmt.Fprintf(&b, "set to %s by the workspace setting `tec.defines`  \n", v)
		}
	case lang.SymFunc:
		b.WriteString(codeBlock(sym.Detail))
		if doc := docComment(snap.source(sym.File), sym.Def); doc != "" {
			b.WriteString(doc + "\n\n")
		}
	case lang.SymIndex:
		b.WriteString(codeBlock(sym.Detail))
		if isReduceAxis(snap, sym) {
			b.WriteString("reduction axis")
		} else {
			b.WriteString("index variable")
		}
		if sym.Extent > 0 {
			fmt.Fprintf(&b, ", %d values", sym.Extent)
		}
		b.WriteString("  \n")
	case lang.SymTensor:
		b.WriteString(codeBlock(sym.Detail))
		b.WriteString(tensorFacts(snap, sym))
	default:
		if isInvalid(sym) {
			b.WriteString(codeBlock(sym.Name + ": type unknown"))
			b.WriteString(invalidCause(snap, sym) + "  \n")
			break
		}
		b.WriteString(codeBlock(sym.Detail))
	}
	if sym.File != "" && sym.Def != (syntax.Span{}) {
		fmt.Fprintf(&b, "defined at %s:%d", displayName(snap, sym.File), sym.Def.Start.Line)
	}
	return strings.TrimRight(b.String(), " \n")
}

// tensorFacts describes a tensor: its kind, how many tensors the definition
// made, and the analysis of the TE: dependence (OR/MR) and intensity (CI/MI).
func tensorFacts(snap *snapshot, sym lang.Symbol) string {
	t := sym.Tensor
	if t == nil {
		return ""
	}
	var b strings.Builder
	switch t.Kind {
	case te.Input:
		b.WriteString("input")
	case te.Param:
		b.WriteString("param")
	default:
		b.WriteString("tensor")
	}
	fmt.Fprintf(&b, ", %s", bytesString(t.Bytes()))
	a := snap.analysisOf(t)
	if a == nil {
		if snap.diags.HasErrors() {
			b.WriteString("  \n(dependence and intensity are shown when the file has no errors)  \n")
		} else if t.Kind == te.Compute {
			b.WriteString("  \nno output needs it: it is removed  \n")
		} else {
			b.WriteString("  \n")
		}
		return b.String()
	}
	fmt.Fprintf(&b, ", model %s", a.Program.Name)
	n, first, last := 0, t, t
	if t.Span.File == sym.File && t.Span.Line == sym.Def.Start.Line {
		// made by this statement: count its unrolled copies
		for _, u := range a.Program.Tensors {
			if u.Span == t.Span {
				if n == 0 {
					first = u
				}
				n, last = n+1, u
			}
		}
	}
	if n > 1 && t.Kind != te.Compute {
		fmt.Fprintf(&b, ", one of %d %ss this declaration makes, one per loop iteration: %s ... %s", n, t.Kind, first.Name, last.Name)
	} else if n > 1 {
		fmt.Fprintf(&b, ", one of %d tensors this statement makes (loops and calls unrolled); the first is %s", n, t.Name)
	} else if t.Name != sym.Name {
		fmt.Fprintf(&b, ", %s in the program", t.Name)
	}
	b.WriteString("  \n")
	x := a.TE(t)
	if x == nil {
		return b.String()
	}
	in := x.Intensity
	fmt.Fprintf(&b, "**%s** (%s) · **%s** (%s): %.3g ops per element moved (%d ops; %d elements read, %d written; threshold %g)  \n",
		x.Dependence, x.Dependence.Short(), in.Class, in.Class.Short(), in.Ratio, in.Ops, in.Read, in.Written, a.Threshold)
	return b.String()
}

// bytesString formats a size in bytes.
func bytesString(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// displayName shortens a file name for hover text: the document's own name
// or a standard library name as it is, others relative to the document.
func displayName(snap *snapshot, file string) string {
	if file == snap.doc.path || strings.HasPrefix(file, "stdlib/") {
		return filepath.Base(file)
	}
	if rel, err := filepath.Rel(filepath.Dir(snap.doc.path), file); err == nil {
		return filepath.ToSlash(rel)
	}
	return file
}

// docComment returns the comment lines directly above the line of def in
// src, without their '#', or "".
func docComment(src []byte, def syntax.Span) string {
	if src == nil || def.Start.Offset > len(src) {
		return ""
	}
	lines := strings.Split(string(src[:def.Start.Offset]), "\n")
	lines = lines[:len(lines)-1] // the declaration's own line
	var doc []string
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(l, "#") {
			break
		}
		doc = append([]string{strings.TrimSpace(strings.TrimPrefix(l, "#"))}, doc...)
	}
	return strings.Join(doc, "\n")
}

// isReduceAxis reports whether the index variable sym is declared as a
// reduction axis (in op[axes](...)) rather than in a tensor definition's
// brackets.
func isReduceAxis(snap *snapshot, sym lang.Symbol) bool {
	if sym.File != snap.doc.path {
		return false
	}
	snap.axesOnce.Do(func() {
		snap.axes = map[int]bool{}
		inspectFile(snap.ast, func(n syntax.Node) bool {
			if r, ok := n.(*syntax.Reduce); ok {
				for _, a := range r.Axes {
					snap.axes[a.Span.Start.Offset] = true
				}
			}
			return true
		})
	})
	return snap.axes[sym.Def.Start.Offset]
}

// isInvalid reports whether sym names a value whose definition failed (the
// checker binds such a name to an invalid value, so that its uses are not
// reported again): lang.Symbol tells it only by its Detail.
func isInvalid(sym lang.Symbol) bool {
	return sym.Kind == lang.SymValue && strings.HasSuffix(sym.Detail, ": an invalid value")
}

// maxCauseStmts bounds the statements invalidCause looks through.
const maxCauseStmts = 1000

// invalidCause says why sym, an invalid value, has no type: the error in
// the statement that defines it or, when that statement only uses other
// invalid values, in the nearest statement upstream of it that has an
// error, following the names each statement uses.
func invalidCause(snap *snapshot, sym lang.Symbol) string {
	var errs []*diag.Diagnostic
	for _, d := range snap.diags {
		if d.Severity == diag.Error && d.File == snap.doc.path {
			errs = append(errs, d)
		}
	}
	if len(errs) == 0 {
		return "its definition did not check"
	}
	ids := snap.info.Idents[snap.doc.path]
	var queue []syntax.Span
	if sym.File == snap.doc.path {
		queue = append(queue, sym.Def)
	}
	seen := map[syntax.Span]bool{sym.Def: true}
	for k := 0; k < len(queue) && k < maxCauseStmts; k++ {
		stmt := statementAt(snap.ast, queue[k].Start.Offset)
		if stmt == (syntax.Span{}) {
			continue
		}
		for _, d := range errs {
			if stmt.Start.Offset <= d.Span.Start.Offset && d.Span.Start.Offset < stmt.End.Offset {
				return "its type is unknown because of the error " + where(snap, d, k > 0)
			}
		}
		// The names the statement uses, defined in this file.
		i := sort.Search(len(ids), func(i int) bool { return ids[i].Span.Start.Offset >= stmt.Start.Offset })
		for ; i < len(ids) && ids[i].Span.Start.Offset < stmt.End.Offset; i++ {
			def := ids[i].Symbol.Def
			if ids[i].Symbol.File == snap.doc.path && def != (syntax.Span{}) && !seen[def] {
				seen[def] = true
				queue = append(queue, def)
			}
		}
	}
	return "its type is unknown because of an error upstream of it; the first in the file: " + where(snap, errs[0], false)
}

// where formats the place and message of an error for a hover, saying
// whether it is in a statement upstream of the one hovered.
func where(snap *snapshot, d *diag.Diagnostic, upstream bool) string {
	p := snap.m.position(d.Span.Start.Offset)
	s := fmt.Sprintf("at line %d, column %d", p.Line+1, p.Character+1)
	if upstream {
		s += ", upstream of it"
	}
	return fmt.Sprintf("%s: %s", s, d.Message)
}

// statementAt returns the span of the innermost statement of f that holds
// the byte offset (a loop's body statement, not the loop), or a zero span.
func statementAt(f *syntax.File, off int) syntax.Span {
	var best syntax.Span
	inspectFile(f, func(n syntax.Node) bool {
		sp := n.NodeSpan()
		if off < sp.Start.Offset || off >= sp.End.Offset {
			return false
		}
		if _, ok := n.(syntax.Stmt); ok {
			best = sp
		}
		return true
	})
	return best
}
