package syntax_test

import (
	"os"
	"strings"
	"testing"

	"tec/internal/testkit/golden"
	"tec/lang/syntax"
)

// TestFormat formats every file in testdata/format and testdata/lang (the
// examples of the language draft) and compares the result with its .golden
// file; checkFormat also checks idempotence and that the meaning is kept.
func TestFormat(t *testing.T) {
	files := append(testFiles(t, "format"), testFiles(t, "lang")...)
	for _, file := range files {
		t.Run(file, func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			out := checkFormat(t, file, src)
			golden.Check(t, strings.TrimSuffix(file, ".te")+".golden", out)
		})
	}
}

// TestFormatCorpus checks idempotence and meaning over every test input that
// parses, including the generated goldens' sources.
func TestFormatCorpus(t *testing.T) {
	var n int
	for _, dir := range []string{"errors", "format", "lang"} {
		for _, file := range testFiles(t, dir) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := syntax.Parse(file, src); err != nil {
				continue
			}
			checkFormat(t, file, src)
			n++
		}
	}
	if n < 10 {
		t.Errorf("only %d files were formatted", n)
	}
}

// TestFormatHandBuilt formats trees that the parser cannot produce: the
// printer adds the parentheses their structure needs.
func TestFormatHandBuilt(t *testing.T) {
	name := func(s string) syntax.Expr { return &syntax.Name{Ident: syntax.Ident{Name: s}} }
	bin := func(op string, x, y syntax.Expr) syntax.Expr { return &syntax.Binary{Op: op, X: x, Y: y} }
	tests := []struct {
		e    syntax.Expr
		want string
	}{
		{bin("*", bin("+", name("a"), name("b")), name("c")), "(a + b) * c"},
		{bin("-", name("a"), bin("-", name("b"), name("c"))), "a - (b - c)"},
		{bin("-", bin("-", name("a"), name("b")), name("c")), "a - b - c"},
		{bin("<", bin("<", name("a"), name("b")), name("c")), "(a < b) < c"},
		{&syntax.Unary{Op: "-", X: bin("+", name("a"), name("b"))}, "-(a + b)"},
		{bin("**", bin("**", name("a"), name("b")), name("c")), "(a ** b) ** c"},
		{bin("**", name("a"), bin("**", name("b"), name("c"))), "a ** b ** c"},
		{bin("**", &syntax.Unary{Op: "-", X: name("a")}, name("b")), "(-a) ** b"},
		{&syntax.Unary{Op: "-", X: bin("**", name("a"), name("b"))}, "-a ** b"},
		{bin("**", name("a"), &syntax.Unary{Op: "-", X: name("b")}), "a ** -b"},
		{bin("*", bin("**", name("a"), name("b")), bin("**", name("c"), name("d"))), "a ** b * c ** d"},
		{bin("**", bin("*", name("a"), name("b")), name("c")), "(a * b) ** c"},
		{&syntax.Call{Fun: bin("+", name("f"), name("g")), Args: []syntax.Expr{name("x")}}, "(f + g)(x)"},
		{&syntax.Number{Value: 0.5}, "0.5"},
	}
	for _, tt := range tests {
		f := &syntax.File{Decls: []syntax.Decl{&syntax.ConstDecl{Name: syntax.Ident{Name: "X"}, Value: tt.e}}}
		out, err := syntax.Format(f, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := string(out), "const X = "+tt.want+"\n"; got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}

func TestFormatErrors(t *testing.T) {
	tests := []struct {
		f   *syntax.File
		src []byte
	}{
		{&syntax.File{Decls: []syntax.Decl{&syntax.ConstDecl{Name: syntax.Ident{Name: "X"}}}}, nil},
		{&syntax.File{Decls: []syntax.Decl{(*syntax.FnDecl)(nil)}}, nil},
		{&syntax.File{Decls: []syntax.Decl{&syntax.ModelDecl{Body: []syntax.Stmt{nil}}}}, nil},
		{&syntax.File{Decls: []syntax.Decl{&syntax.ConstDecl{Value: &syntax.Binary{Op: "^"}}}}, nil},
		{&syntax.File{Span: syntax.Span{End: syntax.Pos{Offset: 10}}}, []byte("short")},
	}
	for i, tt := range tests {
		if out, err := syntax.Format(tt.f, tt.src); err == nil {
			t.Errorf("%d: Format succeeded with %q, want an error", i, out)
		}
	}
}
