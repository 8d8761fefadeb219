package lsp

import (
	"strings"
	"testing"
	"time"
)

// TestHoverLoopParam hovers over a param declared in a loop: the hover says
// that the declaration makes one tensor per iteration, and names the first
// as the program does (w.0).
func TestHoverLoopParam(t *testing.T) {
	c := startServer(t, Options{Debounce: time.Hour})
	dir := t.TempDir()
	c.initialize(dir, nil)
	text := `model m {
  input x: f32[4]
  h = x
  for l in 0..3 {
    param w: f32[4]
    h = h * w
  }
  output h
}
`
	u := pathURI(dir + "/loop.te")
	c.open(u, text)
	params := map[string]any{"textDocument": map[string]any{"uri": u}, "position": posOf(t, text, "h * w", 1, 5)}
	res, err := c.call("textDocument/hover", params)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"w: f32[4]", "one of 3 params this declaration makes, one per loop iteration: w.0 ... w.2"} {
		if !strings.Contains(string(res), want) {
			t.Errorf("hover lacks %q:\n%s", want, res)
		}
	}
	if err := c.shutdown(); err != nil {
		t.Error(err)
	}
}
