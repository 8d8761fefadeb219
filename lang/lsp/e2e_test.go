package lsp

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.lsp.dev/protocol"

	"tec/internal/testkit/golden"
)

// TestEndToEnd drives a server through a session as an editor would, over
// pipes: initialize, open, hover, definition, references, completion,
// formatting, symbols, semantic tokens, inlay hints, rename, edits that
// break and fix the file, a settings change, shutdown and exit. Every
// response and the diagnostics published are compared with
// testdata/e2e.golden (go test -update rewrites it).
func TestEndToEnd(t *testing.T) {
	ws, err := filepath.Abs("testdata/ws")
	if err != nil {
		t.Fatal(err)
	}
	stdlibDir := t.TempDir()
	c := startServer(t, Options{StdlibDir: stdlibDir})
	modelPath := filepath.Join(ws, "model.te")
	src, err := os.ReadFile(modelPath)
	if err != nil {
		t.Fatal(err)
	}
	text := string(src)
	model := pathURI(modelPath)
	doc := map[string]any{"uri": model}

	var out bytes.Buffer
	record := func(step string, v any) {
		t.Helper()
		out.WriteString("### " + step + "\n")
		out.Write(normalize(t, v, map[string]string{string(pathURI(ws)): "file:///WS", string(pathURI(stdlibDir)): "file:///STDLIB"}))
		out.WriteString("\n")
	}
	request := func(step, method string, params any) {
		t.Helper()
		res, err := c.call(method, params)
		if err != nil {
			record(step, map[string]any{"error": err.Error()})
			return
		}
		record(step, res)
	}
	at := func(needle string, n, delta int) map[string]any {
		return map[string]any{"textDocument": doc, "position": posOf(t, text, needle, n, delta)}
	}

	record("initialize", c.initialize(ws, map[string]any{}))
	c.open(model, text)
	record("diagnostics after open", c.diagnostics(model, 1))

	request("hover on a tensor", "textDocument/hover", at("h[i, j]", 1, 0))
	request("hover on an input", "textDocument/hover", at("x, w1", 1, 0))
	request("hover on an index variable", "textDocument/hover", at("i, j]", 2, 0))
	request("hover on a reduction axis with a where clause", "textDocument/hover", at("j](a", 1, 0))
	request("hover on a function of an import", "textDocument/hover", at("dense(x", 1, 2))
	request("hover on a const", "textDocument/hover", at("H]", 1, 0))
	request("hover on a builtin", "textDocument/hover", at("max(v", 1, 1))
	request("hover on a keyword", "textDocument/hover", at("where", 1, 0))
	request("hover on nothing", "textDocument/hover", at("\n\n", 1, 1))

	request("definition of an imported function", "textDocument/definition", at("dense(a", 1, 0))
	request("definition of an import", "textDocument/definition", at("layers.te", 1, 2))
	request("definition of a local tensor", "textDocument/definition", at("a,w2", 1, 0))
	request("definition of a builtin", "textDocument/definition", at("max(v", 1, 0))
	request("definition of a stdlib function", "textDocument/definition", at("softmax(a)", 1, 0))
	request("hover on a stdlib function", "textDocument/hover", at("softmax(a)", 1, 0))

	refs := at("dense(x", 1, 0)
	refs["context"] = map[string]any{"includeDeclaration": true}
	request("references of an imported function", "textDocument/references", refs)
	refs = at("h[i, j]", 1, 0)
	refs["context"] = map[string]any{"includeDeclaration": false}
	request("references of a tensor", "textDocument/references", refs)

	request("completion of de", "textDocument/completion", at("e(x, w1", 1, 0))
	request("completion in a comment", "textDocument/completion", at("ReLU", 1, 2))

	request("formatting", "textDocument/formatting", map[string]any{"textDocument": doc, "options": map[string]any{"tabSize": 2, "insertSpaces": true}})
	request("document symbols", "textDocument/documentSymbol", map[string]any{"textDocument": doc})
	request("semantic tokens", "textDocument/semanticTokens/full", map[string]any{"textDocument": doc})
	request("inlay hints", "textDocument/inlayHint", map[string]any{"textDocument": doc,
		"range": protocol.Range{End: protocol.Position{Line: 100}}})

	request("prepare rename of a tensor", "textDocument/prepareRename", at("h = dense", 1, 0))
	rn := at("h = dense", 1, 0)
	rn["newName"] = "hidden"
	request("rename a tensor", "textDocument/rename", rn)
	rn = at("dense(x", 1, 0)
	rn["newName"] = "fc"
	request("rename an imported function", "textDocument/rename", rn)
	rn = at("h = dense", 1, 0)
	rn["newName"] = "a"
	request("rename to a name in use", "textDocument/rename", rn)
	request("prepare rename of a builtin", "textDocument/prepareRename", at("max(v", 1, 0))

	// Break the file with an incremental edit after the emoji (two UTF-16
	// code units) of the comment line, then fix it.
	edit := func(version int, start, end protocol.Position, newText string) {
		c.notify("textDocument/didChange", map[string]any{
			"textDocument":   map[string]any{"uri": model, "version": version},
			"contentChanges": []any{map[string]any{"range": protocol.Range{Start: start, End: end}, "text": newText}}})
	}
	emoji := posOf(t, text, "😀", 1, len("😀"))
	edit(2, emoji, emoji, " act(h)")
	hh := posOf(t, text, "h[i, j]", 1, 0)
	edit(3, hh, hh, "h")
	record("diagnostics after breaking edits", c.diagnostics(model, 3))
	request("formatting after the edits", "textDocument/formatting", map[string]any{"textDocument": doc, "options": map[string]any{"tabSize": 2, "insertSpaces": true}})
	c.notify("textDocument/didChange", map[string]any{
		"textDocument":   map[string]any{"uri": model, "version": 4},
		"contentChanges": []any{map[string]any{"text": text}}})
	record("diagnostics after a full-text fix", c.diagnostics(model, 4))

	c.notify("workspace/didChangeConfiguration", map[string]any{"settings": map[string]any{"tec": map[string]any{"defines": map[string]any{"H": "32"}}}})
	request("hover on a const after tec.defines", "textDocument/hover", at("H]", 1, 0))
	request("hover on an index variable after tec.defines", "textDocument/hover", at("j](a", 1, 0))

	c.notify("textDocument/didClose", map[string]any{"textDocument": doc})
	record("diagnostics after close", c.closedDiagnostics(model))
	request("hover on a file that is not open", "textDocument/hover", at("h[i, j]", 1, 0))

	if err := c.shutdown(); err != nil {
		t.Errorf("Serve after shutdown and exit: %v", err)
	}
	golden.Check(t, filepath.Join("testdata", "e2e.golden"), out.Bytes())
}

// normalize re-encodes a JSON value with sorted keys and indentation, and
// replaces the machine-dependent URI prefixes.
func normalize(t *testing.T, v any, prefixes map[string]string) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		t.Fatal(err)
	}
	b, err = json.MarshalIndent(x, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for from, to := range prefixes {
		s = strings.ReplaceAll(s, from, to)
	}
	// The copy of the standard library is named by a hash of it, which
	// every change to the library changes.
	s = stdlibHash.ReplaceAllString(s, "stdlib-HASH")
	return []byte(s)
}

var stdlibHash = regexp.MustCompile(`stdlib-[0-9a-f]{12}`)
