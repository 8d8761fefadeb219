package main

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"tec/lang/diag"
	"tec/lang/syntax"
)

// The codes of the failures that have no place in a source file, as the
// "code" of their JSON diagnostics. docs/cli.md lists them.
const (
	codeUsage    = "usage"    // a misused command line (status 2)
	codeIO       = "io"       // a file that cannot be read or written
	codeData     = "data"     // inputs, params or expected outputs that do not fit the model
	codeGPU      = "gpu"      // a GPU description (--gpu) that is not valid
	codeBuild    = "build"    // the pipeline or a back end failed
	codeEval     = "eval"     // evaluating the model failed
	codeRace     = "race"     // a data race or uninitialised read found by the simulator
	codeTime     = "time"     // a run estimated to take longer than --max-time
	codeMemory   = "memory"   // a run that needs more memory than --max-memory
	codeGraphviz = "graphviz" // Graphviz's dot is missing or failed
	codeImport   = "import"   // an ONNX model or a checkpoint that tec import cannot translate
	codeInternal = "internal" // a bug in tec
)

// failure is an error of a command that a caller can tell apart by its code,
// optionally located in a file (a GPU description, an archive).
type failure struct {
	code      string
	file      string
	line, col int // 1-based; 0 when unknown
	err       error
}

func (f *failure) Error() string { return f.err.Error() }
func (f *failure) Unwrap() error { return f.err }

// fail wraps err as a failure with code, unless it already is one or is
// nil.
func fail(code string, err error) error {
	var f *failure
	if err == nil || errors.As(err, &f) {
		return err
	}
	return &failure{code: code, err: err}
}

// hintSep separates a message from its hint in the text of an error, as
// tec prints it: "message\n  hint: advice".
const hintSep = "\n  hint: "

// splitHint splits the text of an error into its message and hint.
func splitHint(s string) (msg, hint string) {
	msg, hint, _ = strings.Cut(s, hintSep)
	return msg, hint
}

// jsonRequested reports whether the command line asks for JSON output, by
// the rules the commands apply once they have parsed their flags (see
// env.setJSON), so that even a command line that does not parse gets its
// error as JSON: --diagnostics json, or --json without --diagnostics text.
func jsonRequested(args []string) bool {
	jsonFlag, diagnostics := false, ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch name {
		case "json":
			b, err := strconv.ParseBool(value)
			jsonFlag = !hasValue || err == nil && b
		case "diagnostics":
			if !hasValue && i+1 < len(args) {
				i++
				value = args[i]
			}
			diagnostics = value
		}
	}
	return diagnostics == "json" || jsonFlag && diagnostics != "text"
}

// setJSON sets whether the command prints its failures as JSON, from its
// parsed flags: --diagnostics json, or --json (jsonFlag) unless
// --diagnostics text was given explicitly.
func (e *env) setJSON(diagnostics string, explicit, jsonFlag bool) {
	e.json = diagnostics == "json" || jsonFlag && !(explicit && diagnostics == "text")
}

// failf reports err, a failure of command c, and returns status: with JSON
// output as one JSON diagnostic per line on standard output (the warnings
// collected so far first), otherwise as text on standard error.
func (e *env) failf(c *command, status int, err error) int {
	var f *failure
	if !errors.As(err, &f) {
		f = &failure{err: err}
	}
	if !e.json {
		name := "tec"
		if c != nil {
			name += " " + c.name
		}
		fmt.Fprintf(e.stderr, "%s: %v\n", name, err)
		return status
	}
	msg, hint := splitHint(err.Error())
	d := &diag.Diagnostic{File: f.file, Severity: diag.Error, Code: f.code, Message: msg, Hint: hint}
	if f.line > 0 {
		d.Span.Start = syntax.Pos{Line: f.line, Col: max(f.col, 1)}
		d.Span.End = d.Span.Start
	}
	e.writeJSONDiagnostics(append(e.pending, d))
	e.pending = nil
	return status
}

// warn reports a warning: on standard error at once, or with JSON output
// kept for the command's JSON result (or its failure).
func (e *env) warn(c *command, code, file, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if !e.json {
		fmt.Fprintf(e.stderr, "tec %s: warning: %s\n", c.name, msg)
		return
	}
	msg, hint := splitHint(msg)
	e.pending = append(e.pending, &diag.Diagnostic{File: file, Severity: diag.Warning, Code: code, Message: msg, Hint: hint})
}

// writeJSONDiagnostics writes ds as JSON Lines on standard output.
func (e *env) writeJSONDiagnostics(ds diag.List) {
	if err := ds.WriteJSON(e.stdout, nil); err != nil {
		fmt.Fprintf(e.stderr, "tec: %v\n", err)
	}
}

// jsonWarnings returns the warnings collected for a JSON result, never nil.
func (e *env) jsonWarnings() []diag.JSONDiagnostic {
	out := []diag.JSONDiagnostic{}
	for _, d := range e.pending {
		out = append(out, d.JSON(nil))
	}
	e.pending = nil
	return out
}

// gpuErrorPlace matches the errors of gpu.Lookup that point into a
// description file: "FILE.json: LINE:COL: message".
var gpuErrorPlace = regexp.MustCompile(`^(.*\.json): (\d+):(\d+): `)

// gpuFailure wraps an error of --gpu as a failure, located in the
// description file when the error says where.
func gpuFailure(err error) error {
	f := &failure{code: codeGPU, err: fmt.Errorf("--gpu: %w", err)}
	if m := gpuErrorPlace.FindStringSubmatch(err.Error()); m != nil {
		f.file = m[1]
		f.line, _ = strconv.Atoi(m[2])
		f.col, _ = strconv.Atoi(m[3])
	} else if file, _, ok := strings.Cut(err.Error(), ": "); ok && strings.HasSuffix(file, ".json") {
		f.file = file
	}
	return f
}
