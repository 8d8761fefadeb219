package lsp

import (
	"encoding/json"
	"fmt"

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

// unmarshalParams decodes the parameters of a request or notification.
func unmarshalParams(raw json.RawMessage, v any) error {
	if len(raw) == 0 {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("decoding parameters: %w", err)
	}
	return nil
}
