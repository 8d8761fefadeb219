package lsp

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.lsp.dev/protocol"
)

// TestFilesCannotWedge is the wedge of issue 23: a document that imports
// the server's own protocol stream (/proc/self/fd/N, /dev/stdin under `tec
// lsp`), a named pipe or a directory gets an import error at once, and a
// request about a named pipe the editor has not opened is answered without
// waiting for a writer; the server answers every request after them and
// shuts down cleanly.
func TestFilesCannotWedge(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.te")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	// Real pipes, so that the server's input has a file descriptor a
	// document can name, as a process's stdin does.
	serverR, clientW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	clientR, serverW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		serverR.Close()
		serverW.Close()
	})
	own := fmt.Sprintf("/proc/self/fd/%d", serverR.Fd())
	c := startServerOver(t, Options{}, clientR, serverW, serverR, clientW)
	c.initialize(dir, map[string]any{})

	tests := []struct {
		name, path, want string
	}{
		{"own protocol stream", own, "it is a named pipe, not a regular file"},
		{"stdin", "/dev/stdin", "not a regular file"},
		{"named pipe", fifo, "it is a named pipe, not a regular file"},
		{"directory", dir, "it is a directory, not a regular file"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if st, err := os.Stat(tt.path); err != nil || st.Mode().IsRegular() {
				t.Skipf("%s is not there, or is a regular file here", tt.path)
			}
			uri := pathURI(filepath.Join(dir, fmt.Sprintf("m%d.te", i)))
			c.open(uri, "import \""+tt.path+"\"\nmodel m {\n  input x: f32[4]\n  output y = x * 2.0\n}\n")
			p := c.diagnostics(uri, 1)
			if len(p.Diagnostics) != 1 || !strings.Contains(p.Diagnostics[0].Message, tt.want) {
				t.Fatalf("diagnostics %+v, want one containing %q", p.Diagnostics, tt.want)
			}
			if _, err := c.call(protocol.MethodTextDocumentDocumentSymbol, map[string]any{"textDocument": map[string]any{"uri": uri}}); err != nil {
				t.Errorf("a request after it: %v", err)
			}
		})
	}

	t.Run("hover on an unopened pipe", func(t *testing.T) {
		_, ch := c.start(protocol.MethodTextDocumentHover, map[string]any{
			"textDocument": map[string]any{"uri": pathURI(fifo)}, "position": map[string]any{"line": 0, "character": 0}})
		select {
		case m := <-ch:
			if m.Error == nil {
				t.Errorf("hover on a named pipe: result %s, want an error", m.Result)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no answer to a hover on a named pipe in 10 s")
		}
		if _, err := c.call(protocol.MethodTextDocumentDocumentSymbol, map[string]any{"textDocument": map[string]any{"uri": pathURI(filepath.Join(dir, "m0.te"))}}); err != nil {
			t.Errorf("a request after it: %v", err)
		}
	})
	if err := c.shutdown(); err != nil {
		t.Errorf("shutdown: %v", err)
	}
}
