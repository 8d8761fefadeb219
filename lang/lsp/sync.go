package lsp

import (
	"context"
	"time"

	"go.lsp.dev/protocol"
)

// didOpen records a newly opened document and schedules its check.
func (s *server) didOpen(u protocol.DocumentURI, version int32, text []byte) {
	s.mu.Lock()
	s.docs[u] = &document{uri: u, path: uriPath(u), version: version, text: text}
	s.mu.Unlock()
	s.scheduleCheck(u)
	s.scheduleDependents(uriPath(u))
}

// didChange applies changes to a document and schedules its check, and
// the checks of the open documents that import it.
func (s *server) didChange(u protocol.DocumentURI, version int32, changes []changeEvent) {
	s.mu.Lock()
	old := s.docs[u]
	if old == nil {
		s.mu.Unlock()
		return
	}
	// Documents are immutable: requests in flight keep the old one.
	s.docs[u] = &document{uri: u, path: old.path, version: version, text: applyChanges(old.text, changes)}
	s.mu.Unlock()
	s.scheduleCheck(u)
	s.scheduleDependents(old.path)
}

// didClose forgets a document and clears its diagnostics.
func (s *server) didClose(ctx context.Context, u protocol.DocumentURI) {
	s.mu.Lock()
	d := s.docs[u]
	delete(s.docs, u)
	delete(s.entries, u)
	if t := s.timers[u]; t != nil {
		t.Stop()
		delete(s.timers, u)
	}
	s.mu.Unlock()
	if d == nil {
		return
	}
	s.publish(ctx, u, nil, nil)
	s.scheduleDependents(d.path)
}

// scheduleCheck checks u and publishes its diagnostics once no change has
// come for the debounce delay.
func (s *server) scheduleCheck(u protocol.DocumentURI) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shutdown {
		return
	}
	if t := s.timers[u]; t != nil {
		t.Stop()
	}
	s.timers[u] = time.AfterFunc(s.opts.Debounce, func() { s.diagnose(u) })
}

// scheduleDependents schedules the checks of the open documents whose last
// check read the file path.
func (s *server) scheduleDependents(path string) {
	s.mu.Lock()
	var us []protocol.DocumentURI
	for u, e := range s.entries {
		if e.snap != nil {
			if _, ok := e.snap.deps[path]; ok {
				us = append(us, u)
			}
		}
	}
	s.mu.Unlock()
	for _, u := range us {
		s.scheduleCheck(u)
	}
}
