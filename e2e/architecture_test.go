package e2e

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"tec/pipeline"
)

// architectureTable returns the rows of the Markdown table in
// docs/architecture.md whose header's first cell is first: each row's
// cells, trimmed.
func architectureTable(t *testing.T, first string) [][]string {
	t.Helper()
	doc, err := os.ReadFile("../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]string
	in := false
	for line := range strings.SplitSeq(string(doc), "\n") {
		if !strings.HasPrefix(line, "|") {
			in = false
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		switch {
		case cells[0] == first:
			in = true
		case in && !strings.HasPrefix(cells[0], "---"):
			rows = append(rows, cells)
		}
	}
	if len(rows) == 0 {
		t.Fatalf("docs/architecture.md has no table headed %q", first)
	}
	return rows
}

// codeNames returns the `names` of a Markdown cell, expanding
// `dir/{a,b}` into dir/a and dir/b.
func codeNames(cell string) []string {
	var out []string
	for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(cell, -1) {
		name := m[1]
		prefix, rest, ok := strings.Cut(name, "{")
		if !ok {
			out = append(out, name)
			continue
		}
		for part := range strings.SplitSeq(strings.TrimSuffix(rest, "}"), ",") {
			out = append(out, prefix+part)
		}
	}
	return out
}

// TestArchitectureLayers checks that docs/architecture.md draws the layers
// that TestLayers enforces, row by row.
func TestArchitectureLayers(t *testing.T) {
	rows := architectureTable(t, "layer")
	if len(rows) != len(layers) {
		t.Fatalf("docs/architecture.md draws %d layers, e2e/layers_test.go has %d", len(rows), len(layers))
	}
	for i, row := range rows {
		got := codeNames(row[1])
		var want []string
		for _, p := range layers[i] {
			if strings.HasPrefix(p, "bench/") {
				p = "bench/*"
			}
			if !slices.Contains(want, p) {
				want = append(want, p)
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("layer %d: docs/architecture.md has %v, e2e/layers_test.go %v", i, got, want)
		}
	}
}

// TestArchitecturePasses checks docs/architecture.md's table of passes
// against pipeline.Table: the same passes in the same order.
func TestArchitecturePasses(t *testing.T) {
	var got, want []string
	for _, row := range architectureTable(t, "pass") {
		got = append(got, codeNames(row[0])...)
	}
	for _, p := range pipeline.Table() {
		want = append(want, p.Name)
	}
	if !slices.Equal(got, want) {
		t.Errorf("docs/architecture.md lists the passes %v; pipeline.Table has %v", got, want)
	}
}
