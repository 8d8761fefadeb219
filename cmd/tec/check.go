package main

import (
	"fmt"

	"tec/lang"
	"tec/lang/syntax"
	"tec/te"
)

func checkCommand() *command {
	c := &command{
		name:    "check",
		summary: "check a .te file and report every error",
		usage:   "[flags] FILE",
		help: `Check parses and checks FILE and lowers its models: names, shapes,
dtypes, affine indexes and bounds. Without --model it checks every model
of the file; with it, that one. It reports every independent error it
finds, each with file:line:col, the source line, a caret and a hint. On
success it prints a one-line summary of each lowered program (nothing
with -q).`,
	}
	c.run = func(e *env, args []string) int {
		fs := newFlagSet(c)
		var cf compileFlags
		cf.register(fs)
		quiet := fs.Bool("q", false, "print nothing on success")
		pos, code, ok := e.parse(c, fs, args)
		if !ok {
			return code
		}
		e.setJSON(cf.diagnostics, isSet(fs, "diagnostics"), false)
		if err := cf.validate(); err != nil {
			return e.usageError(c, "%v", err)
		}
		if len(pos) != 1 {
			return e.usageError(c, "want one FILE, got %d arguments", len(pos))
		}
		file := pos[0]
		progs, code := e.checkModels(&cf, file)
		if progs == nil {
			return code
		}
		if !*quiet && !e.json {
			for _, prog := range progs {
				printCheckSummary(e, file, prog)
			}
		}
		return exitOK
	}
	return c
}

// checkModels checks file and lowers the model --model names or, without
// it, every model of the file. It prints the diagnostics and returns the
// programs, or nil and the exit status.
func (e *env) checkModels(cf *compileFlags, file string) ([]*te.Program, int) {
	src, err := readSource(file)
	if err != nil {
		return nil, e.failf(nil, exitUser, &failure{code: codeIO, file: file, err: err})
	}
	if cf.model != "" || countModels(file, src) <= 1 {
		prog, code := e.compile(cf, file)
		if prog == nil {
			return nil, code
		}
		return []*te.Program{prog}, exitOK
	}
	var info lang.Info
	_, diags := lang.Check(file, src, lang.Config{Defines: cf.defines, AllModels: true, Info: &info, ReadFile: readImport})
	if code := e.report(cf, diags, lang.SourceFunc(file, src, readSource)); code != exitOK {
		return nil, code
	}
	return info.Programs, exitOK
}

// countModels returns the number of models declared in src, or 0 when it
// does not parse (the check then reports why).
func countModels(file string, src []byte) int {
	f, err := syntax.Parse(file, src)
	if err != nil {
		return 0
	}
	n := 0
	for _, d := range f.Decls {
		if _, ok := d.(*syntax.ModelDecl); ok {
			n++
		}
	}
	return n
}

func printCheckSummary(e *env, file string, prog *te.Program) {
	inputs, params, computes := 0, 0, 0
	for _, t := range prog.Tensors {
		switch t.Kind {
		case te.Input:
			inputs++
		case te.Param:
			params++
		default:
			computes++
		}
	}
	fmt.Fprintf(e.stdout, "%s: model %s: %d inputs, %d params, %d computed tensors, %d outputs\n",
		file, prog.Name, inputs, params, computes, len(prog.Outputs))
}
