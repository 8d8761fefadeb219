package lsp

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.lsp.dev/jsonrpc2"

	"tec/analysis"
	"tec/lang"
	"tec/lang/diag"
	"tec/lang/syntax"
	"tec/te"
)

// A snapshot is the result of checking one version of a document: its syntax
// tree, diagnostics and identifier facts. It is immutable once built, apart
// from the analysis, which is computed on first use.
type snapshot struct {
	doc   *document
	gen   int // the settings generation it was checked under
	m     *mapper
	ast   *syntax.File // nil when the text does not parse
	diags diag.List
	info  *lang.Info
	// files holds the text of the other files the check read (imports),
	// and deps the version of each that was open in the editor (-1 for a
	// file read from disk).
	files   map[string][]byte
	deps    map[string]int32
	defines map[string]string
	elapsed time.Duration

	mu       sync.Mutex
	mappers  map[string]*mapper
	asts     map[string]*syntax.File
	axesOnce sync.Once
	axes     map[int]bool // offsets of the reduction axes declared in the document
	once     sync.Once
	analyses []*analysis.Analysis
	byTensor map[*te.Tensor]*analysis.Analysis
}

// entry is the server's record of a document's snapshots.
type entry struct {
	snap    *snapshot // the newest snapshot built
	good    *snapshot // the newest snapshot whose text parsed
	pending *build
}

// build is a snapshot being built; done is closed when snap is set.
type build struct {
	doc  *document
	gen  int
	done chan struct{}
	snap *snapshot
}

// snapshot returns the snapshot of doc, building it if the cached one is
// stale. It waits for the build unless ctx is cancelled first.
func (s *server) snapshot(ctx context.Context, doc *document) (*snapshot, error) {
	if doc == nil {
		return nil, jsonrpc2.NewError(jsonrpc2.InvalidParams, "the document is neither open nor readable")
	}
	s.mu.Lock()
	if doc.version < 0 {
		// a file read from disk, not open: check it once, cache nothing
		gen, defines := s.settings.gen, s.settings.defines
		s.mu.Unlock()
		return s.check(doc, gen, defines), nil
	}
	e := s.entries[doc.uri]
	if e == nil {
		e = &entry{}
		s.entries[doc.uri] = e
	}
	gen := s.settings.gen
	if e.snap != nil && e.snap.doc == doc && e.snap.gen == gen && s.depsCurrent(e.snap) {
		snap := e.snap
		s.mu.Unlock()
		return snap, nil
	}
	b := e.pending
	if b == nil || b.doc != doc || b.gen != gen {
		b = &build{doc: doc, gen: gen, done: make(chan struct{})}
		e.pending = b
		defines := s.settings.defines
		go s.runBuild(e, b, defines)
	}
	s.mu.Unlock()
	select {
	case <-b.done:
		return b.snap, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// runBuild checks the document of b and records the snapshot in e.
func (s *server) runBuild(e *entry, b *build, defines map[string]string) {
	defer close(b.done)
	defer func() {
		if r := recover(); r != nil {
			s.logf("panic while checking %s: %v", b.doc.path, r)
			b.snap = &snapshot{doc: b.doc, gen: b.gen, m: newMapper(b.doc.text), info: &lang.Info{}, deps: map[string]int32{}}
		}
	}()
	b.snap = s.check(b.doc, b.gen, defines)
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.pending == b {
		e.pending = nil
	}
	if e.snap == nil || e.snap.doc.version <= b.doc.version {
		e.snap = b.snap
		if b.snap.ast != nil {
			e.good = b.snap
		}
	}
}

// depsCurrent reports whether the files snap read are unchanged: the same
// versions of open documents, and no file that was read from disk now open.
// s.mu is held.
func (s *server) depsCurrent(snap *snapshot) bool {
	for path, v := range snap.deps {
		cur := int32(-1)
		if d := s.byPath(path); d != nil {
			cur = d.version
		}
		if cur != v {
			return false
		}
	}
	return true
}

// byPath returns the open document with file name path, or nil. s.mu is held.
func (s *server) byPath(path string) *document {
	for _, d := range s.docs {
		if d.path == path {
			return d
		}
	}
	return nil
}

// check parses and checks doc with every model, recording identifier facts.
func (s *server) check(doc *document, gen int, defines map[string]string) *snapshot {
	start := time.Now()
	snap := &snapshot{doc: doc, gen: gen, m: newMapper(doc.text), info: &lang.Info{},
		files: map[string][]byte{}, deps: map[string]int32{}, mappers: map[string]*mapper{}}
	if len(doc.text) > maxFileBytes {
		// tec check refuses such a file: so does the editor, with the
		// reason, rather than spend gigabytes on it.
		snap.diags = diag.List{&diag.Diagnostic{File: doc.path, Severity: diag.Error, Code: "io",
			Message: fmt.Sprintf("the file is larger than %d MiB, the most tec reads: it is not checked", maxFileBytes>>20),
			Hint:    "split it into files that import one another"}}
		snap.elapsed = time.Since(start)
		return snap
	}
	// The syntax tree is for the editor's requests; parse it while the
	// checker, which parses the text itself, runs.
	parsed := make(chan struct{})
	go func() {
		defer close(parsed)
		if ast, err := syntax.Parse(doc.path, doc.text); err == nil {
			snap.ast = ast
		}
	}()
	// A workspace define applies to the files that declare the constant.
	if len(defines) > 0 {
		snap.defines = map[string]string{}
		for _, name := range constNames(doc.text) {
			if v, ok := defines[name]; ok {
				snap.defines[name] = v
			}
		}
	}
	read := func(path string) ([]byte, error) {
		s.mu.Lock()
		d := s.byPath(path)
		s.mu.Unlock()
		if d != nil {
			snap.files[path], snap.deps[path] = d.text, d.version
			return d.text, nil
		}
		b, err := s.opts.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		snap.files[path], snap.deps[path] = b, -1
		return b, nil
	}
	_, snap.diags = lang.Check(doc.path, doc.text, lang.Config{Defines: snap.defines, AllModels: true, ReadFile: read, Info: snap.info})
	<-parsed
	snap.elapsed = time.Since(start)
	return snap
}

// source returns the text of file as the check read it, or nil.
func (snap *snapshot) source(file string) []byte {
	if file == snap.doc.path {
		return snap.doc.text
	}
	if b, ok := snap.files[file]; ok {
		return b
	}
	if strings.HasPrefix(file, "stdlib/") {
		return lang.SourceFunc("", nil, nil)(file)
	}
	return nil
}

// mapperOf returns the position mapper of file's text, or nil.
func (snap *snapshot) mapperOf(file string) *mapper {
	if file == snap.doc.path {
		return snap.m
	}
	snap.mu.Lock()
	defer snap.mu.Unlock()
	if m, ok := snap.mappers[file]; ok {
		return m
	}
	src := snap.source(file)
	var m *mapper
	if src != nil {
		m = newMapper(src)
	}
	snap.mappers[file] = m
	return m
}

// analysisOf returns the analysis of the program that holds t, or nil when
// the document has errors or t was removed (no output needs it).
func (snap *snapshot) analysisOf(t *te.Tensor) *analysis.Analysis {
	snap.once.Do(func() {
		snap.byTensor = map[*te.Tensor]*analysis.Analysis{}
		if snap.diags.HasErrors() {
			return
		}
		for _, p := range snap.info.Programs {
			a, err := analysis.Analyze(p, analysis.Options{})
			if err != nil {
				continue
			}
			snap.analyses = append(snap.analyses, a)
			for _, t := range p.Tensors {
				snap.byTensor[t] = a
			}
		}
	})
	return snap.byTensor[t]
}

// constNames returns the names of the top-level constants of src: the
// lines that start with "const NAME".
func constNames(src []byte) []string {
	var names []string
	for _, line := range strings.Split(string(src), "\n") {
		rest, ok := strings.CutPrefix(line, "const")
		if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '\t') {
			continue
		}
		rest = strings.TrimLeft(rest, " \t")
		end := 0
		for end < len(rest) && isNameByte(rest[end]) {
			end++
		}
		if end > 0 {
			names = append(names, rest[:end])
		}
	}
	return names
}
