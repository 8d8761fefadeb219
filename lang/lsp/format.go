package lsp

import (
	"bytes"
	"context"
	"encoding/json"

	"go.lsp.dev/protocol"

	"tec/lang/syntax"
)

// formatting answers textDocument/formatting with the layout of `tec fmt`
// (syntax.Format): one edit replacing the whole text, or none when the text
// is already formatted or does not parse.
func (s *server) formatting(ctx context.Context, doc *document, raw json.RawMessage) (any, error) {
	snap, err := s.snapshot(ctx, doc)
	if err != nil {
		return nil, err
	}
	edits := []protocol.TextEdit{}
	if snap.ast == nil {
		return edits, nil
	}
	out, err := syntax.Format(snap.ast, snap.doc.text)
	if err != nil || bytes.Equal(out, snap.doc.text) {
		return edits, nil
	}
	return append(edits, protocol.TextEdit{Range: snap.m.offsetRange(0, len(snap.doc.text)), NewText: string(out)}), nil
}
