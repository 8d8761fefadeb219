package lsp

import (
	"encoding/json"
	"strings"
	"testing"

	"go.lsp.dev/protocol"

	"tec/lang"
)

// TestBuiltins checks that completion offers exactly the builtins of
// lang.Builtins, in its order, with their signatures and documentation, and
// that a hover on each shows them.
func TestBuiltins(t *testing.T) {
	builtins := lang.Builtins()
	var names []string
	for _, b := range builtins {
		names = append(names, b.Name)
	}
	dir := t.TempDir()
	c := startServer(t, Options{StdlibDir: t.TempDir()})
	c.initialize(dir, map[string]any{})
	uri := pathURI(dir + "/builtins.te")
	text := strings.Join(names, "\n") + "\n\n"
	c.open(uri, text)
	doc := map[string]any{"uri": uri}

	var list protocol.CompletionList
	decodeCall(t, c, "textDocument/completion", map[string]any{"textDocument": doc, "position": protocol.Position{Line: uint32(len(names))}}, &list)
	var offered []protocol.CompletionItem
	for _, it := range list.Items {
		if strings.HasPrefix(it.SortText, "4") {
			offered = append(offered, it)
		}
	}
	if len(offered) != len(builtins) {
		t.Errorf("completion offers %d builtins, lang.Builtins has %d", len(offered), len(builtins))
	}
	for i := range min(len(offered), len(builtins)) {
		it, b := offered[i], builtins[i]
		if it.Label != b.Name || it.Detail != b.Signature || it.Documentation != b.Doc {
			t.Errorf("completion item %d: %q, %q, %v; want %q, %q, %q", i, it.Label, it.Detail, it.Documentation, b.Name, b.Signature, b.Doc)
		}
	}

	for i, b := range builtins {
		var h protocol.Hover
		decodeCall(t, c, "textDocument/hover", map[string]any{"textDocument": doc, "position": protocol.Position{Line: uint32(i)}}, &h)
		if want := codeBlock(b.Signature) + b.Doc + " (builtin)"; h.Contents.Value != want {
			t.Errorf("hover on %s: %q, want %q", b.Name, h.Contents.Value, want)
		}
	}
}

// decodeCall makes a request and decodes its result into v.
func decodeCall(t *testing.T, c *client, method string, params, v any) {
	t.Helper()
	res, err := c.call(method, params)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	if err := json.Unmarshal(res, v); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
}
