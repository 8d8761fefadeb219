package lsp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"go.lsp.dev/protocol"

	"tec/lang/stdlib"
)

// fileURI returns the URI of a file the checker named: the URI of the open
// document with that name, the copy of a standard library file written by
// stdlibPath, or a file: URI.
func (s *server) fileURI(file string) protocol.DocumentURI {
	if strings.HasPrefix(file, "stdlib/") {
		if p := s.stdlibPath(strings.TrimPrefix(file, "stdlib/")); p != "" {
			return pathURI(p)
		}
		return protocol.DocumentURI(file)
	}
	s.mu.Lock()
	d := s.byPath(file)
	s.mu.Unlock()
	if d != nil {
		return d.uri
	}
	return pathURI(file)
}

// stdlibPath returns the file name of a copy of the standard library file
// name, writing the library out on first use so that an editor can open it.
// The directory's name holds a hash of the library, so that a new version of
// tec does not reuse an old copy. It returns "" if the copy cannot be made.
func (s *server) stdlibPath(name string) string {
	s.stdlibOnce.Do(func() {
		dir, err := writeStdlib(s.opts.StdlibDir)
		if err != nil {
			s.logf("writing the standard library for the editor: %v", err)
			return
		}
		s.stdlibDir = dir
	})
	if s.stdlibDir == "" {
		return ""
	}
	return filepath.Join(s.stdlibDir, name)
}

// writeStdlib writes the standard library's .te files into a directory under
// base (os.UserCacheDir()/tec when base is empty) and returns it.
func writeStdlib(base string) (string, error) {
	fsys := stdlib.FS()
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return "", err
	}
	h := sha256.New()
	srcs := map[string][]byte{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".te") {
			continue
		}
		b, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return "", err
		}
		srcs[e.Name()] = b
		h.Write([]byte(e.Name()))
		h.Write(b)
	}
	if base == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return "", err
		}
		base = filepath.Join(cache, "tec")
	}
	dir := filepath.Join(base, "stdlib-"+hex.EncodeToString(h.Sum(nil))[:12])
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for name, b := range srcs {
		p := filepath.Join(dir, name)
		if old, err := os.ReadFile(p); err == nil && string(old) == string(b) {
			continue
		}
		if err := os.WriteFile(p, b, 0o444); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// showMessage shows msg to the user as an error.
func (s *server) showMessage(msg string) {
	p := protocol.ShowMessageParams{Type: protocol.MessageTypeError, Message: "tec: " + msg}
	if err := s.conn.Notify(context.Background(), protocol.MethodWindowShowMessage, p); err != nil {
		s.logf("showing a message: %v", err)
	}
}
