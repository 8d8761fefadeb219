package main

import (
	"fmt"

	"tec/te"
)

func checkCommand() *command {
	c := &command{
		name:    "check",
		summary: "check a .te file and report every error",
		usage:   "[flags] FILE",
		help: `Check parses and checks FILE and lowers its model: names, shapes, dtypes,
affine indexes and bounds. It reports every independent error it finds,
each with file:line:col, the source line, a caret and a hint. On success
it prints a one-line summary of the lowered program (nothing with -q).`,
	}
	c.run = func(e *env, args []string) int {
		fs := newFlagSet(c)
		var cf compileFlags
		cf.register(fs)
		quiet := fs.Bool("q", false, "print nothing on success")
		prog, file, code := e.parseAndCompile(c, fs, &cf, args)
		if prog == nil {
			return code
		}
		if !*quiet && cf.diagnostics == "text" {
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
		return exitOK
	}
	return c
}
