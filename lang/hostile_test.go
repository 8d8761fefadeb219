package lang_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"

	"tec/gpu"
	"tec/internal/numeric"
	"tec/lang"
	"tec/pipeline"
	"tec/te"
)

// hostileTokens splits a program into words, numbers and single
// punctuation characters (** stays one), the units the mutations of
// TestHostileNewSyntax delete and replace.
var hostileTokens = regexp.MustCompile(`\*\*|[A-Za-z_][A-Za-z0-9_]*|[0-9]+(\.[0-9]+)?|[^\sA-Za-z0-9_]`)

// garbage are the replacements of a token: brackets and operators out of
// place, numbers out of range, keywords and names of the new syntax where
// they do not belong.
var garbage = []string{"]", "[", "(", ")", ",", "=", "-1", "0", "99999999999999999999", "2147483648", "1e400",
	"**", "update", "pos", "inf", "-inf", "i32", "f16", "argmax", "sin", "for", "param", "..", "#", "\"", "\x00", "é", ""}

// mutants returns the hostile variants of src: every prefix ending at a
// token's end (a truncated file), src without each token, and src with each
// token replaced by two of garbage (chosen by the token's position, so
// that each replacement is tried at many sites).
func mutants(src string) []string {
	locs := hostileTokens.FindAllStringIndex(src, -1)
	var out []string
	for i, loc := range locs {
		out = append(out, src[:loc[1]])
		out = append(out, src[:loc[0]]+src[loc[1]:])
		for k := range 2 {
			g := garbage[(i*2+k)%len(garbage)]
			out = append(out, src[:loc[0]]+g+src[loc[1]:])
		}
	}
	return out
}

// TestHostileNewSyntax feeds truncated and garbled variants of programs
// that use the newest syntax (update, run-time positions in conditions,
// arithmetic and indexes, **, sin and cos, argmax, gathers, params
// declared in a loop; testdata/hostile, which FuzzCheck also takes as
// seeds) to the checker, and the variants that check to the reference
// evaluator and to pipeline.Build at -O0 and -O4: each gives a program or
// errors with a position and a message, never a panic or an internal
// diagnostic.
func TestHostileNewSyntax(t *testing.T) {
	files, err := filepath.Glob("testdata/hostile/*.te")
	if err != nil || len(files) == 0 {
		t.Fatalf("no seeds in testdata/hostile: %v", err)
	}
	a100, _ := gpu.Builtin("a100")
	cfg := lang.Config{ReadFile: func(string) ([]byte, error) { return nil, fs.ErrNotExist }}
	checked, built := 0, map[string]bool{}
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, m := range mutants(string(src)) {
			if seen[m] {
				continue
			}
			seen[m] = true
			p, ds := lang.Check("hostile.te", []byte(m), cfg)
			for _, d := range ds {
				// a diagnostic of the whole file (no model) has no position
				if d.Code == "internal" || d.Message == "" || (d.File == "hostile.te" && d.Span.Start.Offset > len(m)) || (d.Span.Start.Line < 1 && d.Code != "model") {
					t.Fatalf("%s: bad diagnostic %+v for\n%s", file, d, m)
				}
			}
			if (p != nil) == ds.HasErrors() {
				t.Fatalf("%s: program %v with errors %v for\n%s", file, p != nil, ds.HasErrors(), m)
			}
			if p == nil {
				continue
			}
			checked++
			if text := p.String(); built[text] {
				continue // a variant that checks to a program already built (a comment garbled, say)
			} else {
				built[text] = true
			}
			if msg := evaluates(p); msg != "" {
				t.Fatalf("%s: the reference of\n%s\n%s", file, m, msg)
			}
			for _, level := range []int{0, pipeline.MaxLevel} {
				if msg := builds(p, pipeline.Options{Level: level, GPU: a100}); msg != "" {
					t.Fatalf("%s: -O%d build of\n%s\n%s", file, level, m, msg)
				}
			}
		}
	}
	t.Logf("%d variants checked without error, %d programs evaluated and built at -O0 and -O%d", checked, len(built), pipeline.MaxLevel)
	if checked == 0 {
		t.Error("no variant checks: the mutations never leave a valid program")
	}
}

// maxEvalElements bounds the elements of a variant the test evaluates: a
// replaced number can make a valid program of a billion elements.
const maxEvalElements = 1 << 16

// evaluates runs the reference on seeded feeds and returns a panic, or ""
// (an error, such as a gather index outside its table, is an answer).
func evaluates(p *te.Program) (msg string) {
	n := 0
	for _, t := range p.Tensors {
		n += t.NumElements()
	}
	if n > maxEvalElements {
		return ""
	}
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprintf("panic: %v\n%s", r, debug.Stack())
		}
	}()
	_, err := te.Evaluate(p, numeric.SeededFeeds(p, 1), te.EvalOptions{Workers: 1})
	if err != nil && strings.TrimSpace(err.Error()) == "" {
		return "an empty error"
	}
	return ""
}

// builds compiles p and returns a panic or an empty error message, or "".
func builds(p *te.Program, opts pipeline.Options) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprintf("panic: %v\n%s", r, debug.Stack())
		}
	}()
	if _, err := pipeline.Build(p, opts); err != nil && strings.TrimSpace(err.Error()) == "" {
		return "an empty error"
	}
	return ""
}
