package lsp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/textproto"
	"strconv"
	"strings"
	"sync"

	"go.lsp.dev/jsonrpc2"
)

// maxMessageBytes bounds one message's content: four times the largest
// source file tec reads (16 MiB), for the escaping of a document's text in
// JSON. A longer message is skipped and answered with an error.
const maxMessageBytes = 64 << 20

// guardedStream is the Content-Length framed base protocol, as
// jsonrpc2.NewStream speaks it, with a check of every message before
// jsonrpc2 sees it: jsonrpc2 gives up the connection on the first message
// it cannot decode, where JSON-RPC 2.0 asks for an error response and
// carries on. The rule:
//
//   - content that is not JSON is answered with -32700 (parse error);
//   - JSON that is not a valid request, notification or response object (a
//     batch, a number, null, a "jsonrpc" other than "2.0", an id that is
//     neither a string nor an integer that fits in 32 bits, a method that
//     is not a string, params that are neither an object, an array nor
//     null, which clients send for "no params") is
//     answered with -32600 (invalid request);
//   - a message over maxMessageBytes is skipped and answered with -32600.
//
// The answer carries the message's id where it is valid, null otherwise.
// Only a broken frame (a header without Content-Length, the stream's end)
// ends the connection: there is no telling where the next message starts.
type guardedStream struct {
	rwc  io.ReadWriteCloser
	in   *bufio.Reader
	out  jsonrpc2.Stream // writes the messages jsonrpc2 sends
	wmu  sync.Mutex      // serialises out's writes and the stream's own answers
	logf func(format string, args ...any)
}

func newGuardedStream(rwc io.ReadWriteCloser, logf func(string, ...any)) *guardedStream {
	return &guardedStream{rwc: rwc, in: bufio.NewReader(rwc), out: jsonrpc2.NewStream(rwc), logf: logf}
}

// Read returns the next valid message, answering the invalid ones.
func (s *guardedStream) Read(ctx context.Context) (jsonrpc2.Message, int64, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		body, n, err := s.readFrame()
		if err != nil {
			return nil, n, err
		}
		if body == nil {
			s.answer(ctx, "null", jsonrpc2.InvalidRequest, fmt.Sprintf("message longer than %d bytes", maxMessageBytes))
			continue
		}
		id, code, msg := validate(body)
		if code != 0 {
			s.answer(ctx, id, code, msg)
			continue
		}
		m, err := jsonrpc2.DecodeMessage(body)
		if err != nil {
			s.answer(ctx, id, jsonrpc2.InvalidRequest, err.Error())
			continue
		}
		return m, n, nil
	}
}

// readFrame reads one message's header and content. It returns nil content
// for a message too long to read, which it skips.
func (s *guardedStream) readFrame() ([]byte, int64, error) {
	h, err := textproto.NewReader(s.in).ReadMIMEHeader()
	if err != nil {
		return nil, 0, fmt.Errorf("reading a message header: %w", err)
	}
	v := h.Get("Content-Length")
	length, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || length <= 0 {
		return nil, 0, fmt.Errorf("bad Content-Length %q", v)
	}
	if length > maxMessageBytes {
		n, err := io.CopyN(io.Discard, s.in, length)
		return nil, n, err
	}
	body := make([]byte, length)
	n, err := io.ReadFull(s.in, body)
	if err != nil {
		return nil, int64(n), fmt.Errorf("reading a message: %w", err)
	}
	return body, int64(n), nil
}

// validate checks a message's content against JSON-RPC 2.0. It returns
// the message's id as JSON ("null" if it has none or it is invalid), and
// the code and text of the error to answer, or a zero code.
func validate(body []byte) (id string, code jsonrpc2.Code, msg string) {
	if !json.Valid(body) {
		var v any
		err := json.Unmarshal(body, &v)
		return "null", jsonrpc2.ParseError, fmt.Sprintf("parse error: %v", err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		kind := "a " + jsonKind(bytes.TrimSpace(body))
		if kind == "a batch" {
			return "null", jsonrpc2.InvalidRequest, "batches are not supported"
		}
		return "null", jsonrpc2.InvalidRequest, "want a request object, got " + kind
	}
	id = "null"
	if raw, ok := fields["id"]; ok && validID(raw) {
		id = string(raw)
	}
	if v := fields["jsonrpc"]; string(v) != `"2.0"` {
		return id, jsonrpc2.InvalidRequest, fmt.Sprintf(`"jsonrpc" must be "2.0", got %s`, orMissing(v))
	}
	if raw, ok := fields["id"]; ok && !validID(raw) {
		return id, jsonrpc2.InvalidRequest, fmt.Sprintf(`"id" must be a string or an integer of 32 bits, got %s`, raw)
	}
	method, hasMethod := fields["method"]
	if hasMethod && jsonKind(method) != "string" {
		return id, jsonrpc2.InvalidRequest, fmt.Sprintf(`"method" must be a string, got %s`, method)
	}
	if p, ok := fields["params"]; ok && jsonKind(p) != "object" && jsonKind(p) != "batch" && jsonKind(p) != "null" {
		return id, jsonrpc2.InvalidRequest, fmt.Sprintf(`"params" must be an object or an array, got %s`, p)
	}
	if !hasMethod {
		_, hasResult := fields["result"]
		_, hasError := fields["error"]
		if _, ok := fields["id"]; !ok || !hasResult && !hasError {
			return id, jsonrpc2.InvalidRequest, "want a request (with a method) or a response (with an id and a result or an error)"
		}
	}
	return id, 0, ""
}

// validID reports whether raw is an id jsonrpc2 can carry: a string, or an
// integer in the range of int32.
func validID(raw json.RawMessage) bool {
	switch jsonKind(raw) {
	case "string":
		return true
	case "number":
		n, err := strconv.ParseInt(string(raw), 10, 64)
		return err == nil && n >= math.MinInt32 && n <= math.MaxInt32
	}
	return false
}

// jsonKind names the kind of a valid JSON value; arrays are "batch".
func jsonKind(v []byte) string {
	if len(v) == 0 {
		return "missing value"
	}
	switch v[0] {
	case '{':
		return "object"
	case '[':
		return "batch"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

func orMissing(v json.RawMessage) string {
	if v == nil {
		return "nothing"
	}
	return string(v)
}

// answer writes an error response with the given id (JSON text).
func (s *guardedStream) answer(ctx context.Context, id string, code jsonrpc2.Code, msg string) {
	text, _ := json.Marshal(msg)
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%s}}`, id, code, text)
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if _, err := fmt.Fprintf(s.rwc, "Content-Length: %d\r\n\r\n%s", len(body), body); err != nil && s.logf != nil {
		s.logf("answering an invalid message: %v", err)
	}
	if s.logf != nil {
		s.logf("invalid message answered with %d: %s", code, msg)
	}
}

// Write sends a message.
func (s *guardedStream) Write(ctx context.Context, m jsonrpc2.Message) (int64, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.out.Write(ctx, m)
}

// Close closes the connection.
func (s *guardedStream) Close() error { return s.rwc.Close() }
