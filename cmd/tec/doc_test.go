package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tec/internal/testkit/golden"
)

// TestDoc runs "tec doc" as a user would and compares its output with the
// golden files testdata/doc/NAME.golden (go test -run TestDoc -update
// rewrites them).
func TestDoc(t *testing.T) {
	tests := []struct {
		golden string
		args   []string
		code   int
	}{
		{"index", []string{"doc"}, exitOK},
		{"index_json", []string{"doc", "--json"}, exitOK},
		{"softmax", []string{"doc", "softmax"}, exitOK},
		{"softmax_json", []string{"doc", "softmax", "--json"}, exitOK},
		{"take2", []string{"doc", "take2"}, exitOK},
		{"builtin_sum", []string{"doc", "sum"}, exitOK},
		{"builtin_sum_json", []string{"doc", "--json", "sum"}, exitOK},
		{"unknown", []string{"doc", "sofmax"}, exitUser},
		{"unknown_json", []string{"doc", "sofmax", "--json"}, exitUser},
		{"two_names", []string{"doc", "relu", "gelu"}, exitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			code, stdout, stderr := runTec(t, tt.args...)
			if code != tt.code {
				t.Errorf("tec %v: status %d, want %d\n%s", tt.args, code, tt.code, stderr)
			}
			got := "-- stdout --\n" + stdout + "-- stderr --\n" + stderr
			golden.CheckString(t, filepath.Join("testdata", "doc", tt.golden+".golden"), got)
		})
	}
}

// TestDocCoversLanguageTable checks that every function that the standard
// library table of docs/language.md names is one that "tec doc" lists, so
// that the table cannot name a function that does not exist.
func TestDocCoversLanguageTable(t *testing.T) {
	code, stdout, stderr := runTec(t, "doc", "--json")
	if code != exitOK {
		t.Fatalf("status %d\n%s", code, stderr)
	}
	var idx struct {
		Functions []struct{ Name string } `json:"functions"`
	}
	if err := json.Unmarshal([]byte(stdout), &idx); err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, f := range idx.Functions {
		listed[f.Name] = true
	}
	src, err := os.ReadFile("../../docs/language.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, _ := strings.Cut(string(src), "## The standard library")
	_, table, _ = strings.Cut(table, "\n| function")
	table, _, _ = strings.Cut(table, "\n\n")
	n := 0
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cell := strings.Split(line, "|")[1]
		for _, code := range strings.Split(cell, "`")[1:] {
			name, _, ok := strings.Cut(code, "(")
			if !ok || strings.ContainsAny(name, " .") {
				continue
			}
			n++
			if !listed[name] {
				t.Errorf("docs/language.md lists %s, which tec doc does not", name)
			}
		}
	}
	if n < 20 {
		t.Errorf("found %d functions in the table: the extraction is broken", n)
	}
}
