package lsp

import (
	"context"
	"encoding/json"
	"io/fs"
	"slices"
	"strings"

	"go.lsp.dev/protocol"

	"tec/lang"
	"tec/lang/stdlib"
	"tec/lang/syntax"
)

// completion answers textDocument/completion: the local names in scope at
// the cursor, the file's constants and functions, those of its imports and
// of the standard library (with their signatures), builtins, dtypes and
// keywords, all starting with the name being typed.
func (s *server) completion(ctx context.Context, doc *document, raw json.RawMessage) (any, error) {
	snap, off, err := s.at(ctx, doc, raw)
	if err != nil {
		return nil, err
	}
	list := &protocol.CompletionList{Items: []protocol.CompletionItem{}}
	for lx := range scan(snap.doc.text) {
		if lx.start < off && off <= lx.end && (lx.kind == tokComment || lx.kind == tokString) {
			return list, nil
		}
	}
	start, _ := wordAt(snap.doc.text, off)
	prefix := string(snap.doc.text[start:min(off, len(snap.doc.text))])
	good := snap
	if good.ast == nil {
		good = s.lastGood(doc.uri, snap)
	}
	c := &completer{prefix: prefix, seen: map[string]bool{}}
	c.locals(good, off)
	c.decls(good, good.ast, snap.doc.path, "1")
	if good.ast != nil {
		for _, d := range good.ast.Decls {
			if imp, ok := d.(*syntax.ImportDecl); ok {
				path := importPath(good.doc.path, imp.Path)
				c.decls(good, good.astOf(path), path, "2")
			}
		}
	}
	for _, f := range s.stdlibFiles() {
		c.fnItems(f.ast, f.src, f.name, "3")
	}
	for _, b := range lang.Builtins() {
		kind := protocol.CompletionItemKindFunction
		switch b.Kind {
		case lang.DType:
			kind = protocol.CompletionItemKindTypeParameter
		case lang.Constant:
			kind = protocol.CompletionItemKindConstant
		}
		c.add(protocol.CompletionItem{Label: b.Name, Kind: kind, Detail: b.Signature, Documentation: b.Doc, SortText: "4" + b.Name})
	}
	for _, k := range keywords() {
		c.add(protocol.CompletionItem{Label: k[0], Kind: protocol.CompletionItemKindKeyword, Detail: k[1], SortText: "5" + k[0]})
	}
	list.Items = c.items
	return list, nil
}

// completer collects completion items, once per label, that start with a
// prefix.
type completer struct {
	prefix string
	seen   map[string]bool
	items  []protocol.CompletionItem
}

func (c *completer) add(it protocol.CompletionItem) {
	if c.seen[it.Label] || !strings.HasPrefix(it.Label, c.prefix) {
		return
	}
	c.seen[it.Label] = true
	c.items = append(c.items, it)
}

// locals adds the names bound in the declaration around off before it, and
// the index variables and axes of the statement around off.
func (c *completer) locals(snap *snapshot, off int) {
	decl := enclosingDecl(snap.ast, off)
	if decl == nil {
		return
	}
	sp := decl.NodeSpan()
	var stmt syntax.Span
	if st := enclosingStmt(decl, off); st != nil {
		stmt = st.NodeSpan()
	}
	for _, id := range snap.info.Idents[snap.doc.path] {
		sym := id.Symbol
		def := sym.Def.Start.Offset
		if sym.File != snap.doc.path || def < sp.Start.Offset || def > sp.End.Offset || sym.Kind == lang.SymFunc || sym.Kind == lang.SymModel {
			continue
		}
		kind := protocol.CompletionItemKindVariable
		switch sym.Kind {
		case lang.SymIndex:
			if def < stmt.Start.Offset || def > stmt.End.Offset {
				continue
			}
			kind = protocol.CompletionItemKindTypeParameter
		case lang.SymConst:
			kind = protocol.CompletionItemKindConstant
		}
		if def > off {
			continue
		}
		detail := sym.Detail
		if isInvalid(sym) {
			detail = sym.Name + ": type unknown (its definition has an error)"
		}
		c.add(protocol.CompletionItem{Label: sym.Name, Kind: kind, Detail: detail, SortText: "0" + sym.Name})
	}
}

// decls adds the constants and functions that file (parsed as f) declares.
func (c *completer) decls(snap *snapshot, f *syntax.File, file, rank string) {
	if f == nil {
		return
	}
	for _, d := range f.Decls {
		if cd, ok := d.(*syntax.ConstDecl); ok {
			detail := "const " + cd.Name.Name
			if x := snap.info.At(file, cd.Name.Span.Start.Offset); x != nil && x.Symbol.Kind == lang.SymConst {
				detail = x.Symbol.Detail
			}
			c.add(protocol.CompletionItem{Label: cd.Name.Name, Kind: protocol.CompletionItemKindConstant, Detail: detail, SortText: rank + cd.Name.Name})
		}
	}
	c.fnItems(f, snap.source(file), file, rank)
}

// fnItems adds the functions of f, whose text is src.
func (c *completer) fnItems(f *syntax.File, src []byte, file, rank string) {
	if f == nil {
		return
	}
	for _, d := range f.Decls {
		if fd, ok := d.(*syntax.FnDecl); ok {
			it := protocol.CompletionItem{Label: fd.Name.Name, Kind: protocol.CompletionItemKindFunction,
				Detail: signature(src, fd), SortText: rank + fd.Name.Name}
			if doc := docComment(src, fd.Name.Span); doc != "" {
				it.Documentation = doc
			}
			c.add(it)
		}
	}
}

// stdlibFile is a parsed standard library file.
type stdlibFile struct {
	name string
	src  []byte
	ast  *syntax.File
}

// stdlibFiles returns the standard library's files, parsed once.
func (s *server) stdlibFiles() []stdlibFile {
	s.stdlibParse.Do(func() {
		fsys := stdlib.FS()
		entries, err := fs.ReadDir(fsys, ".")
		if err != nil {
			return
		}
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".te") {
				continue
			}
			src, err := fs.ReadFile(fsys, e.Name())
			if err != nil {
				continue
			}
			name := "stdlib/" + e.Name()
			if f, err := syntax.Parse(name, src); err == nil {
				s.stdlib = append(s.stdlib, stdlibFile{name: name, src: src, ast: f})
			}
		}
		slices.SortFunc(s.stdlib, func(a, b stdlibFile) int { return strings.Compare(a.name, b.name) })
	})
	return s.stdlib
}
