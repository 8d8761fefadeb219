package lsp

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"go.lsp.dev/protocol"

	"tec/lang/syntax"
)

// exampleFiles returns the example models of the repository.
func exampleFiles(t testing.TB) []string {
	files, err := filepath.Glob("../../examples/*.te")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example files: %v", err)
	}
	return files
}

// fragments are the texts random edits insert: tokens of the language,
// broken syntax, non-ASCII text and line breaks.
var fragments = []string{
	"", "x", "y[i, j] = ", "sum[k](", ")", "]", "[", "{", "}", "\n", "\n\n", " ", "0..", "..", "where i in 0..N",
	"# 😀 é\n", "😀", "\"", "import \"nope.te\"\n", "fn f(a) = a\n", "model m {\n", "const Q = 1/0\n",
	"output y\n", "for t in 0..3 {\n", "1e-5", "-", "*", "select(", ", ", "f32[2, 3]", "\t", "\r\n", "\x00",
}

// FuzzEdits applies random edits, incremental and whole-text, to an example
// file open in a server, and checks that the server neither panics nor
// hangs: every request is answered without an internal error, and hover
// still answers after the last edit.
func FuzzEdits(f *testing.F) {
	files := exampleFiles(f)
	for i := range files {
		f.Add(uint8(i), int64(i), uint8(20))
	}
	f.Fuzz(func(t *testing.T, which uint8, seed int64, n uint8) {
		file := files[int(which)%len(files)]
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		editSession(t, file, string(src), rand.New(rand.NewSource(seed)), int(n%64))
	})
}

// editSession opens text in a fresh server, applies n random edits from rng
// and checks that hover and the other requests still answer.
func editSession(t *testing.T, file, text string, rng *rand.Rand, n int) {
	var mu sync.Mutex
	var panics []string
	c := startServer(t, Options{Debounce: 1, Logf: func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if msg := fmt.Sprintf(format, args...); strings.Contains(msg, "panic") {
			panics = append(panics, msg)
		}
	}})
	c.initialize(filepath.Dir(file), nil)
	abs, _ := filepath.Abs(file)
	u := pathURI(abs)
	c.open(u, text)
	doc := map[string]any{"uri": u}
	for v := 2; v < n+2; v++ {
		var change map[string]any
		if rng.Intn(10) == 0 {
			// An editor's text is Unicode: cut at a character boundary
			// (a cut inside a UTF-8 sequence cannot be sent as JSON).
			cut := rng.Intn(len(text) + 1)
			for cut < len(text) && !utf8.RuneStart(text[cut]) {
				cut--
			}
			text = text[:cut] + fragments[rng.Intn(len(fragments))]
			change = map[string]any{"text": text}
		} else {
			m := newMapper([]byte(text))
			a, b := rng.Intn(len(text)+1), rng.Intn(len(text)+1)
			if a > b {
				a, b = b, a
			}
			if b-a > 200 {
				b = a + rng.Intn(200)
			}
			start, end := m.position(a), m.position(b)
			// Apply the edit as the server will, at the offsets the
			// positions denote (a position inside a character snaps),
			// in order: a position inside a character may count more
			// units than the one after it, and the server takes a
			// reversed range as the span between its ends.
			a, b = m.offset(start), m.offset(end)
			if b < a {
				a, b = b, a
			}
			ins := fragments[rng.Intn(len(fragments))]
			text = text[:a] + ins + text[b:]
			change = map[string]any{"range": protocol.Range{Start: start, End: end}, "text": ins}
		}
		c.notify("textDocument/didChange", map[string]any{"textDocument": map[string]any{"uri": u, "version": v},
			"contentChanges": []any{change}})
		if rng.Intn(8) == 0 {
			method := []string{"textDocument/hover", "textDocument/completion", "textDocument/semanticTokens/full",
				"textDocument/inlayHint", "textDocument/documentSymbol", "textDocument/formatting"}[rng.Intn(6)]
			pos := newMapper([]byte(text)).position(rng.Intn(len(text) + 1))
			params := map[string]any{"textDocument": doc, "position": pos, "range": protocol.Range{End: protocol.Position{Line: 1 << 20}},
				"options": map[string]any{"tabSize": 2}}
			if _, err := c.call(method, params); err != nil {
				t.Errorf("%s: %v", method, err)
			}
		}
	}
	pos := newMapper([]byte(text)).position(rng.Intn(len(text) + 1))
	_, err := c.call("textDocument/hover", map[string]any{"textDocument": doc, "position": pos})
	if err != nil {
		t.Errorf("hover after the edits: %v", err)
	}
	// The server's text must be the client's: formatting gives the
	// formatted text, or no edit when it is formatted already or does not
	// parse.
	raw, err := c.call("textDocument/formatting", map[string]any{"textDocument": doc, "options": map[string]any{}})
	if err != nil {
		t.Errorf("formatting: %v", err)
	}
	var edits []protocol.TextEdit
	if err := json.Unmarshal(raw, &edits); err != nil {
		t.Fatal(err)
	}
	want := text
	if f, err := syntax.Parse(abs, []byte(text)); err == nil {
		if out, err := syntax.Format(f, []byte(text)); err == nil {
			want = string(out)
		}
	}
	got := text
	if len(edits) == 1 {
		got = edits[0].NewText
	}
	if got != want {
		t.Errorf("the server's text differs from the editor's after the edits:\nserver (formatted): %q\neditor (formatted): %q", got, want)
	}
	if err := c.shutdown(); err != nil {
		t.Errorf("shutdown: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range panics {
		t.Errorf("server recovered from %s", p)
	}
}
