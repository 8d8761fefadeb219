package main

import (
	"bytes"
	"fmt"

	"tec/internal/safefile"
	"tec/lang"
	"tec/lang/diag"
	"tec/lang/syntax"
)

func fmtCommand() *command {
	c := &command{
		name:    "fmt",
		summary: "format .te files",
		usage:   "[-w | -l] FILE...",
		help: `Fmt prints each FILE in the canonical layout: two-space indentation, one
statement per line, spaces around binary operators, trailing comments of
consecutive lines aligned, comments kept where they were. Like gofmt it
keeps the line breaks the author put inside an expression (after a comma,
an opening bracket or an operator) and never wraps long lines.
Formatting is idempotent. With -w it rewrites the files in
place; with -l it lists the files whose layout differs and changes
nothing. A file with a syntax error is reported and left alone.`,
	}
	c.run = func(e *env, args []string) int {
		fs := newFlagSet(c)
		write := fs.Bool("w", false, "write the result to the file instead of standard output")
		list := fs.Bool("l", false, "list files whose formatting differs")
		diagFormat := fs.String("diagnostics", "text", "how to print errors: text or json")
		pos, code, ok := e.parse(c, fs, args)
		if !ok {
			return code
		}
		e.setJSON(*diagFormat, isSet(fs, "diagnostics"), false)
		if len(pos) == 0 {
			return e.usageError(c, "no FILE given")
		}
		if *write && *list {
			return e.usageError(c, "-w and -l cannot be used together")
		}
		cf := compileFlags{diagnostics: *diagFormat, color: "auto"}
		if err := cf.validate(); err != nil {
			return e.usageError(c, "%v", err)
		}
		status := exitOK
		for _, file := range pos {
			src, err := readSource(file)
			if err != nil {
				status = e.failf(c, exitUser, &failure{code: codeIO, file: file, err: err})
				continue
			}
			f, err := syntax.Parse(file, src)
			if err != nil {
				e.report(&cf, diag.List{diag.FromSyntax(err)}, lang.SourceFunc(file, src, readSource))
				status = exitUser
				continue
			}
			out, err := syntax.Format(f, src)
			if err != nil {
				status = e.failf(c, exitUser, &failure{code: codeInternal, file: file, err: fmt.Errorf("%s: %w", file, err)})
				continue
			}
			switch {
			case *list:
				if !bytes.Equal(src, out) {
					fmt.Fprintln(e.stdout, file)
				}
			case *write:
				if bytes.Equal(src, out) {
					continue
				}
				if err := writeFilePreservingMode(file, out); err != nil {
					status = e.failf(c, exitUser, &failure{code: codeIO, file: file, err: err})
				}
			default:
				e.stdout.Write(out)
			}
		}
		return status
	}
	return c
}

// writeFilePreservingMode replaces file's contents, keeping its permissions;
// on error the file is as it was (see package safefile).
func writeFilePreservingMode(file string, data []byte) error {
	if err := safefile.WriteFile(file, data, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", file, err)
	}
	return nil
}
