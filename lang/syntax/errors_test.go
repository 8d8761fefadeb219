package syntax_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tec/internal/testkit/golden"
	"tec/lang/diag"
	"tec/lang/syntax"
)

// renderParse parses src and returns what a user sees: the rendered
// diagnostic, or a line saying how many declarations were read.
func renderParse(t *testing.T, name string, src []byte) []byte {
	t.Helper()
	f, err := syntax.Parse(name, src)
	if err == nil {
		return fmt.Appendf(nil, "ok: %d declarations\n", len(f.Decls))
	}
	if _, ok := err.(*syntax.Error); !ok {
		t.Fatalf("Parse returned %T, want *syntax.Error: %v", err, err)
	}
	var b bytes.Buffer
	get := func(string) []byte { return src }
	if err := (diag.List{diag.FromSyntax(err)}).Render(&b, get, false); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestErrors parses each file of the bad-input corpus, testdata/errors, and
// compares the rendered error with its .golden file; files named ok_* must
// parse.
func TestErrors(t *testing.T) {
	for _, file := range testFiles(t, "errors") {
		name := strings.TrimSuffix(filepath.Base(file), ".te")
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			got := renderParse(t, filepath.Base(file), src)
			if ok := bytes.HasPrefix(got, []byte("ok:")); ok != strings.HasPrefix(name, "ok_") {
				t.Errorf("parse result %q, but the file is named %s", got, name)
			}
			golden.Check(t, strings.TrimSuffix(file, ".te")+".golden", got)
		})
	}
}

// TestGeneratedErrors covers inputs too large to keep as files.
func TestGeneratedErrors(t *testing.T) {
	const mb = 1 << 20
	long := "model m {\n  y = " + strings.Repeat("a + ", mb/4) + "@\n}\n"
	longOK := "const X = " + strings.Repeat("1 + ", mb/4) + "1\n"
	tests := []struct {
		name string
		src  string
	}{
		{"gen_long_line", long},
		{"gen_long_line_ok", longOK},
		{"gen_long_name", "model m {\n  " + strings.Repeat("x", mb) + " + 1\n}\n"},
		{"gen_deep_parens", "const X = " + strings.Repeat("(", 10000) + "1" + strings.Repeat(")", 10000) + "\n"},
		{"gen_deep_unclosed", "const X = " + strings.Repeat("(", 10000) + "\n"},
		{"gen_deep_unary", "const X = " + strings.Repeat("-", 10000) + "1\n"},
		{"gen_deep_lists", "const X = " + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + "\n"},
		{"gen_deep_blocks", "model m {\n" + strings.Repeat("for i in 0..2 {\n", 5000) + strings.Repeat("}\n", 5000) + "}\n"},
		{"gen_nesting_limit_ok", "const X = " + strings.Repeat("(", syntax.MaxNesting-1) + "1" + strings.Repeat(")", syntax.MaxNesting-1) + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := renderParse(t, tt.name+".te", []byte(tt.src))
			if len(got) > 2000 {
				t.Fatalf("the rendered diagnostic is %d bytes; long lines must be windowed", len(got))
			}
			golden.Check(t, filepath.Join("testdata", "errors", tt.name+".golden"), got)
		})
	}
}

// TestNoPanicOnPrefixes parses every prefix of every test file: each must
// give a result or an *Error with a position inside the text.
func TestNoPanicOnPrefixes(t *testing.T) {
	var files []string
	for _, dir := range []string{"errors", "format", "lang"} {
		files = append(files, testFiles(t, dir)...)
	}
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i := range len(src) + 1 {
			_, err := syntax.Parse(file, src[:i])
			if err == nil {
				continue
			}
			se, ok := err.(*syntax.Error)
			if !ok {
				t.Fatalf("%s[:%d]: error %T, want *syntax.Error", file, i, err)
			}
			if se.Span.Start.Line < 1 || se.Span.Start.Offset > i || se.Span.End.Offset < se.Span.Start.Offset {
				t.Fatalf("%s[:%d]: bad error span %+v: %v", file, i, se.Span, se)
			}
			if strings.Contains(se.Msg, "internal error") {
				t.Fatalf("%s[:%d]: %v", file, i, se)
			}
		}
	}
}
