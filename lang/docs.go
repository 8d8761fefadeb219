package lang

import (
	"sort"
	"strings"

	"tec/lang/syntax"
)

// FuncDoc documents a function of the standard library.
type FuncDoc struct {
	Name string
	// Signature is the declaration's header as written, without "fn":
	// "softmax(x: f32[M, N]) -> f32[M, N]" or "relu(v)" for a scalar
	// function.
	Signature string
	// Doc is the comment directly above the declaration, without the '#'s.
	Doc string
	// File and Line locate the declaration: "stdlib/norm.te", 1-based.
	File string
	Line int
	// Source is the declaration's text, from "fn" to its end.
	Source string
}

// Summary returns the first line of the doc comment, or "".
func (d FuncDoc) Summary() string {
	first, _, _ := strings.Cut(d.Doc, "\n")
	return first
}

// StdlibFuncs returns the functions of the standard library sorted by name.
func StdlibFuncs() []FuncDoc {
	var out []FuncDoc
	for _, pf := range parsedPrelude() {
		if pf.err != nil {
			continue // the stdlib tests keep every file parsing
		}
		for _, d := range pf.ast.Decls {
			if fd, ok := d.(*syntax.FnDecl); ok {
				out = append(out, funcDoc(pf.name, pf.src, pf.ast, fd))
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func funcDoc(file string, src []byte, f *syntax.File, fd *syntax.FnDecl) FuncDoc {
	text := func(s syntax.Span) string {
		return strings.Join(strings.Fields(string(src[s.Start.Offset:s.End.Offset])), " ")
	}
	var params, results []string
	for _, p := range fd.Params {
		params = append(params, text(p.Span))
	}
	for _, r := range fd.Results {
		results = append(results, text(r.Span))
	}
	sig := fd.Name.Name + "(" + strings.Join(params, ", ") + ")"
	switch len(results) {
	case 0:
	case 1:
		sig += " -> " + results[0]
	default:
		sig += " -> (" + strings.Join(results, ", ") + ")"
	}
	return FuncDoc{
		Name:      fd.Name.Name,
		Signature: sig,
		Doc:       leadingComment(f.Comments, fd.Span.Start.Line),
		File:      file,
		Line:      fd.Span.Start.Line,
		Source:    string(src[fd.Span.Start.Offset:fd.Span.End.Offset]),
	}
}

// leadingComment returns the text of the comments that fill the lines
// directly above line, without their '#' and one following space.
func leadingComment(comments []syntax.Comment, line int) string {
	var lines []string
	want := line - 1
	for i := len(comments) - 1; i >= 0 && want > 0; i-- {
		c := comments[i]
		if c.Span.Start.Line > want {
			continue
		}
		if c.Span.Start.Line < want || c.Span.Start.Col != 1 {
			break
		}
		t := strings.TrimPrefix(c.Text, "#")
		lines = append(lines, strings.TrimPrefix(t, " "))
		want--
	}
	for i, j := 0, len(lines)-1; i < j; i, j = i+1, j-1 {
		lines[i], lines[j] = lines[j], lines[i]
	}
	return strings.Join(lines, "\n")
}
