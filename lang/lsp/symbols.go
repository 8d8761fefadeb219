package lsp

import (
	"context"
	"encoding/json"
	"strings"

	"go.lsp.dev/protocol"

	"tec/lang"
	"tec/lang/syntax"
)

// documentSymbols answers textDocument/documentSymbol: the constants,
// functions and models of the document, with the tensors each function or
// model defines as children.
func (s *server) documentSymbols(ctx context.Context, doc *document, raw json.RawMessage) (any, error) {
	snap, err := s.snapshot(ctx, doc)
	if err != nil {
		return nil, err
	}
	if snap.ast == nil {
		snap = s.lastGood(doc.uri, snap)
	}
	out := []protocol.DocumentSymbol{}
	if snap.ast == nil {
		return out, nil
	}
	for _, d := range snap.ast.Decls {
		switch d := d.(type) {
		case *syntax.ConstDecl:
			out = append(out, s.symbol(snap, d.Name, d.Span, protocol.SymbolKindConstant, detailOf(snap, d.Name, "")))
		case *syntax.FnDecl:
			sym := s.symbol(snap, d.Name, d.Span, protocol.SymbolKindFunction, signature(snap.doc.text, d))
			sym.Children = s.bodySymbols(snap, d.Body)
			out = append(out, sym)
		case *syntax.ModelDecl:
			sym := s.symbol(snap, d.Name, d.Span, protocol.SymbolKindModule, "model")
			sym.Children = s.bodySymbols(snap, d.Body)
			out = append(out, sym)
		}
	}
	return out, nil
}

// bodySymbols lists the names a body binds, in order, once each.
func (s *server) bodySymbols(snap *snapshot, body []syntax.Stmt) []protocol.DocumentSymbol {
	out := []protocol.DocumentSymbol{}
	seen := map[string]bool{}
	add := func(id syntax.Ident, span syntax.Span, kind protocol.SymbolKind, prefix string) {
		if seen[id.Name] {
			return
		}
		seen[id.Name] = true
		out = append(out, s.symbol(snap, id, span, kind, detailOf(snap, id, prefix)))
	}
	inspectStmts(body, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.PlaceholderStmt:
			add(n.Name, n.Span, protocol.SymbolKindField, n.Kind+" ")
		case *syntax.ConstDecl:
			add(n.Name, n.Span, protocol.SymbolKindConstant, "")
		case *syntax.AssignStmt:
			for _, t := range n.Targets {
				add(t.Name, n.Span, protocol.SymbolKindVariable, "")
			}
			return false
		case *syntax.OutputItem:
			if n.Value != nil {
				add(n.Name, n.Span, protocol.SymbolKindVariable, "output ")
			}
			return false
		case syntax.Expr:
			return false
		}
		return true
	})
	return out
}

// symbol makes a document symbol for the name id declared by span.
func (s *server) symbol(snap *snapshot, id syntax.Ident, span syntax.Span, kind protocol.SymbolKind, detail string) protocol.DocumentSymbol {
	return protocol.DocumentSymbol{Name: id.Name, Kind: kind, Detail: detail, Range: snap.m.rng(span), SelectionRange: snap.m.rng(id.Span)}
}

// detailOf returns what the checker says about the name declared at id, with
// the name itself left out: "f32[4, 8]", "= 768".
func detailOf(snap *snapshot, id syntax.Ident, prefix string) string {
	x := snap.info.At(snap.doc.path, id.Span.Start.Offset)
	if x == nil || x.Span != id.Span {
		return prefix
	}
	switch x.Symbol.Kind {
	case lang.SymTensor:
		return prefix + x.Symbol.Type
	case lang.SymConst:
		d := x.Symbol.Detail
		if i := strings.Index(d, " = "); i >= 0 {
			return prefix + d[i+1:]
		}
	case lang.SymList:
		if i := strings.Index(x.Symbol.Detail, ": "); i >= 0 {
			return prefix + x.Symbol.Detail[i+2:]
		}
	}
	return prefix
}

// signature formats a function's signature as written in src.
func signature(src []byte, d *syntax.FnDecl) string {
	text := func(sp syntax.Span) string {
		if sp.Start.Offset < 0 || sp.End.Offset > len(src) || sp.Start.Offset > sp.End.Offset {
			return "?"
		}
		return collapseSpace(string(src[sp.Start.Offset:sp.End.Offset]))
	}
	sig := "fn " + d.Name.Name + "("
	for i, p := range d.Params {
		if i > 0 {
			sig += ", "
		}
		sig += text(p.Span)
	}
	sig += ")"
	switch len(d.Results) {
	case 0:
	case 1:
		sig += " -> " + text(d.Results[0].Span)
	default:
		sig += " -> ("
		for i, r := range d.Results {
			if i > 0 {
				sig += ", "
			}
			sig += text(r.Span)
		}
		sig += ")"
	}
	return sig
}

// collapseSpace replaces each run of white space in s by one space.
func collapseSpace(s string) string {
	out := make([]byte, 0, len(s))
	space := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			space = true
			continue
		}
		if space && len(out) > 0 {
			out = append(out, ' ')
		}
		space = false
		out = append(out, c)
	}
	return string(out)
}

// lastGood returns the newest snapshot of u whose text parsed, or snap.
func (s *server) lastGood(u protocol.DocumentURI, snap *snapshot) *snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.entries[u]; e != nil && e.good != nil {
		return e.good
	}
	return snap
}
