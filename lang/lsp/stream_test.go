package lsp

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"go.lsp.dev/jsonrpc2"
)

// sendRaw writes content as one well-framed message.
func (c *client) sendRaw(content string) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	fmt.Fprintf(c.w, "Content-Length: %d\r\n\r\n%s", len(content), content)
}

// TestMalformedMessages is R6 of issue 17: a well-framed message that is
// not valid JSON-RPC is answered with -32700 or -32600 (with its id where
// that is valid, null otherwise), and the server goes on answering.
func TestMalformedMessages(t *testing.T) {
	const id = 900 // the id of the cases whose id is valid
	tests := []struct {
		name, content string
		code          jsonrpc2.Code
		withID        bool // the answer carries id, not null
	}{
		{"invalid JSON", `{not json`, jsonrpc2.ParseError, false},
		{"truncated JSON", `{"jsonrpc":"2.0","id":1,`, jsonrpc2.ParseError, false},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"shutdown"}]`, jsonrpc2.InvalidRequest, false},
		{"empty batch", `[]`, jsonrpc2.InvalidRequest, false},
		{"number", `42`, jsonrpc2.InvalidRequest, false},
		{"null", `null`, jsonrpc2.InvalidRequest, false},
		{"string", `"shutdown"`, jsonrpc2.InvalidRequest, false},
		{"object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"shutdown"}`, jsonrpc2.InvalidRequest, false},
		{"huge id", `{"jsonrpc":"2.0","id":1e308,"method":"shutdown"}`, jsonrpc2.InvalidRequest, false},
		{"id beyond int32", `{"jsonrpc":"2.0","id":4294967296,"method":"shutdown"}`, jsonrpc2.InvalidRequest, false},
		{"fractional id", `{"jsonrpc":"2.0","id":1.5,"method":"shutdown"}`, jsonrpc2.InvalidRequest, false},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":` + strconv.Itoa(id) + `,"method":"shutdown"}`, jsonrpc2.InvalidRequest, true},
		{"no jsonrpc", `{"id":` + strconv.Itoa(id) + `,"method":"shutdown"}`, jsonrpc2.InvalidRequest, true},
		{"method not a string", `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":42}`, jsonrpc2.InvalidRequest, true},
		{"params a number", `{"jsonrpc":"2.0","method":"initialized","params":7}`, jsonrpc2.InvalidRequest, false},
		{"neither request nor response", `{"jsonrpc":"2.0"}`, jsonrpc2.InvalidRequest, false},
	}
	c := startServer(t, Options{})
	c.initialize(t.TempDir(), map[string]any{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch := make(chan message, 1)
			if tt.withID {
				c.mu.Lock()
				c.pending[id] = ch
				c.mu.Unlock()
			}
			c.sendRaw(tt.content)
			m := c.awaitError(ch, tt.withID)
			if m.Error == nil || m.Error.Code != int(tt.code) {
				t.Errorf("answer %+v, want error %d", m, tt.code)
			}
			if !tt.withID && m.ID != nil {
				t.Errorf("answer id %s, want null", *m.ID)
			}
			// The server is still there, and answers a valid request.
			if _, err := c.call("tec/noSuchMethod", map[string]any{}); err == nil || err.(*rpcError).Code != int(jsonrpc2.MethodNotFound) {
				t.Errorf("a valid request after it: %v, want method not found", err)
			}
		})
	}
	if err := c.shutdown(); err != nil {
		t.Errorf("shutdown: %v", err)
	}
}

// awaitError waits for the error answer to a malformed message: on ch if
// it carries the id, else among the messages without one.
func (c *client) awaitError(ch chan message, withID bool) message {
	c.t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case m := <-ch:
			return m
		case m, ok := <-c.notes:
			if !ok {
				c.t.Fatal("the connection closed")
			}
			if !withID && m.Method == "" {
				return m
			}
		case <-timeout:
			c.t.Fatal("no answer in 10s")
		}
	}
}
