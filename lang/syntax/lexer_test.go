package syntax

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	participle "github.com/alecthomas/participle/v2/lexer"

	"tec/internal/testkit/golden"
)

// rulesJSON returns tokenRules as participle's JSON form of a lexer, the
// input of participle gen lexer.
func rulesJSON(t testing.TB) []byte {
	var rules []participle.Rule
	for _, r := range tokenRules() {
		rules = append(rules, participle.Rule{Name: r.Name, Pattern: r.Pattern})
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(participle.Rules{"Root": rules}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestLexerRulesJSON checks that internal/telexer/rules.json, from which
// internal/telexer/lexer_gen.go is generated, states tokenRules; -update
// rewrites it, as the first step of go generate ./lang/syntax does.
func TestLexerRulesJSON(t *testing.T) {
	if !golden.Check(t, filepath.Join("internal", "telexer", "rules.json"), rulesJSON(t)) {
		t.Log("tokenRules changed since internal/telexer/lexer_gen.go was generated from it: go generate ./lang/syntax rewrites both")
	}
}

// lexAll returns the tokens of src up to and including the end of file or
// the first illegal token, and the comments collected on the way.
func lexAll(src string) ([]token, []Comment) {
	l := newLexer([]byte(src))
	var toks []token
	for {
		t := l.next()
		toks = append(toks, t)
		if t.kind == tokEOF || t.kind == tokIllegal {
			return toks, l.comments
		}
	}
}

// brief writes a token as kind:text@line:col-line:col/offset-offset.
func brief(t token) string {
	kinds := [...]string{"eof", "ident", "kw", "int", "float", "str", "op", "illegal"}
	return fmt.Sprintf("%s:%s@%s-%s/%d-%d", kinds[t.kind], t.text, t.span.Start, t.span.End, t.span.Start.Offset, t.span.End.Offset)
}

func TestLexTokens(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string
	}{
		{"names and keywords", "fn f_1 in input _x",
			[]string{"kw:fn@1:1-1:3/0-2", "ident:f_1@1:4-1:7/3-6", "kw:in@1:8-1:10/7-9", "kw:input@1:11-1:16/10-15", "ident:_x@1:17-1:19/16-18", "eof:@1:19-1:19/18-18"}},
		{"numbers", "12 1.5 1e-3 2.5E+4 1e 0..N 3.x",
			[]string{"int:12@1:1-1:3/0-2", "float:1.5@1:4-1:7/3-6", "float:1e-3@1:8-1:12/7-11", "float:2.5E+4@1:13-1:19/12-18",
				"int:1@1:20-1:21/19-20", "ident:e@1:21-1:22/20-21", "int:0@1:23-1:24/22-23", "op:..@1:24-1:26/23-25", "ident:N@1:26-1:27/25-26",
				"int:3@1:28-1:29/27-28", "illegal:.@1:29-1:30/28-29"}},
		{"longest operator first", "a<=b->c==d!=!e&&f||g<h>=i:[,](){}%/*+-=>",
			[]string{"ident:a@1:1-1:2/0-1", "op:<=@1:2-1:4/1-3", "ident:b@1:4-1:5/3-4", "op:->@1:5-1:7/4-6", "ident:c@1:7-1:8/6-7",
				"op:==@1:8-1:10/7-9", "ident:d@1:10-1:11/9-10", "op:!=@1:11-1:13/10-12", "op:!@1:13-1:14/12-13", "ident:e@1:14-1:15/13-14",
				"op:&&@1:15-1:17/14-16", "ident:f@1:17-1:18/16-17", "op:||@1:18-1:20/17-19", "ident:g@1:20-1:21/19-20", "op:<@1:21-1:22/20-21",
				"ident:h@1:22-1:23/21-22", "op:>=@1:23-1:25/22-24", "ident:i@1:25-1:26/24-25", "op::@1:26-1:27/25-26", "op:[@1:27-1:28/26-27",
				"op:,@1:28-1:29/27-28", "op:]@1:29-1:30/28-29", "op:(@1:30-1:31/29-30", "op:)@1:31-1:32/30-31", "op:{@1:32-1:33/31-32",
				"op:}@1:33-1:34/32-33", "op:%@1:34-1:35/33-34", "op:/@1:35-1:36/34-35", "op:*@1:36-1:37/35-36", "op:+@1:37-1:38/36-37",
				"op:-@1:38-1:39/37-38", "op:=@1:39-1:40/38-39", "op:>@1:40-1:41/39-40", "eof:@1:41-1:41/40-40"}},
		{"lines, tabs and carriage returns", "a\r\n\tb\n\n  c",
			[]string{"ident:a@1:1-1:2/0-1", "ident:b@2:2-2:3/4-5", "ident:c@4:3-4:4/9-10", "eof:@4:4-4:4/10-10"}},
		{"columns count runes", "import \"é€.te\" x",
			[]string{"kw:import@1:1-1:7/0-6", "str:\"é€.te\"@1:8-1:15/7-17", "ident:x@1:16-1:17/18-19", "eof:@1:17-1:17/19-19"}},
		{"comments are skipped", "a # ünïcode comment\nb",
			[]string{"ident:a@1:1-1:2/0-1", "ident:b@2:1-2:2/22-23", "eof:@2:2-2:2/23-23"}},
		{"string not terminated", "x \"abc\r\ny",
			[]string{"ident:x@1:1-1:2/0-1", "illegal:\"abc@1:3-1:7/2-6"}},
		{"non-ASCII character", "a × b",
			[]string{"ident:a@1:1-1:2/0-1", "illegal:×@1:3-1:4/2-4"}},
		{"vertical tab", "a\vb",
			[]string{"ident:a@1:1-1:2/0-1", "illegal:\v@1:2-1:3/1-2"}},
		{"empty", "", []string{"eof:@1:1-1:1/0-0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			toks, _ := lexAll(tt.src)
			var got []string
			for _, tok := range toks {
				got = append(got, brief(tok))
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("lexing %q:\ngot  %q\nwant %q", tt.src, got, tt.want)
			}
		})
	}
}

func TestLexComments(t *testing.T) {
	_, comments := lexAll("# first  \t\r\nx = 1 # ünï \n#\n")
	want := []Comment{
		{Text: "# first", Span: Span{Pos{0, 1, 1}, Pos{7, 1, 8}}},
		{Text: "# ünï", Span: Span{Pos{19, 2, 7}, Pos{26, 2, 12}}},
		{Text: "#", Span: Span{Pos{28, 3, 1}, Pos{29, 3, 2}}},
	}
	if fmt.Sprint(comments) != fmt.Sprint(want) {
		t.Errorf("comments:\ngot  %v\nwant %v", comments, want)
	}
}

// TestLexAfterEnd checks that the lexer keeps returning the end of file
// after the end of file and after an illegal token.
func TestLexAfterEnd(t *testing.T) {
	for _, src := range []string{"a ", "a ; b"} {
		l := newLexer([]byte(src))
		var last token
		for range 5 {
			last = l.next()
		}
		if last.kind != tokEOF || last.span.Start != (Pos{2, 1, 3}) {
			t.Errorf("%q: after the end, got %s, want the end of file at 1:3", src, brief(last))
		}
	}
}

// TestOperatorsAreTokens checks that every operator in the table lexes as
// one token, whatever its position in the table.
func TestOperatorsAreTokens(t *testing.T) {
	for _, op := range operators {
		toks, _ := lexAll(op)
		if len(toks) != 2 || toks[0].kind != tokOp || toks[0].text != op {
			t.Errorf("%q lexes as %v, want one operator", op, toks)
		}
	}
}

// benchSource returns a generated model of about 2,000 lines like the
// language server's benchmark file.
func benchSource() []byte {
	var src strings.Builder
	src.WriteString("# generated\nconst D = 64\nmodel big {\n  input x: f32[4, D]\n  t0 = x\n")
	for k := 1; k < 2000; k++ {
		fmt.Fprintf(&src, "  t%d[i, j] = max(t%d[i, j] * 0.5 + x[i, j], 0.0) / (s%d[i] + 1.0) # step %d\n", k, k-1, k, k)
	}
	src.WriteString("  output y = t1999\n}\n")
	return []byte(src.String())
}

// BenchmarkLex measures lexing benchSource.
func BenchmarkLex(b *testing.B) {
	text := benchSource()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		l := newLexer(text)
		for l.next().kind != tokEOF {
		}
	}
}

// BenchmarkParse measures parsing benchSource.
func BenchmarkParse(b *testing.B) {
	text := benchSource()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, err := Parse("bench.te", text); err != nil {
			b.Fatal(err)
		}
	}
}

// lexBoth lexes src with the generated lexer and with participle's
// regexp-based lexer made from the same rules, and reports any difference.
func lexBoth(t *testing.T, name string, src []byte) {
	t.Helper()
	def := participle.MustSimple(tokenRules())
	lexers := []*lexer{newLexer(src), newLexerWith(def, kindsOf(def), src)}
	for i := 0; ; i++ {
		gen, re := lexers[0].next(), lexers[1].next()
		if gen != re {
			t.Fatalf("%s: token %d: the generated lexer gives %s %q %q, participle's regexp lexer %s %q %q",
				name, i, brief(gen), gen.msg, gen.hint, brief(re), re.msg, re.hint)
		}
		if gen.kind == tokEOF || gen.kind == tokIllegal {
			break
		}
	}
	if a, b := fmt.Sprint(lexers[0].comments), fmt.Sprint(lexers[1].comments); a != b {
		t.Fatalf("%s: the generated lexer's comments %s, participle's regexp lexer's %s", name, a, b)
	}
}

// sourceFiles returns the .te files of the syntax tests, the examples and
// the standard library.
func sourceFiles(t testing.TB) []string {
	var files []string
	for _, pattern := range []string{"testdata/*/*.te", "../../examples/*.te", "../stdlib/*.te"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 50 {
		t.Fatalf("only %d source files found", len(files))
	}
	return files
}

// TestGeneratedLexer checks that the generated lexer lexes every source file
// of the repository as participle's regexp-based lexer does from the same
// rules: same tokens, spans, errors and comments.
func TestGeneratedLexer(t *testing.T) {
	for _, file := range sourceFiles(t) {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		lexBoth(t, file, src)
	}
}

// FuzzLexer compares the generated lexer with participle's regexp-based one
// on arbitrary input.
func FuzzLexer(f *testing.F) {
	for _, file := range sourceFiles(f) {
		src, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	f.Fuzz(func(t *testing.T, src []byte) { lexBoth(t, "fuzz", src) })
}

// TestLiterals: the number literals of a source, by span and kind, and
// none from comments, strings or names with digits.
func TestLiterals(t *testing.T) {
	src := "# 12 in a comment\nimport \"l2.te\"\nconst N = 128\ny[i0] = x[i0 / 25] * 1e-5 + 0.5 where i0 in 0..100 # 7\n"
	lits, err := Literals([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range lits {
		got = append(got, fmt.Sprintf("%s:%v", src[l.Span.Start.Offset:l.Span.End.Offset], l.Float))
	}
	if want := "128:false 25:false 1e-5:true 0.5:true 0:false 100:false"; strings.Join(got, " ") != want {
		t.Errorf("Literals = %s, want %s", strings.Join(got, " "), want)
	}
	if _, err := Literals([]byte("x = 1 $ 2")); err == nil {
		t.Error("no error for text that is no token")
	}
}
