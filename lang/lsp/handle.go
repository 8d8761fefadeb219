package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
)

// codeRequestFailed is LSP 3.17's RequestFailed: a valid request that the
// server cannot answer.
const codeRequestFailed jsonrpc2.Code = -32803

// requestFunc answers a request about doc (nil for requests that name no
// document, or one that is not open).
type requestFunc func(ctx context.Context, doc *document, params json.RawMessage) (any, error)

// handle is the connection's handler. It runs on the connection's reader
// goroutine, one message at a time: notifications are handled here, in
// order, and each request in a goroutine of its own, with the document as it
// was when the request arrived.
func (s *server) handle(ctx context.Context, reply jsonrpc2.Replier, req jsonrpc2.Request) error {
	call, isCall := req.(*jsonrpc2.Call)
	if !isCall {
		s.notify(ctx, req.Method(), req.Params())
		return nil
	}
	switch req.Method() {
	case protocol.MethodInitialize:
		res, err := s.initialize(req.Params())
		return reply(ctx, res, err)
	case protocol.MethodShutdown:
		s.mu.Lock()
		s.shutdown = true
		s.mu.Unlock()
		return reply(ctx, nil, nil)
	}
	s.mu.Lock()
	initialized, shutdown := s.initialized, s.shutdown
	s.mu.Unlock()
	switch {
	case !initialized:
		return reply(ctx, nil, jsonrpc2.NewError(jsonrpc2.ServerNotInitialized, "the server is not initialized"))
	case shutdown:
		return reply(ctx, nil, jsonrpc2.NewError(jsonrpc2.InvalidRequest, "the server is shutting down"))
	}
	fn := s.requestFunc(req.Method())
	if fn == nil {
		return reply(ctx, nil, jsonrpc2.NewError(jsonrpc2.MethodNotFound, fmt.Sprintf("method not supported: %s", req.Method())))
	}
	doc, diskURI, err := s.docOf(req.Params())
	if err != nil {
		return reply(ctx, nil, jsonrpc2.NewError(jsonrpc2.InvalidParams, err.Error()))
	}
	rctx, cancel := context.WithCancel(ctx)
	s.mu.Lock()
	s.inflight[call.ID()] = cancel
	s.mu.Unlock()
	go func() {
		defer func() {
			s.mu.Lock()
			delete(s.inflight, call.ID())
			s.mu.Unlock()
			cancel()
		}()
		var res any
		var err error
		if doc == nil {
			// Read here, not on the connection's reader: a slow file
			// holds up this request alone.
			doc, err = s.readDocument(diskURI)
		}
		switch {
		case err != nil:
		case len(doc.text) > maxFileBytes:
			err = jsonrpc2.NewError(codeRequestFailed, fmt.Sprintf("the file is larger than %d MiB, the most tec reads", maxFileBytes>>20))
		default:
			res, err = s.run(rctx, req.Method(), fn, doc, req.Params())
		}
		if rctx.Err() != nil && ctx.Err() == nil {
			res, err = nil, jsonrpc2.NewError(protocol.CodeRequestCancelled, "request cancelled")
		}
		if rerr := reply(ctx, res, err); rerr != nil {
			s.logf("replying to %s: %v", req.Method(), rerr)
		}
	}()
	return nil
}

// run calls fn, turning a panic into an internal error.
func (s *server) run(ctx context.Context, method string, fn requestFunc, doc *document, params json.RawMessage) (res any, err error) {
	defer func() {
		if r := recover(); r != nil {
			s.logf("panic in %s: %v\n%s", method, r, debug.Stack())
			res, err = nil, jsonrpc2.NewError(jsonrpc2.InternalError, fmt.Sprintf("internal error in %s: %v", method, r))
		}
	}()
	return fn(ctx, doc, params)
}

// requestFunc returns the function that answers method, or nil.
func (s *server) requestFunc(method string) requestFunc {
	switch method {
	case protocol.MethodTextDocumentHover:
		return s.hover
	case protocol.MethodTextDocumentDefinition:
		return s.definition
	case protocol.MethodTextDocumentReferences:
		return s.references
	case protocol.MethodTextDocumentCompletion:
		return s.completion
	case protocol.MethodTextDocumentFormatting:
		return s.formatting
	case protocol.MethodTextDocumentDocumentSymbol:
		return s.documentSymbols
	case protocol.MethodSemanticTokensFull:
		return s.semanticTokens
	case methodInlayHint:
		return s.inlayHints
	case protocol.MethodTextDocumentRename:
		return s.rename
	case protocol.MethodTextDocumentPrepareRename:
		return s.prepareRename
	}
	return nil
}

// docOf returns the open document that params name in textDocument.uri;
// if the editor has not opened it, it returns nil and the URI, which
// readDocument reads from disk. Every request the server answers is about a
// document: params without one are an error.
func (s *server) docOf(params json.RawMessage) (*document, protocol.DocumentURI, error) {
	var p struct {
		TextDocument *struct {
			URI *string `json:"uri"`
		} `json:"textDocument"`
	}
	if err := unmarshalParams(params, &p); err != nil {
		return nil, "", err
	}
	switch {
	case p.TextDocument == nil:
		return nil, "", errors.New("invalid params: textDocument is missing")
	case p.TextDocument.URI == nil || *p.TextDocument.URI == "":
		return nil, "", errors.New("invalid params: textDocument.uri is missing")
	}
	u := protocol.DocumentURI(*p.TextDocument.URI)
	s.mu.Lock()
	d := s.docs[u]
	s.mu.Unlock()
	if d != nil {
		return d, "", nil
	}
	return nil, u, nil
}

// readDocument reads a file the editor has not opened from disk.
// Options.ReadFile refuses what is not a regular file, so that a request
// about a named pipe or a device waits for nothing.
func (s *server) readDocument(u protocol.DocumentURI) (*document, error) {
	path := uriPath(u)
	text, err := s.opts.ReadFile(path)
	if err != nil {
		return nil, jsonrpc2.NewError(jsonrpc2.InvalidParams, fmt.Sprintf("%s is not open in the editor, and cannot be read: %v", u, err))
	}
	return &document{uri: u, path: path, version: -1, text: text}, nil
}

// notify handles a notification, recovering from a panic in it.
func (s *server) notify(ctx context.Context, method string, params json.RawMessage) {
	defer func() {
		if r := recover(); r != nil {
			s.logf("panic in %s: %v\n%s", method, r, debug.Stack())
		}
	}()
	var err error
	switch method {
	case protocol.MethodInitialized:
		return
	case protocol.MethodExit:
		s.mu.Lock()
		shutdown := s.shutdown
		s.mu.Unlock()
		if shutdown {
			s.exited <- nil
		} else {
			s.exited <- ErrExitWithoutShutdown
		}
	case protocol.MethodCancelRequest:
		var p struct {
			ID jsonrpc2.ID `json:"id"`
		}
		if err = unmarshalParams(params, &p); err == nil {
			s.mu.Lock()
			cancel := s.inflight[p.ID]
			s.mu.Unlock()
			if cancel != nil {
				cancel()
			}
		}
	case protocol.MethodTextDocumentDidOpen:
		var p protocol.DidOpenTextDocumentParams
		if err = unmarshalParams(params, &p); err == nil {
			s.didOpen(p.TextDocument.URI, p.TextDocument.Version, []byte(p.TextDocument.Text))
		}
	case protocol.MethodTextDocumentDidChange:
		var p didChangeParams
		if err = unmarshalParams(params, &p); err == nil {
			s.didChange(p.TextDocument.URI, p.TextDocument.Version, p.ContentChanges)
		}
	case protocol.MethodTextDocumentDidClose:
		var p protocol.DidCloseTextDocumentParams
		if err = unmarshalParams(params, &p); err == nil {
			s.didClose(ctx, p.TextDocument.URI)
		}
	case protocol.MethodWorkspaceDidChangeConfiguration:
		var p struct {
			Settings json.RawMessage `json:"settings"`
		}
		if err = unmarshalParams(params, &p); err == nil {
			s.setSettings(p.Settings)
		}
	}
	if err != nil {
		s.logf("%s: %v", method, err)
	}
}
