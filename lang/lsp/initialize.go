package lsp

import (
	"encoding/json"
	"net/url"
	"path/filepath"
	"strings"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"
)

// methodInlayHint is textDocument/inlayHint (LSP 3.17), which
// go.lsp.dev/protocol predates.
const methodInlayHint = "textDocument/inlayHint"

// initializeParams are the parts of InitializeParams the server reads.
type initializeParams struct {
	RootURI               protocol.DocumentURI       `json:"rootUri"`
	RootPath              string                     `json:"rootPath"`
	WorkspaceFolders      []protocol.WorkspaceFolder `json:"workspaceFolders"`
	InitializationOptions json.RawMessage            `json:"initializationOptions"`
}

// capabilities are the server's capabilities. They are written out here
// rather than with protocol.ServerCapabilities, which lacks the LSP 3.17
// fields (inlay hints, position encodings) and the semantic-token options.
type capabilities struct {
	PositionEncoding           string                `json:"positionEncoding"`
	TextDocumentSync           textDocumentSync      `json:"textDocumentSync"`
	HoverProvider              bool                  `json:"hoverProvider"`
	DefinitionProvider         bool                  `json:"definitionProvider"`
	ReferencesProvider         bool                  `json:"referencesProvider"`
	CompletionProvider         completionOptions     `json:"completionProvider"`
	DocumentFormattingProvider bool                  `json:"documentFormattingProvider"`
	DocumentSymbolProvider     bool                  `json:"documentSymbolProvider"`
	SemanticTokensProvider     semanticTokensOptions `json:"semanticTokensProvider"`
	InlayHintProvider          bool                  `json:"inlayHintProvider"`
	RenameProvider             renameOptions         `json:"renameProvider"`
	Workspace                  workspaceCapabilities `json:"workspace"`
}

type textDocumentSync struct {
	OpenClose bool                          `json:"openClose"`
	Change    protocol.TextDocumentSyncKind `json:"change"`
	Save      bool                          `json:"save"`
}

type completionOptions struct {
	TriggerCharacters []string `json:"triggerCharacters"`
}

type semanticTokensOptions struct {
	Legend protocol.SemanticTokensLegend `json:"legend"`
	Full   bool                          `json:"full"`
}

type renameOptions struct {
	PrepareProvider bool `json:"prepareProvider"`
}

type workspaceCapabilities struct {
	WorkspaceFolders struct {
		Supported bool `json:"supported"`
	} `json:"workspaceFolders"`
}

type initializeResult struct {
	Capabilities capabilities        `json:"capabilities"`
	ServerInfo   protocol.ServerInfo `json:"serverInfo"`
}

// Version is the server's version, reported in serverInfo.
const Version = "0.1.0"

func (s *server) initialize(raw json.RawMessage) (any, error) {
	var p initializeParams
	if err := unmarshalParams(raw, &p); err != nil {
		return nil, jsonrpc2.NewError(jsonrpc2.InvalidParams, err.Error())
	}
	defines, err := parseSettings(p.InitializationOptions)
	if err != nil {
		return nil, jsonrpc2.NewError(jsonrpc2.InvalidParams, err.Error())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.initialized {
		return nil, jsonrpc2.NewError(jsonrpc2.InvalidRequest, "initialize sent twice")
	}
	s.initialized = true
	s.settings = settings{defines: defines}
	for _, f := range p.WorkspaceFolders {
		s.roots = append(s.roots, uriPath(protocol.DocumentURI(f.URI)))
	}
	if len(s.roots) == 0 && p.RootURI != "" {
		s.roots = append(s.roots, uriPath(p.RootURI))
	}
	if len(s.roots) == 0 && p.RootPath != "" {
		s.roots = append(s.roots, p.RootPath)
	}
	var c capabilities
	c.PositionEncoding = "utf-16"
	c.TextDocumentSync = textDocumentSync{OpenClose: true, Change: protocol.TextDocumentSyncKindIncremental, Save: true}
	c.HoverProvider = true
	c.DefinitionProvider = true
	c.ReferencesProvider = true
	c.CompletionProvider = completionOptions{TriggerCharacters: []string{}}
	c.DocumentFormattingProvider = true
	c.DocumentSymbolProvider = true
	c.SemanticTokensProvider = semanticTokensOptions{Legend: tokenLegend(), Full: true}
	c.InlayHintProvider = true
	c.RenameProvider = renameOptions{PrepareProvider: true}
	c.Workspace.WorkspaceFolders.Supported = true
	return initializeResult{Capabilities: c, ServerInfo: protocol.ServerInfo{Name: "tec lsp", Version: Version}}, nil
}

// uriPath returns the file name of a file: URI, and any other URI as it is,
// so that an unsaved document still has a name.
func uriPath(u protocol.DocumentURI) string {
	p, err := url.Parse(string(u))
	if err != nil || p.Scheme != "file" {
		return string(u)
	}
	return filepath.FromSlash(p.Path)
}

// pathURI returns the URI of a file name that uriPath gave.
func pathURI(path string) protocol.DocumentURI {
	if strings.Contains(path, ":") && !filepath.IsAbs(path) {
		return protocol.DocumentURI(path) // not a file name
	}
	return protocol.DocumentURI(uri.File(path))
}
