package lsp

import (
	"context"
	"encoding/json"
	"fmt"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"

	"tec/lang"
	"tec/lang/syntax"
)

// inlayHint is an LSP 3.17 inlay hint.
type inlayHint struct {
	Position     protocol.Position `json:"position"`
	Label        string            `json:"label"`
	Kind         int               `json:"kind"` // 1 type, 2 parameter
	PaddingLeft  bool              `json:"paddingLeft,omitempty"`
	PaddingRight bool              `json:"paddingRight,omitempty"`
}

const (
	hintType  = 1
	hintRange = 2
)

type inlayHintParams struct {
	TextDocument protocol.TextDocumentIdentifier `json:"textDocument"`
	Range        protocol.Range                  `json:"range"`
}

// inlayHints answers textDocument/inlayHint: the inferred type of every
// tensor bound without one (y[i, j] = ..., y = f(x)), after its name, and
// the inferred range of every index variable and reduction axis whose range
// no where clause states.
func (s *server) inlayHints(ctx context.Context, doc *document, raw json.RawMessage) (any, error) {
	var p inlayHintParams
	if err := unmarshalParams(raw, &p); err != nil {
		return nil, jsonrpc2.NewError(jsonrpc2.InvalidParams, err.Error())
	}
	snap, err := s.snapshot(ctx, doc)
	if err != nil {
		return nil, err
	}
	lo, hi := snap.m.offset(p.Range.Start), snap.m.offset(p.Range.End)
	hints := []inlayHint{}
	recorded := func(id syntax.Ident) *lang.Ident {
		x := snap.info.At(snap.doc.path, id.Span.Start.Offset)
		if x == nil || x.Span != id.Span {
			return nil
		}
		return x
	}
	typeHint := func(id syntax.Ident, after int) {
		if x := recorded(id); x != nil && x.Symbol.Kind == lang.SymTensor && x.Symbol.Type != "" {
			hints = append(hints, inlayHint{Position: snap.m.position(after), Label: ": " + x.Symbol.Type, Kind: hintType})
		}
	}
	rangeHint := func(id syntax.Ident, stated map[string]bool) {
		if stated[id.Name] {
			return
		}
		if x := recorded(id); x != nil && x.Symbol.Kind == lang.SymIndex && x.Symbol.Extent > 0 {
			hints = append(hints, inlayHint{Position: snap.m.position(id.Span.End.Offset),
				Label: fmt.Sprintf("in 0..%d", x.Symbol.Extent), Kind: hintRange, PaddingLeft: true})
		}
	}
	inspectFile(snap.ast, func(n syntax.Node) bool {
		sp := n.NodeSpan()
		if sp.End.Offset < lo || sp.Start.Offset > hi {
			return false
		}
		switch n := n.(type) {
		case *syntax.AssignStmt:
			stated := map[string]bool{}
			for _, w := range n.Where {
				stated[w.Var.Name] = true
			}
			for _, t := range n.Targets {
				typeHint(t.Name, t.Span.End.Offset)
				for _, ix := range t.Indices {
					if nm, ok := ix.(*syntax.Name); ok {
						rangeHint(nm.Ident, stated)
					}
				}
			}
			inspect(n.Value, func(m syntax.Node) bool {
				if r, ok := m.(*syntax.Reduce); ok {
					for _, a := range r.Axes {
						rangeHint(a, stated)
					}
				}
				return true
			})
			return false
		case *syntax.OutputItem:
			if n.Value != nil {
				typeHint(n.Name, n.Name.Span.End.Offset)
			}
			return false
		}
		return true
	})
	return hints, nil
}
