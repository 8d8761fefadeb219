package main

import "fmt"

func teCommand() *command {
	c := &command{
		name:    "te",
		summary: "print the lowered tensor-expression program",
		usage:   "[flags] FILE",
		help: `Te checks FILE and prints the model lowered to tensor expressions, one
tensor per line in the style of TVM's te.compute: placeholders with their
shapes, then every computed tensor with its axes, reduce axes and body,
each with the source location it came from.`,
	}
	c.run = func(e *env, args []string) int {
		fs := newFlagSet(c)
		var cf compileFlags
		cf.register(fs)
		prog, _, code := e.parseAndCompile(c, fs, &cf, args)
		if prog == nil {
			return code
		}
		fmt.Fprint(e.stdout, prog.String())
		return exitOK
	}
	return c
}
