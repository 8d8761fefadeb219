package lsp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.lsp.dev/protocol"
)

// client is the editor's side of a connection to a server running in the
// test, speaking the base protocol (Content-Length framed JSON-RPC) over
// pipes as an editor does over a process's stdio.
type client struct {
	t    testing.TB
	w    io.WriteCloser
	wmu  sync.Mutex
	done chan error // Serve's result

	mu      sync.Mutex
	nextID  int
	pending map[int]chan message
	notes   chan message
}

// message is any JSON-RPC message.
type message struct {
	ID     *json.RawMessage `json:"id,omitempty"`
	Method string           `json:"method,omitempty"`
	Params json.RawMessage  `json:"params,omitempty"`
	Result json.RawMessage  `json:"result,omitempty"`
	Error  *rpcError        `json:"error,omitempty"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("error %d: %s", e.Code, e.Message) }

// pipes joins the server's ends of two pipes.
type pipes struct {
	io.ReadCloser
	io.WriteCloser
}

func (p pipes) Close() error {
	p.ReadCloser.Close()
	return p.WriteCloser.Close()
}

// startServer runs a server with opts and returns a client connected to it.
func startServer(t testing.TB, opts Options) *client {
	t.Helper()
	clientR, serverW := io.Pipe()
	serverR, clientW := io.Pipe()
	return startServerOver(t, opts, clientR, serverW, serverR, clientW)
}

// startServerOver runs a server with opts reading serverR and writing
// serverW, and returns a client that reads clientR and writes clientW.
func startServerOver(t testing.TB, opts Options, clientR io.ReadCloser, serverW io.WriteCloser, serverR io.ReadCloser, clientW io.WriteCloser) *client {
	t.Helper()
	c := &client{t: t, w: clientW, done: make(chan error, 1), pending: map[int]chan message{}, notes: make(chan message, 10000)}
	if opts.StdlibDir == "" {
		opts.StdlibDir = t.TempDir()
	}
	go func() { c.done <- Serve(context.Background(), pipes{serverR, serverW}, opts) }()
	go c.read(clientR)
	t.Cleanup(func() {
		clientW.Close()
		clientR.Close()
	})
	return c
}

// read routes the server's messages: responses to their callers,
// notifications to c.notes.
func (c *client) read(r io.Reader) {
	br := bufio.NewReader(r)
	tp := textproto.NewReader(br)
	for {
		h, err := tp.ReadMIMEHeader()
		if err != nil {
			close(c.notes)
			return
		}
		n, err := strconv.Atoi(h.Get("Content-Length"))
		if err != nil {
			c.t.Errorf("bad Content-Length %q", h.Get("Content-Length"))
			close(c.notes)
			return
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(br, body); err != nil {
			close(c.notes)
			return
		}
		var m message
		if err := json.Unmarshal(body, &m); err != nil {
			c.t.Errorf("bad message %s: %v", body, err)
			continue
		}
		if m.ID != nil && m.Method == "" {
			id, _ := strconv.Atoi(string(*m.ID))
			c.mu.Lock()
			ch := c.pending[id]
			delete(c.pending, id)
			c.mu.Unlock()
			if ch != nil {
				ch <- m
			}
			continue
		}
		c.notes <- m
	}
}

// send writes one framed message.
func (c *client) send(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		c.t.Fatal(err)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	fmt.Fprintf(c.w, "Content-Length: %d\r\n\r\n%s", len(b), b)
}

// start sends a request and returns its id and a channel for the response.
func (c *client) start(method string, params any) (int, chan message) {
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	ch := make(chan message, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	c.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	return id, ch
}

// call sends a request and waits for its result.
func (c *client) call(method string, params any) (json.RawMessage, error) {
	c.t.Helper()
	_, ch := c.start(method, params)
	select {
	case m := <-ch:
		if m.Error != nil {
			return nil, m.Error
		}
		return m.Result, nil
	case <-time.After(20 * time.Second):
		c.t.Fatalf("%s: no response in 20s", method)
		return nil, nil
	}
}

// notify sends a notification.
func (c *client) notify(method string, params any) {
	c.send(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
}

// diagnostics waits for the diagnostics of uri at version (or later).
func (c *client) diagnostics(uri protocol.DocumentURI, version int32) protocol.PublishDiagnosticsParams {
	c.t.Helper()
	return c.awaitDiagnostics(uri, func(p protocol.PublishDiagnosticsParams) bool { return int32(p.Version) >= version })
}

// closedDiagnostics waits for the publication that clears uri's
// diagnostics when it is closed: one without a version. Publications for
// versions of the open file that arrive late (a re-check after a
// configuration change) are skipped.
func (c *client) closedDiagnostics(uri protocol.DocumentURI) protocol.PublishDiagnosticsParams {
	c.t.Helper()
	return c.awaitDiagnostics(uri, func(p protocol.PublishDiagnosticsParams) bool { return p.Version == 0 })
}

// awaitDiagnostics returns the first publication of uri's diagnostics that
// want accepts.
func (c *client) awaitDiagnostics(uri protocol.DocumentURI, want func(protocol.PublishDiagnosticsParams) bool) protocol.PublishDiagnosticsParams {
	c.t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case m, ok := <-c.notes:
			if !ok {
				c.t.Fatalf("connection closed while waiting for diagnostics of %s", uri)
			}
			if m.Method != protocol.MethodTextDocumentPublishDiagnostics {
				continue
			}
			var p protocol.PublishDiagnosticsParams
			if err := json.Unmarshal(m.Params, &p); err != nil {
				c.t.Fatal(err)
			}
			if p.URI == uri && want(p) {
				return p
			}
		case <-timeout:
			c.t.Fatalf("no diagnostics for %s in 20s", uri)
		}
	}
}

// initialize performs the initialize handshake with a workspace root.
func (c *client) initialize(root string, options any) json.RawMessage {
	c.t.Helper()
	res, err := c.call("initialize", map[string]any{"processId": nil, "rootUri": pathURI(root),
		"capabilities": map[string]any{}, "initializationOptions": options})
	if err != nil {
		c.t.Fatalf("initialize: %v", err)
	}
	c.notify("initialized", map[string]any{})
	return res
}

// open opens a document.
func (c *client) open(uri protocol.DocumentURI, text string) {
	c.notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{
		"uri": uri, "languageId": "te", "version": 1, "text": text}})
}

// shutdown sends shutdown and exit and waits for Serve to return.
func (c *client) shutdown() error {
	c.t.Helper()
	if _, err := c.call("shutdown", nil); err != nil {
		c.t.Fatalf("shutdown: %v", err)
	}
	c.notify("exit", nil)
	select {
	case err := <-c.done:
		return err
	case <-time.After(10 * time.Second):
		c.t.Fatal("the server did not exit in 10s")
		return nil
	}
}

// posOf returns the position of the n-th (from 1) occurrence of needle in
// text, moved delta bytes on.
func posOf(t testing.TB, text, needle string, n, delta int) protocol.Position {
	t.Helper()
	off := -1
	for k := 0; k < n; k++ {
		i := strings.Index(text[off+1:], needle)
		if i < 0 {
			t.Fatalf("no occurrence %d of %q", n, needle)
		}
		off += 1 + i
	}
	return newMapper([]byte(text)).position(off + delta)
}
