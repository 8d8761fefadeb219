package lsp

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"go.lsp.dev/protocol"
)

// TestHoverInvalidValue is issue 23's "ysc: an invalid value": a name
// whose definition failed, directly or through the names it uses, is
// described as having no type because of the error, with where the error
// is and what it says.
func TestHoverInvalidValue(t *testing.T) {
	text := `model m {
  input x: f32[4]
  ys = [x * 2.0, x * nope]
  ysc = stack(ys)
  z = ysc + 1.0
  w[i] = x[i + 9]
  v = w * 2.0
  output y = z
}
`
	tests := []struct {
		at   string // the text at the hover's position
		n    int    // its occurrence
		want []string
	}{
		{"ysc =", 1, []string{"ysc: type unknown", "because of the error at line 3, column 22, upstream of it: undefined name 'nope'"}},
		{"z =", 1, []string{"z: type unknown", "because of the error at line 3, column 22, upstream of it: undefined name 'nope'"}},
		{"w[i]", 1, []string{"w: type unknown", "because of the error at line 6, column 5: cannot infer the range of i"}},
		{"w *", 1, []string{"w: type unknown", "at line 6, column 5: cannot infer"}},
		{"v =", 1, []string{"v: type unknown", "at line 6, column 5, upstream of it: cannot infer"}},
		{"ysc + 1.0", 1, []string{"ysc: type unknown", "line 3, column 22"}},
	}
	dir := t.TempDir()
	c := startServer(t, Options{})
	c.initialize(dir, map[string]any{})
	u := pathURI(filepath.Join(dir, "m.te"))
	c.open(u, text)
	c.diagnostics(u, 1)
	for _, tt := range tests {
		t.Run(tt.at, func(t *testing.T) {
			res, err := c.call(protocol.MethodTextDocumentHover, map[string]any{"textDocument": map[string]any{"uri": u}, "position": posOf(t, text, tt.at, tt.n, 0)})
			if err != nil {
				t.Fatal(err)
			}
			var h protocol.Hover
			if err := json.Unmarshal(res, &h); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(h.Contents.Value, w) {
					t.Errorf("hover %q, want it to contain %q", h.Contents.Value, w)
				}
			}
			if strings.Contains(h.Contents.Value, "invalid value") {
				t.Errorf("hover %q speaks of an invalid value", h.Contents.Value)
			}
		})
	}
	t.Run("completion", func(t *testing.T) {
		res, err := c.call(protocol.MethodTextDocumentCompletion, map[string]any{"textDocument": map[string]any{"uri": u}, "position": posOf(t, text, "ysc + 1.0", 1, 2)})
		if err != nil {
			t.Fatal(err)
		}
		var list protocol.CompletionList
		if err := json.Unmarshal(res, &list); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, it := range list.Items {
			if it.Label == "ysc" {
				found = true
				if !strings.Contains(it.Detail, "ysc: type unknown") || strings.Contains(it.Detail, "invalid value") {
					t.Errorf("completion of ysc: detail %q, want its type unknown", it.Detail)
				}
			}
		}
		if !found {
			t.Errorf("no completion ysc among %+v", list.Items)
		}
	})
	if err := c.shutdown(); err != nil {
		t.Errorf("shutdown: %v", err)
	}
}
