package syntax

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Format returns the canonical text of f, which was parsed from src:
//
//   - two spaces of indentation per block, one statement per line, and a
//     block with nothing in it written {};
//   - one space around binary operators, '=', '->' and keywords, none around
//     '..' (0..N), "a, b" after commas, nothing inside brackets;
//   - blank lines kept where the author left them between declarations,
//     statements and comments, at most one in a row, none at the start or
//     end of a block;
//   - parentheses exactly where the author wrote them (Paren nodes), plus any
//     that a tree built by hand needs to keep its meaning;
//   - every comment kept: one on a line of its own stays on a line of its own
//     before the code that follows it; one after code stays at the end of
//     that line. A comment inside a statement ends the line there and the
//     statement continues on the next line, indented four more spaces.
//
// Lines are not wrapped. Formatting is idempotent, and the result parses to
// the same tree as f, apart from positions. Format reports an error if the
// tree holds a nil or unknown node, or if src does not match it.
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
	p := &printer{comments: f.Comments, bol: true, blockStart: true}
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
	return p.out.Bytes(), nil
}

// A printer writes a syntax tree as text, putting the comments back in.
type printer struct {
	out        bytes.Buffer
	comments   []Comment
	next       int  // index of the next comment to print
	indent     int  // depth of blocks
	cont       bool // on a continuation line of a statement broken by a comment
	bol        bool // at the beginning of an output line
	space      bool // a space is due before the next text on this line
	blockStart bool // nothing printed yet in the current block
	lastLine   int  // source line of the last thing printed
	err        error
}

func (p *printer) fail(format string, args ...any) {
	if p.err == nil {
		p.err = fmt.Errorf(format, args...)
	}
}

// write writes s, indenting first at the beginning of a line.
func (p *printer) write(s string) {
	if p.bol {
		p.out.WriteString(strings.Repeat("  ", p.indent))
		if p.cont {
			p.out.WriteString("    ")
		}
		p.bol = false
	} else if p.space {
		p.out.WriteByte(' ')
	}
	p.space = false
	p.out.WriteString(s)
}

// sp asks for a space before the next text on the line.
func (p *printer) sp() { p.space = true }

func (p *printer) newline() {
	p.out.WriteByte('\n')
	p.bol = true
	p.space = false
}

// seen records that the text of span sp has been printed.
func (p *printer) seen(sp Span) { p.lastLine = max(p.lastLine, sp.End.Line) }

// item starts a declaration or statement that begins at sp on a new line,
// after the comments before it.
func (p *printer) item(sp Span) {
	p.cont = false
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
		p.out.WriteByte('\n')
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
		case mid:
			if !p.bol {
				p.newline()
			}
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

// commentBefore reports whether a comment not yet printed starts before off.
func (p *printer) commentBefore(off int) bool {
	return p.next < len(p.comments) && p.comments[p.next].Span.Start.Offset < off
}

// closing writes the closing bracket s of the node spanning sp.
func (p *printer) closing(sp Span, s string) {
	p.flush(sp.End.Offset-1, true)
	p.write(s)
}

func (p *printer) ident(id Ident) {
	p.flush(id.Span.Start.Offset, true)
	p.write(id.Name)
	p.seen(id.Span)
}

// keyword writes a keyword followed by a space.
func (p *printer) keyword(kw string) {
	p.write(kw)
	p.sp()
}

func (p *printer) decl(d Decl) {
	switch d := d.(type) {
	case *ImportDecl:
		p.keyword("import")
		p.flush(d.PathSpan.Start.Offset, true)
		p.write(`"` + d.Path + `"`)
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
	p.write("(")
	for i, prm := range d.Params {
		if prm == nil {
			p.fail("nil parameter of %s", d.Name.Name)
			return
		}
		if i > 0 {
			p.write(",")
			p.sp()
		}
		p.ident(prm.Name)
		if prm.Type != nil {
			p.write(":")
			p.sp()
			p.typ(prm.Type)
		}
	}
	p.write(")")
	if len(d.Results) > 0 && d.Results[0] != nil {
		p.flush(d.Results[0].Span.Start.Offset, true) // comments before '->' stay there
		p.sp()
		p.keyword("->")
		if len(d.Results) > 1 {
			p.write("(")
		}
		for i, r := range d.Results {
			if i > 0 {
				p.write(",")
				p.sp()
			}
			p.typ(r)
		}
		if len(d.Results) > 1 {
			p.write(")")
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
		p.write("[")
		p.exprs(t.Dims)
		p.closing(t.Span, "]")
	}
	p.seen(t.Span)
}

// block writes the body of a model, function or loop whose span is sp.
func (p *printer) block(stmts []Stmt, sp Span) {
	p.sp()
	p.write("{")
	closeOff := sp.End.Offset - 1
	if len(stmts) == 0 && !p.commentBefore(closeOff) {
		p.write("}")
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
	p.write("}")
}

func (p *printer) stmt(s Stmt) {
	switch s := s.(type) {
	case *PlaceholderStmt:
		p.keyword(s.Kind)
		p.ident(s.Name)
		p.write(":")
		p.sp()
		p.typ(s.Type)
	case *OutputStmt:
		p.keyword("output")
		for i, it := range s.Items {
			if i > 0 {
				p.write(",")
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
	for i, t := range s.Targets {
		if i > 0 {
			p.write(",")
			p.sp()
		}
		p.ident(t.Name)
		if t.Indices != nil {
			p.write("[")
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
			p.write(",")
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
	p.expr(r.Lo, 1)
	p.write("..")
	p.expr(r.Hi, 1)
}

func (p *printer) exprs(list []Expr) {
	for i, e := range list {
		if i > 0 {
			p.write(",")
			p.sp()
		}
		p.expr(e, 1)
	}
}

// Precedences of the expressions that are not binary operators.
const (
	unaryPrec   = 6
	postfixPrec = 7
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
		p.write("(")
	}
	switch e := e.(type) {
	case *Name:
		p.write(e.Name)
	case *Number:
		text := e.Text
		if text == "" {
			text = strconv.FormatFloat(e.Value, 'g', -1, 64)
		}
		p.write(text)
	case *Unary:
		p.write(e.Op)
		p.expr(e.X, unaryPrec)
	case *Binary:
		q := precedence(e.Op)
		if q == 0 {
			p.fail("unknown binary operator %q", e.Op)
			return
		}
		left := q
		if q == cmpPrec {
			left++ // comparisons do not chain
		}
		p.expr(e.X, left)
		p.sp()
		p.keyword(e.Op)
		p.expr(e.Y, q+1)
	case *Call:
		p.expr(e.Fun, postfixPrec)
		p.write("(")
		p.exprs(e.Args)
		p.closing(sp, ")")
	case *IndexExpr:
		p.expr(e.X, postfixPrec)
		p.write("[")
		p.exprs(e.Indices)
		p.closing(sp, "]")
	case *Reduce:
		p.ident(e.Op)
		p.write("[")
		for i, a := range e.Axes {
			if i > 0 {
				p.write(",")
				p.sp()
			}
			p.ident(a)
		}
		p.write("](")
		p.expr(e.Body, 1)
		p.closing(sp, ")")
	case *Paren:
		p.write("(")
		p.expr(e.X, 1)
		p.closing(sp, ")")
	case *ListExpr:
		p.write("[")
		p.exprs(e.Elems)
		p.closing(sp, "]")
	case *Comprehension:
		p.write("[")
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
		p.write(")")
	}
	p.seen(sp)
}
