package analysis

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"tec/internal/testkit/golden"
	"tec/internal/testkit/tooltest"
	"tec/te"
)

// goldenPrograms are the programs whose reports and graphs are golden.
func goldenPrograms() map[string]*te.Program {
	p2, _ := figure2()
	p4, _ := figure4()
	attn := newModel("attention")
	x := attn.input("x", 8, 16)
	out, _, _, _ := attn.attention(x, 2)
	return map[string]*te.Program{
		"figure2":   p2,
		"figure4":   p4,
		"attention": attn.outputs(attn.add2(out, x)),
		"lstm":      lstm(2, 2, 4, true),
	}
}

func TestReportGolden(t *testing.T) {
	for name, p := range goldenPrograms() {
		t.Run(name, func(t *testing.T) {
			r := mustAnalyze(t, p).Report()
			var text bytes.Buffer
			if err := r.WriteText(&text, false); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", name+".txt"), text.Bytes())
			js, err := json.MarshalIndent(r, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", name+".json"), append(js, '\n'))
			var back Report
			if err := json.Unmarshal(js, &back); err != nil {
				t.Fatalf("the JSON report does not read back: %v", err)
			}
		})
	}
}

func TestSummaryOnly(t *testing.T) {
	p, _ := figure2()
	var b bytes.Buffer
	if err := mustAnalyze(t, p).Report().WriteText(&b, true); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Contains(out, "{ O0") || !strings.Contains(out, "FLOPs: 1,060,864") ||
		!strings.Contains(out, "compulsory bytes: 49,408 = inputs 16,384 + params 32,768 + outputs 256") {
		t.Errorf("summary:\n%s", out)
	}
}

func TestDOT(t *testing.T) {
	progs := goldenPrograms()
	tests := []struct {
		prog     string
		collapse string
	}{
		{"figure2", "none"},
		{"attention", "none"},
		{"attention", "call"},
		{"lstm", "loop"},
		{"lstm", "call"},
		{"lstm", "2"},
	}
	for _, tt := range tests {
		t.Run(tt.prog+"-"+tt.collapse, func(t *testing.T) {
			c, err := ParseCollapse(tt.collapse)
			if err != nil {
				t.Fatal(err)
			}
			b, err := mustAnalyze(t, progs[tt.prog]).DOT(c)
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", tt.prog+"-"+tt.collapse+".dot"), b)
			dot := tooltest.Dot(t) // after the golden: a missing or broken dot skips only this check
			cmd := exec.Command(dot, "-Tsvg")
			cmd.Stdin = bytes.NewReader(b)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Run(); err != nil || stderr.Len() > 0 {
				t.Errorf("dot -Tsvg: %v\n%s", err, stderr.String())
			}
		})
	}
	if _, err := ParseCollapse("sideways"); err == nil {
		t.Error("ParseCollapse(sideways): no error")
	}
}

func TestCollapseKeys(t *testing.T) {
	scope := []string{"t[3]", "l[1]", "lstm_cell", "linear"}
	tests := []struct {
		mode string
		want string
	}{
		{"none", ""},
		{"loop", "t[3]"},
		{"call", "t[3]/l[1]/lstm_cell"},
		{"1", "t[3]"},
		{"3", "t[3]/l[1]/lstm_cell"},
		{"9", "t[3]/l[1]/lstm_cell/linear"},
	}
	for _, tt := range tests {
		c, err := ParseCollapse(tt.mode)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := c.key(scope)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("%s: key %q, %v; want %q", tt.mode, got, ok, tt.want)
		}
	}
	if _, ok := (Collapse{Mode: "loop"}).key([]string{"attention", "linear"}); ok {
		t.Error("a scope without loops is grouped by loop")
	}
}
