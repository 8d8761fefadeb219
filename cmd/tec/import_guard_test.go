package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestImportRefusesOverwrites: -o or --params naming the model being
// imported, or the same file as each other, is a usage error that leaves
// every file as it was (issue 23: the .onnx was overwritten by the
// program).
func TestImportRefusesOverwrites(t *testing.T) {
	dir := t.TempDir()
	model := writeONNX(t, dir, "act", "Tanh")
	original, err := os.ReadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.onnx")
	if err := os.Symlink(model, link); err != nil {
		t.Fatal(err)
	}
	disguised := filepath.Join(dir, "model.te") // an ONNX model named as the default -o
	if err := os.WriteFile(disguised, original, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.te")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"-o the model", []string{model, "-o", model}, "-o " + model + " is the model being imported, which it would overwrite"},
		{"-o the model, spelt otherwise", []string{model, "-o", filepath.Join(dir, ".", "act.onnx")}, "is the model being imported"},
		{"-o a link to the model", []string{model, "-o", link}, "-o " + link + " is the model being imported"},
		{"the default -o is the model", []string{disguised}, "-o " + disguised + " is the model being imported"},
		{"--params the model", []string{model, "-o", out, "--params", model}, "--params " + model + " is the model being imported"},
		{"--params the program", []string{model, "-o", out, "--params", out}, "--params " + out + " and -o " + out + " are the same file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runTec(t, append([]string{"import"}, tt.args...)...)
			if code != exitUsage || !strings.Contains(stderr, tt.want) {
				t.Errorf("status %d, stderr %q; want %d and %q", code, stderr, exitUsage, tt.want)
			}
			code, stdout, _ := runTec(t, append([]string{"import", "--diagnostics", "json"}, tt.args...)...)
			var d struct{ Code, Message, Hint string }
			if err := json.Unmarshal([]byte(strings.TrimSpace(stdout)), &d); err != nil || code != exitUsage || d.Code != codeUsage || !strings.Contains(d.Message, tt.want) || d.Hint == "" {
				t.Errorf("--diagnostics json: status %d, %q (%v)", code, stdout, err)
			}
			for _, f := range []string{model, disguised} {
				if got, err := os.ReadFile(f); err != nil || !bytes.Equal(got, original) {
					t.Errorf("%s changed (%v)", f, err)
				}
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("%s was written (%v)", out, err)
			}
		})
	}
	// Distinct files are fine.
	if code, stdout, stderr := runTec(t, "import", model, "-o", out, "--params", filepath.Join(dir, "w.npz")); code != exitOK {
		t.Errorf("status %d\n%s%s", code, stdout, stderr)
	}
}
