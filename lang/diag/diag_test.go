package diag_test

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"tec/internal/testkit/golden"
	"tec/lang/diag"
	"tec/lang/syntax"
)

// pos returns the position of byte offset off in src, columns counting runes.
func pos(src string, off int) syntax.Pos {
	line := 1 + strings.Count(src[:off], "\n")
	col := 1 + utf8.RuneCountInString(src[strings.LastIndexByte(src[:off], '\n')+1:off])
	return syntax.Pos{Offset: off, Line: line, Col: col}
}

// spanOf returns the span of the first occurrence of sub in src.
func spanOf(t *testing.T, src, sub string) syntax.Span {
	t.Helper()
	i := strings.Index(src, sub)
	if i < 0 {
		t.Fatalf("%q not in source", sub)
	}
	return syntax.Span{Start: pos(src, i), End: pos(src, i+len(sub))}
}

// corpus returns sources and diagnostics covering the cases of rendering:
// tabs, wide and astral characters, a span over several lines, a very long
// line, a missing source, every severity and related places.
func corpus(t *testing.T) (map[string][]byte, diag.List) {
	tabs := "model m {\n\ty =\t\tfoo(x)\t# tabs\n}\n"
	uni := "const 名前 = \"😀😀\" + 1\n# ünïcödé 日本語 😀 bad here\n"
	multi := "fn f(x) {\n  return x +\n    y\n}\n"
	long := "const X = " + strings.Repeat("1 + ", 1<<18) + "bad + " + strings.Repeat("2 + ", 1<<18) + "3\n"
	short := "const X = tail_bad" + strings.Repeat(" + 1", 200) + "\n"
	srcs := map[string][]byte{
		"tabs.te": []byte(tabs), "uni.te": []byte(uni), "multi.te": []byte(multi),
		"long.te": []byte(long), "short.te": []byte(short),
	}
	longSpan := spanOf(t, long, "bad")
	eol := pos(tabs, strings.Index(tabs, "\n"))
	l := diag.List{
		{File: "tabs.te", Span: spanOf(t, tabs, "foo(x)"), Severity: diag.Error, Code: "undefined",
			Message: "undefined function 'foo'", Hint: "did you mean 'for'?"},
		{File: "tabs.te", Span: syntax.Span{Start: eol, End: eol}, Severity: diag.Warning, Code: "style",
			Message: "an empty span at the end of a line"},
		{File: "uni.te", Span: spanOf(t, uni, "bad"), Severity: diag.Error, Code: "syntax",
			Message: "after wide and astral characters",
			Related: []diag.Related{{File: "uni.te", Span: spanOf(t, uni, "名前"), Message: "a wide name is here"}}},
		{File: "multi.te", Span: syntax.Span{Start: spanOf(t, multi, "x +").Start, End: spanOf(t, multi, "y\n").End},
			Severity: diag.Error, Code: "shape", Message: "a span over two lines", Hint: "only its first line is underlined"},
		{File: "long.te", Span: longSpan, Severity: diag.Error, Code: "undefined", Message: "in the middle of a 1 MB line"},
		{File: "long.te", Span: syntax.Span{Start: pos(long, 6), End: pos(long, 7)}, Severity: diag.Note, Message: "at the start of a 1 MB line"},
		{File: "long.te", Span: syntax.Span{Start: pos(long, len(long)-2), End: pos(long, len(long)-1)}, Severity: diag.Note, Message: "at the end of a 1 MB line"},
		{File: "short.te", Span: syntax.Span{Start: spanOf(t, short, "tail_bad").Start, End: pos(short, len(short)-1)},
			Severity: diag.Error, Code: "long", Message: "a span longer than the window"},
		{File: "gone.te", Span: syntax.Span{Start: syntax.Pos{Line: 3, Col: 7}, End: syntax.Pos{Line: 3, Col: 9}},
			Severity: diag.Error, Code: "io", Message: "the source is not available", Hint: "so no line is shown",
			Related: []diag.Related{{File: "other.te", Span: syntax.Span{Start: syntax.Pos{Line: 1, Col: 1}}, Message: "nor here"}}},
		{File: "tabs.te", Severity: diag.Error, Code: "nopos", Message: "a file-level diagnostic"},
		{Severity: diag.Error, Message: "no file at all"},
	}
	return srcs, l
}

func TestRender(t *testing.T) {
	srcs, l := corpus(t)
	get := func(file string) []byte { return srcs[file] }
	for _, tt := range []struct {
		name  string
		color bool
	}{{"render.golden", false}, {"render_color.golden", true}} {
		var b bytes.Buffer
		if err := l.Render(&b, get, tt.color); err != nil {
			t.Fatal(err)
		}
		if b.Len() > 10000 {
			t.Fatalf("rendered %d bytes; long lines must be windowed", b.Len())
		}
		golden.Check(t, filepath.Join("testdata", tt.name), b.Bytes())
	}
	var b bytes.Buffer
	if err := l.Render(&b, nil, false); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "render_nosource.golden"), b.Bytes())
}

func TestWriteJSON(t *testing.T) {
	srcs, l := corpus(t)
	var b bytes.Buffer
	if err := l.WriteJSON(&b, func(file string) []byte { return srcs[file] }); err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(b.Bytes(), []byte("\n")); n != len(l) {
		t.Errorf("%d lines of JSON for %d diagnostics", n, len(l))
	}
	golden.Check(t, filepath.Join("testdata", "json.golden"), b.Bytes())
}

func TestLSPRange(t *testing.T) {
	tests := []struct {
		src, sub                 string
		line, start, end         int
		withoutSource, startNoSr int
	}{
		{"abc bad\n", "bad", 0, 4, 7, 0, 4},
		{"x\n😀 bad\n", "bad", 1, 3, 6, 0, 2},   // an astral character counts 2
		{"日本語 bad\n", "bad", 0, 4, 7, 0, 4},    // CJK is in the BMP: 1 each
		{"\t\tbad", "bad", 0, 2, 5, 0, 2},      // a tab counts 1
		{"é😀\n ñ😀😀bad😀", "bad", 1, 6, 9, 0, 4}, // several on the line
		{"ab😀", "😀", 0, 2, 4, 0, 2},            // a span over an astral character
	}
	for _, tt := range tests {
		d := &diag.Diagnostic{Span: spanOf(t, tt.src, tt.sub)}
		r := d.LSPRange([]byte(tt.src))
		want := diag.Range{Start: diag.Position{Line: tt.line, Character: tt.start}, End: diag.Position{Line: tt.line, Character: tt.end}}
		if r != want {
			t.Errorf("%q: range %+v, want %+v", tt.src, r, want)
		}
		if r := d.LSPRange(nil); r.Start.Character != tt.startNoSr || r.Start.Line != tt.line {
			t.Errorf("%q without source: start %+v, want line %d character %d", tt.src, r.Start, tt.line, tt.startNoSr)
		}
	}
	// A position past the end of its line (an error at the end of the file).
	d := &diag.Diagnostic{Span: syntax.Span{Start: syntax.Pos{Line: 1, Col: 5}, End: syntax.Pos{Line: 1, Col: 5}}}
	if r := d.LSPRange([]byte("😀b")); r.Start.Character != 5 {
		t.Errorf("past the end: %+v, want character 5", r)
	}
	if r := (&diag.Diagnostic{}).LSPRange([]byte("x")); r != (diag.Range{}) {
		t.Errorf("no position: %+v", r)
	}
}

func TestSuggest(t *testing.T) {
	builtins := []string{"exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "abs", "max", "min", "pow", "select", "sum"}
	tests := []struct {
		name       string
		candidates []string
		want       string
	}{
		{"rsqr", builtins, "rsqrt"},
		{"sigmod", builtins, "sigmoid"},
		{"tnah", builtins, "tanh"}, // a transposition is one edit
		{"Tanh", builtins, "tanh"}, // letter case alone
		{"sqtr", builtins, "sqrt"},
		{"xyz", builtins, ""},
		{"ex", builtins, ""}, // too short to guess
		{"exp", builtins, ""},
		{"softmax", builtins, ""},
		{"hidden", []string{"hidden1", "hidden2"}, "hidden1"}, // ties go to the lexically first
		{"hidden", []string{"hidden2", "hidden1"}, "hidden1"},
		{"x", nil, ""},
		{"名前x", []string{"名前"}, "名前"},
	}
	for _, tt := range tests {
		if got := diag.Suggest(tt.name, tt.candidates); got != tt.want {
			t.Errorf("Suggest(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestList(t *testing.T) {
	at := func(line, col int) syntax.Span { return syntax.Span{Start: syntax.Pos{Line: line, Col: col}} }
	var l diag.List
	if l.HasErrors() || l.Err() != nil {
		t.Fatal("an empty list has errors")
	}
	l.Warnf("b.te", at(1, 1), "w", "warning %d", 1)
	if l.HasErrors() || l.Err() != nil {
		t.Fatal("a warning counts as an error")
	}
	l.Errorf("b.te", at(2, 5), "e", "second").Hint = "a hint"
	l.Errorf("a.te", at(9, 1), "e", "first file")
	l.Errorf("b.te", at(2, 3), "e", "before second")
	l.Add(&diag.Diagnostic{File: "b.te", Span: at(2, 3), Severity: diag.Note, Message: "note after error"})
	l.Sort()
	var got []string
	for _, d := range l {
		got = append(got, d.Message)
	}
	want := "first file|warning 1|before second|note after error|second"
	if strings.Join(got, "|") != want {
		t.Errorf("sorted: %s, want %s", strings.Join(got, "|"), want)
	}
	err := l.Err()
	if err == nil {
		t.Fatal("Err() = nil with errors")
	}
	wantText := "a.te:9:1: error[e]: first file\nb.te:1:1: warning[w]: warning 1\nb.te:2:3: error[e]: before second\nb.te:2:3: note: note after error\nb.te:2:5: error[e]: second\n  hint: a hint"
	if err.Error() != wantText {
		t.Errorf("error text:\n%s\nwant:\n%s", err, wantText)
	}
}

func TestFromSyntax(t *testing.T) {
	if diag.FromSyntax(nil) != nil {
		t.Error("FromSyntax(nil) != nil")
	}
	src := []byte("model m {\n  y = x +\n")
	_, err := syntax.Parse("m.te", src)
	d := diag.FromSyntax(err)
	if d == nil || d.Code != "syntax" || d.Severity != diag.Error || d.File != "m.te" || d.Span.Start.Line != 2 || len(d.Related) != 1 {
		t.Fatalf("FromSyntax = %+v", d)
	}
	d = diag.FromSyntax(errors.New("read failed"))
	if d.Message != "read failed" || d.Severity != diag.Error {
		t.Errorf("FromSyntax(plain error) = %+v", d)
	}
}

func TestSeverityString(t *testing.T) {
	for s, want := range map[diag.Severity]string{diag.Error: "error", diag.Warning: "warning", diag.Note: "note", 7: "Severity(7)"} {
		if s.String() != want {
			t.Errorf("%d: %q, want %q", int(s), s, want)
		}
	}
}
