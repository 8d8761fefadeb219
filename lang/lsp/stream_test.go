package lsp

import (
	"fmt"
	"io"
	"strconv"
	"strings"
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

// sendBytes writes raw bytes, framed or not.
func (c *client) sendBytes(raw string) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	io.WriteString(c.w, raw)
}

// TestBrokenFrames is the resynchronisation of issue 23: the server used to
// end the connection on a broken frame. Each broken frame, followed at once
// by a valid request in the same write, is answered with -32700 (id null),
// and the request after it is answered: the server skips to the next
// Content-Length header.
func TestBrokenFrames(t *testing.T) {
	note := `{"jsonrpc":"2.0","method":"initialized","params":{}}`
	tests := []struct {
		name, raw string
		errors    int // the -32700 answers it gets
	}{
		{"no Content-Length", "Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" + note, 1},
		{"Content-Length not a number", "Content-Length: abc\r\n\r\n" + note, 1},
		{"negative Content-Length", "Content-Length: -5\r\n\r\n" + note, 1},
		{"Content-Length out of range", "Content-Length: 99999999999999999999\r\n\r\n" + note, 1},
		{"two Content-Lengths", fmt.Sprintf("Content-Length: %d\r\nContent-Length: 3\r\n\r\n%s", len(note), note), 1},
		{"no colon", fmt.Sprintf("Content-Length %d\r\n\r\n%s", len(note), note), 1},
		{"garbage", "\x00\x01garbage \xff\xfe with: a colon\r\nand lines\n{}", 1},
		{"content without a header", note, 1},
		{"long line", strings.Repeat("x", 5000), 1},
		{"Content-Length too short", fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(note)-5, note), 2},
		{"Content-Length too long", fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(note)+20, note), 1},
		{"zero Content-Length", "Content-Length: 0\r\n\r\n", 1},
	}
	c := startServer(t, Options{})
	c.initialize(t.TempDir(), map[string]any{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.mu.Lock()
			c.nextID++
			id := c.nextID
			ch := make(chan message, 1)
			c.pending[id] = ch
			c.mu.Unlock()
			valid := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tec/noSuchMethod","params":{}}`, id)
			c.sendBytes(tt.raw + fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(valid), valid))
			for k := 0; k < tt.errors; k++ {
				m := c.awaitError(nil, false)
				if m.Error == nil || m.Error.Code != int(jsonrpc2.ParseError) || m.ID != nil {
					t.Errorf("answer %+v, want error %d with id null", m, jsonrpc2.ParseError)
				}
			}
			select {
			case m := <-ch:
				if m.Error == nil || m.Error.Code != int(jsonrpc2.MethodNotFound) {
					t.Errorf("the request after it: %+v, want method not found", m)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the request after the broken frame was not answered in 10 s")
			}
			// Nothing more is answered: the next valid request's answer
			// is the next message.
			if _, err := c.call("tec/noSuchMethod", map[string]any{}); err == nil || err.(*rpcError).Code != int(jsonrpc2.MethodNotFound) {
				t.Errorf("a valid request after it: %v, want method not found", err)
			}
			select {
			case m := <-c.notes:
				t.Errorf("an answer too many: %+v", m)
			default:
			}
		})
	}
	if err := c.shutdown(); err != nil {
		t.Errorf("shutdown: %v", err)
	}
}
