package lsp

import (
	"context"
	"encoding/json"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"

	"tec/lang"
)

// positionParams are the parameters of every request about a position.
type positionParams struct {
	TextDocument protocol.TextDocumentIdentifier `json:"textDocument"`
	Position     protocol.Position               `json:"position"`
}

// at decodes a position request and returns the document's snapshot and the
// byte offset of the position.
func (s *server) at(ctx context.Context, doc *document, raw json.RawMessage) (*snapshot, int, error) {
	var p positionParams
	if err := unmarshalParams(raw, &p); err != nil {
		return nil, 0, jsonrpc2.NewError(jsonrpc2.InvalidParams, err.Error())
	}
	snap, err := s.snapshot(ctx, doc)
	if err != nil {
		return nil, 0, err
	}
	return snap, snap.m.offset(p.Position), nil
}

// identAt returns the identifier of snap's document at the byte offset: the
// one that contains it or, for a cursor just after a name, the one that ends
// there.
func identAt(snap *snapshot, off int) *lang.Ident {
	if id := snap.info.At(snap.doc.path, off); id != nil {
		return id
	}
	if off > 0 {
		if id := snap.info.At(snap.doc.path, off-1); id != nil && id.Span.End.Offset == off {
			return id
		}
	}
	return nil
}

// wordAt returns the bounds of the name at or just before the byte offset
// of src, or (off, off).
func wordAt(src []byte, off int) (int, int) {
	off = max(0, min(off, len(src)))
	start, end := off, off
	for start > 0 && isNameByte(src[start-1]) {
		start--
	}
	for end < len(src) && isNameByte(src[end]) {
		end++
	}
	if start < end && src[start] >= '0' && src[start] <= '9' {
		return off, off // a number, not a name
	}
	return start, end
}

func isNameByte(b byte) bool {
	return b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
}
