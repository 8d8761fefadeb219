package lang

import (
	"fmt"
	"strings"

	"tec/lang/diag"
	"tec/lang/syntax"
	"tec/te"
)

// Limits that keep a hostile or mistaken program from running the checker out
// of time or stack: every statement executed, list element built and function
// inlined costs one step, every tensor made tensorCost steps. A tensor is the
// costly step: its body is built, its accesses proved in bounds and its
// selects folded. At 10 steps a tensor, a loop of 70,000 conv2d stages took
// 11 s and 550 MB to be refused (and a fuzz worker, over its time, was taken
// for hung); at 50 it is refused after 18,349, in 2.3 s and 150 MB (on the
// 2-core machine CI runs on; TestTooLargeTensors). The largest example
// (examples/lstm.te) takes 90,000 steps with 3,025 tensors at 10 steps a
// tensor, 211,000 at 50.
const (
	maxSteps     = 2_000_000
	tensorCost   = 50 // steps per tensor made
	maxCallDepth = 200
	maxErrors    = 100 // errors reported before the check stops
)

// checker holds the state of one call to Check.
type checker struct {
	cfg   Config
	diags diag.List
	seen  map[diagKey]bool

	files   map[string]*sourceFile // every file read, by path
	scopes  map[string]*fileScope  // the top-level scope of every file, by path
	prelude *fileScope
	main    *fileScope

	prog  *builder // the program being lowered
	frame *frame   // the innermost function call or model body being executed
	steps int
	// trips counts the loop and comprehension iterations unrolled, and
	// tensors the tensors made: what the message about steps names.
	trips   int
	tensors int
	errors  int // errors reported
	info    *Info

	// scopeNames are the loop iterations and calls being executed, outermost
	// first; scopeSnap is a copy shared by the tensors made in one place.
	scopeNames []string
	scopeSnap  []string
	// known holds the dimensions of the parameters of the call being bound
	// that are known so far, for shape messages.
	known map[[2]int]int
	// bindOnce holds the arguments of scalar function calls to be bound
	// once, each with the name of its tensor (shared.go).
	bindOnce map[te.Expr]bindSite
}

// diagKey identifies a diagnostic for de-duplication: an error inside a
// function or a loop body is found once per call or iteration, but reported
// once.
type diagKey struct {
	file       string
	start, end int
	code, msg  string
}

// abort is panicked with to stop a check that exceeded a limit; Check recovers
// it.
type abort struct{}

// errorAt reports an error in file at span.
func (c *checker) errorAt(file string, span syntax.Span, code, hint, format string, args ...any) *diag.Diagnostic {
	msg := fmt.Sprintf(format, args...)
	k := diagKey{file, span.Start.Offset, span.End.Offset, code, msg}
	if c.seen[k] {
		return &diag.Diagnostic{} // a throwaway, so that callers may add notes
	}
	c.seen[k] = true
	d := &diag.Diagnostic{File: file, Span: span, Severity: diag.Error, Code: code, Message: msg, Hint: hint}
	c.addCallers(d, file)
	c.diags.Add(d)
	c.errors++
	if c.errors == maxErrors {
		// An error in a long loop, found again with other values at every
		// iteration, would otherwise be reported thousands of times.
		c.diags.Add(&diag.Diagnostic{File: file, Span: span, Severity: diag.Error, Code: "range",
			Message: fmt.Sprintf("too many errors: the check stops after %d", maxErrors),
			Hint:    "fix the first errors; an error inside a loop or function is found again at every iteration or call"})
		panic(abort{})
	}
	return d
}

// addCallers notes the call sites of the functions being inlined, so that an
// error inside a function body says which call led to it.
func (c *checker) addCallers(d *diag.Diagnostic, file string) {
	n := 0
	for fr := c.frame; fr != nil && fr.fn != nil && n < 3; fr = fr.parent {
		d.Related = append(d.Related, diag.Related{File: fr.callFile, Span: fr.callSpan,
			Message: fmt.Sprintf("in this call of %s", fr.fn.name())})
		n++
	}
}

// related adds a note to d.
func related(d *diag.Diagnostic, file string, span syntax.Span, format string, args ...any) {
	d.Related = append(d.Related, diag.Related{File: file, Span: span, Message: fmt.Sprintf(format, args...)})
}

// step counts one unit of unrolling work, stopping the check when the program
// is too large to unroll.
func (c *checker) step(file string, span syntax.Span) { c.work(file, span, 1) }

// work counts n units of unrolling work (copying a list element is one).
// When the steps run out, the error says why: loops unrolled, or, where no
// loop was, the size of the program itself.
func (c *checker) work(file string, span syntax.Span, n int) {
	c.steps += n
	if c.steps <= maxSteps {
		return
	}
	if c.trips > 0 {
		c.errorAt(file, span, "range", "reduce the loop trip counts, or check them with smaller -D values",
			"the program is too large: unrolling it takes more than %d steps (%s so far)", maxSteps, plural(c.trips, "loop iteration"))
	} else {
		c.errorAt(file, span, "range", fmt.Sprintf("the limit is on the size of the program, loops or not: each statement, call and list element copied counts 1 step and each tensor made %d (about %d tensors in all); split the model into smaller ones", tensorCost, maxSteps/(tensorCost+1)),
			"the program is too large: checking it takes more than %d steps (%s made so far, with no loop)", maxSteps, plural(c.tensors, "tensor"))
	}
	panic(abort{})
}

// trip counts one iteration of a loop or comprehension being unrolled.
func (c *checker) trip(file string, span syntax.Span) {
	c.trips++
	c.step(file, span)
}

// tripsFit reports whether a loop or comprehension over lo..hi, one step per
// trip at least, fits the unrolling budget left; if it does not, it reports
// the range at once instead of unrolling until the budget runs out (a bound
// of 2^31 would otherwise take seconds, or minutes for an empty body).
func (c *checker) tripsFit(file string, r *syntax.RangeExpr, lo, hi int) bool {
	if hi-lo <= maxSteps-c.steps {
		return true
	}
	c.errorAt(file, r.Span, "range", "reduce the loop trip counts, or check them with smaller -D values",
		"the program is too large: %s runs %d times, and unrolling takes at most %d steps", c.text(file, r.Span), hi-lo, maxSteps)
	return false
}

// text returns the source text of span in file, on one line, for messages.
func (c *checker) text(file string, span syntax.Span) string {
	f := c.files[file]
	if f == nil {
		return "?"
	}
	src := f.src
	a, b := span.Start.Offset, span.End.Offset
	if a < 0 || b > len(src) || a > b {
		return "?"
	}
	return strings.Join(strings.Fields(string(src[a:b])), " ")
}

// teSpan converts a syntax span to the span recorded on tensors.
func teSpan(file string, s syntax.Span) te.Span {
	return te.Span{File: file, Line: s.Start.Line, Col: s.Start.Col, EndLine: s.End.Line, EndCol: s.End.Col}
}

// joinSpans returns the span from the start of a to the end of b.
func joinSpans(a, b syntax.Span) syntax.Span { return syntax.Span{Start: a.Start, End: b.End} }

// plural formats n and a noun, adding "s" unless n is 1.
func plural(n int, noun string) string {
	switch {
	case n == 1:
		return fmt.Sprintf("%d %s", n, noun)
	case noun == "index":
		return fmt.Sprintf("%d indices", n)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
