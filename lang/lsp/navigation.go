package lsp

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"

	"tec/lang"
	"tec/lang/syntax"
)

// definition answers textDocument/definition: where the name under the
// cursor is declared, or the file an import names.
func (s *server) definition(ctx context.Context, doc *document, raw json.RawMessage) (any, error) {
	snap, off, err := s.at(ctx, doc, raw)
	if err != nil {
		return nil, err
	}
	if imp := importAt(snap, off); imp != nil {
		return []protocol.Location{{URI: s.fileURI(importPath(snap.doc.path, imp.Path))}}, nil
	}
	id := identAt(snap, off)
	if id == nil || id.Symbol.File == "" || id.Symbol.Def == (syntax.Span{}) {
		return []protocol.Location{}, nil
	}
	return []protocol.Location{s.location(snap, id.Symbol.File, id.Symbol.Def)}, nil
}

// importAt returns the import whose path string contains the offset.
func importAt(snap *snapshot, off int) *syntax.ImportDecl {
	if snap.ast == nil {
		return nil
	}
	for _, d := range snap.ast.Decls {
		if imp, ok := d.(*syntax.ImportDecl); ok && imp.PathSpan.Start.Offset <= off && off <= imp.PathSpan.End.Offset {
			return imp
		}
	}
	return nil
}

// location returns the protocol location of a span of file.
func (s *server) location(snap *snapshot, file string, sp syntax.Span) protocol.Location {
	loc := protocol.Location{URI: s.fileURI(file)}
	if m := snap.mapperOf(file); m != nil {
		loc.Range = m.rng(sp)
	}
	return loc
}

// referenceParams are the parameters of textDocument/references.
type referenceParams struct {
	positionParams
	Context struct {
		IncludeDeclaration bool `json:"includeDeclaration"`
	} `json:"context"`
}

// references answers textDocument/references: every use of the name under
// the cursor, in the document, the files it imports and, for a top-level
// function or constant, the other .te files of the workspace.
func (s *server) references(ctx context.Context, doc *document, raw json.RawMessage) (any, error) {
	var p referenceParams
	if err := unmarshalParams(raw, &p); err != nil {
		return nil, jsonrpc2.NewError(jsonrpc2.InvalidParams, err.Error())
	}
	snap, off, err := s.at(ctx, doc, raw)
	if err != nil {
		return nil, err
	}
	id := identAt(snap, off)
	if id == nil || id.Symbol.File == "" {
		return []protocol.Location{}, nil
	}
	refs, err := s.refsOf(ctx, snap, id.Symbol, p.Context.IncludeDeclaration)
	if err != nil {
		return nil, err
	}
	locs := make([]protocol.Location, 0, len(refs))
	for _, r := range refs {
		locs = append(locs, r.loc)
	}
	return locs, nil
}

// ref is one occurrence of a name.
type ref struct {
	file string
	span syntax.Span
	loc  protocol.Location
}

// refsOf returns the occurrences of sym, sorted by file and position.
func (s *server) refsOf(ctx context.Context, snap *snapshot, sym lang.Symbol, includeDecl bool) ([]ref, error) {
	type key struct {
		file string
		off  int
	}
	seen := map[key]bool{}
	var refs []ref
	add := func(sn *snapshot, file string, sp syntax.Span) {
		k := key{file, sp.Start.Offset}
		if seen[k] || (!includeDecl && file == sym.File && sp == sym.Def) {
			return
		}
		seen[k] = true
		refs = append(refs, ref{file: file, span: sp, loc: s.location(sn, file, sp)})
	}
	collect := func(sn *snapshot) {
		for file, ids := range sn.info.Idents {
			for _, id := range ids {
				if id.Symbol.File == sym.File && id.Symbol.Def == sym.Def && id.Symbol.Name == sym.Name {
					add(sn, file, id.Span)
				}
			}
		}
		if topLevel(sym) {
			for _, u := range uncheckedUses(sn, sym) {
				add(sn, u.file, u.span)
			}
		}
	}
	if includeDecl && sym.Def != (syntax.Span{}) {
		add(snap, sym.File, sym.Def)
	}
	collect(snap)
	if topLevel(sym) {
		others, err := s.workspaceSnapshots(ctx, snap)
		if err != nil {
			return nil, err
		}
		for _, o := range others {
			collect(o)
		}
	}
	slices.SortFunc(refs, func(a, b ref) int {
		if c := strings.Compare(a.file, b.file); c != 0 {
			return c
		}
		return a.span.Start.Offset - b.span.Start.Offset
	})
	return refs, nil
}

// topLevel reports whether sym is a function or a top-level constant, which
// other files may use.
func topLevel(sym lang.Symbol) bool {
	return sym.Kind == lang.SymFunc || sym.Kind == lang.SymConst && sym.Def != (syntax.Span{}) && isTopLevelDecl(sym)
}

// isTopLevelDecl reports whether a constant's hover text says it is
// declared at top level ("const N = 4" rather than "N = 4").
func isTopLevelDecl(sym lang.Symbol) bool { return strings.HasPrefix(sym.Detail, "const ") }

// maxWorkspaceFiles bounds the files a search for references checks.
const maxWorkspaceFiles = 200

// workspaceSnapshots checks the .te files that may use the names of snap's
// document: the open documents and the files in the workspace folders and
// in the document's directory (not their subdirectories), apart from snap's
// own document.
func (s *server) workspaceSnapshots(ctx context.Context, snap *snapshot) ([]*snapshot, error) {
	s.mu.Lock()
	var open []*document
	for _, d := range s.docs {
		if d.uri != snap.doc.uri {
			open = append(open, d)
		}
	}
	dirs := append([]string{filepath.Dir(snap.doc.path)}, s.roots...)
	defines := s.settings.defines
	gen := s.settings.gen
	s.mu.Unlock()
	slices.SortFunc(open, func(a, b *document) int { return strings.Compare(a.path, b.path) })
	seen := map[string]bool{snap.doc.path: true}
	var out []*snapshot
	for _, d := range open {
		seen[d.path] = true
		sn, err := s.snapshot(ctx, d)
		if err != nil {
			return nil, err
		}
		out = append(out, sn)
	}
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			path := filepath.Join(dir, e.Name())
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".te") || seen[path] || len(seen) > maxWorkspaceFiles {
				continue
			}
			seen[path] = true
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			text, err := s.opts.ReadFile(path)
			if err != nil {
				continue
			}
			d := &document{uri: pathURI(path), path: path, version: -1, text: text}
			out = append(out, s.check(d, gen, defines))
		}
	}
	return out, nil
}

// uncheckedUses finds the uses of a top-level name that the checker never
// reached (in functions that no model calls), by their text: a name in a
// file that sees sym's declaration, not recorded by the checker and not
// bound locally in its declaration.
func uncheckedUses(snap *snapshot, sym lang.Symbol) []ref {
	var out []ref
	for _, file := range snap.filesSeeing(sym) {
		ast := snap.astOf(file)
		if ast == nil {
			continue
		}
		recorded := map[int]bool{}
		for _, id := range snap.info.Idents[file] {
			recorded[id.Span.Start.Offset] = true
		}
		for _, d := range ast.Decls {
			locals := localNames(d)
			if locals[sym.Name] {
				continue
			}
			inspect(d, func(n syntax.Node) bool {
				if id, ok := n.(syntax.Ident); ok && id.Name == sym.Name && !recorded[id.Span.Start.Offset] {
					if !(file == sym.File && id.Span == sym.Def) {
						out = append(out, ref{file: file, span: id.Span})
					}
				}
				return true
			})
		}
	}
	return out
}

// filesSeeing returns the files read by snap's check whose top-level scope
// resolves sym's name to sym: the declaring file, and the files that do not
// declare the name themselves and import the declaring file (or, for the
// standard library, any file that does not declare it).
func (snap *snapshot) filesSeeing(sym lang.Symbol) []string {
	files := []string{snap.doc.path}
	for f := range snap.files {
		files = append(files, f)
	}
	slices.Sort(files[1:])
	var out []string
	for _, f := range files {
		ast := snap.astOf(f)
		if ast == nil {
			continue
		}
		if f == sym.File {
			out = append(out, f)
			continue
		}
		declares, imports := false, false
		for _, d := range ast.Decls {
			switch d := d.(type) {
			case *syntax.ConstDecl:
				declares = declares || d.Name.Name == sym.Name
			case *syntax.FnDecl:
				declares = declares || d.Name.Name == sym.Name
			case *syntax.ImportDecl:
				imports = imports || importPath(f, d.Path) == sym.File
			}
		}
		if !declares && (imports || strings.HasPrefix(sym.File, "stdlib/")) {
			out = append(out, f)
		}
	}
	return out
}

// astOf returns the syntax tree of a file the check read, or nil.
func (snap *snapshot) astOf(file string) *syntax.File {
	if file == snap.doc.path {
		return snap.ast
	}
	snap.mu.Lock()
	defer snap.mu.Unlock()
	if snap.asts == nil {
		snap.asts = map[string]*syntax.File{}
	}
	if f, ok := snap.asts[file]; ok {
		return f
	}
	var f *syntax.File
	if src, ok := snap.files[file]; ok {
		f, _ = syntax.Parse(file, src)
	}
	snap.asts[file] = f
	return f
}

// localNames returns the names that a declaration binds locally: its
// parameters and every name a statement, loop, comprehension, reduction or
// where clause binds.
func localNames(d syntax.Decl) map[string]bool {
	names := map[string]bool{}
	if fn, ok := d.(*syntax.FnDecl); ok {
		for _, p := range fn.Params {
			names[p.Name.Name] = true
		}
	}
	inspect(d, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.PlaceholderStmt:
			names[n.Name.Name] = true
		case *syntax.OutputItem:
			if n.Value != nil {
				names[n.Name.Name] = true
			}
		case *syntax.ForStmt:
			names[n.Var.Name] = true
		case *syntax.Target:
			names[n.Name.Name] = true
			for _, x := range n.Indices {
				if nm, ok := x.(*syntax.Name); ok {
					names[nm.Name] = true
				}
			}
		case *syntax.Comprehension:
			names[n.Var.Name] = true
		case *syntax.Reduce:
			for _, a := range n.Axes {
				names[a.Name] = true
			}
		case *syntax.ConstDecl:
			if n != d {
				names[n.Name.Name] = true
			}
		}
		return true
	})
	return names
}
