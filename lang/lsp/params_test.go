package lsp

import (
	"path/filepath"
	"strings"
	"testing"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
)

// TestInvalidParams checks the -32602 answers of issue 23: they name the
// request's fields and the JSON they want, not Go's types ("json: cannot
// unmarshal number into Go struct field ...").
func TestInvalidParams(t *testing.T) {
	dir := t.TempDir()
	c := startServer(t, Options{})
	c.initialize(dir, map[string]any{})
	u := pathURI(filepath.Join(dir, "m.te"))
	c.open(u, "model m {\n  input x: f32[4]\n  output y = x * 2.0\n}\n")
	c.diagnostics(u, 1)
	doc := map[string]any{"uri": u}
	tests := []struct {
		name, method string
		params       any
		want         string
	}{
		{"uri a number", protocol.MethodTextDocumentHover, map[string]any{"textDocument": map[string]any{"uri": 1}},
			"textDocument.uri must be a string, got a number"},
		{"no textDocument", protocol.MethodTextDocumentHover, map[string]any{"position": map[string]any{"line": 0, "character": 0}},
			"textDocument is missing"},
		{"no uri", protocol.MethodTextDocumentDocumentSymbol, map[string]any{"textDocument": map[string]any{}},
			"textDocument.uri is missing"},
		{"textDocument an array", protocol.MethodTextDocumentDocumentSymbol, map[string]any{"textDocument": []int{1}},
			"textDocument must be an object, got an array"},
		{"params an array", protocol.MethodTextDocumentHover, []int{1, 2},
			"params must be an object, got an array"},
		{"negative line", protocol.MethodTextDocumentHover, map[string]any{"textDocument": doc, "position": map[string]any{"line": -1, "character": 0}},
			"position.line must be an integer from 0 to 4294967295, got -1"},
		{"fractional character", protocol.MethodTextDocumentDefinition, map[string]any{"textDocument": doc, "position": map[string]any{"line": 0, "character": 1.5}},
			"position.character must be an integer from 0 to 4294967295, got 1.5"},
		{"line a string", protocol.MethodTextDocumentReferences, map[string]any{"textDocument": doc, "position": map[string]any{"line": "one", "character": 0}},
			"position.line must be an integer from 0 to 4294967295, got a string"},
		{"newName a number", protocol.MethodTextDocumentRename, map[string]any{"textDocument": doc, "position": map[string]any{"line": 1, "character": 9}, "newName": 7},
			"newName must be a string, got a number"},
		{"range a string", methodInlayHint, map[string]any{"textDocument": doc, "range": "all"},
			"range must be an object, got a string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.call(tt.method, tt.params)
			re, ok := err.(*rpcError)
			if !ok || re.Code != int(jsonrpc2.InvalidParams) {
				t.Fatalf("got %v, want error %d", err, jsonrpc2.InvalidParams)
			}
			if !strings.Contains(re.Message, tt.want) {
				t.Errorf("message %q, want it to contain %q", re.Message, tt.want)
			}
			for _, goWord := range []string{"json:", "Go struct", "Go value", "uint32", "unmarshal"} {
				if strings.Contains(re.Message, goWord) {
					t.Errorf("message %q speaks of Go (%q)", re.Message, goWord)
				}
			}
		})
	}
	if err := c.shutdown(); err != nil {
		t.Errorf("shutdown: %v", err)
	}
}

// TestDocumentSizeLimit is issue 23's 20 MB document: the server applies
// tec check's limit (16 MiB) to an open document, with a diagnostic that
// says so, and answers requests about it with an error instead of
// checking it.
func TestDocumentSizeLimit(t *testing.T) {
	dir := t.TempDir()
	c := startServer(t, Options{})
	c.initialize(dir, map[string]any{})
	u := pathURI(filepath.Join(dir, "big.te"))
	line := "# " + strings.Repeat("x", 97) + "\n"
	model := "model m {\n  input x: f32[4]\n  output y = x * 2.0\n}\n"
	text := strings.Repeat(line, maxFileBytes/len(line)+1) + model
	c.open(u, text)
	p := c.diagnostics(u, 1)
	if len(p.Diagnostics) != 1 || !strings.Contains(p.Diagnostics[0].Message, "larger than 16 MiB") {
		t.Fatalf("diagnostics %+v, want one saying the file is larger than 16 MiB", p.Diagnostics)
	}
	_, err := c.call(protocol.MethodSemanticTokensFull, map[string]any{"textDocument": map[string]any{"uri": u}})
	if re, ok := err.(*rpcError); !ok || re.Code != int(codeRequestFailed) || !strings.Contains(re.Message, "larger than 16 MiB") {
		t.Errorf("semantic tokens of the large file: %v, want error %d saying it is too large", err, codeRequestFailed)
	}
	// Cut to the limit, it is checked.
	c.notify("textDocument/didChange", map[string]any{"textDocument": map[string]any{"uri": u, "version": 2},
		"contentChanges": []map[string]any{{"text": strings.Repeat(line, (maxFileBytes-len(model))/len(line)) + model}}})
	p = c.diagnostics(u, 2)
	for _, d := range p.Diagnostics {
		if d.Severity == protocol.DiagnosticSeverityError {
			t.Errorf("the file at the limit: %+v", d)
		}
	}
	if err := c.shutdown(); err != nil {
		t.Errorf("shutdown: %v", err)
	}
}
