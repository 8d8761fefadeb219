package syntax_test

import (
	"strings"
	"testing"

	"tec/lang/syntax"
)

func TestParseSpans(t *testing.T) {
	src := "const N = 3 # c\nmodel m {\n  y[i] = sum[k](x[i, k]) where i in 0..N\n  output y\n}\n"
	f, err := syntax.Parse("s.te", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	text := func(n syntax.Node) string {
		sp := n.NodeSpan()
		return src[sp.Start.Offset:sp.End.Offset]
	}
	m := f.Decls[1].(*syntax.ModelDecl)
	a := m.Body[0].(*syntax.AssignStmt)
	r := a.Value.(*syntax.Reduce)
	tests := []struct {
		n    syntax.Node
		want string
	}{
		{f.Decls[0], "const N = 3"},
		{m, src[16 : len(src)-1]},
		{a, "y[i] = sum[k](x[i, k]) where i in 0..N"},
		{a.Targets[0], "y[i]"},
		{r, "sum[k](x[i, k])"},
		{r.Body, "x[i, k]"},
		{a.Where[0], "i in 0..N"},
		{a.Where[0].Range, "0..N"},
		{m.Body[1], "output y"},
	}
	for _, tt := range tests {
		if got := text(tt.n); got != tt.want {
			t.Errorf("%T spans %q, want %q", tt.n, got, tt.want)
		}
	}
	if len(f.Comments) != 1 || f.Comments[0].Text != "# c" || src[f.Comments[0].Span.Start.Offset:f.Comments[0].Span.End.Offset] != "# c" {
		t.Errorf("comments = %+v", f.Comments)
	}
	if r.Span.Start.Line != 3 || r.Span.Start.Col != 10 {
		t.Errorf("reduce starts at %v, want 3:10", r.Span.Start)
	}
	if f.Span.End.Offset != len(src) {
		t.Errorf("file span ends at %d, want %d", f.Span.End.Offset, len(src))
	}
}

// TestParseShapes checks how expressions group.
func TestParseShapes(t *testing.T) {
	tests := []struct{ src, want string }{
		{"a + b * c", "(a + (b * c))"},
		{"a - b - c", "((a - b) - c)"},
		{"-a * b", "((-a) * b)"},
		{"a || b && c == d + 1", "(a || (b && (c == (d + 1))))"},
		{"!a && b", "((!a) && b)"},
		{"a * b ** c", "(a * (b ** c))"},
		{"a ** b ** c", "(a ** (b ** c))"},
		{"-a ** b", "(-(a ** b))"},
		{"a ** -b", "(a ** (-b))"},
		{"x[i] ** f(2)", "(index(x; i) ** call(f; 2))"},
		{"(a ** b) ** c", "(paren((a ** b)) ** c)"},
		{"sum[k](x)", "sum[k](x)"},
		{"sum[k, l](x)", "sum[k, l](x)"},
		{"sum[k + 1](x)", "call(index(sum; (k + 1)); x)"},
		{"sum[k](a, b)", "call(index(sum; k); a, b)"},
		{"max(a, b)", "call(max; a, b)"},
		{"sum[](x)", "call(index(sum; ); x)"},
		{"f(x)[1](2)", "call(index(call(f; x); 1); 2)"},
		{"[a for l in 0..L]", "[a for l in 0..L]"},
		{"[]", "[]"},
		{"(a)", "paren(a)"},
		{"1e999", "+Inf"},
	}
	for _, tt := range tests {
		f, err := syntax.Parse("e.te", []byte("const X = "+tt.src))
		if err != nil {
			t.Errorf("%s: %v", tt.src, err)
			continue
		}
		if got := show(f.Decls[0].(*syntax.ConstDecl).Value); got != tt.want {
			t.Errorf("%s parses as %s, want %s", tt.src, got, tt.want)
		}
	}
}

func show(e syntax.Expr) string {
	list := func(es []syntax.Expr) string {
		var s []string
		for _, e := range es {
			s = append(s, show(e))
		}
		return strings.Join(s, ", ")
	}
	switch e := e.(type) {
	case *syntax.Name:
		return e.Name
	case *syntax.Number:
		if e.Value > 1e308 {
			return "+Inf"
		}
		return e.Text
	case *syntax.Unary:
		return "(" + e.Op + show(e.X) + ")"
	case *syntax.Binary:
		return "(" + show(e.X) + " " + e.Op + " " + show(e.Y) + ")"
	case *syntax.Call:
		return "call(" + show(e.Fun) + "; " + list(e.Args) + ")"
	case *syntax.IndexExpr:
		return "index(" + show(e.X) + "; " + list(e.Indices) + ")"
	case *syntax.Reduce:
		var axes []string
		for _, a := range e.Axes {
			axes = append(axes, a.Name)
		}
		return e.Op.Name + "[" + strings.Join(axes, ", ") + "](" + show(e.Body) + ")"
	case *syntax.Paren:
		return "paren(" + show(e.X) + ")"
	case *syntax.ListExpr:
		return "[" + list(e.Elems) + "]"
	case *syntax.Comprehension:
		return "[" + show(e.Elem) + " for " + e.Var.Name + " in " + show(e.Range) + "]"
	case *syntax.RangeExpr:
		return show(e.Lo) + ".." + show(e.Hi)
	}
	return "?"
}

func TestParseEmpty(t *testing.T) {
	for _, src := range []string{"", "\n\n", "  # only a comment\n"} {
		f, err := syntax.Parse("e.te", []byte(src))
		if err != nil || len(f.Decls) != 0 {
			t.Errorf("Parse(%q) = %v, %v; want no declarations", src, f, err)
		}
	}
}
