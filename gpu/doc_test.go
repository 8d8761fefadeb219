package gpu

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestGPUDoc checks docs/gpu.md: its example file parses and validates,
// and its table documents exactly the fields of GPU's JSON form.
func TestGPUDoc(t *testing.T) {
	data, err := os.ReadFile("../docs/gpu.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	_, example, ok := strings.Cut(doc, "```json\n")
	if !ok {
		t.Fatal("docs/gpu.md has no ```json example")
	}
	example, _, _ = strings.Cut(example, "```")
	g, err := Parse([]byte(example))
	if err != nil {
		t.Fatalf("the example does not parse: %v", err)
	}
	if g.Name != "A100-SXM4-80GB" || g.DRAMBandwidth != 2.039e12 {
		t.Errorf("the example parsed as %+v", g)
	}

	row := regexp.MustCompile("(?m)^\\| `([a-z0-9_]+)` \\|")
	var documented []string
	for _, m := range row.FindAllStringSubmatch(doc, -1) {
		documented = append(documented, m[1])
	}
	fields := jsonFields()
	slices.Sort(documented)
	slices.Sort(fields)
	if !slices.Equal(documented, fields) {
		t.Errorf("docs/gpu.md documents the fields %v; Model has %v", documented, fields)
	}
}
