package syntax

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Format returns the canonical text of f, which was parsed from src:
//
//   - two spaces of indentation per block, one statement per line, and a
//     block with nothing in it written {};
//   - one space around binary operators, '=', '->' and keywords, none around
//     '..' (0..N), "a, b" after commas, nothing inside brackets; in the bounds
//     of a range, binary operators outside brackets get no spaces either
//     (0..N+2, 0..H*W, but 0..dims[a + 1]), as the language docs write them;
//   - blank lines kept where the author left them between declarations,
//     statements and comments, at most one in a row, none at the start or
//     end of a block;
//   - parentheses exactly where the author wrote them (Paren nodes), plus any
//     that a tree built by hand needs to keep its meaning;
//   - every comment kept: one on a line of its own stays on a line of its own
//     before the code that follows it; one after code stays at the end of
//     that line. A comment inside a statement ends the line there and the
//     statement goes on on the next line;
//   - trailing comments on consecutive lines of the same indentation are
//     aligned to one column, one space after the longest code among them.
//
// Like gofmt, Format keeps the line breaks the author put inside a statement
// or a declaration's header, and adds none: lines are not wrapped. A break is
// kept after a comma, an opening bracket, a binary operator, '=' or '->', and
// before a binary operator, 'where', '->' or a closing bracket; a break
// anywhere else is removed, and a '{' always ends the line before it. The
// continuation lines of a statement are indented by one rule:
//
//   - inside a bracket ( or [ whose first element is on the bracket's line, a
//     line aligns with that element (see below);
//   - inside a bracket followed by a line break, a line is indented four
//     spaces more than the line that holds the bracket;
//   - a line that starts with the closing bracket is indented like the line
//     that holds the opening one;
//   - outside brackets, a line that starts with 'where' is indented two spaces
//     more than the statement, and any other line four.
//
// For example:
//
//	fn cell(x: f32[B, H],
//	        h: f32[B, H])
//	    -> f32[B, H] {
//	  y[n, j] = select(
//	      x[n, j] > 0 &&
//	      h[n, j] > 0,
//	      x[n, j], 0.0)
//	    where j in 0..H
//	  s = a + b
//	      + c
//	}
//
// The '=' of consecutive tensor definitions is not aligned.
//
// Formatting is idempotent, and the result parses to the same tree as f,
// apart from positions. Format reports an error if the tree holds a nil or
// unknown node, or if src does not match it. Without src (a tree built by
// hand), or if the tree's tokens turn out not to match src, no line breaks
// are kept.
func Format(f *File, src []byte) (out []byte, err error) {
	if f == nil {
		return nil, fmt.Errorf("format: nil file")
	}
	// A tree built by hand may hold typed nil nodes, whose methods panic.
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("format %s: malformed syntax tree: %v", f.Name, r)
		}
	}()
	if src != nil && f.Span.End.Offset != 0 && f.Span.End.Offset != len(src) {
		return nil, fmt.Errorf("format %s: the source (%d bytes) does not match the syntax tree (%d bytes)",
			f.Name, len(src), f.Span.End.Offset)
	}
	p := &printer{comments: f.Comments, bol: true, blockStart: true, toks: sourceTokens(src)}
	for _, d := range f.Decls {
		p.item(d.NodeSpan())
		p.decl(d)
		p.seen(d.NodeSpan())
	}
	p.cont = false
	p.flush(math.MaxInt, false)
	if !p.bol {
		p.newline()
	}
	if p.err != nil {
		return nil, fmt.Errorf("format %s: %w", f.Name, p.err)
	}
	return alignComments(p.out.Bytes(), p.trailing), nil
}

// sourceTokens returns the tokens of src, which the printer follows to find
// the line breaks the author put inside statements; nil if there is no
// source or it does not lex.
func sourceTokens(src []byte) []token {
	if src == nil {
		return nil
	}
	var toks []token
	lex := newLexer(src)
	for {
		t := lex.next()
		switch t.kind {
		case tokEOF:
			return toks
		case tokIllegal:
			return nil
		}
		toks = append(toks, t)
	}
}

// A printer writes a syntax tree as text, putting the comments back in.
type printer struct {
	out        bytes.Buffer
	comments   []Comment
	next       int  // index of the next comment to print
	indent     int  // depth of blocks
	cont       bool // past the first line of a statement
	bol        bool // at the beginning of an output line
	space      bool // a space is due before the next text on this line
	blockStart bool // nothing printed yet in the current block
	lastLine   int  // source line of the last thing printed
	err        error

	toks       []token   // the tokens of the source; nil when not known
	ti         int       // index in toks of the next token to print
	brackets   []bracket // brackets open in the current statement, innermost last
	lineIndent int       // indentation of the current output line
	line       int       // number of the current output line, from 0
	compact    bool      // in a range bound: no spaces around binary operators
	trailing   []trailingComment
}

// A bracket is an open '(' or '[' of the statement being printed.
type bracket struct {
	lineIndent int  // indentation of the line that holds the bracket
	align      int  // column of the first element, or -1 if a break follows the bracket
	pending    bool // nothing printed after the bracket yet
	compact    bool // the printer's compact setting outside the bracket
}

// A trailingComment is a comment printed after code on output line line.
type trailingComment struct {
	line int
	text string
}

func (p *printer) fail(format string, args ...any) {
	if p.err == nil {
		p.err = fmt.Errorf(format, args...)
	}
}

// write writes s, indenting first at the beginning of a line.
func (p *printer) write(s string) {
	if p.bol {
		ind := 2 * p.indent
		if p.cont {
			ind = p.contIndent(s)
		}
		p.out.WriteString(strings.Repeat(" ", ind))
		p.lineIndent = ind
		p.bol = false
	} else if p.space {
		p.out.WriteByte(' ')
	}
	p.space = false
	p.out.WriteString(s)
}

// contIndent returns the indentation of a continuation line of a statement
// that starts with s (see Format).
func (p *printer) contIndent(s string) int {
	if n := len(p.brackets); n > 0 {
		b := p.brackets[n-1]
		switch {
		case s == ")" || s == "]":
			return b.lineIndent
		case b.align >= 0:
			return b.align
		}
		return b.lineIndent + 4
	}
	if s == "where" {
		return 2*p.indent + 2
	}
	return 2*p.indent + 4
}

// column returns the column, counting runes from 0, at which text written now
// on the current line starts.
func (p *printer) column() int {
	b := p.out.Bytes()
	start := bytes.LastIndexByte(b, '\n') + 1
	n := utf8.RuneCount(b[start:])
	if p.space {
		n++
	}
	return n
}

// token writes s, a token of the code. It puts out the comments before the
// token, keeps a line break the author put before it where one is allowed
// (see Format), and keeps track of brackets.
func (p *printer) token(s string) {
	if p.toks != nil {
		if p.ti+1 < len(p.toks) && p.toks[p.ti].text != s && p.toks[p.ti+1].text == s &&
			(p.toks[p.ti].text == "(" || p.toks[p.ti].text == ")") {
			p.ti++ // the parentheses of a single result, -> (f32[N]), are dropped
		}
		if p.ti >= len(p.toks) || p.toks[p.ti].text != s {
			p.toks = nil // the tree does not match the source: keep no breaks
		} else {
			t := p.toks[p.ti]
			p.ti++
			p.flush(t.span.Start.Offset, true)
			if prev := p.toks[max(p.ti-2, 0)]; !p.bol && p.ti > 1 && s != "{" && s != "}" && t.span.Start.Line > prev.span.End.Line &&
				(breakAfter(prev.text) || breakBefore(s)) {
				p.newline()
				p.cont = true
			}
			p.lastLine = max(p.lastLine, t.span.End.Line)
		}
	}
	if n := len(p.brackets); n > 0 && p.brackets[n-1].pending {
		b := &p.brackets[n-1]
		b.pending = false
		if !p.bol {
			b.align = p.column()
		}
	}
	switch s {
	case "(", "[":
		p.write(s)
		p.brackets = append(p.brackets, bracket{lineIndent: p.lineIndent, align: -1, pending: true, compact: p.compact})
		p.compact = false
	case ")", "]":
		p.write(s)
		if n := len(p.brackets); n > 0 {
			p.compact = p.brackets[n-1].compact
			p.brackets = p.brackets[:n-1]
		}
	default:
		p.write(s)
	}
}

// breakAfter reports whether a line break after token s is kept.
func breakAfter(s string) bool {
	switch s {
	case ",", "(", "[", "=", "->":
		return true
	}
	return precedence(s) > 0
}

// breakBefore reports whether a line break before token s is kept.
func breakBefore(s string) bool {
	switch s {
	case ")", "]", "where", "->":
		return true
	}
	return precedence(s) > 0
}

// sp asks for a space before the next text on the line.
func (p *printer) sp() { p.space = true }

func (p *printer) newline() {
	p.out.WriteByte('\n')
	p.line++
	p.bol = true
	p.space = false
}

// seen records that the text of span sp has been printed.
func (p *printer) seen(sp Span) { p.lastLine = max(p.lastLine, sp.End.Line) }

// item starts a declaration or statement that begins at sp on a new line,
// after the comments before it.
func (p *printer) item(sp Span) {
	p.cont = false
	p.brackets = p.brackets[:0]
	p.compact = false
	p.flush(sp.Start.Offset, false)
	p.startLine(sp.Start.Line)
	p.lastLine = max(p.lastLine, sp.Start.Line)
}

// startLine ends the current output line, if any, and adds a blank line if
// the author left one before source line line.
func (p *printer) startLine(line int) {
	if !p.bol {
		p.newline()
	}
	if !p.blockStart && line > p.lastLine+1 {
		p.newline()
	}
	p.blockStart = false
}

// flush prints the comments that start before offset off. A comment on the
// line of the last thing printed goes at the end of the output line; any other
// starts a line of its own. Inside a statement (mid), the statement goes on
// on a continuation line; between items, blank lines are kept.
func (p *printer) flush(off int, mid bool) {
	for p.next < len(p.comments) && p.comments[p.next].Span.Start.Offset < off {
		c := p.comments[p.next]
		p.next++
		switch {
		case !p.bol && c.Span.Start.Line == p.lastLine:
			p.space = true
			p.write(c.Text)
			p.trailing = append(p.trailing, trailingComment{p.line, c.Text})
		case mid:
			if !p.bol {
				p.newline()
			}
			p.cont = true
			p.write(c.Text)
		default:
			p.startLine(c.Span.Start.Line)
			p.write(c.Text)
		}
		p.newline()
		p.lastLine = max(p.lastLine, c.Span.End.Line)
		if mid {
			p.cont = true
		}
	}
}

// alignComments aligns the trailing comments on consecutive lines of out that
// have the same indentation, one space after the longest code among them.
// trailing lists the lines with trailing comments, in order.
func alignComments(out []byte, trailing []trailingComment) []byte {
	if len(trailing) < 2 {
		return out
	}
	lines := bytes.SplitAfter(out, []byte("\n"))
	indentOf := func(l []byte) int { return len(l) - len(bytes.TrimLeft(l, " ")) }
	// codeWidth returns the width in runes of line i without its comment.
	codeWidth := func(tc trailingComment) int {
		l := bytes.TrimSuffix(lines[tc.line], []byte("\n"))
		return utf8.RuneCount(l) - utf8.RuneCountInString(tc.text) - 1
	}
	for i := 0; i < len(trailing); {
		j := i + 1
		for j < len(trailing) && trailing[j].line == trailing[j-1].line+1 &&
			indentOf(lines[trailing[j].line]) == indentOf(lines[trailing[i].line]) {
			j++
		}
		width := 0
		for _, tc := range trailing[i:j] {
			width = max(width, codeWidth(tc))
		}
		for _, tc := range trailing[i:j] {
			if pad := width - codeWidth(tc); pad > 0 {
				l := lines[tc.line]
				at := len(l) - len(tc.text) - 1
				if bytes.HasSuffix(l, []byte("\n")) {
					at--
				}
				lines[tc.line] = append(append(append([]byte{}, l[:at]...), bytes.Repeat([]byte(" "), pad)...), l[at:]...)
			}
		}
		i = j
	}
	return bytes.Join(lines, nil)
}

// commentBefore reports whether a comment not yet printed starts before off.
func (p *printer) commentBefore(off int) bool {
	return p.next < len(p.comments) && p.comments[p.next].Span.Start.Offset < off
}

// closing writes the closing bracket s of the node spanning sp.
func (p *printer) closing(sp Span, s string) {
	p.flush(sp.End.Offset-1, true)
	p.token(s)
}

func (p *printer) ident(id Ident) {
	p.flush(id.Span.Start.Offset, true)
	p.token(id.Name)
	p.seen(id.Span)
}

// keyword writes a keyword followed by a space.
func (p *printer) keyword(kw string) {
	p.token(kw)
	p.sp()
}

func (p *printer) decl(d Decl) {
	switch d := d.(type) {
	case *ImportDecl:
		p.keyword("import")
		p.flush(d.PathSpan.Start.Offset, true)
		p.token(`"` + d.Path + `"`)
	case *ConstDecl:
		p.constDecl(d)
	case *FnDecl:
		p.fnDecl(d)
	case *ModelDecl:
		if d == nil {
			p.fail("nil model")
			return
		}
		p.keyword("model")
		p.ident(d.Name)
		p.block(d.Body, d.Span)
	default:
		p.fail("unexpected declaration %T", d)
	}
}

func (p *printer) constDecl(d *ConstDecl) {
	if d == nil {
		p.fail("nil const declaration")
		return
	}
	p.keyword("const")
	p.ident(d.Name)
	p.sp()
	p.keyword("=")
	p.expr(d.Value, 1)
}

func (p *printer) fnDecl(d *FnDecl) {
	if d == nil {
		p.fail("nil function")
		return
	}
	p.keyword("fn")
	p.ident(d.Name)
	p.token("(")
	for i, prm := range d.Params {
		if prm == nil {
			p.fail("nil parameter of %s", d.Name.Name)
			return
		}
		if i > 0 {
			p.token(",")
			p.sp()
		}
		p.ident(prm.Name)
		if prm.Type != nil {
			p.token(":")
			p.sp()
			p.typ(prm.Type)
		}
	}
	p.token(")")
	if len(d.Results) > 0 && d.Results[0] != nil {
		p.flush(d.Results[0].Span.Start.Offset, true) // comments before '->' stay there
		p.sp()
		p.keyword("->")
		if len(d.Results) > 1 {
			p.token("(")
		}
		for i, r := range d.Results {
			if i > 0 {
				p.token(",")
				p.sp()
			}
			p.typ(r)
		}
		if len(d.Results) > 1 {
			p.token(")")
		}
	}
	if d.Expr != nil && d.Body == nil {
		p.sp()
		p.keyword("=")
		p.expr(d.Expr, 1)
		return
	}
	p.block(d.Body, d.Span)
}

func (p *printer) typ(t *TypeExpr) {
	if t == nil {
		p.fail("nil type")
		return
	}
	p.ident(t.Name)
	if t.Dims != nil {
		p.token("[")
		p.exprs(t.Dims)
		p.closing(t.Span, "]")
	}
	p.seen(t.Span)
}

// block writes the body of a model, function or loop whose span is sp.
func (p *printer) block(stmts []Stmt, sp Span) {
	p.sp()
	p.token("{")
	closeOff := sp.End.Offset - 1
	if len(stmts) == 0 && !p.commentBefore(closeOff) {
		p.token("}")
		return
	}
	p.indent++
	p.blockStart = true
	for _, s := range stmts {
		if s == nil {
			p.fail("nil statement")
			continue
		}
		p.item(s.NodeSpan())
		p.stmt(s)
		p.seen(s.NodeSpan())
	}
	p.cont = false
	p.flush(closeOff, false)
	if !p.bol {
		p.newline()
	}
	p.indent--
	p.blockStart = false
	p.token("}")
}

func (p *printer) stmt(s Stmt) {
	switch s := s.(type) {
	case *PlaceholderStmt:
		p.keyword(s.Kind)
		p.ident(s.Name)
		p.token(":")
		p.sp()
		p.typ(s.Type)
	case *OutputStmt:
		p.keyword("output")
		for i, it := range s.Items {
			if i > 0 {
				p.token(",")
				p.sp()
			}
			p.ident(it.Name)
			if it.Value != nil {
				p.sp()
				p.keyword("=")
				p.expr(it.Value, 1)
			}
		}
	case *ForStmt:
		p.keyword("for")
		p.ident(s.Var)
		p.sp()
		p.keyword("in")
		p.rangeExpr(s.Range)
		p.block(s.Body, s.Span)
	case *ReturnStmt:
		p.keyword("return")
		p.exprs(s.Values)
	case *ConstDecl:
		p.constDecl(s)
	case *AssignStmt:
		p.assign(s)
	default:
		p.fail("unexpected statement %T", s)
	}
}

func (p *printer) assign(s *AssignStmt) {
	if s.Update {
		p.keyword("update")
	}
	for i, t := range s.Targets {
		if i > 0 {
			p.token(",")
			p.sp()
		}
		p.ident(t.Name)
		if t.Indices != nil {
			p.token("[")
			p.exprs(t.Indices)
			p.closing(t.Span, "]")
		}
	}
	p.sp()
	p.keyword("=")
	p.expr(s.Value, 1)
	for i, w := range s.Where {
		if i == 0 {
			p.flush(w.Var.Span.Start.Offset, true) // comments before 'where' stay there
			p.sp()
			p.keyword("where")
		} else {
			p.token(",")
			p.sp()
		}
		p.ident(w.Var)
		p.sp()
		p.keyword("in")
		p.rangeExpr(w.Range)
	}
}

func (p *printer) rangeExpr(r *RangeExpr) {
	if r == nil {
		p.fail("nil range")
		return
	}
	compact := p.compact
	p.compact = true
	p.expr(r.Lo, 1)
	p.token("..")
	p.expr(r.Hi, 1)
	p.compact = compact
}

func (p *printer) exprs(list []Expr) {
	for i, e := range list {
		if i > 0 {
			p.token(",")
			p.sp()
		}
		p.expr(e, 1)
	}
}

// Precedences of the expressions that are not binary operators.
const (
	unaryPrec   = 6
	postfixPrec = 8 // above powPrec
)

func exprPrec(e Expr) int {
	switch e := e.(type) {
	case *Binary:
		return precedence(e.Op)
	case *Unary:
		return unaryPrec
	case *RangeExpr:
		return 0
	}
	return postfixPrec
}

// expr writes e, in parentheses if it binds less tightly than prec.
func (p *printer) expr(e Expr, prec int) {
	if e == nil {
		p.fail("nil expression")
		return
	}
	sp := e.NodeSpan()
	p.flush(sp.Start.Offset, true)
	paren := exprPrec(e) < prec
	if paren {
		p.token("(")
	}
	switch e := e.(type) {
	case *Name:
		p.token(e.Name)
	case *Number:
		text := e.Text
		if text == "" {
			text = strconv.FormatFloat(e.Value, 'g', -1, 64)
		}
		p.token(text)
	case *Unary:
		p.token(e.Op)
		p.expr(e.X, unaryPrec)
	case *Binary:
		q := precedence(e.Op)
		if q == 0 {
			p.fail("unknown binary operator %q", e.Op)
			return
		}
		left, right := q, q+1
		switch q {
		case cmpPrec:
			left++ // comparisons do not chain
		case powPrec:
			left, right = postfixPrec, unaryPrec // (-a) ** b, a ** -b, a ** b ** c
		}
		p.expr(e.X, left)
		if _, unary := e.Y.(*Unary); p.compact && !unary { // not 0..N--1
			p.token(e.Op)
		} else {
			p.sp()
			p.keyword(e.Op)
		}
		p.expr(e.Y, right)
	case *Call:
		p.expr(e.Fun, postfixPrec)
		p.token("(")
		p.exprs(e.Args)
		p.closing(sp, ")")
	case *IndexExpr:
		p.expr(e.X, postfixPrec)
		p.token("[")
		p.exprs(e.Indices)
		p.closing(sp, "]")
	case *Reduce:
		p.ident(e.Op)
		p.token("[")
		for i, a := range e.Axes {
			if i > 0 {
				p.token(",")
				p.sp()
			}
			p.ident(a)
		}
		p.token("]")
		p.token("(")
		p.expr(e.Body, 1)
		p.closing(sp, ")")
	case *Paren:
		p.token("(")
		p.expr(e.X, 1)
		p.closing(sp, ")")
	case *ListExpr:
		p.token("[")
		p.exprs(e.Elems)
		p.closing(sp, "]")
	case *Comprehension:
		p.token("[")
		p.expr(e.Elem, 1)
		p.sp()
		p.keyword("for")
		p.ident(e.Var)
		p.sp()
		p.keyword("in")
		p.rangeExpr(e.Range)
		p.closing(sp, "]")
	case *RangeExpr:
		p.rangeExpr(e)
	default:
		p.fail("unexpected expression %T", e)
	}
	if paren {
		p.token(")")
	}
	p.seen(sp)
}
