package syntax

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

// Error is a syntax error: what was found where, and what was expected.
type Error struct {
	File string
	Span Span
	Msg  string // e.g. `unexpected "}"`
	Hint string // optional advice
}

// Error formats the error as file:line:col: message.
func (e *Error) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Span.Start.Line, e.Span.Start.Col, e.Msg)
}

// The participle parser is built once, on first use; it is immutable after.
var grammarParser = sync.OnceValue(newParser)

// Parse parses src, the contents of the file named filename. A syntax error is
// returned as *Error; the language stops at the first one.
func Parse(filename string, src []byte) (*File, error) {
	if !utf8.Valid(src) {
		off := invalidUTF8Offset(src)
		p := posAt(src, off)
		return nil, &Error{File: filename, Span: Span{p, p}, Msg: "the file is not valid UTF-8 text",
			Hint: fmt.Sprintf("byte 0x%02x at offset %d is not part of a UTF-8 character", src[off], off)}
	}
	g, err := grammarParser().ParseBytes(filename, src)
	if err != nil {
		return nil, convertError(filename, src, err)
	}
	f := &File{Name: filename, Span: span(g.Pos, g.EndPos), Comments: scanComments(src)}
	for _, d := range g.Decls {
		f.Decls = append(f.Decls, convDecl(d))
	}
	f.Span = Span{Start: Pos{Offset: 0, Line: 1, Col: 1}, End: posAt(src, len(src))}
	return f, nil
}

func invalidUTF8Offset(src []byte) int {
	for i := 0; i < len(src); {
		r, n := utf8.DecodeRune(src[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return 0
}

// posAt returns the position of byte offset off in src.
func posAt(src []byte, off int) Pos {
	line, col := 1, 1
	for i := 0; i < off && i < len(src); {
		r, n := utf8.DecodeRune(src[i:])
		if r == '\n' {
			line++
			col = 1
		} else {
			col++
		}
		i += n
	}
	return Pos{Offset: off, Line: line, Col: col}
}

func convertError(filename string, src []byte, err error) *Error {
	var perr participle.Error
	if !errors.As(err, &perr) {
		return &Error{File: filename, Msg: err.Error()}
	}
	lp := perr.Position()
	start := Pos{Offset: lp.Offset, Line: lp.Line, Col: lp.Column}
	if start.Line == 0 {
		start = posAt(src, len(src))
	}
	e := &Error{File: filename, Span: Span{start, start}}
	var ute *participle.UnexpectedTokenError
	var lerr *lexer.Error
	switch {
	case errors.As(err, &ute):
		tok := ute.Unexpected
		if tok.EOF() {
			e.Msg = "unexpected end of file"
			e.Hint = "a '}', ')' or ']' may be missing"
		} else {
			e.Msg = fmt.Sprintf("unexpected %s", describeToken(tok.Value))
			e.Span.End = advance(start, tok.Value)
		}
		if exp := expectation(ute); exp != "" {
			e.Msg += ", expected " + exp
		}
		e.Hint = hintFor(tok, e.Hint)
	case errors.As(err, &lerr):
		r, _ := utf8.DecodeRune(src[min(start.Offset, len(src)):])
		e.Msg = fmt.Sprintf("unexpected character %q", r)
		e.Span.End = Pos{Offset: start.Offset + utf8.RuneLen(r), Line: start.Line, Col: start.Col + 1}
		switch r {
		case '"':
			e.Hint = "a string must end on the line it starts"
		case '\'':
			e.Hint = "strings use double quotes"
		case ';':
			e.Hint = "statements end at the end of the line; no ';' is needed"
		default:
			e.Hint = "this character is not part of the .te language"
		}
	default:
		e.Msg = perr.Message()
	}
	return e
}

func describeToken(v string) string {
	if v == "" {
		return "end of file"
	}
	if IsKeyword(v) {
		return fmt.Sprintf("keyword %q", v)
	}
	if len(v) > 40 {
		v = v[:37] + "..."
	}
	return strconv.Quote(v)
}

// expectation turns participle's expected-node text into plain words.
func expectation(ute *participle.UnexpectedTokenError) string {
	msg := ute.Message()
	i := strings.Index(msg, "(expected ")
	if i < 0 {
		return ""
	}
	exp := strings.TrimSuffix(msg[i+len("(expected "):], ")")
	switch {
	case strings.HasPrefix(exp, "<ident>"), exp == "Ident":
		return "a name"
	case strings.Contains(exp, "gExpr"), strings.Contains(exp, "gAnd"), strings.Contains(exp, "gPrimary"),
		strings.Contains(exp, "gUnary"), strings.Contains(exp, "gPostfix"):
		return "an expression"
	case strings.Contains(exp, "gStmt"), strings.Contains(exp, "gPlaceholder"):
		return "a statement or '}'"
	case strings.Contains(exp, "gDecl"), strings.Contains(exp, "gImport"):
		return "'import', 'const', 'fn' or 'model'"
	case strings.Contains(exp, "gType"):
		return "a type such as f32[N, D]"
	case strings.Contains(exp, "gRange"):
		return "a range such as 0..N"
	}
	exp = strings.NewReplacer("<ident>", "a name", "<int>", "an integer", "<float>", "a number", "<string>", "a string").Replace(exp)
	return exp
}

func hintFor(tok lexer.Token, hint string) string {
	switch tok.Value {
	case ";":
		return "statements end at the end of the line; no ';' is needed"
	case "let", "var":
		return "bind a name with 'name = expr'; no '" + tok.Value + "' is needed"
	case "def", "func", "function":
		return "functions are declared with 'fn'"
	}
	if IsKeyword(tok.Value) {
		return fmt.Sprintf("'%s' is a reserved word and cannot be used as a name", tok.Value)
	}
	return hint
}

// advance returns the position just after text v starting at p.
func advance(p Pos, v string) Pos {
	for _, r := range v {
		p.Offset += utf8.RuneLen(r)
		if r == '\n' {
			p.Line++
			p.Col = 1
		} else {
			p.Col++
		}
	}
	return p
}

// scanComments returns every comment in src, in order. It is a separate pass
// because the parser elides comments; the formatter puts them back.
func scanComments(src []byte) []Comment {
	var cs []Comment
	line, col := 1, 1
	inString := false
	for i := 0; i < len(src); {
		r, n := utf8.DecodeRune(src[i:])
		switch {
		case r == '\n':
			line++
			col = 1
			inString = false
			i += n
			continue
		case r == '"':
			inString = !inString
		case r == '#' && !inString:
			j := i
			for j < len(src) && src[j] != '\n' {
				j++
			}
			text := string(src[i:j])
			start := Pos{Offset: i, Line: line, Col: col}
			cs = append(cs, Comment{Text: strings.TrimRight(text, " \t\r"), Span: Span{start, advance(start, text)}})
			col += utf8.RuneCount(src[i:j])
			i = j
			continue
		}
		col++
		i += n
	}
	return cs
}

func pos(p lexer.Position) Pos { return Pos{Offset: p.Offset, Line: p.Line, Col: p.Column} }

func span(a, b lexer.Position) Span { return Span{pos(a), pos(b)} }

func ident(g *gIdent) Ident { return Ident{Name: g.Name, Span: span(g.Pos, g.EndPos)} }

func convDecl(d *gDecl) Decl {
	switch {
	case d.Import != nil:
		path := strings.Trim(d.Import.Path, `"`)
		s := span(d.Import.Pos, d.Import.EndPos)
		ps := Span{Start: Pos{Offset: s.End.Offset - len(d.Import.Path), Line: s.End.Line, Col: s.End.Col - utf8.RuneCountInString(d.Import.Path)}, End: s.End}
		return &ImportDecl{Path: path, PathSpan: ps, Span: s}
	case d.Const != nil:
		return convConst(d.Const)
	case d.Fn != nil:
		return convFn(d.Fn)
	default:
		return &ModelDecl{Name: ident(d.Model.Name), Body: convBlock(d.Model.Body), Span: span(d.Model.Pos, d.Model.EndPos)}
	}
}

func convConst(c *gConst) *ConstDecl {
	return &ConstDecl{Name: ident(c.Name), Value: convExpr(c.Value), Span: span(c.Pos, c.EndPos)}
}

func convFn(g *gFn) *FnDecl {
	fn := &FnDecl{Name: ident(g.Name), Span: span(g.Pos, g.EndPos)}
	for _, p := range g.Params {
		param := &Param{Name: ident(p.Name), Span: span(p.Pos, p.EndPos)}
		if p.Type != nil {
			param.Type = convType(p.Type)
		}
		fn.Params = append(fn.Params, param)
	}
	for _, r := range g.Results {
		fn.Results = append(fn.Results, convType(r))
	}
	if g.Expr != nil {
		fn.Expr = convExpr(g.Expr)
	} else {
		fn.Body = convBlock(g.Body)
		if fn.Body == nil {
			fn.Body = []Stmt{}
		}
	}
	return fn
}

func convType(g *gType) *TypeExpr {
	t := &TypeExpr{Name: ident(g.Name), Span: span(g.Pos, g.EndPos)}
	if g.Dims != nil {
		t.Dims = convExprs(g.Dims.List)
		if t.Dims == nil {
			t.Dims = []Expr{}
		}
	}
	return t
}

func convBlock(b *gBlock) []Stmt {
	var ss []Stmt
	for _, s := range b.Stmts {
		ss = append(ss, convStmt(s))
	}
	return ss
}

func convStmt(s *gStmt) Stmt {
	switch {
	case s.Placeholder != nil:
		p := s.Placeholder
		return &PlaceholderStmt{Kind: p.Kind, Name: ident(p.Name), Type: convType(p.Type), Span: span(p.Pos, p.EndPos)}
	case s.Output != nil:
		o := &OutputStmt{Span: span(s.Output.Pos, s.Output.EndPos)}
		for _, it := range s.Output.Items {
			item := &OutputItem{Name: ident(it.Name), Span: span(it.Pos, it.EndPos)}
			if it.Value != nil {
				item.Value = convExpr(it.Value)
			}
			o.Items = append(o.Items, item)
		}
		return o
	case s.For != nil:
		f := s.For
		return &ForStmt{Var: ident(f.Var), Range: convRange(f.Range), Body: convBlock(f.Body), Span: span(f.Pos, f.EndPos)}
	case s.Return != nil:
		return &ReturnStmt{Values: convExprs(s.Return.Values), Span: span(s.Return.Pos, s.Return.EndPos)}
	case s.Const != nil:
		return convConst(s.Const)
	default:
		a := s.Assign
		st := &AssignStmt{Value: convExpr(a.Value), Span: span(a.Pos, a.EndPos)}
		for _, t := range a.Targets {
			tg := &Target{Name: ident(t.Name), Span: span(t.Pos, t.EndPos)}
			if t.Indices != nil {
				tg.Indices = convExprs(t.Indices.List)
				if tg.Indices == nil {
					tg.Indices = []Expr{}
				}
			}
			st.Targets = append(st.Targets, tg)
		}
		for _, w := range a.Where {
			st.Where = append(st.Where, &WhereClause{Var: ident(w.Var), Range: convRange(w.Range), Span: span(w.Pos, w.EndPos)})
		}
		return st
	}
}

func convRange(r *gRange) *RangeExpr {
	return &RangeExpr{Lo: convExpr(r.Lo), Hi: convExpr(r.Hi), Span: span(r.Pos, r.EndPos)}
}

func convExprs(gs []*gExpr) []Expr {
	var es []Expr
	for _, g := range gs {
		es = append(es, convExpr(g))
	}
	return es
}

func binary(op string, x, y Expr) Expr {
	return &Binary{Op: op, X: x, Y: y, Span: Span{x.NodeSpan().Start, y.NodeSpan().End}}
}

func convExpr(g *gExpr) Expr {
	x := convAnd(g.Left)
	for _, r := range g.Rest {
		x = binary(r.Op, x, convAnd(r.Right))
	}
	return x
}

func convAnd(g *gAnd) Expr {
	x := convCmp(g.Left)
	for _, r := range g.Rest {
		x = binary(r.Op, x, convCmp(r.Right))
	}
	return x
}

func convCmp(g *gCmp) Expr {
	x := convAdd(g.Left)
	if g.Right != nil {
		x = binary(g.Op, x, convAdd(g.Right))
	}
	return x
}

func convAdd(g *gAdd) Expr {
	x := convMul(g.Left)
	for _, r := range g.Rest {
		x = binary(r.Op, x, convMul(r.Right))
	}
	return x
}

func convMul(g *gMul) Expr {
	x := convUnary(g.Left)
	for _, r := range g.Rest {
		x = binary(r.Op, x, convUnary(r.Right))
	}
	return x
}

func convUnary(g *gUnary) Expr {
	if g.Postfix != nil {
		return convPostfix(g.Postfix)
	}
	return &Unary{Op: g.Op, X: convUnary(g.X), Span: span(g.Pos, g.EndPos)}
}

func convPostfix(g *gPostfix) Expr {
	x := convPrimary(g.Primary)
	start := x.NodeSpan().Start
	suffix := g.Suffix
	// op[axes](body) is a reduction when op is sum/max/min/prod, every axis is a
	// plain name and there is exactly one body.
	if n, ok := x.(*Name); ok && IsReduceOp(n.Name) && len(suffix) >= 2 &&
		suffix[0].Index != nil && suffix[1].Call != nil && len(suffix[1].Call.List) == 1 {
		if axes, ok := plainNames(convExprs(suffix[0].Index.List)); ok && len(axes) > 0 {
			x = &Reduce{Op: n.Ident, Axes: axes, Body: convExpr(suffix[1].Call.List[0]), Span: Span{start, pos(suffix[1].EndPos)}}
			suffix = suffix[2:]
		}
	}
	for _, s := range suffix {
		sp := Span{start, pos(s.EndPos)}
		if s.Index != nil {
			idx := convExprs(s.Index.List)
			if idx == nil {
				idx = []Expr{}
			}
			x = &IndexExpr{X: x, Indices: idx, Span: sp}
		} else {
			x = &Call{Fun: x, Args: convExprs(s.Call.List), Span: sp}
		}
	}
	return x
}

func plainNames(es []Expr) ([]Ident, bool) {
	var ids []Ident
	for _, e := range es {
		n, ok := e.(*Name)
		if !ok {
			return nil, false
		}
		ids = append(ids, n.Ident)
	}
	return ids, true
}

func convPrimary(g *gPrimary) Expr {
	sp := span(g.Pos, g.EndPos)
	switch {
	case g.Number != nil:
		text := *g.Number
		// The lexer admits only well-formed numbers; one too large gives ±Inf,
		// which the checker reports.
		v, _ := strconv.ParseFloat(text, 64)
		isInt := !strings.ContainsAny(text, ".eE")
		return &Number{Text: text, Value: v, IsInt: isInt, Span: sp}
	case g.Ident != nil:
		return &Name{Ident: ident(g.Ident)}
	case g.Paren != nil:
		return &Paren{X: convExpr(g.Paren), Span: sp}
	default:
		l := g.List
		if l.First == nil {
			return &ListExpr{Elems: []Expr{}, Span: sp}
		}
		first := convExpr(l.First)
		if l.Comp != nil {
			return &Comprehension{Elem: first, Var: ident(l.Comp.Var), Range: convRange(l.Comp.Range), Span: sp}
		}
		return &ListExpr{Elems: append([]Expr{first}, convExprs(l.Rest)...), Span: sp}
	}
}
