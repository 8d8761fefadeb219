package lsp

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"go.lsp.dev/protocol"
)

// document is an open text document: its text as the editor last sent it.
type document struct {
	uri     protocol.DocumentURI
	path    string // the file name the checker uses
	version int32
	text    []byte
}

// changeEvent is one change of textDocument/didChange. Range is nil for a
// change that replaces the whole text (protocol.TextDocumentContentChangeEvent
// cannot tell the two kinds apart).
type changeEvent struct {
	Range *protocol.Range `json:"range,omitempty"`
	Text  string          `json:"text"`
}

// didChangeParams are the parameters of textDocument/didChange.
type didChangeParams struct {
	TextDocument   protocol.VersionedTextDocumentIdentifier `json:"textDocument"`
	ContentChanges []changeEvent                            `json:"contentChanges"`
}

// applyChanges returns text with the changes applied in order. Positions past
// the end of a line or of the text are clamped, as editors expect.
func applyChanges(text []byte, changes []changeEvent) []byte {
	for _, ch := range changes {
		if ch.Range == nil {
			text = []byte(ch.Text)
			continue
		}
		m := newMapper(text)
		start, end := m.offset(ch.Range.Start), m.offset(ch.Range.End)
		if end < start {
			start, end = end, start
		}
		out := make([]byte, 0, len(text)-(end-start)+len(ch.Text))
		out = append(out, text[:start]...)
		out = append(out, ch.Text...)
		out = append(out, text[end:]...)
		text = out
	}
	return text
}

// unmarshalParams decodes the parameters of a request or notification. Its
// error speaks of the request's fields (position.line must be an integer
// from 0 to 4294967295, got -1), not of Go's types.
func unmarshalParams(raw json.RawMessage, v any) error {
	if len(raw) == 0 {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return paramsError(err)
	}
	return nil
}

// paramsError rewrites an error of json.Unmarshal in the terms of the
// protocol: the field's path in the parameters, the JSON it wants and the
// JSON it got.
func paramsError(err error) error {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return fmt.Errorf("invalid params: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	field := "params"
	if te.Field != "" {
		field = te.Field
	}
	return fmt.Errorf("invalid params: %s must be %s, got %s", field, jsonWant(te.Type), jsonGot(te.Value))
}

// jsonWant says which JSON values decode into a value of type t.
func jsonWant(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		bits := t.Bits() - 1
		return fmt.Sprintf("an integer from %d to %d", -(int64(1) << bits), int64(1)<<bits-1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return fmt.Sprintf("an integer from 0 to %d", uint64(1)<<t.Bits()-1)
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Pointer:
		return jsonWant(t.Elem()) + " or null"
	}
	return "another value"
}

// jsonGot describes the JSON value an UnmarshalTypeError names in its Value
// ("number -1", "string", "array").
func jsonGot(v string) string {
	if n, ok := strings.CutPrefix(v, "number "); ok {
		return n
	}
	switch v {
	case "array", "object":
		return "an " + v
	case "bool":
		return "a boolean"
	}
	return "a " + v
}
