package main

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
)

// frame encodes JSON-RPC messages with the base protocol's headers.
func frame(msgs ...string) string {
	var b strings.Builder
	for _, m := range msgs {
		fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n%s", len(m), m)
	}
	return b.String()
}

// TestLSPCommand runs tec lsp on a scripted standard input: the exit status
// follows the protocol (0 after shutdown and exit, 1 after exit alone).
func TestLSPCommand(t *testing.T) {
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":null,"rootUri":null,"capabilities":{}}}`
	tests := []struct {
		name   string
		input  string
		status int
		want   string
	}{
		{"shutdown and exit", frame(initialize, `{"jsonrpc":"2.0","id":2,"method":"shutdown"}`, `{"jsonrpc":"2.0","method":"exit"}`), exitOK, `"hoverProvider":true`},
		{"exit without shutdown", frame(initialize, `{"jsonrpc":"2.0","method":"exit"}`), exitUser, `"serverInfo"`},
		{"request before initialize", frame(`{"jsonrpc":"2.0","id":1,"method":"textDocument/hover","params":{}}`, `{"jsonrpc":"2.0","method":"exit"}`), exitUser, `-32002`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			e := &env{stdin: strings.NewReader(tt.input), stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
			if code := e.main([]string{"lsp"}); code != tt.status {
				t.Errorf("exit status %d, want %d; stderr: %s", code, tt.status, errb.String())
			}
			if !strings.Contains(out.String(), tt.want) {
				t.Errorf("output does not contain %s:\n%s", tt.want, out.String())
			}
		})
	}
}

// terminalInput is standard input as a terminal's file: readable and
// writable.
type terminalInput struct {
	io.Reader
	io.Writer
}

// TestLSPTerminalNote is issue 23's `tec lsp` typed in a terminal, which
// waited silently: when standard input is a terminal, a note on stderr says
// what the command is for; an editor's pipe gets no note.
func TestLSPTerminalNote(t *testing.T) {
	exit := frame(`{"jsonrpc":"2.0","method":"exit"}`)
	tests := []struct {
		name     string
		stdin    io.Reader
		terminal bool
	}{
		{"terminal", terminalInput{strings.NewReader(exit), io.Discard}, true},
		{"pipe", strings.NewReader(exit), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			e := &env{stdin: tt.stdin, stdout: &out, stderr: &errb, getenv: func(string) string { return "" },
				isTerminal: func(w io.Writer) bool { _, ok := w.(terminalInput); return ok }}
			e.main([]string{"lsp"})
			note := strings.Contains(errb.String(), "a language server for editors")
			if note != tt.terminal {
				t.Errorf("stderr %q: note shown %v, want %v", errb.String(), note, tt.terminal)
			}
			if tt.terminal && strings.Count(errb.String(), "\n") != 1 {
				t.Errorf("stderr %q: want one line", errb.String())
			}
		})
	}
}
