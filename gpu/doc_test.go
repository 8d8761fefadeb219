package gpu

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
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
	if g.Name != "A100-PCIe-80GB" || g.DRAMBandwidth != 1.935e12 {
		t.Errorf("the example parsed as %+v", g)
	}

	// The fields' table is the section "The file"'s.
	_, fields, _ := strings.Cut(doc, "\n## The file\n")
	fields, _, _ = strings.Cut(fields, "\n## ")
	row := regexp.MustCompile("(?m)^\\| `([a-z0-9_]+)` \\|")
	var documented []string
	for _, m := range row.FindAllStringSubmatch(fields, -1) {
		documented = append(documented, m[1])
	}
	want := jsonFields()
	slices.Sort(documented)
	slices.Sort(want)
	if !slices.Equal(documented, want) {
		t.Errorf("docs/gpu.md documents the fields %v; Model has %v", documented, want)
	}
}

// TestBuiltinDoc checks docs/gpu.md's table of built-in models against
// Builtin: a row for every name of Names, with its model's name, target,
// SMs, DRAM bandwidth, FP16 tensor rate and L2 size.
func TestBuiltinDoc(t *testing.T) {
	data, err := os.ReadFile("../docs/gpu.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z0-9-]+)` \\| ([^|]+) \\| (sm_[0-9]+) \\| ([0-9]+) \\| ([0-9.]+) \\| ([0-9.]+) \\| ([0-9]+) \\|$")
	documented := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(string(data), -1) {
		documented[m[1]] = strings.Join(m[2:], " ")
	}
	for _, name := range Names() {
		g, _ := Builtin(name)
		want := fmt.Sprintf("%s %s %d %s %s %d", g.Name, g.Arch.Name, g.SMs,
			strconv.FormatFloat(g.DRAMBandwidth/1e9, 'f', -1, 64), strconv.FormatFloat(g.FP16Peak/1e12, 'f', -1, 64), g.L2Bytes>>20)
		if documented[name] != want {
			t.Errorf("docs/gpu.md's row for %s says %q; gpu.Builtin has %q", name, documented[name], want)
		}
		delete(documented, name)
	}
	for name := range documented {
		t.Errorf("docs/gpu.md documents %s, which is not a built-in model", name)
	}
}
