package pipeline

import (
	"fmt"
	"go/parser"
	"go/token"
	"slices"
	"strings"
	"testing"

	"tec/examples"
	"tec/lang"
	"tec/precision"
)

// TestPassesFromTable builds every example at its tiny size at every level
// (and one with a precision pass) and checks that Build ran, in order, the
// passes of the table that PassesFor names, dumped each under its name,
// and dumps each for a Dump that asks for that pass alone.
func TestPassesFromTable(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every example at every level")
	}
	known := map[string]bool{}
	for _, p := range Table() {
		known[p.Name] = true
	}
	for _, ex := range examples.All() {
		prog, diags := lang.Check(ex.File(), ex.Source(), lang.Config{Defines: ex.Tiny, Model: ex.Model})
		if diags.HasErrors() {
			t.Fatalf("%s: %v", ex.Name, diags.Error())
		}
		for level := 0; level <= MaxLevel; level++ {
			opts := Options{Level: level}
			if level == MaxLevel {
				opts.Precision = precision.BF16
			}
			var dumped []string
			opts.Dump = func(pass, text string) {
				if text == "" {
					t.Errorf("%s -O%d: empty dump of %s", ex.Name, level, pass)
				}
				dumped = append(dumped, pass)
			}
			res, err := Build(prog, opts)
			if err != nil {
				t.Fatalf("%s -O%d: %v", ex.Name, level, err)
			}
			for _, p := range res.Passes {
				if !known[p] {
					t.Errorf("%s -O%d: Build ran pass %s, which is not in the table", ex.Name, level, p)
				}
			}
			if want := PassesFor(opts); !slices.Equal(res.Passes, want) || !slices.Equal(dumped, want) {
				t.Errorf("%s -O%d: ran %v, dumped %v; PassesFor says %v", ex.Name, level, res.Passes, dumped, want)
			}
		}
	}
}

// TestDumpEachPass checks that a Dump that prints one pass gets that
// pass's result, for every pass of the table: the CLI's --dump-after NAME.
func TestDumpEachPass(t *testing.T) {
	p, diags := lang.Check("attn.te", []byte(attentionSource), lang.Config{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	for _, pass := range Table() {
		opts := Options{Level: MaxLevel, FlashChunks: 4}
		if pass.Name == "precision" {
			opts.Precision = precision.BF16
		}
		if !slices.Contains(PassesFor(opts), pass.Name) {
			t.Fatalf("%s: the options run only %v", pass.Name, PassesFor(opts))
		}
		var out strings.Builder
		opts.Dump = func(name, text string) {
			if name == pass.Name {
				out.WriteString(text)
			}
		}
		if _, err := Build(p, opts); err != nil {
			t.Fatalf("%s: %v", pass.Name, err)
		}
		want := "kernel "
		switch pass.Name {
		case "plan":
			want = "kernel 0"
		case "flash":
			want = "/chunk"
		case "precision", "groups", "pad", "horizontal", "vertical", "recompute":
			want = "compute("
		}
		if !strings.Contains(out.String(), want) {
			t.Errorf("the dump after %s lacks %q:\n%s", pass.Name, want, out.String())
		}
	}
}

// TestPackageDocListsPasses checks that the package documentation lists
// the passes of the table, as formatDocList writes them.
func TestPackageDocListsPasses(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	want := formatDocList(Table())
	if doc := f.Doc.Text(); !strings.Contains(doc, want) {
		t.Errorf("the package documentation (doc.go) does not list the passes as the table has them; want\n%s\nin\n%s", want, doc)
	}
}

// formatDocList returns the lines of the package documentation's list of
// passes: each pass's name and when it runs, and under them what it does,
// each line indented by a tab.
func formatDocList(ps []PassInfo) string {
	width := 0
	for _, p := range ps {
		width = max(width, len(p.Name))
	}
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "\t%-*s  %s\n\t%*s  %s\n", width, p.Name, p.When, width, "", p.Doc)
	}
	return b.String()
}

// TestPassOrder checks the constraints on the order of the table's
// passes, as cmd/compile's passOrder does.
func TestPassOrder(t *testing.T) {
	at := map[string]int{}
	for i, p := range Table() {
		if _, dup := at[p.Name]; dup {
			t.Errorf("pass %s is in the table twice", p.Name)
		}
		at[p.Name] = i
	}
	for _, c := range []struct{ before, after, why string }{
		{"precision", "flash", "every level rounds at the same points, those of the program as written"},
		{"precision", "groups", "the grouped convolutions' sums are in their precision's form"},
		{"groups", "horizontal", "the grouped convolutions are found as the front end wrote them"},
		{"flash", "horizontal", "the softmax sites are found as the front end wrote them"},
		{"horizontal", "vertical", "the levels add transforms in Souffle's order"},
		{"vertical", "recompute", "recomputation prices the inlined chains"},
		{"recompute", "plan", "the plan is that of the program recompute chose"},
		{"plan", "kir", "the lowering follows the plan"},
	} {
		b, okb := at[c.before]
		a, oka := at[c.after]
		if !okb || !oka || b >= a {
			t.Errorf("pass %s must run before %s: %s", c.before, c.after, c.why)
		}
	}
}
