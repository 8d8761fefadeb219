package lsp

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"go.lsp.dev/protocol"
)

// bigFile returns a model of about n lines: constants, a few functions, and
// one model whose body chains element-wise tensors, reductions and calls.
func bigFile(n int) string {
	var b strings.Builder
	b.WriteString("# a generated model for the language server's benchmarks\nconst B = 4\nconst D = 64\n\n")
	b.WriteString("fn mix(a: f32[B, D], w: f32[D, D]) -> f32[B, D] {\n  y[i, j] = sum[k](a[i, k] * w[k, j])\n  return y\n}\n\n")
	b.WriteString("fn act(v) = max(v, 0.0)\n\nmodel big {\n  input x: f32[B, D]\n  param w: f32[D, D]\n  t0 = x\n")
	lines := strings.Count(b.String(), "\n")
	k := 0
	for ; lines < n-2; lines++ {
		k++
		switch k % 4 {
		case 0:
			fmt.Fprintf(&b, "  t%d = mix(t%d, w)\n", k, k-1)
		case 1:
			fmt.Fprintf(&b, "  t%d[i, j] = act(t%d[i, j] * 0.5 + x[i, j])\n", k, k-1)
		case 2:
			fmt.Fprintf(&b, "  s%d[i] = sum[j](t%d[i, j]) # a reduction\n", k, k-1)
			k++
			fmt.Fprintf(&b, "  t%d[i, j] = t%d[i, j] / (s%d[i] + 1.0)\n", k, k-2, k-1)
			lines++
		case 3:
			fmt.Fprintf(&b, "  t%d = act(t%d) + t%d * 2.0\n", k, k-1, k-1)
		}
	}
	fmt.Fprintf(&b, "  output y = t%d\n}\n", k)
	return b.String()
}

// BenchmarkDiagnostics measures the time from an edit of a 2,000-line file
// to the diagnostics it publishes, over pipes, with the default debounce.
func BenchmarkDiagnostics(b *testing.B) {
	text := bigFile(2000)
	c, u := benchSession(b, text)
	pos := posOf(b, text, "0.5", 1, 0)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		v := int32(i + 2)
		digit := fmt.Sprint(i % 10)
		c.notify("textDocument/didChange", map[string]any{"textDocument": map[string]any{"uri": u, "version": v},
			"contentChanges": []any{map[string]any{"range": protocol.Range{Start: pos, End: protocol.Position{Line: pos.Line, Character: pos.Character + 3}}, "text": "0." + digit}}})
		c.diagnostics(u, v)
	}
}

// BenchmarkHover measures hover on a tensor of a 2,000-line file that has
// been checked.
func BenchmarkHover(b *testing.B) {
	text := bigFile(2000)
	c, u := benchSession(b, text)
	params := map[string]any{"textDocument": map[string]any{"uri": u}, "position": posOf(b, text, "t900[i, j]", 1, 1)}
	if _, err := c.call("textDocument/hover", params); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.call("textDocument/hover", params); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheck measures one check of a 2,000-line file, the work behind
// each publication of diagnostics.
func BenchmarkCheck(b *testing.B) {
	text := []byte(bigFile(2000))
	s := &server{opts: Options{ReadFile: func(string) ([]byte, error) { return nil, fmt.Errorf("no imports") }}, docs: map[protocol.DocumentURI]*document{}}
	doc := &document{uri: "file:///big.te", path: "/big.te", text: text}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if snap := s.check(doc, 0, nil); snap.diags.HasErrors() {
			b.Fatalf("the generated file has errors: %v", snap.diags)
		}
	}
}

// benchSession opens text in a server and waits for its first diagnostics.
func benchSession(b *testing.B, text string) (*client, protocol.DocumentURI) {
	c := startServer(b, Options{})
	dir := b.TempDir()
	c.initialize(dir, nil)
	u := pathURI(filepath.Join(dir, "big.te"))
	c.open(u, text)
	if d := c.diagnostics(u, 1); len(d.Diagnostics) > 0 {
		b.Fatalf("the generated file has errors: %v", d.Diagnostics[0].Message)
	}
	return c, u
}

// BenchmarkAnalysis measures the analysis behind a tensor's hover facts,
// done once per version of a file that checks.
func BenchmarkAnalysis(b *testing.B) {
	text := []byte(bigFile(2000))
	s := &server{opts: Options{ReadFile: func(string) ([]byte, error) { return nil, fmt.Errorf("no imports") }}, docs: map[protocol.DocumentURI]*document{}}
	doc := &document{uri: "file:///big.te", path: "/big.te", text: text}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		snap := s.check(doc, 0, nil)
		b.StartTimer()
		snap.analysisOf(nil)
	}
}
