// Package lsp is a Language Server Protocol server for .te files: the
// engine behind `tec lsp`, which editors start and talk to over stdio.
//
// The server keeps the text of every open document, checks it with
// lang.Check (all models, every error) shortly after each change and
// publishes the diagnostics, and answers requests from the facts that the
// checker records in a lang.Info: hover, go to definition, references,
// rename, completion, document symbols, semantic tokens and inlay hints.
// Formatting is syntax.Format, the code of `tec fmt`. Hover facts about a
// tensor's dependence and intensity come from package analysis.
//
// Positions on the wire are 0-based lines and UTF-16 code units, as the
// protocol requires; mapper converts them to byte offsets. Every request
// runs in its own goroutine with a context that $/cancelRequest cancels, and
// recovers from panics, so that no input and no sequence of edits can take
// the server down. Files the editor has not opened (imports, a request about
// a file on disk) are read with lang.ReadSource: regular files of at most 16
// MiB, read in a request's or a check's goroutine, never on the connection's
// reader, so that an import of /dev/stdin (the server's own protocol stream)
// or of a named pipe is an error at the import, not a wedge.
//
// A well-framed message that is not valid JSON-RPC 2.0 is answered with
// -32700 (parse error) or -32600 (invalid request) and the server carries
// on; so does a broken frame (a header without a valid Content-Length, a
// line that is not a header, garbage between messages), answered with
// -32700, after which the server resumes at the next Content-Length header
// (see guardedStream). Only the stream's end ends the connection.
package lsp
