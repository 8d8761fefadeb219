package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"tec/internal/safefile"
	"tec/lang"
	"tec/lang/diag"
	"tec/te"
)

// defineFlag collects repeated -D NAME=VALUE flags.
type defineFlag map[string]string

func (d defineFlag) String() string {
	keys := make([]string, 0, len(d))
	for k := range d {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + d[k]
	}
	return strings.Join(parts, " ")
}

func (d defineFlag) Set(s string) error {
	name, value, ok := strings.Cut(s, "=")
	if !ok || name == "" || value == "" {
		return fmt.Errorf("want NAME=VALUE, got %q", s)
	}
	if prev, dup := d[name]; dup {
		return fmt.Errorf("%s is defined twice (%s and %s)", name, prev, value)
	}
	d[name] = value
	return nil
}

// compileFlags are the flags of every command that compiles a model.
type compileFlags struct {
	defines     defineFlag
	model       string
	diagnostics string
	color       string
}

func (c *compileFlags) register(fs *flag.FlagSet) {
	c.defines = defineFlag{}
	fs.Var(c.defines, "D", "override a constant: -D NAME=VALUE (repeatable)")
	fs.StringVar(&c.model, "model", "", "the model to use when the file has several")
	fs.StringVar(&c.diagnostics, "diagnostics", "text", "how to print errors: text or json (one JSON object per line)")
	fs.StringVar(&c.color, "color", "auto", "color diagnostics: auto, always or never")
}

func (c *compileFlags) validate() error {
	if c.diagnostics != "text" && c.diagnostics != "json" {
		return fmt.Errorf("-diagnostics must be text or json, not %q", c.diagnostics)
	}
	if c.color != "auto" && c.color != "always" && c.color != "never" {
		return fmt.Errorf("-color must be auto, always or never, not %q", c.color)
	}
	return nil
}

// newFlagSet returns a flag set for the command whose help, on -h, prints the
// command's usage, help text and flags.
func newFlagSet(c *command) *flag.FlagSet {
	fs := flag.NewFlagSet("tec "+c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// refusedFlags are, by command, the flags that a command gets with a group
// of flags it shares with others (compileFlags) but refuses, and why: its
// help leaves them out, and parse refuses them with the reason.
var refusedFlags = map[string]map[string]string{
	"generate": {"model": "--model picks one model; tec generate runs two" + hintSep + "name them with --prefill NAME and --decode NAME"},
}

// printCommandHelp prints c's usage, help text and the flags of fs that c
// accepts.
func printCommandHelp(w io.Writer, c *command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: tec %s %s\n\n%s\n\nFlags:\n", c.name, c.usage, indent(c.help))
	accepted := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	fs.VisitAll(func(f *flag.Flag) {
		if _, refused := refusedFlags[c.name][f.Name]; !refused {
			accepted.Var(f.Value, f.Name, f.Usage)
			accepted.Lookup(f.Name).DefValue = f.DefValue
		}
	})
	accepted.SetOutput(w)
	accepted.PrintDefaults()
}

// parseArgs parses flags that may come before, between or after positional
// arguments ("tec run model.te --device ref"), and returns the positional
// ones. "--" ends the flags. It returns flag.ErrHelp for -h.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if len(args) > 0 && len(rest) < len(args) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// parse parses a command's arguments, handling -h and usage errors. It returns
// the positional arguments and ok; when ok is false the command must return
// the status code.
func (e *env) parse(c *command, fs *flag.FlagSet, args []string) (pos []string, code int, ok bool) {
	pos, err := parseArgs(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		printCommandHelp(e.stdout, c, fs)
		return nil, exitOK, false
	}
	if err == nil {
		for name, why := range refusedFlags[c.name] {
			if isSet(fs, name) {
				return nil, e.usageError(c, "%s", why), false
			}
		}
		if name := emptyFileFlag(fs); name != "" {
			return nil, e.usageError(c, "%s '': an empty file name"+hintSep+"give %s a name, or leave it out (an unset shell variable?)", name, name), false
		}
	}
	if err != nil {
		if e.json {
			return nil, e.failf(c, exitUsage, fail(codeUsage, fmt.Errorf("%v%srun 'tec help %s' for usage", err, hintSep, c.name))), false
		}
		fmt.Fprintf(e.stderr, "tec %s: %v\nRun 'tec help %s' for usage.\n", c.name, err, c.name)
		return nil, exitUsage, false
	}
	return pos, exitOK, true
}

// fileFlags are the flags, of any command, whose value names a file or a
// directory to read or write. Given an empty name, each would act as if
// it were left out (tec run wrote no outputs for an empty --outputs, and
// exited 0): an empty name is a usage error.
var fileFlags = []string{"o", "outputs", "save-feeds", "report", "cpuprofile", "inputs", "params", "expected", "prompt", "log"}

// emptyFileFlag returns the first of fileFlags given an empty name on the
// command line, as it is spelt in messages ("-o", "--outputs"), or "".
func emptyFileFlag(fs *flag.FlagSet) string {
	for _, name := range fileFlags {
		if f := fs.Lookup(name); f != nil && isSet(fs, name) && f.Value.String() == "" {
			if len(name) == 1 {
				return "-" + name
			}
			return "--" + name
		}
	}
	return ""
}

// isSet reports whether the flag name was given on the command line.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// usageError reports a misused command line.
func (e *env) usageError(c *command, format string, args ...any) int {
	if e.json {
		msg := fmt.Sprintf(format, args...)
		if !strings.Contains(msg, hintSep) {
			msg += fmt.Sprintf("%susage: tec %s %s; run 'tec help %s' for details", hintSep, c.name, c.usage, c.name)
		}
		return e.failf(c, exitUsage, fail(codeUsage, errors.New(msg)))
	}
	fmt.Fprintf(e.stderr, "tec %s: %s\nusage: tec %s %s\nRun 'tec help %s' for details.\n",
		c.name, fmt.Sprintf(format, args...), c.name, c.usage, c.name)
	return exitUsage
}

// parseAndCompile parses the arguments of a command that takes compile flags
// and one FILE, and compiles the file. It returns the program and the file's
// name, or a nil program and the exit status.
func (e *env) parseAndCompile(c *command, fs *flag.FlagSet, cf *compileFlags, args []string) (prog *te.Program, file string, code int) {
	pos, code, ok := e.parse(c, fs, args)
	if !ok {
		return nil, "", code
	}
	e.setJSON(cf.diagnostics, isSet(fs, "diagnostics"), false)
	if err := cf.validate(); err != nil {
		return nil, "", e.usageError(c, "%v", err)
	}
	if len(pos) != 1 {
		return nil, "", e.usageError(c, "want one FILE, got %d arguments", len(pos))
	}
	prog, code = e.compile(cf, pos[0])
	return prog, pos[0], code
}

// maxSourceBytes bounds a source file (and each file it imports): 16 MiB,
// some fifteen times the largest program we generate (20,000 statements),
// so that "tec check /dev/zero" is an error instead of a read until memory
// runs out. docs/cli.md documents it. It is lang's bound for imports.
const maxSourceBytes = lang.MaxSourceBytes

// readSource reads the file named on the command line, of at most
// maxSourceBytes (it may be a pipe: tec check /dev/stdin).
func readSource(file string) ([]byte, error) {
	return safefile.ReadFile(file, maxSourceBytes)
}

// readImport reads a file that the program imports: a regular file of at
// most maxSourceBytes, opened without blocking (lang.ReadSource), so that
// an import of a pipe or a device is refused, not waited on.
func readImport(file string) ([]byte, error) {
	return lang.ReadSource(file, maxSourceBytes)
}

// compile reads and checks file, prints its diagnostics, and returns the
// lowered program, or nil and the exit status.
func (e *env) compile(cf *compileFlags, file string) (*te.Program, int) {
	src, err := readSource(file)
	if err != nil {
		return nil, e.failf(nil, exitUser, &failure{code: codeIO, file: file, err: err})
	}
	return e.compileSource(cf, file, src)
}

// compileSource is compile of file's source src, read already or made
// (a checkpoint's program).
func (e *env) compileSource(cf *compileFlags, file string, src []byte) (*te.Program, int) {
	e.source.file, e.source.src = file, src
	prog, diags := lang.Check(file, src, lang.Config{Defines: cf.defines, Model: cf.model, ReadFile: readImport})
	if code := e.report(cf, diags, lang.SourceFunc(file, src, readSource)); code != exitOK {
		return nil, code
	}
	return prog, exitOK
}

// report prints diagnostics, with source lines from sources, and returns
// exitUser if any is an error.
func (e *env) report(cf *compileFlags, diags diag.List, sources func(file string) []byte) int {
	if len(diags) == 0 {
		return exitOK
	}
	diags.Sort()
	var err error
	if e.json {
		err = diags.WriteJSON(e.stdout, sources)
	} else {
		err = diags.Render(e.stderr, sources, e.useColor(cf.color))
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "tec: writing diagnostics: %v\n", err)
	}
	if diags.HasErrors() {
		return exitUser
	}
	return exitOK
}

func (e *env) useColor(mode string) bool {
	switch mode {
	case "always":
		return true
	case "never":
		return false
	}
	if e.getenv("NO_COLOR") != "" || e.getenv("TERM") == "dumb" {
		return false
	}
	return e.terminal(e.stderr)
}
