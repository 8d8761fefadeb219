package syntax

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// IsKeyword reports whether s is a reserved word of the language, which
// cannot name anything.
func IsKeyword(s string) bool {
	switch s {
	case "import", "const", "fn", "model", "input", "param", "output", "for", "in", "return", "where":
		return true
	}
	return false
}

// tokenKind classifies a token.
type tokenKind int

const (
	tokEOF     tokenKind = iota
	tokIdent             // a name: [A-Za-z_][A-Za-z0-9_]*
	tokKeyword           // a reserved word, see IsKeyword
	tokInt               // 128
	tokFloat             // 0.5, 1e-5, 2.5e3
	tokString            // "layers.te", quotes included
	tokOp                // punctuation and operators
	tokIllegal           // text that is no token; msg and hint say why
)

// A token is one lexical element with its span. Illegal tokens carry the
// error to report when the parser reaches them.
type token struct {
	kind tokenKind
	text string
	span Span
	msg  string // tokIllegal only
	hint string // tokIllegal only
}

// is reports whether t is the operator or keyword s.
func (t token) is(s string) bool {
	return (t.kind == tokOp || t.kind == tokKeyword) && t.text == s
}

// describe names t for an error message: `"}"`, `name "x"`, `end of file`.
func (t token) describe() string {
	text := t.text
	if utf8.RuneCountInString(text) > 40 {
		r := []rune(text)
		text = string(r[:37]) + "..."
	}
	switch t.kind {
	case tokEOF:
		return "end of file"
	case tokIdent:
		return fmt.Sprintf("name %q", text)
	case tokKeyword:
		return fmt.Sprintf("keyword %q", text)
	case tokInt, tokFloat:
		return "number " + text
	case tokString:
		return "string " + text
	}
	return fmt.Sprintf("%q", text)
}

// A lexer splits source text into tokens on demand, collecting comments on
// the way. It stops at the first illegal token.
type lexer struct {
	src      []byte
	pos      Pos
	comments []Comment
	done     bool
}

func newLexer(src []byte) *lexer {
	return &lexer{src: src, pos: Pos{Line: 1, Col: 1}}
}

// twoCharOps are the operators of two characters; they are matched before
// the single-character ones.
var twoCharOps = [...]string{"..", "->", "==", "!=", "<=", ">=", "&&", "||", "**"}

const oneCharOps = "-+*/%<>=!(){}[],:"

// advance moves the position over n bytes of ASCII text on one line.
func (l *lexer) advance(n int) {
	l.pos.Offset += n
	l.pos.Col += n
}

// next returns the next token. After an illegal token or the end of the
// file, it returns tokEOF forever.
func (l *lexer) next() token {
	if l.done {
		return token{kind: tokEOF, span: Span{l.pos, l.pos}}
	}
	src := l.src
	// Skip white space and comments.
	for l.pos.Offset < len(src) {
		c := src[l.pos.Offset]
		switch {
		case c == '\n':
			l.pos.Offset++
			l.pos.Line++
			l.pos.Col = 1
			continue
		case c == ' ' || c == '\t' || c == '\r':
			l.advance(1)
			continue
		case c == '#':
			start := l.pos
			end := start.Offset
			for end < len(src) && src[end] != '\n' {
				end++
			}
			text := strings.TrimRight(string(src[start.Offset:end]), " \t\r")
			l.pos.Offset = end
			l.pos.Col += utf8.RuneCount(src[start.Offset:end])
			l.comments = append(l.comments, Comment{Text: text, Span: Span{start, endOf(start, text)}})
			continue
		}
		break
	}
	start := l.pos
	if start.Offset >= len(src) {
		l.done = true
		return token{kind: tokEOF, span: Span{start, start}}
	}
	rest := src[start.Offset:]
	c := rest[0]
	tok := func(kind tokenKind, n int) token {
		l.advance(n)
		return token{kind: kind, text: string(rest[:n]), span: Span{start, l.pos}}
	}
	switch {
	case isLetter(c):
		n := 1
		for n < len(rest) && (isLetter(rest[n]) || isDigit(rest[n])) {
			n++
		}
		if IsKeyword(string(rest[:n])) {
			return tok(tokKeyword, n)
		}
		return tok(tokIdent, n)
	case isDigit(c):
		n, float := scanNumber(rest)
		if float {
			return tok(tokFloat, n)
		}
		return tok(tokInt, n)
	case c == '"':
		n := 1
		for n < len(rest) && rest[n] != '"' && rest[n] != '\n' {
			n++
		}
		if n < len(rest) && rest[n] == '"' {
			t := tok(tokString, n+1)
			t.span.End = endOf(start, t.text) // the string may hold non-ASCII text
			l.pos = t.span.End
			return t
		}
		text := strings.TrimRight(string(rest[:n]), "\r")
		l.done = true
		return token{kind: tokIllegal, text: text, span: Span{start, endOf(start, text)},
			msg: "string not terminated", hint: "a string must end with '\"' on the line it starts"}
	}
	for _, op := range twoCharOps {
		if len(rest) >= 2 && string(rest[:2]) == op {
			return tok(tokOp, 2)
		}
	}
	if strings.IndexByte(oneCharOps, c) >= 0 {
		return tok(tokOp, 1)
	}
	return l.illegal(start, rest)
}

// illegal returns the token for a character that starts no token.
func (l *lexer) illegal(start Pos, rest []byte) token {
	l.done = true
	r, n := utf8.DecodeRune(rest)
	text := string(rest[:n])
	t := token{kind: tokIllegal, text: text, span: Span{start, Pos{start.Offset + n, start.Line, start.Col + 1}}}
	t.msg = fmt.Sprintf("unexpected character %q", text)
	switch r {
	case ';':
		t.msg = `unexpected ";"`
		t.hint = "statements end at the end of the line; no ';' is needed"
	case '\'':
		t.hint = `strings are written in double quotes: "layers.te"`
	case '.':
		t.hint = "a range is written lo..hi, and a number needs digits on both sides of its '.' (0.5)"
	case '&':
		t.hint = "logical and is written '&&'"
	case '|':
		t.hint = "logical or is written '||'"
	case '^':
		t.hint = "a power is written a ** b or pow(a, b)"
	case '\t', '\v', '\f':
	case utf8.RuneError:
		t.msg = fmt.Sprintf("invalid UTF-8 byte 0x%02x", rest[0])
	default:
		if ascii, ok := lookalikes[r]; ok {
			t.hint = fmt.Sprintf("did you mean '%s'?", ascii)
		} else if unicode.IsLetter(r) {
			t.hint = "names are made of ASCII letters, digits and '_'"
		} else {
			t.hint = "this character is not part of the .te language"
		}
	}
	return t
}

// lookalikes maps characters that are easily typed or pasted for an
// operator to the operator.
var lookalikes = map[rune]string{
	'×': "*", '·': "*", '÷': "/", '−': "-", '–': "-", '≤': "<=", '≥': ">=", '≠': "!=",
	'“': `"`, '”': `"`, '…': "..", '∧': "&&", '∨': "||", '¬': "!",
}

// scanNumber returns the length of the number at the start of b, which
// starts with a digit, and whether it is a float: 12, 1.5, 1e-3, 2.5E+4.
// A '.' must have digits on both sides, so 0..N is 0, .., N.
func scanNumber(b []byte) (n int, float bool) {
	digits := func(i int) int {
		for i < len(b) && isDigit(b[i]) {
			i++
		}
		return i
	}
	n = digits(0)
	if n+1 < len(b) && b[n] == '.' && isDigit(b[n+1]) {
		n = digits(n + 1)
		float = true
	}
	if n < len(b) && (b[n] == 'e' || b[n] == 'E') {
		i := n + 1
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i < len(b) && isDigit(b[i]) {
			n = digits(i)
			float = true
		}
	}
	return n, float
}

func isLetter(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// endOf returns the position just after text that starts at p.
func endOf(p Pos, text string) Pos {
	for _, r := range text {
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
