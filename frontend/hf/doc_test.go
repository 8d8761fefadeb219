package hf

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestDocumented checks docs/import.md's section on Hugging Face
// checkpoints against the code: its table of fields lists every field of
// the whitelist and no other, its list of refused fields every field with
// a reason, and its table of params the mapping, row by row.
func TestDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/import.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Hugging Face checkpoints\n")
	if !ok {
		t.Fatal("docs/import.md has no section Hugging Face checkpoints")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	fields, _, _ := strings.Cut(section[strings.Index(section, "| field | families |"):], "\n\n")
	listed := map[string]bool{}
	for _, row := range strings.Split(fields, "\n")[2:] {
		cell := strings.Split(row, " | ")[0]
		for _, m := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(cell, -1) {
			listed[m[1]] = true
		}
	}
	for _, r := range fieldRules {
		if !listed[r.name] {
			t.Errorf("the table of fields does not list %s", r.name)
		}
		delete(listed, r.name)
	}
	for name := range listed {
		t.Errorf("the table of fields lists %s, which the whitelist does not have", name)
	}
	_, refused, _ := strings.Cut(section, "Fields that tec refuses with a reason of their own:")
	refused, _, _ = strings.Cut(refused, "every other unknown field")
	for name := range refusedWhy {
		if !strings.Contains(refused, "`"+name+"`") {
			t.Errorf("the refused fields do not list %s", name)
		}
	}
	var rows []string
	for _, line := range strings.Split(section, "\n") {
		if m := regexp.MustCompile("^\\| `([a-z_]+)(\\.l)?` \\| `([a-z_.]+)` \\| `\\[([A-Z *,]+)\\]` \\|").FindStringSubmatch(line); m != nil {
			rows = append(rows, m[1]+m[2]+" "+m[3]+" "+m[4])
		}
	}
	var want []string
	for _, r := range paramRules {
		name, tensor := r.name, r.tensor
		if r.layer {
			name, tensor = name+".l", layerPrefix+"l."+tensor
		}
		want = append(want, name+" "+tensor+" "+r.shape)
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("the table of params has\n%s\nthe mapping is\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
}
