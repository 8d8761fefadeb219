package syntax

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Error is a syntax error: what was found where, and what was expected.
type Error struct {
	File  string
	Span  Span
	Msg   string // e.g. `unexpected "}", expected an expression`
	Hint  string // optional advice
	Notes []Note // other places that explain the error, such as an unclosed '{'
}

// Note points at a second place in the file that helps explain an Error.
type Note struct {
	Span Span
	Msg  string // e.g. "the '{' is opened here"
}

// Error formats the error as file:line:col: message.
func (e *Error) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Span.Start.Line, e.Span.Start.Col, e.Msg)
}

// MaxNesting is the deepest nesting of expressions and blocks that Parse
// accepts. It keeps the parser and every later recursive pass within a
// modest stack, and no real program comes near it.
const MaxNesting = 1000

// Parse parses src, the contents of the file named filename. A syntax error is
// returned as *Error; the parser stops at the first one. Parse never panics:
// an internal failure is returned as an *Error too.
//
// The grammar, loosest binding first (newlines are insignificant, except that
// two statements may not share a line):
//
//	file      = { import | const | fn | model }
//	import    = "import" STRING
//	const     = "const" NAME "=" expr
//	fn        = "fn" NAME "(" [ param { "," param } ] ")" [ "->" results ] ( "=" expr | block )
//	param     = NAME [ ":" type ]
//	results   = type | "(" type { "," type } ")"
//	type      = NAME [ "[" [ expr { "," expr } ] "]" ]
//	model     = "model" NAME block
//	block     = "{" { stmt } "}"
//	stmt      = ( "input" | "param" ) NAME ":" type
//	          | "output" NAME [ "=" expr ] { "," NAME [ "=" expr ] }
//	          | "for" NAME "in" range block
//	          | "return" expr { "," expr }
//	          | const
//	          | "update" NAME "[" expr { "," expr } "]" "=" expr [ "where" ... ]
//	          | target { "," target } "=" expr [ "where" NAME "in" range { "," NAME "in" range } ]
//	target    = NAME [ "[" [ expr { "," expr } ] "]" ]
//	range     = expr ".." expr
//	expr      = and { "||" and }
//	and       = cmp { "&&" cmp }
//	cmp       = add [ ( "==" | "!=" | "<" | "<=" | ">" | ">=" ) add ]
//	add       = mul { ( "+" | "-" ) mul }
//	mul       = unary { ( "*" | "/" | "%" ) unary }
//	unary     = ( "-" | "!" ) unary | power
//	power     = postfix [ "**" unary ]
//	postfix   = primary { "[" [ exprs ] "]" | "(" [ exprs ] ")" }
//	primary   = NUMBER | NAME | "(" expr ")" | "[" [ expr ( "for" NAME "in" range | { "," expr } ) ] "]"
//
// A postfix NAME[a, b](body) with NAME one of sum, max, min, prod, plain names
// as axes and exactly one body is a reduction (*Reduce).
func Parse(filename string, src []byte) (f *File, err error) {
	if !utf8.Valid(src) {
		off := invalidUTF8Offset(src)
		p := posAt(src, off)
		return nil, &Error{File: filename, Span: Span{p, Pos{off + 1, p.Line, p.Col + 1}}, Msg: "the file is not valid UTF-8 text",
			Hint: fmt.Sprintf("byte 0x%02x at offset %d is not part of a UTF-8 character", src[off], off)}
	}
	p := &parser{file: filename, src: src, lex: newLexer(src)}
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		f = nil
		if b, ok := r.(bailout); ok {
			err = b.err
			return
		}
		err = &Error{File: filename, Span: p.tok.span, Msg: fmt.Sprintf("internal error: the parser failed here: %v", r),
			Hint: "this is a bug in tec; please report it together with the input"}
	}()
	p.next()
	return p.parseFile(), nil
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

// bailout carries a syntax error up the parser's stack to Parse.
type bailout struct{ err *Error }

// A parser is a recursive-descent parser with one token of lookahead.
type parser struct {
	file  string
	src   []byte
	lex   *lexer
	tok   token   // the current token
	prev  token   // the token before it
	open  []token // brackets opened and not yet closed, innermost last
	depth int     // nesting of expressions and blocks
}

func (p *parser) next() {
	p.prev = p.tok
	p.tok = p.lex.next()
}

// got consumes the current token if it is the operator or keyword s.
func (p *parser) got(s string) bool {
	if p.tok.is(s) {
		p.next()
		return true
	}
	return false
}

// end returns the end of the last token consumed.
func (p *parser) end() Pos { return p.prev.span.End }

func (p *parser) fail(sp Span, msg, hint string, notes ...Note) {
	panic(bailout{&Error{File: p.file, Span: sp, Msg: msg, Hint: hint, Notes: notes}})
}

// errorExpected reports the current token, which is not what the parser
// wanted: expected says what it wanted, in words. An empty hint is replaced by
// general advice about the token, if there is any.
func (p *parser) errorExpected(expected, hint string) {
	t := p.tok
	if t.kind == tokEOF && p.prev.span.End.Line > 0 {
		// Point just after the last token rather than at the very end of
		// the file, which is often an empty line.
		t.span = Span{p.prev.span.End, p.prev.span.End}
	}
	switch {
	case t.kind == tokIllegal:
		p.fail(t.span, t.msg, t.hint)
	case t.kind == tokEOF && len(p.open) > 0:
		o := p.open[len(p.open)-1]
		p.fail(t.span, fmt.Sprintf("unexpected end of file: the '%s' at %s is never closed", o.text, o.span.Start),
			fmt.Sprintf("add the missing '%s'", closerOf(o.text)),
			Note{o.span, fmt.Sprintf("the '%s' is opened here", o.text)})
	}
	if hint == "" {
		hint = p.hintFor(t)
	}
	p.fail(t.span, fmt.Sprintf("unexpected %s, expected %s", t.describe(), expected), hint)
}

// hintFor returns general advice about an unexpected token t.
func (p *parser) hintFor(t token) string {
	switch {
	case t.is(".."):
		return "a range lo..hi may only follow 'in', in a 'for' loop, a 'where' clause or a list comprehension"
	case t.is("/") && t.span.End.Offset < len(p.src) && strings.IndexByte("/*", p.src[t.span.End.Offset]) >= 0,
		(t.is("/") || t.is("*")) && p.prev.is("/") && p.prev.span.End.Offset == t.span.Start.Offset:
		return "comments start with '#' and run to the end of the line"
	case t.kind == tokIdent && (t.text == "let" || t.text == "var"):
		return fmt.Sprintf("bind a name with 'name = expr'; no '%s' is needed", t.text)
	case t.kind == tokIdent && (t.text == "def" || t.text == "func" || t.text == "function"):
		return "functions are declared with 'fn'"
	case t.is(":") && len(p.open) > 0 && p.open[len(p.open)-1].is("["):
		return "there are no slices: give each dimension an index variable and define the result element-wise (y[i] = x[i, 0] for x[:, 0]); slice1 ... slice4 take a range start..stop along one axis"
	}
	return ""
}

func closerOf(open string) string {
	switch open {
	case "(":
		return ")"
	case "[":
		return "]"
	}
	return "}"
}

// openBracket consumes the current token, an opening bracket.
func (p *parser) openBracket() token {
	t := p.tok
	p.next()
	p.open = append(p.open, t)
	return t
}

// closeBracket consumes the bracket that closes open and returns its end. If
// the current token is something else, it reports an error; alternatives lists
// what else would have been acceptable there, such as "',' or ')'".
func (p *parser) closeBracket(open token, alternatives string) Pos {
	c := closerOf(open.text)
	if !p.tok.is(c) {
		if alternatives == "" {
			alternatives = "'" + c + "'"
		}
		p.errorExpected(fmt.Sprintf("%s to close the '%s' at %s", alternatives, open.text, open.span.Start), "")
	}
	p.next()
	p.open = p.open[:len(p.open)-1]
	return p.end()
}

// enter and leave bracket a level of nesting.
func (p *parser) enter() {
	p.depth++
	if p.depth > MaxNesting {
		p.fail(p.tok.span, fmt.Sprintf("the code is nested too deeply (more than %d levels)", MaxNesting),
			"split it into smaller pieces: named tensors or functions")
	}
}

func (p *parser) leave() { p.depth-- }

// name consumes a name; expected describes it for the error message, such as
// "a name after 'fn'".
func (p *parser) name(expected string) Ident {
	t := p.tok
	switch {
	case t.kind == tokIdent:
		p.next()
		return Ident{Name: t.text, Span: t.span}
	case t.kind == tokKeyword:
		p.errorExpected(expected, fmt.Sprintf("'%s' is a reserved word and cannot be used as a name", t.text))
	case t.is("=") && p.prev.kind == tokKeyword:
		p.errorExpected(expected, fmt.Sprintf("'%s' is a reserved word and cannot be used as a name", p.prev.text))
	}
	p.errorExpected(expected, "")
	panic("unreachable")
}

func (p *parser) parseFile() *File {
	f := &File{Name: p.file}
	for p.tok.kind != tokEOF {
		f.Decls = append(f.Decls, p.decl())
	}
	f.Comments = p.lex.comments
	f.Span = Span{Pos{Offset: 0, Line: 1, Col: 1}, p.tok.span.End}
	return f
}

func (p *parser) decl() Decl {
	t := p.tok
	switch {
	case t.is("import"):
		return p.importDecl()
	case t.is("const"):
		return p.constDecl()
	case t.is("fn"):
		return p.fnDecl()
	case t.is("model"):
		return p.modelDecl()
	}
	var hint string
	switch {
	case t.is("input"), t.is("param"), t.is("output"):
		hint = fmt.Sprintf("'%s' statements belong inside a model { ... }", t.text)
	case t.is("for"), t.is("return"):
		hint = fmt.Sprintf("'%s' statements belong inside a model or function body", t.text)
	case t.kind == tokIdent && !strings.Contains("let var def func function", t.text):
		if kw := misspelledDecl(t.text); kw != "" {
			hint = fmt.Sprintf("did you mean '%s'?", kw)
		} else {
			hint = "statements belong inside a model or function body"
		}
	case t.is("}"):
		hint = "this '}' closes nothing; is there one '}' too many?"
	}
	p.errorExpected("'import', 'const', 'fn' or 'model'", hint)
	panic("unreachable")
}

// misspelledDecl returns the declaration keyword that s is one edit away from,
// or "".
func misspelledDecl(s string) string {
	for _, kw := range []string{"import", "const", "fn", "model"} {
		if len(s) > 1 && oneEditApart(s, kw) {
			return kw
		}
	}
	return ""
}

// oneEditApart reports whether a and b (ASCII) differ by one insertion,
// deletion, substitution or transposition of adjacent characters.
func oneEditApart(a, b string) bool {
	if a == b {
		return false
	}
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	switch {
	case len(a) == len(b):
		return a[i+1:] == b[i+1:] ||
			i+1 < len(a) && a[i] == b[i+1] && a[i+1] == b[i] && a[i+2:] == b[i+2:]
	case len(a) == len(b)+1:
		return a[i+1:] == b[i:]
	case len(a)+1 == len(b):
		return a[i:] == b[i+1:]
	}
	return false
}

func (p *parser) importDecl() *ImportDecl {
	start := p.tok.span.Start
	p.next()
	if p.tok.kind != tokString {
		p.errorExpected("a quoted file name after 'import'", `write import "layers.te"`)
	}
	path := p.tok
	p.next()
	return &ImportDecl{Path: path.text[1 : len(path.text)-1], PathSpan: path.span, Span: Span{start, p.end()}}
}

func (p *parser) constDecl() *ConstDecl {
	start := p.tok.span.Start
	p.next()
	name := p.name("a name after 'const'")
	if !p.got("=") {
		p.errorExpected(fmt.Sprintf("'=' after 'const %s'", name.Name), fmt.Sprintf("a constant is defined as 'const %s = 128'", name.Name))
	}
	v := p.expr()
	return &ConstDecl{Name: name, Value: v, Span: Span{start, p.end()}}
}

func (p *parser) fnDecl() *FnDecl {
	start := p.tok.span.Start
	p.next()
	fn := &FnDecl{Name: p.name("a name after 'fn'")}
	if !p.tok.is("(") {
		p.errorExpected(fmt.Sprintf("'(' after 'fn %s'", fn.Name.Name),
			"a function is written 'fn f(x: f32[N]) -> f32[N] { ... }' or 'fn f(x) = expr'")
	}
	open := p.openBracket()
	if !p.tok.is(")") {
		for {
			fn.Params = append(fn.Params, p.param())
			if !p.got(",") {
				break
			}
		}
	}
	p.closeBracket(open, "',' or ')'")
	if p.got("->") {
		if p.tok.is("(") {
			open := p.openBracket()
			for {
				fn.Results = append(fn.Results, p.typeExpr("a result type"))
				if !p.got(",") {
					break
				}
			}
			p.closeBracket(open, "',' or ')'")
		} else {
			fn.Results = append(fn.Results, p.typeExpr("a result type after '->'"))
		}
	}
	switch {
	case p.got("="):
		fn.Expr = p.expr()
	case p.tok.is("{"):
		fn.Body = p.block()
		if fn.Body == nil {
			fn.Body = []Stmt{}
		}
	default:
		expected := fmt.Sprintf("'=' or '{' after the result type of '%s'", fn.Name.Name)
		if fn.Results == nil {
			expected = fmt.Sprintf("'->', '=' or '{' after the parameters of '%s'", fn.Name.Name)
		}
		p.errorExpected(expected, "a function needs a body: '= expr' or a block '{ ... }'")
	}
	fn.Span = Span{start, p.end()}
	return fn
}

func (p *parser) param() *Param {
	prm := &Param{Name: p.name("a parameter name")}
	if p.got(":") {
		prm.Type = p.typeExpr("a type after ':'")
	}
	prm.Span = Span{prm.Name.Span.Start, p.end()}
	return prm
}

// typeExpr parses a type; expected describes it for the error message.
func (p *parser) typeExpr(expected string) *TypeExpr {
	if p.tok.kind != tokIdent && p.tok.kind != tokKeyword {
		p.errorExpected(expected+", such as f32[N, D]", "")
	}
	t := &TypeExpr{Name: p.name(expected)}
	if p.tok.is("[") {
		t.Dims = p.exprList(p.openBracket())
		if t.Dims == nil {
			t.Dims = []Expr{}
		}
	}
	t.Span = Span{t.Name.Span.Start, p.end()}
	return t
}

func (p *parser) modelDecl() *ModelDecl {
	start := p.tok.span.Start
	p.next()
	m := &ModelDecl{Name: p.name("a name after 'model'")}
	if !p.tok.is("{") {
		p.errorExpected(fmt.Sprintf("'{' to start the body of model '%s'", m.Name.Name), "")
	}
	m.Body = p.block()
	m.Span = Span{start, p.end()}
	return m
}

// block parses { stmt ... }.
func (p *parser) block() []Stmt {
	p.enter()
	defer p.leave()
	open := p.openBracket()
	var stmts []Stmt
	for !p.tok.is("}") {
		t := p.tok
		if t.kind == tokEOF || t.kind == tokIllegal {
			p.errorExpected("'}'", "")
		}
		if len(stmts) > 0 && t.span.Start.Line == p.prev.span.End.Line {
			hint := p.hintFor(t)
			if hint == "" {
				hint = "put each statement on a line of its own"
			}
			p.fail(t.span, fmt.Sprintf("unexpected %s, expected an operator or the end of the line", t.describe()), hint)
		}
		stmts = append(stmts, p.stmt())
	}
	p.closeBracket(open, "")
	return stmts
}

func (p *parser) stmt() Stmt {
	t := p.tok
	switch {
	case t.is("input"), t.is("param"):
		return p.placeholder()
	case t.is("output"):
		return p.output()
	case t.is("for"):
		return p.forStmt()
	case t.is("return"):
		return p.returnStmt()
	case t.is("const"):
		return p.constDecl()
	case t.is("update"):
		return p.update()
	case t.kind == tokIdent:
		return p.assign()
	}
	var hint string
	switch {
	case t.is("import"), t.is("fn"), t.is("model"):
		hint = fmt.Sprintf("'%s' declarations belong at the top level; is a '}' missing before this line?", t.text)
	case t.is("where"):
		hint = "a 'where' clause goes on the same line as the definition it belongs to"
	}
	p.errorExpected("a statement or '}'", hint)
	panic("unreachable")
}

func (p *parser) placeholder() *PlaceholderStmt {
	start := p.tok.span.Start
	kind := p.tok.text
	p.next()
	name := p.name(fmt.Sprintf("a name after '%s'", kind))
	if !p.got(":") {
		p.errorExpected(fmt.Sprintf("':' and a type after '%s %s'", kind, name.Name),
			fmt.Sprintf("declare it as '%s %s: f32[N, D]'", kind, name.Name))
	}
	typ := p.typeExpr("a type after ':'")
	return &PlaceholderStmt{Kind: kind, Name: name, Type: typ, Span: Span{start, p.end()}}
}

func (p *parser) output() *OutputStmt {
	s := &OutputStmt{}
	start := p.tok.span.Start
	p.next()
	expected := "a name after 'output'"
	for {
		it := &OutputItem{Name: p.name(expected)}
		if p.got("=") {
			it.Value = p.expr()
		}
		it.Span = Span{it.Name.Span.Start, p.end()}
		s.Items = append(s.Items, it)
		if !p.got(",") {
			break
		}
		expected = "a name after ','"
	}
	s.Span = Span{start, p.end()}
	return s
}

func (p *parser) forStmt() *ForStmt {
	start := p.tok.span.Start
	p.next()
	s := &ForStmt{Var: p.name("a loop variable after 'for'")}
	if !p.got("in") {
		p.errorExpected(fmt.Sprintf("'in' after 'for %s'", s.Var.Name), fmt.Sprintf("a loop is written 'for %s in 0..N { ... }'", s.Var.Name))
	}
	s.Range = p.rangeExpr()
	if !p.tok.is("{") {
		p.errorExpected("'{' to start the body of the loop", "")
	}
	s.Body = p.block()
	s.Span = Span{start, p.end()}
	return s
}

func (p *parser) returnStmt() *ReturnStmt {
	start := p.tok.span.Start
	p.next()
	s := &ReturnStmt{}
	for {
		s.Values = append(s.Values, p.expr())
		if !p.got(",") {
			break
		}
	}
	s.Span = Span{start, p.end()}
	return s
}

func (p *parser) assign() *AssignStmt {
	s := &AssignStmt{}
	start := p.tok.span.Start
	for {
		t := &Target{Name: p.name("a name after ','")}
		if p.tok.is("[") {
			t.Indices = p.exprList(p.openBracket())
			if t.Indices == nil {
				t.Indices = []Expr{}
			}
		}
		t.Span = Span{t.Name.Span.Start, p.end()}
		s.Targets = append(s.Targets, t)
		if !p.got(",") {
			break
		}
	}
	if !p.got("=") {
		lhs := p.excerpt(start, p.end())
		var hint string
		switch {
		case p.tok.is(":"):
			hint = fmt.Sprintf("inputs are declared as 'input %s: f32[N]', parameters as 'param %s: f32[N]'", lhs, lhs)
		case p.tok.is("(") && len(s.Targets) == 1 && s.Targets[0].Indices == nil:
			hint = fmt.Sprintf("bind the result of a call to a name: 'y = %s(...)'", lhs)
		case p.tok.is("=="):
			hint = "a definition uses a single '='"
		case (lhs == "let" || lhs == "var") && p.tok.kind == tokIdent:
			hint = fmt.Sprintf("bind a name with '%s = expr'; no '%s' is needed", p.tok.text, lhs)
		}
		p.errorExpected(fmt.Sprintf("'=' after '%s'", lhs), hint)
	}
	s.Value = p.expr()
	if p.got("where") {
		expected := "an index name after 'where'"
		for {
			w := &WhereClause{Var: p.name(expected)}
			if !p.got("in") {
				p.errorExpected(fmt.Sprintf("'in' after 'where %s'", w.Var.Name), fmt.Sprintf("a range is stated as 'where %s in 0..N'", w.Var.Name))
			}
			w.Range = p.rangeExpr()
			w.Span = Span{w.Var.Span.Start, p.end()}
			s.Where = append(s.Where, w)
			if !p.got(",") {
				break
			}
			expected = "an index name after ','"
		}
	}
	s.Span = Span{start, p.end()}
	return s
}

// update parses an in-place update, `update x[i, pos[b]] = expr where ...`:
// an assignment to one element-wise target.
func (p *parser) update() *AssignStmt {
	start := p.tok.span.Start
	p.next()
	if p.tok.kind != tokIdent {
		p.errorExpected("the name of an input after 'update'", "an update is written 'update x[i, pos[b]] = value'")
	}
	s := p.assign()
	if len(s.Targets) != 1 || s.Targets[0].Indices == nil {
		p.fail(s.Span, "an update writes one input at the indexes in brackets",
			"an update is written 'update x[i, pos[b]] = value'")
	}
	s.Update = true
	s.Span = Span{start, s.Span.End}
	return s
}

// excerpt returns the source text between two positions on one line,
// shortened if long, for quoting in a message.
func (p *parser) excerpt(from, to Pos) string {
	s := string(p.src[from.Offset:to.Offset])
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + "..."
	}
	if utf8.RuneCountInString(s) > 40 {
		s = string([]rune(s)[:37]) + "..."
	}
	return s
}

// rangeExpr parses lo..hi.
func (p *parser) rangeExpr() *RangeExpr {
	if !p.canStartExpr() {
		p.errorExpected(fmt.Sprintf("a range such as 0..N after '%s'", p.prev.text), "")
	}
	lo := p.expr()
	if !p.got("..") {
		p.errorExpected("'..' in the range, as in 0..N", "")
	}
	if !p.canStartExpr() {
		p.errorExpected("the end of the range after '..'", "")
	}
	hi := p.expr()
	return &RangeExpr{Lo: lo, Hi: hi, Span: Span{lo.NodeSpan().Start, hi.NodeSpan().End}}
}

func (p *parser) canStartExpr() bool {
	switch p.tok.kind {
	case tokInt, tokFloat, tokIdent:
		return true
	}
	return p.tok.is("(") || p.tok.is("[") || p.tok.is("-") || p.tok.is("!")
}

// exprList parses the expressions of a bracketed, comma-separated list whose
// opening bracket has been consumed, and its closing bracket. The result is
// nil for an empty list.
func (p *parser) exprList(open token) []Expr {
	var list []Expr
	c := closerOf(open.text)
	if !p.tok.is(c) {
		for {
			list = append(list, p.expr())
			if !p.got(",") {
				break
			}
			if p.tok.is(c) {
				p.errorExpected("an expression after ','", "remove the trailing ','")
			}
		}
	}
	p.closeBracket(open, fmt.Sprintf("',' or '%s'", c))
	return list
}

// precedence returns how tightly binary operator op binds, or 0 if op is not
// a binary operator.
func precedence(op string) int {
	switch op {
	case "||":
		return 1
	case "&&":
		return 2
	case "==", "!=", "<", "<=", ">", ">=":
		return 3
	case "+", "-":
		return 4
	case "*", "/", "%":
		return 5
	case "**":
		return powPrec
	}
	return 0
}

// powPrec is the precedence of "**", which binds more tightly than the
// unary operators on its left (-x ** 2 is -(x ** 2)) and is
// right-associative (a ** b ** c is a ** (b ** c)); power parses it.
const powPrec = 7

const cmpPrec = 3

func (p *parser) expr() Expr {
	p.enter()
	defer p.leave()
	return p.binary(1)
}

// binary parses a chain of binary operators binding at least as tightly as
// prec, left-associatively; comparisons do not chain.
func (p *parser) binary(prec int) Expr {
	x := p.unary()
	for {
		op := p.tok
		q := precedence(op.text)
		if op.kind != tokOp || q < prec || q == 0 {
			return x
		}
		p.next()
		y := p.binary(q + 1)
		x = &Binary{Op: op.text, X: x, Y: y, Span: Span{x.NodeSpan().Start, y.NodeSpan().End}}
		if q == cmpPrec && p.tok.kind == tokOp && precedence(p.tok.text) == cmpPrec {
			p.fail(p.tok.span, fmt.Sprintf("unexpected %q: comparisons cannot be chained", p.tok.text),
				"combine comparisons with '&&', as in 'a < b && b < c'")
		}
	}
}

func (p *parser) unary() Expr {
	if p.tok.is("-") || p.tok.is("!") {
		op := p.tok
		p.next()
		p.enter()
		defer p.leave()
		x := p.unary()
		return &Unary{Op: op.text, X: x, Span: Span{op.span.Start, x.NodeSpan().End}}
	}
	return p.power()
}

// power parses postfix [ "**" unary ]: the exponent may be negated
// (2 ** -k), and a chain groups to the right.
func (p *parser) power() Expr {
	x := p.postfix()
	if !p.tok.is("**") {
		return x
	}
	op := p.tok
	p.next()
	p.enter()
	defer p.leave()
	y := p.unary()
	return &Binary{Op: op.text, X: x, Y: y, Span: Span{x.NodeSpan().Start, y.NodeSpan().End}}
}

func (p *parser) postfix() Expr {
	x := p.primary()
	start := x.NodeSpan().Start
	for n := 1; ; n++ {
		switch {
		case p.tok.is("["):
			idx := p.exprList(p.openBracket())
			if idx == nil {
				idx = []Expr{}
			}
			x = &IndexExpr{X: x, Indices: idx, Span: Span{start, p.end()}}
		case p.tok.is("("):
			x = &Call{Fun: x, Args: p.exprList(p.openBracket()), Span: Span{start, p.end()}}
			if n == 2 {
				x = reduction(x.(*Call))
			}
		default:
			return x
		}
	}
}

// reduction returns op[axes](body) as a *Reduce when it is one: op is sum,
// max, min or prod, every axis is a plain name and there is exactly one body.
// Otherwise it returns c.
func reduction(c *Call) Expr {
	ix, ok := c.Fun.(*IndexExpr)
	if !ok || len(c.Args) != 1 || len(ix.Indices) == 0 {
		return c
	}
	op, ok := ix.X.(*Name)
	if !ok || !IsReduceOp(op.Name) {
		return c
	}
	axes := make([]Ident, len(ix.Indices))
	for i, e := range ix.Indices {
		n, ok := e.(*Name)
		if !ok {
			return c
		}
		axes[i] = n.Ident
	}
	return &Reduce{Op: op.Ident, Axes: axes, Body: c.Args[0], Span: c.Span}
}

func (p *parser) primary() Expr {
	t := p.tok
	switch t.kind {
	case tokInt, tokFloat:
		p.next()
		// The lexer admits only well-formed numbers; one too large gives ±Inf,
		// which the checker reports.
		v, _ := strconv.ParseFloat(t.text, 64)
		return &Number{Text: t.text, Value: v, IsInt: t.kind == tokInt, Span: t.span}
	case tokIdent:
		p.next()
		return &Name{Ident: Ident{Name: t.text, Span: t.span}}
	}
	switch {
	case t.is("("):
		open := p.openBracket()
		x := p.expr()
		end := p.closeBracket(open, "")
		return &Paren{X: x, Span: Span{t.span.Start, end}}
	case t.is("["):
		return p.list()
	}
	expected := "an expression"
	if p.prev.kind == tokOp && (precedence(p.prev.text) > 0 || p.prev.is("!")) {
		expected = fmt.Sprintf("an expression after '%s'", p.prev.text)
	}
	p.errorExpected(expected, "")
	panic("unreachable")
}

// list parses [a, b, c] or [elem for v in lo..hi].
func (p *parser) list() Expr {
	open := p.openBracket()
	start := open.span.Start
	if p.tok.is("]") {
		p.closeBracket(open, "")
		return &ListExpr{Elems: []Expr{}, Span: Span{start, p.end()}}
	}
	first := p.expr()
	if p.got("for") {
		c := &Comprehension{Elem: first, Var: p.name("a loop variable after 'for'")}
		if !p.got("in") {
			p.errorExpected(fmt.Sprintf("'in' after 'for %s'", c.Var.Name), "")
		}
		c.Range = p.rangeExpr()
		p.closeBracket(open, "")
		c.Span = Span{start, p.end()}
		return c
	}
	l := &ListExpr{Elems: []Expr{first}}
	alternatives := "',', 'for' or ']'"
	for p.got(",") {
		l.Elems = append(l.Elems, p.expr())
		alternatives = "',' or ']'"
	}
	p.closeBracket(open, alternatives)
	l.Span = Span{start, p.end()}
	return l
}
