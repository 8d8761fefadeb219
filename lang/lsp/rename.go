package lsp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"

	"tec/lang"
	"tec/lang/syntax"
)

// prepareRename answers textDocument/prepareRename: the range of the name
// under the cursor if it can be renamed.
func (s *server) prepareRename(ctx context.Context, doc *document, raw json.RawMessage) (any, error) {
	snap, off, err := s.at(ctx, doc, raw)
	if err != nil {
		return nil, err
	}
	id := identAt(snap, off)
	if id == nil {
		return nil, nil
	}
	if err := renamable(id.Symbol); err != nil {
		return nil, jsonrpc2.NewError(jsonrpc2.InvalidRequest, err.Error())
	}
	r := snap.m.rng(id.Span)
	return &r, nil
}

// renamable says why sym cannot be renamed, or returns nil.
func renamable(sym lang.Symbol) error {
	switch {
	case sym.File == "" || sym.Def == (syntax.Span{}):
		return fmt.Errorf("%s is a builtin", sym.Name)
	case strings.HasPrefix(sym.File, "stdlib/"):
		return fmt.Errorf("%s is declared in the standard library", sym.Name)
	case sym.Kind == lang.SymModel:
		return fmt.Errorf("%s is a model; rename it in the file and in the --model flags that name it", sym.Name)
	}
	return nil
}

// renameParams are the parameters of textDocument/rename.
type renameParams struct {
	positionParams
	NewName string `json:"newName"`
}

// rename answers textDocument/rename. A local name (a tensor, list, local
// constant or parameter) is renamed everywhere in its function or model, so
// that every re-binding of the name follows; an index variable in its
// statement; a function or top-level constant in every file that uses it.
func (s *server) rename(ctx context.Context, doc *document, raw json.RawMessage) (any, error) {
	var p renameParams
	if err := unmarshalParams(raw, &p); err != nil {
		return nil, jsonrpc2.NewError(jsonrpc2.InvalidParams, err.Error())
	}
	snap, off, err := s.at(ctx, doc, raw)
	if err != nil {
		return nil, err
	}
	id := identAt(snap, off)
	if id == nil {
		return nil, jsonrpc2.NewError(jsonrpc2.InvalidRequest, "no name to rename here")
	}
	sym := id.Symbol
	if err := renamable(sym); err != nil {
		return nil, jsonrpc2.NewError(jsonrpc2.InvalidRequest, err.Error())
	}
	if !validName(p.NewName) {
		return nil, jsonrpc2.NewError(jsonrpc2.InvalidParams, fmt.Sprintf("%q is not a valid name", p.NewName))
	}
	var refs []ref
	if topLevel(sym) || sym.Kind == lang.SymIndex {
		if refs, err = s.refsOf(ctx, snap, sym, true); err != nil {
			return nil, err
		}
		if topLevel(sym) {
			if err := checkTopConflict(snap, sym, p.NewName); err != nil {
				return nil, err
			}
		}
	} else if refs, err = s.localRefs(snap, sym, p.NewName); err != nil {
		return nil, err
	}
	edit := protocol.WorkspaceEdit{Changes: map[protocol.DocumentURI][]protocol.TextEdit{}}
	for _, r := range refs {
		edit.Changes[r.loc.URI] = append(edit.Changes[r.loc.URI], protocol.TextEdit{Range: r.loc.Range, NewText: p.NewName})
	}
	return edit, nil
}

// validName reports whether s is a name that is not a reserved word.
func validName(s string) bool {
	if s == "" || syntax.IsKeyword(s) || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isNameByte(s[i]) {
			return false
		}
	}
	return true
}

// localRefs returns the occurrences of a local name in the declaration that
// binds it: every identifier of that name that the checker resolved to a
// local binding of the declaration (index variables excepted).
func (s *server) localRefs(snap *snapshot, sym lang.Symbol, newName string) ([]ref, error) {
	ast := snap.astOf(sym.File)
	decl := enclosingDecl(ast, sym.Def.Start.Offset)
	if decl == nil {
		return nil, jsonrpc2.NewError(jsonrpc2.InvalidRequest, fmt.Sprintf("cannot find the declaration of %s", sym.Name))
	}
	sp := decl.NodeSpan()
	inDecl := func(x syntax.Span) bool { return sp.Start.Offset <= x.Start.Offset && x.End.Offset <= sp.End.Offset }
	var refs []ref
	for _, id := range snap.info.Idents[sym.File] {
		if !inDecl(id.Span) {
			continue
		}
		if id.Symbol.Name == newName {
			return nil, jsonrpc2.NewError(jsonrpc2.InvalidRequest, fmt.Sprintf("%s is already used in %s", newName, declName(decl)))
		}
		if id.Symbol.Name == sym.Name && id.Symbol.File == sym.File && inDecl(id.Symbol.Def) && id.Symbol.Kind != lang.SymIndex {
			refs = append(refs, ref{file: sym.File, span: id.Span, loc: s.location(snap, sym.File, id.Span)})
		}
	}
	if localNames(decl)[newName] {
		return nil, jsonrpc2.NewError(jsonrpc2.InvalidRequest, fmt.Sprintf("%s is already used in %s", newName, declName(decl)))
	}
	return refs, nil
}

// checkTopConflict refuses to rename a top-level name to one that the
// declaring file already declares.
func checkTopConflict(snap *snapshot, sym lang.Symbol, newName string) error {
	ast := snap.astOf(sym.File)
	if ast == nil {
		return nil
	}
	for _, d := range ast.Decls {
		var name string
		switch d := d.(type) {
		case *syntax.ConstDecl:
			name = d.Name.Name
		case *syntax.FnDecl:
			name = d.Name.Name
		case *syntax.ModelDecl:
			name = d.Name.Name
		}
		if name == newName {
			return jsonrpc2.NewError(jsonrpc2.InvalidRequest, fmt.Sprintf("%s is already declared in %s", newName, displayName(snap, sym.File)))
		}
	}
	return nil
}

// declName names a declaration for messages: "function f", "model m".
func declName(d syntax.Decl) string {
	switch d := d.(type) {
	case *syntax.FnDecl:
		return "function " + d.Name.Name
	case *syntax.ModelDecl:
		return "model " + d.Name.Name
	}
	return "this declaration"
}
