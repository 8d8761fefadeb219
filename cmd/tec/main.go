// Command tec compiles deep-learning models written as tensor expressions.
//
// Usage:
//
//	tec <command> [flags] FILE
//
// The commands are:
//
//	build    compile a model to CUDA C++, LLVM IR and PTX
//	check    check a .te file and report every error
//	doc      show the standard library and the builtins
//	explain  report the global analysis of a model
//	fmt      format .te files
//	generate greedy LLM generation with a file's prefill and decode models
//	graph    draw the tensor-dependency graph of a model
//	import   translate an ONNX model into a .te program and its weights
//	lsp      run the language server for editors (LSP over stdio)
//	run      evaluate a model on inputs and params
//	te       print the lowered tensor-expression program
//	help     show help for a command
//
// Run "tec help <command>" for a command's flags. Exit status is 0 on
// success, 1 when the input has errors or outputs differ from the expected
// ones, and 2 for a misused command line.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"tec/lang/diag"
)

// Exit statuses.
const (
	exitOK    = 0
	exitUser  = 1 // errors in the user's model or data
	exitUsage = 2 // a misused command line
)

// env is what a command may touch of the outside world, so that tests can run
// commands in-process.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string

	// json says that the command prints its failures as JSON diagnostics
	// on standard output (--diagnostics json, or --json); pending holds
	// the diagnostics kept for its JSON result or failure meanwhile.
	json    bool
	pending diag.List

	// isTerminal reports whether w is a terminal; nil means the real test.
	// longRun is the estimated time above which tec run states its
	// estimate and shows progress; 0 means defaultLongRun. Tests set both.
	isTerminal func(w io.Writer) bool
	longRun    time.Duration

	// source is the file that compile read last, and its text: where a
	// refusal looks for the constants -D could set.
	source struct {
		file string
		src  []byte
	}

	// execTecCUDA runs tec-cuda on a job directory (--device cuda) and
	// returns what it printed; nil means executing it. Tests set it.
	execTecCUDA func(ctx context.Context, runner, dir string) ([]byte, error)
}

// command is one subcommand of tec.
type command struct {
	name    string
	summary string
	usage   string // the argument synopsis, e.g. "[flags] FILE"
	help    string // paragraphs shown by "tec help NAME"
	run     func(e *env, args []string) int
}

func commands() []*command {
	return []*command{checkCommand(), buildCommand(), fmtCommand(), teCommand(), runCommand(), generateCommand(), explainCommand(), graphCommand(), lspCommand(), docCommand(), importCommand()}
}

func main() {
	e := &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}
	os.Exit(e.main(os.Args[1:]))
}

func (e *env) main(args []string) int {
	if len(args) == 0 {
		e.printUsage(e.stderr)
		return exitUsage
	}
	name := args[0]
	e.json = jsonRequested(args[1:])
	switch name {
	case "help", "-h", "-help", "--help":
		return e.help(args[1:])
	case "version", "--version":
		fmt.Fprintln(e.stdout, "tec", version())
		return exitOK
	}
	for _, c := range commands() {
		if c.name == name {
			return c.run(e, args[1:])
		}
	}
	hint := "run 'tec help' for the list of commands"
	if s := suggestCommand(name); s != "" {
		hint = fmt.Sprintf("did you mean 'tec %s'?", s)
	}
	return e.failf(nil, exitUsage, fail(codeUsage, fmt.Errorf("unknown command %q%s%s", name, hintSep, hint)))
}

func (e *env) help(args []string) int {
	if len(args) == 0 {
		e.printUsage(e.stdout)
		return exitOK
	}
	for _, c := range commands() {
		if c.name == args[0] {
			c.run(e, []string{"-h"})
			return exitOK
		}
	}
	return e.failf(&command{name: "help"}, exitUsage, fail(codeUsage, fmt.Errorf("unknown command %q", args[0])))
}

func (e *env) printUsage(w io.Writer) {
	fmt.Fprint(w, "tec compiles deep-learning models written as tensor expressions.\n\nUsage:\n\n\ttec <command> [flags] FILE\n\nCommands:\n\n")
	cs := commands()
	sort.Slice(cs, func(i, j int) bool { return cs[i].name < cs[j].name })
	for _, c := range cs {
		fmt.Fprintf(w, "\t%-8s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, "\nRun 'tec help <command>' for a command's flags.\nThe language is described in docs/language.md.\n")
}

func suggestCommand(name string) string {
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	return diag.Suggest(name, names)
}

func version() string { return "0.1.0-dev" }

// indent indents every line of s by two spaces, for help texts.
func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}
