package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"tec/lang/lsp"
)

func lspCommand() *command {
	c := &command{
		name:    "lsp",
		summary: "run the language server for editors (LSP over stdio)",
		usage:   "[flags]",
		help: `Lsp runs a Language Server Protocol server for .te files on standard input
and output, for editors: diagnostics as you type, hover (types, shapes,
ranges, dependence and intensity), go to definition, references, rename,
completion, formatting, document symbols, semantic tokens and inlay hints.
Editors start it themselves; see docs/editors.md. The workspace setting
tec.defines ({"N": "16"}) overrides constants as -D does.`,
	}
	c.run = func(e *env, args []string) int {
		fs := newFlagSet(c)
		debounce := fs.Duration("debounce", lsp.DefaultDebounce, "how long to wait after an edit before checking the file")
		logFile := fs.String("log", "", "append the server's internal errors to this file")
		pos, code, ok := e.parse(c, fs, args)
		if !ok {
			return code
		}
		if len(pos) > 0 {
			return e.usageError(c, "want no arguments, got %d", len(pos))
		}
		if *debounce < 0 {
			return e.usageError(c, "-debounce must not be negative")
		}
		opts := lsp.Options{Debounce: max(*debounce, time.Millisecond)}
		if *logFile != "" {
			f, err := os.OpenFile(*logFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
			if err != nil {
				fmt.Fprintf(e.stderr, "tec lsp: %v\n", err)
				return exitUser
			}
			defer f.Close()
			opts.Logf = func(format string, args ...any) {
				fmt.Fprintf(f, "%s "+format+"\n", append([]any{time.Now().Format(time.RFC3339)}, args...)...)
			}
		}
		if e.stdinTerminal() {
			// Someone typed tec lsp: say what it waits for.
			fmt.Fprintln(e.stderr, "tec lsp: a language server for editors, which start it and speak LSP on its standard input and output (see docs/editors.md); Ctrl-D quits")
		}
		err := lsp.Serve(context.Background(), stdio{e.stdin, e.stdout}, opts)
		switch {
		case err == nil:
			return exitOK
		case errors.Is(err, lsp.ErrExitWithoutShutdown):
			return exitUser
		}
		fmt.Fprintf(e.stderr, "tec lsp: %v\n", err)
		return exitUser
	}
	return c
}

// stdio joins standard input and output into the stream the server speaks
// over.
type stdio struct {
	io.Reader
	io.Writer
}

// Close closes nothing: the process's standard streams stay open until it
// exits.
func (stdio) Close() error { return nil }

// stdinTerminal reports whether standard input is a terminal, as terminal
// tells for an output (e.isTerminal, where set, is asked about stdin when
// stdin can be written too, as a terminal's file can).
func (e *env) stdinTerminal() bool {
	if w, ok := e.stdin.(io.Writer); ok {
		return e.terminal(w)
	}
	return false
}
