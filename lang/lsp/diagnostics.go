package lsp

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"go.lsp.dev/protocol"

	"tec/lang/diag"
	"tec/lang/syntax"
)

// diagnose checks the document u and publishes its diagnostics, unless the
// document changed meanwhile (a newer check is then scheduled).
func (s *server) diagnose(u protocol.DocumentURI) {
	defer func() {
		if r := recover(); r != nil {
			s.logf("panic while publishing diagnostics of %s: %v", u, r)
		}
	}()
	s.mu.Lock()
	doc := s.docs[u]
	s.mu.Unlock()
	if doc == nil {
		return
	}
	ctx := context.Background()
	snap, err := s.snapshot(ctx, doc)
	if err != nil {
		return
	}
	s.mu.Lock()
	current := s.docs[u] == doc
	s.mu.Unlock()
	if !current {
		return
	}
	s.publish(ctx, u, snap, s.lspDiagnostics(snap))
	if !snap.diags.HasErrors() {
		go snap.analysisOf(nil) // warm the hover facts
	}
}

// publish records the diagnostics that owner's check found, by the file
// they are in, and sends the merged diagnostics of every file whose list
// changed. snap is nil when owner was closed.
func (s *server) publish(ctx context.Context, owner protocol.DocumentURI, snap *snapshot, byFile map[protocol.DocumentURI][]protocol.Diagnostic) {
	type note struct {
		uri     protocol.DocumentURI
		version int32
		diags   []protocol.Diagnostic
	}
	var out []note
	s.mu.Lock()
	targets := map[protocol.DocumentURI]bool{}
	for t, owners := range s.published {
		if _, ok := owners[owner]; ok {
			targets[t] = true
		}
	}
	for t := range byFile {
		targets[t] = true
	}
	if snap != nil {
		targets[owner] = true // an empty list clears the file's diagnostics
	}
	for t := range targets {
		owners := s.published[t]
		if owners == nil {
			owners = map[protocol.DocumentURI][]protocol.Diagnostic{}
			s.published[t] = owners
		}
		if ds, ok := byFile[t]; ok {
			owners[owner] = ds
		} else {
			delete(owners, owner)
		}
		n := note{uri: t, diags: mergeDiagnostics(owners)}
		if d := s.docs[t]; d != nil {
			n.version = d.version
		}
		if len(owners) == 0 {
			delete(s.published, t)
		}
		out = append(out, n)
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b note) int { return strings.Compare(string(a.uri), string(b.uri)) })
	for _, n := range out {
		p := protocol.PublishDiagnosticsParams{URI: n.uri, Version: uint32(max(n.version, 0)), Diagnostics: n.diags}
		if err := s.conn.Notify(ctx, protocol.MethodTextDocumentPublishDiagnostics, p); err != nil {
			s.logf("publishing diagnostics: %v", err)
		}
	}
}

// mergeDiagnostics joins the lists of several owners, dropping repeats (a
// file open in the editor and imported by another is checked by both).
func mergeDiagnostics(owners map[protocol.DocumentURI][]protocol.Diagnostic) []protocol.Diagnostic {
	keys := make([]protocol.DocumentURI, 0, len(owners))
	for k := range owners {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := []protocol.Diagnostic{}
	type key struct {
		r   protocol.Range
		msg string
	}
	seen := map[key]bool{}
	for _, k := range keys {
		for _, d := range owners[k] {
			if kk := (key{d.Range, d.Message}); !seen[kk] {
				seen[kk] = true
				out = append(out, d)
			}
		}
	}
	return out
}

// lspDiagnostics converts the diagnostics of snap to the protocol's, by the
// URI of the file each is in. An error in an imported file is also shown on
// the import that leads to it.
func (s *server) lspDiagnostics(snap *snapshot) map[protocol.DocumentURI][]protocol.Diagnostic {
	main := snap.doc.uri
	out := map[protocol.DocumentURI][]protocol.Diagnostic{main: {}}
	imported := map[*syntax.ImportDecl]int{}
	firstImported := map[*syntax.ImportDecl]*diag.Diagnostic{}
	for _, d := range snap.diags {
		ld := s.lspDiagnostic(snap, d)
		switch {
		case d.File == snap.doc.path:
			out[main] = append(out[main], ld)
		case d.File == "" || strings.HasPrefix(d.File, "stdlib/"):
			ld.Range = protocol.Range{}
			if d.File != "" {
				ld.Message = d.File + ": " + ld.Message
			}
			out[main] = append(out[main], ld)
		default:
			u := s.fileURI(d.File)
			out[u] = append(out[u], ld)
			if imp := importOf(snap, d.File); imp != nil {
				if imported[imp] == 0 {
					firstImported[imp] = d
				}
				imported[imp]++
			}
		}
	}
	for imp, n := range imported {
		first := firstImported[imp]
		msg := "the imported file has " + plural(n, "error") + "; the first: " + first.Error()
		out[main] = append(out[main], protocol.Diagnostic{Range: snap.m.rng(imp.PathSpan), Severity: protocol.DiagnosticSeverityError,
			Code: "import", Source: "tec", Message: msg})
	}
	slices.SortStableFunc(out[main], func(a, b protocol.Diagnostic) int {
		if a.Range.Start.Line != b.Range.Start.Line {
			return int(a.Range.Start.Line) - int(b.Range.Start.Line)
		}
		return int(a.Range.Start.Character) - int(b.Range.Start.Character)
	})
	return out
}

// lspDiagnostic converts one diagnostic; its message is the CLI's, with the
// hint on a line of its own.
func (s *server) lspDiagnostic(snap *snapshot, d *diag.Diagnostic) protocol.Diagnostic {
	ld := protocol.Diagnostic{Severity: severity(d.Severity), Code: d.Code, Source: "tec", Message: d.Message}
	if d.Hint != "" {
		ld.Message += "\nhint: " + d.Hint
	}
	if m := snap.mapperOf(d.File); m != nil {
		ld.Range = m.rng(d.Span)
	}
	for _, r := range d.Related {
		loc := protocol.Location{URI: s.fileURI(r.File)}
		if m := snap.mapperOf(r.File); m != nil {
			loc.Range = m.rng(r.Span)
		}
		ld.RelatedInformation = append(ld.RelatedInformation, protocol.DiagnosticRelatedInformation{Location: loc, Message: r.Message})
	}
	return ld
}

func severity(s diag.Severity) protocol.DiagnosticSeverity {
	switch s {
	case diag.Warning:
		return protocol.DiagnosticSeverityWarning
	case diag.Note:
		return protocol.DiagnosticSeverityInformation
	}
	return protocol.DiagnosticSeverityError
}

// importOf returns the import of the main file that names file, or its
// first import when file is imported indirectly.
func importOf(snap *snapshot, file string) *syntax.ImportDecl {
	if snap.ast == nil {
		return nil
	}
	var first *syntax.ImportDecl
	for _, d := range snap.ast.Decls {
		imp, ok := d.(*syntax.ImportDecl)
		if !ok {
			continue
		}
		if first == nil {
			first = imp
		}
		if importPath(snap.doc.path, imp.Path) == file {
			return imp
		}
	}
	return first
}

// importPath resolves an import path as the checker does: relative to the
// importing file.
func importPath(from, path string) string {
	if filepath.IsAbs(path) {
		return filepath.Clean(path)
	}
	return filepath.Join(filepath.Dir(from), filepath.FromSlash(path))
}

// plural formats n and a noun, adding "s" unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
