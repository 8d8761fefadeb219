package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNeovim runs a real editor: Neovim headless, with docs/editors.md's
// snippet as its init.lua, opens an example with a misspelt function, and
// the test checks the diagnostics and a hover it receives, so that the
// snippet the page gives works on the Neovim installed (Debian's 0.7 in CI,
// where the page's earlier snippet did nothing). It is skipped when nvim is
// not installed, except under CI.
func TestNeovim(t *testing.T) {
	nvim, err := exec.LookPath("nvim")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("nvim is not installed (CI installs Debian's neovim)")
		}
		t.Skip("nvim is not installed: apt-get install neovim to run this test")
	}
	dir := t.TempDir()
	tec := filepath.Join(dir, "tec")
	if out, err := exec.Command("go", "build", "-o", tec, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	src, err := os.ReadFile("../../examples/softmax.te")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "softmax.te")
	broken := strings.Replace(string(src), "exp(x[i, j]", "expp(x[i, j]", 1)
	if err := os.WriteFile(file, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs("testdata/nvim_lsp.lua")
	if err != nil {
		t.Fatal(err)
	}
	snippet, err := neovimSnippet("../../docs/editors.md")
	if err != nil {
		t.Fatal(err)
	}
	initLua := filepath.Join(dir, "init.lua")
	if err := os.WriteFile(initLua, []byte(snippet), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.json")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, nvim, "--headless", "-u", initLua, "-i", "NONE", "-n", "-c", "luafile "+script)
	cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"), "TE_FILE="+file, "HOVER_AT=x[i, j] - m", "OUT="+out,
		"XDG_CONFIG_HOME="+dir, "XDG_DATA_HOME="+dir, "XDG_CACHE_HOME="+dir, "XDG_STATE_HOME="+dir)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nvim: %v\n%s", err, b)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("nvim wrote no result: %v", err)
	}
	t.Logf("Neovim received: %s", data)
	var res struct {
		Error       string
		Diagnostics []struct {
			Lnum, Col int
			Message   string
			Code      string
		}
		Hover string
	}
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatalf("%v: %s", err, data)
	}
	if res.Error != "" {
		t.Fatal(res.Error)
	}
	if len(res.Diagnostics) != 1 {
		t.Fatalf("got %d diagnostics, want 1: %+v", len(res.Diagnostics), res.Diagnostics)
	}
	d := res.Diagnostics[0]
	if d.Code != "undefined" || !strings.Contains(d.Message, "undefined name 'expp'") || !strings.Contains(d.Message, "did you mean 'exp'?") || d.Lnum != 11 || d.Col != 12 {
		t.Errorf("diagnostic = %+v, want undefined name 'expp' with a did-you-mean at line 11, column 12 (0-based)", d)
	}
	if !strings.Contains(res.Hover, "x: f32[128, 768]") || !strings.Contains(res.Hover, "input") {
		t.Errorf("hover = %q, want the type of input x", res.Hover)
	}
}

// neovimSnippet returns the first Lua block of the Neovim section of the
// page at path: the init.lua it tells users to write.
func neovimSnippet(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	_, section, ok := strings.Cut(string(b), "\n## Neovim\n")
	if !ok {
		return "", fmt.Errorf("%s has no Neovim section", path)
	}
	_, block, ok := strings.Cut(section, "```lua\n")
	if !ok {
		return "", fmt.Errorf("%s: the Neovim section has no Lua block", path)
	}
	block, _, ok = strings.Cut(block, "```")
	if !ok {
		return "", fmt.Errorf("%s: the Neovim section's Lua block is not closed", path)
	}
	return block, nil
}
