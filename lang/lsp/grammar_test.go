package lsp

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestTextMateGrammar tokenizes every example, every standard library file
// and the test workspace with the VS Code extension's TextMate grammar,
// through vscode-textmate and vscode-oniguruma (editors/vscode/test/grammar.js),
// which checks that comments, strings, keywords, numbers, dtypes and
// reductions are scoped. It needs node and the extension's npm packages
// (npm ci in editors/vscode); it is skipped without them, except under CI.
func TestTextMateGrammar(t *testing.T) {
	ci := os.Getenv("CI") == "true"
	node, err := exec.LookPath("node")
	if err != nil {
		if ci {
			t.Fatal("node is not installed")
		}
		t.Skip("node is not installed")
	}
	ext, err := filepath.Abs("../../editors/vscode")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(ext, "node_modules", "vscode-textmate")); err != nil {
		if ci {
			t.Fatal("editors/vscode has no node_modules: .ci/run must run npm ci there")
		}
		t.Skip("run npm ci in editors/vscode to test the grammar")
	}
	var files []string
	for _, pattern := range []string{"../../examples/*.te", "../stdlib/*.te", "testdata/ws/*.te"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m {
			abs, err := filepath.Abs(f)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, abs)
		}
	}
	cmd := exec.Command(node, append([]string{filepath.Join(ext, "test", "grammar.js")}, files...)...)
	cmd.Dir = ext
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("the grammar test failed: %v", err)
	}
}
