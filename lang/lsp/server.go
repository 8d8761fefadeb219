package lsp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"

	"tec/lang"
)

// DefaultDebounce is how long the server waits after a change before it
// checks the document, so that a burst of keystrokes costs one check.
const DefaultDebounce = 10 * time.Millisecond

// Options configure a server.
type Options struct {
	// Debounce is the delay between a change and the check that publishes
	// its diagnostics; 0 means DefaultDebounce.
	Debounce time.Duration
	// StdlibDir is where the embedded standard library is written so that
	// editors can open it (go to definition of linear, say); empty means a
	// directory under os.UserCacheDir.
	StdlibDir string
	// ReadFile reads files that are not open in the editor; nil means
	// lang.ReadSource up to maxFileBytes, which refuses anything but a
	// regular file.
	ReadFile func(path string) ([]byte, error)
	// Logf, when not nil, receives one line per internal failure worth
	// knowing about (a panic recovered in a handler, say).
	Logf func(format string, args ...any)
}

// maxFileBytes bounds a file the server reads from disk (an import not open
// in the editor): 16 MiB, the limit of tec's other commands, so that an
// import of /dev/zero is an error, not a read until memory runs out.
const maxFileBytes = 16 << 20

// ErrExitWithoutShutdown is returned by Serve when the client sent exit
// without shutdown first; the protocol asks the server to exit with status 1.
var ErrExitWithoutShutdown = errors.New("lsp: exit without shutdown")

// server is the state of one connection.
type server struct {
	opts Options
	conn jsonrpc2.Conn

	mu          sync.Mutex
	initialized bool
	shutdown    bool
	docs        map[protocol.DocumentURI]*document
	entries     map[protocol.DocumentURI]*entry
	settings    settings
	roots       []string
	timers      map[protocol.DocumentURI]*time.Timer
	published   map[protocol.DocumentURI]map[protocol.DocumentURI][]protocol.Diagnostic
	inflight    map[jsonrpc2.ID]context.CancelFunc
	exited      chan error

	stdlibOnce  sync.Once
	stdlibDir   string
	stdlibParse sync.Once
	stdlib      []stdlibFile
}

// Serve speaks the Language Server Protocol over rwc (stdio for `tec lsp`)
// until the client sends exit, the stream ends or ctx is cancelled. It
// returns nil after shutdown and exit, ErrExitWithoutShutdown after an exit
// alone, and the stream's error otherwise.
func Serve(ctx context.Context, rwc io.ReadWriteCloser, opts Options) error {
	if opts.Debounce <= 0 {
		opts.Debounce = DefaultDebounce
	}
	if opts.ReadFile == nil {
		opts.ReadFile = func(path string) ([]byte, error) { return lang.ReadSource(path, maxFileBytes) }
	}
	s := &server{
		opts:      opts,
		docs:      map[protocol.DocumentURI]*document{},
		entries:   map[protocol.DocumentURI]*entry{},
		timers:    map[protocol.DocumentURI]*time.Timer{},
		published: map[protocol.DocumentURI]map[protocol.DocumentURI][]protocol.Diagnostic{},
		inflight:  map[jsonrpc2.ID]context.CancelFunc{},
		exited:    make(chan error, 1),
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.conn = jsonrpc2.NewConn(newGuardedStream(rwc, s.logf))
	s.conn.Go(ctx, s.handle)
	defer s.stopTimers()
	select {
	case err := <-s.exited:
		// Closing the stream ends the reader, unless the stream is a
		// process's stdin, which the process's exit closes.
		s.conn.Close()
		return err
	case <-s.conn.Done():
		if err := s.conn.Err(); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("lsp: %w", err)
		}
		return nil
	case <-ctx.Done():
		s.conn.Close()
		<-s.conn.Done()
		return ctx.Err()
	}
}

// stopTimers stops the pending debounced checks.
func (s *server) stopTimers() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.timers {
		t.Stop()
	}
	s.shutdown = true
}

// logf reports an internal failure to Options.Logf.
func (s *server) logf(format string, args ...any) {
	if s.opts.Logf != nil {
		s.opts.Logf(format, args...)
	}
}
