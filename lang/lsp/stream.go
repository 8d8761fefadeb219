package lsp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
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
//   - a message over maxMessageBytes is skipped and answered with -32600;
//   - a broken frame (see frameReader) is answered with -32700, and the
//     stream resumes at the next Content-Length header.
//
// The answer carries the message's id where it is valid, null otherwise.
// Only the stream's end, or an error reading it, ends the connection.
type guardedStream struct {
	rwc  io.ReadWriteCloser
	in   *frameReader
	out  jsonrpc2.Stream // writes the messages jsonrpc2 sends
	wmu  sync.Mutex      // serialises out's writes and the stream's own answers
	logf func(format string, args ...any)
}

func newGuardedStream(rwc io.ReadWriteCloser, logf func(string, ...any)) *guardedStream {
	return &guardedStream{rwc: rwc, in: &frameReader{r: bufio.NewReader(rwc)}, out: jsonrpc2.NewStream(rwc), logf: logf}
}

// Read returns the next valid message, answering the invalid ones.
func (s *guardedStream) Read(ctx context.Context) (jsonrpc2.Message, int64, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		body, err := s.in.next()
		var fe *frameError
		switch {
		case errors.As(err, &fe):
			s.answer(ctx, "null", jsonrpc2.ParseError, fe.Error())
			continue
		case errors.Is(err, errTooLong):
			s.answer(ctx, "null", jsonrpc2.InvalidRequest, fmt.Sprintf("message longer than %d bytes", maxMessageBytes))
			continue
		case err != nil:
			return nil, int64(len(body)), err
		}
		id, code, msg := validate(body)
		if code == jsonrpc2.ParseError {
			// Content-Length may have been too long, and the content
			// swallowed the next message's header.
			s.in.unreadHeader(body)
		}
		if code != 0 {
			s.answer(ctx, id, code, msg)
			continue
		}
		m, err := jsonrpc2.DecodeMessage(body)
		if err != nil {
			s.answer(ctx, id, jsonrpc2.InvalidRequest, err.Error())
			continue
		}
		return m, int64(len(body)), nil
	}
}

// maxHeaderLine bounds a header line; a longer one is not a header.
const maxHeaderLine = 1024

// contentLength is the header that starts every message in practice (the
// only other one, Content-Type, comes after it), and where a frameReader
// resumes after a broken frame.
const contentLength = "content-length:"

// errTooLong is a message longer than maxMessageBytes, skipped.
var errTooLong = errors.New("message too long")

// frameError is a broken frame: a header the base protocol does not allow.
type frameError struct{ what string }

func (e *frameError) Error() string {
	return "broken message header: " + e.what + "; skipped to the next Content-Length header"
}

// frameReader reads the base protocol's messages: header lines "Name:
// value" ended by \r\n (or \n), a blank line, and Content-Length bytes of
// content. A header that breaks the rule (no Content-Length, one that is not
// a non-negative integer, or two that differ; a line without a colon, or
// whose name is not a token; a line longer than maxHeaderLine) is a
// *frameError, and the next message is sought where the next Content-Length
// header starts, anywhere in the bytes that follow (a body is followed by
// the next header with no line break between them): the content of a
// broken frame is skipped, and so is any garbage between messages. Content
// shorter than its Content-Length says is not valid JSON, and is answered as
// such by guardedStream; its tail is then skipped as garbage.
type frameReader struct {
	r      *bufio.Reader
	back   []byte // bytes to read again before r's
	resync bool   // the last frame was broken: skip to the next header
}

// next returns the next message's content.
func (f *frameReader) next() ([]byte, error) {
	if f.resync {
		f.resync = false
		if err := f.skipToHeader(); err != nil {
			return nil, err
		}
	}
	length := int64(-1)
	lines := 0
	for {
		raw, err := f.readLine()
		if err != nil {
			return nil, err
		}
		line := bytes.TrimSuffix(bytes.TrimSuffix(raw, []byte("\n")), []byte("\r"))
		if len(line) == 0 {
			if lines == 0 {
				continue // blank lines between messages
			}
			break
		}
		lines++
		if len(line) > maxHeaderLine {
			return nil, f.broken(raw, "a line of more than %d bytes", maxHeaderLine)
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return nil, f.broken(raw, "%q has no colon", line)
		}
		if !isToken(name) {
			return nil, f.broken(raw, "%q is not a header line", line)
		}
		if !strings.EqualFold(string(name), "Content-Length") {
			continue // Content-Type, the only other header, says utf-8
		}
		v := strings.TrimSpace(string(value))
		n, err := strconv.ParseUint(v, 10, 63)
		switch {
		case err != nil:
			return nil, f.broken(raw, "Content-Length %q is not a number of bytes", v)
		case length >= 0 && int64(n) != length:
			return nil, f.broken(raw, "two Content-Length headers, %d and %d", length, n)
		}
		length = int64(n)
	}
	if length < 0 {
		f.resync = true
		return nil, &frameError{"a header without Content-Length"}
	}
	if length > maxMessageBytes {
		if err := f.discard(length); err != nil {
			return nil, fmt.Errorf("reading a message: %w", err)
		}
		return nil, errTooLong
	}
	body := make([]byte, length)
	k := copy(body, f.back)
	f.back = f.back[k:]
	if _, err := io.ReadFull(f.r, body[k:]); err != nil {
		return nil, fmt.Errorf("reading a message: %w", err)
	}
	return body, nil
}

// broken returns the frame error for a bad header line, read as raw (with
// its line break), and arranges for the next header to be sought from the
// line's second byte on, so that a header glued to garbage before it
// ("}Content-Length: 52") is found.
func (f *frameReader) broken(raw []byte, format string, args ...any) error {
	f.back = append(append([]byte(nil), raw[1:]...), f.back...)
	f.resync = true
	what := fmt.Sprintf(format, args...)
	if len(what) > 200 {
		what = what[:200] + "..."
	}
	return &frameError{what}
}

// readByte reads one byte, from back first.
func (f *frameReader) readByte() (byte, error) {
	if len(f.back) > 0 {
		b := f.back[0]
		f.back = f.back[1:]
		return b, nil
	}
	return f.r.ReadByte()
}

// readLine reads a line with its \n, if any. A line longer than
// maxHeaderLine is returned cut at maxHeaderLine+1 bytes, the rest unread.
func (f *frameReader) readLine() ([]byte, error) {
	var line []byte
	for len(line) <= maxHeaderLine {
		b, err := f.readByte()
		if err != nil {
			if len(line) > 0 && errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		line = append(line, b)
		if b == '\n' {
			return line, nil
		}
	}
	return line, nil
}

// skipToHeader discards bytes up to the next "Content-Length:", in any case.
func (f *frameReader) skipToHeader() error {
	matched := 0
	for {
		b, err := f.readByte()
		if err != nil {
			return err
		}
		switch {
		case lower(b) == contentLength[matched]:
			matched++
		case lower(b) == contentLength[0]:
			matched = 1 // the header's name has no other 'c'
		default:
			matched = 0
		}
		if matched == len(contentLength) {
			f.back = append([]byte("Content-Length:"), f.back...)
			return nil
		}
	}
}

// unreadHeader puts back content from the first "Content-Length:" in it on,
// so that the next message is read from there: content that is not JSON may
// have been read with a Content-Length too long, which swallowed (part of)
// the messages after it.
func (f *frameReader) unreadHeader(content []byte) {
	folded := make([]byte, len(content)) // ASCII only: offsets stay those of content
	for i, b := range content {
		folded[i] = lower(b)
	}
	if i := bytes.Index(folded, []byte(contentLength)); i >= 0 {
		f.back = append(append([]byte(nil), content[i:]...), f.back...)
	}
}

// discard skips n bytes of content.
func (f *frameReader) discard(n int64) error {
	k := min(n, int64(len(f.back)))
	f.back = f.back[k:]
	_, err := io.CopyN(io.Discard, f.r, n-k)
	return err
}

func lower(b byte) byte {
	if 'A' <= b && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}

// isToken reports whether name is a header name: letters, digits and '-'
// (the names the base protocol uses; HTTP allows a few more signs).
func isToken(name []byte) bool {
	if len(name) == 0 {
		return false
	}
	for _, b := range name {
		if !('a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '-' || b == '_') {
			return false
		}
	}
	return true
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
