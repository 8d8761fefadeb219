package syntax

// The lexer is participle's: its token rules are stated once, as data, in
// tokenRules below, and participle generates the Go code that matches them
// (package internal/telexer) from their JSON form. After changing the rules,
// regenerate with
//
//	go generate ./lang/syntax
//
// which needs participle's code generator on the PATH. It is not published on
// the module proxy; build it from participle's repository at the version in
// go.mod:
//
//	git clone -b v2.1.4 https://github.com/alecthomas/participle
//	cd participle/cmd/participle && go build -o "$(go env GOPATH)/bin/participle" .
//
// TestLexerRulesJSON fails while the generated lexer is older than the rules,
// and TestGeneratedLexer checks that it lexes as participle's regexp-based
// lexer does from the same rules.
//
//go:generate go test -run TestLexerRulesJSON -update
//go:generate sh -c "participle gen lexer telexer --name TE < internal/telexer/rules.json | gofmt > internal/telexer/lexer_gen.go"

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	participle "github.com/alecthomas/participle/v2/lexer"

	"tec/lang/syntax/internal/telexer"
)

// IsKeyword reports whether s is a reserved word of the language, which
// cannot name anything.
func IsKeyword(s string) bool {
	switch s {
	case "import", "const", "fn", "model", "input", "param", "output", "for", "in", "return", "where", "update":
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

	// Kinds the lexer handles itself and never returns.
	tokSpace      // blanks and line breaks
	tokComment    // # to the end of the line
	tokOpenString // a string not terminated on its line
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

// operators are the operator and punctuation tokens of the language. Their
// order does not matter: the longest one that matches is taken, so "<=" wins
// over "<". Adding an operator is adding it here (and running go generate).
var operators = []string{
	"..", "->", "==", "!=", "<=", ">=", "&&", "||", "**",
	"-", "+", "*", "/", "%", "<", ">", "=", "!",
	"(", ")", "{", "}", "[", "]", ",", ":",
}

// tokenRules are the lexical rules of the language, tried in this order at
// each position; the first that matches makes the token. A character that no
// rule matches is an illegal token, reported by illegal: a lone '.' is one,
// as a number needs digits on both sides of its '.' (so 0..N is 0, .., N).
//
// The patterns must not need backtracking: the generated lexer matches each
// repetition greedily and takes the first alternative that matches, and
// TestGeneratedLexer compares it with participle's regexp-based one.
func tokenRules() []participle.SimpleRule {
	return []participle.SimpleRule{
		{Name: "Space", Pattern: `[ \t\r\n]+`},
		{Name: "Ident", Pattern: `[A-Za-z_][A-Za-z0-9_]*`}, // or a keyword, see IsKeyword
		{Name: "Op", Pattern: alternatives(operators)},
		{Name: "Float", Pattern: `[0-9]+(?:\.[0-9]+(?:[eE][+-]?[0-9]+)?|[eE][+-]?[0-9]+)`},
		{Name: "Int", Pattern: `[0-9]+`},
		{Name: "Comment", Pattern: `#[^\n]*`},
		{Name: "String", Pattern: `"[^"\n]*"`},
		{Name: "OpenString", Pattern: `"[^"\n]*`}, // a string not terminated on its line
	}
}

// ruleKinds gives the kind of token each rule of tokenRules makes.
var ruleKinds = map[string]tokenKind{
	"Space": tokSpace, "Ident": tokIdent, "Op": tokOp, "Float": tokFloat, "Int": tokInt,
	"Comment": tokComment, "String": tokString, "OpenString": tokOpenString,
}

// alternatives returns a pattern matching any of the literal strings words,
// preferring the longest. Words of equal length are sorted so that the
// pattern does not depend on the order of the table.
//
// The generated lexer cannot match an empty alternative, which the regexp
// parser makes when a word extends another of the next shorter length that
// sorts right after it (so "..." and ".." would lex "..", but not "...");
// TestOperatorsAreTokens fails if that happens.
func alternatives(words []string) string {
	sorted := slices.Clone(words)
	slices.SortFunc(sorted, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	for i, w := range sorted {
		sorted[i] = regexp.QuoteMeta(w)
	}
	return strings.Join(sorted, "|")
}

// A kindTable gives the token kind of each token type of a lexer made from
// tokenRules, indexed by -type (participle's token types are negative).
type kindTable []tokenKind

// kindsOf returns the kind table of def, a lexer made from tokenRules.
func kindsOf(def participle.Definition) kindTable {
	var kinds kindTable
	for name, typ := range def.Symbols() {
		k, ok := ruleKinds[name]
		if !ok {
			continue
		}
		if typ >= 0 {
			panic(fmt.Sprintf("syntax: token type %d of rule %s is not negative", typ, name))
		}
		for len(kinds) <= int(-typ) {
			kinds = append(kinds, tokEOF)
		}
		kinds[-typ] = k
	}
	return kinds
}

// kind returns the kind of a token of type typ.
func (kinds kindTable) kind(typ participle.TokenType) tokenKind {
	if i := int(-typ); i >= 0 && i < len(kinds) {
		return kinds[i]
	}
	return tokEOF
}

// generatedKinds is the kind table of the generated lexer, computed once.
var generatedKinds = sync.OnceValue(func() kindTable { return kindsOf(telexer.TELexer) })

// A lexer splits source text into tokens on demand, collecting comments on
// the way. It stops at the first illegal token. It runs the lexer generated
// from tokenRules (internal/telexer); newLexerWith runs any other lexer made from
// them.
type lexer struct {
	src      []byte
	lex      participle.Lexer
	kinds    kindTable
	comments []Comment
	done     bool
	end      Pos // where the end-of-file token is, once done
}

func newLexer(src []byte) *lexer {
	return newLexerWith(telexer.TELexer.(participle.StringDefinition), generatedKinds(), src)
}

func newLexerWith(def participle.StringDefinition, kinds kindTable, src []byte) *lexer {
	lex, err := def.LexString("", string(src))
	if err != nil {
		panic(fmt.Sprintf("syntax: lexing from a string cannot fail: %v", err))
	}
	return &lexer{src: src, lex: lex, kinds: kinds}
}

// posOf converts a participle position to ours; both count lines and
// columns from 1, columns in runes, and offsets in bytes.
func posOf(p participle.Position) Pos { return Pos{Offset: p.Offset, Line: p.Line, Col: p.Column} }

// next returns the next token. After an illegal token or the end of the
// file, it returns tokEOF forever.
func (l *lexer) next() token {
	for !l.done {
		t, err := l.lex.Next()
		if err != nil {
			// No rule matches the text at the error's position.
			var at interface{ Position() participle.Position }
			if !errors.As(err, &at) {
				panic(fmt.Sprintf("syntax: the lexer failed without a position: %v", err))
			}
			start := posOf(at.Position())
			l.done, l.end = true, start
			return illegal(start, l.src[:start.Offset], l.src[start.Offset:])
		}
		start := posOf(t.Pos)
		if t.EOF() {
			l.done, l.end = true, start
			break
		}
		kind := l.kinds.kind(t.Type)
		switch kind {
		case tokSpace:
			continue
		case tokComment:
			text := strings.TrimRight(t.Value, " \t\r")
			l.comments = append(l.comments, Comment{Text: text, Span: Span{start, endOf(start, text)}})
			continue
		case tokOpenString:
			text := strings.TrimRight(t.Value, "\r")
			l.done, l.end = true, start
			return token{kind: tokIllegal, text: text, span: Span{start, endOf(start, text)},
				msg: "string not terminated", hint: "a string must end with '\"' on the line it starts"}
		case tokIdent:
			if IsKeyword(t.Value) {
				kind = tokKeyword
			}
		}
		// No token but a space spans lines.
		end := Pos{start.Offset + len(t.Value), start.Line, start.Col + utf8.RuneCountInString(t.Value)}
		return token{kind: kind, text: t.Value, span: Span{start, end}}
	}
	return token{kind: tokEOF, span: Span{l.end, l.end}}
}

// afterName reports whether src ends with a name (a letter or '_', then
// letters, digits or '_').
func afterName(src []byte) bool {
	i := len(src)
	for i > 0 && (isNameByte(src[i-1]) || src[i-1] >= '0' && src[i-1] <= '9') {
		i--
	}
	return i < len(src) && isNameByte(src[i])
}

func isNameByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// illegal returns the token for the character that starts rest, which
// starts no token; before is the source up to it.
func illegal(start Pos, before, rest []byte) token {
	r, n := utf8.DecodeRune(rest)
	text := string(rest[:n])
	t := token{kind: tokIllegal, text: text, span: Span{start, Pos{start.Offset + len(text), start.Line, start.Col + 1}}}
	t.msg = fmt.Sprintf("unexpected character %q", text)
	switch r {
	case ';':
		t.msg = `unexpected ";"`
		t.hint = "statements end at the end of the line; no ';' is needed"
	case '\'':
		t.hint = `strings are written in double quotes: "layers.te"`
	case '.':
		t.hint = "a range is written lo..hi, and a number needs digits on both sides of its '.' (0.5)"
		if afterName(before) && len(rest) > 1 && rest[1] >= '0' && rest[1] <= '9' {
			t.hint = "a name such as w.0 is what a param declared in a loop is called outside the source (--params, .npz keys, the C interface); in the loop body, w is the current iteration's"
		}
	case '&':
		t.hint = "logical and is written '&&'"
	case '|':
		t.hint = "logical or is written '||'"
	case '^':
		t.hint = "a power is written a ** b or pow(a, b)"
	case '@':
		a, b := nameBefore(before), nameAfter(rest[n:])
		if a == "" || b == "" {
			a, b = "a", "b"
		}
		t.hint = fmt.Sprintf("there is no matrix-product operator: call matmul(%s, %s) (or linear, batch_matmul), or write the contraction, y[i, j] = sum[k](%s[i, k] * %s[k, j])", a, b, a, b)
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

// nameBefore returns the name that src ends with, spaces aside, or "".
func nameBefore(src []byte) string {
	end := len(src)
	for end > 0 && src[end-1] == ' ' {
		end--
	}
	start := end
	for start > 0 && (isNameByte(src[start-1]) || src[start-1] >= '0' && src[start-1] <= '9') {
		start--
	}
	if start == end || !isNameByte(src[start]) {
		return ""
	}
	return string(src[start:end])
}

// nameAfter returns the name that src starts with, spaces aside, or "".
func nameAfter(src []byte) string {
	start := 0
	for start < len(src) && src[start] == ' ' {
		start++
	}
	end := start
	for end < len(src) && (isNameByte(src[end]) || end > start && src[end] >= '0' && src[end] <= '9') {
		end++
	}
	return string(src[start:end])
}

// lookalikes maps characters that are easily typed or pasted for an
// operator to the operator.
var lookalikes = map[rune]string{
	'×': "*", '·': "*", '÷': "/", '−': "-", '–': "-", '≤': "<=", '≥': ">=", '≠': "!=",
	'“': `"`, '”': `"`, '…': "..", '∧': "&&", '∨': "||", '¬': "!",
}

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

// Literal is a number literal of a source: where it is, and whether it is
// a float (0.5, 1e-5) rather than an integer.
type Literal struct {
	Span  Span
	Float bool
}

// Literals returns the number literals of src in order, outside comments
// and strings, or an error at the first text that is no token.
func Literals(src []byte) ([]Literal, error) {
	l := newLexer(src)
	var lits []Literal
	for {
		t := l.next()
		switch t.kind {
		case tokEOF:
			return lits, nil
		case tokIllegal:
			return nil, fmt.Errorf("%s: %s", t.span.Start, t.msg)
		case tokInt, tokFloat:
			lits = append(lits, Literal{Span: t.span, Float: t.kind == tokFloat})
		}
	}
}
