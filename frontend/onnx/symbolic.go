package onnx

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"tec/frontend/onnx/onnxpb"
	"tec/lang/syntax"
	"tec/te"
)

// Symbolic dimensions. An export with dynamic axes names the sizes it
// leaves free ("batch"); the importer works with numbers, so it imports
// the graph at several sizes of those dimensions and compares the
// programs it writes. Where they differ only in their number literals,
// and every literal that differs is a polynomial of degree one in each
// dimension (batch, 75·batch, batch·seq·64 + 1), which 2^k imports at
// sizes 2 and 3 of k dimensions determine and one more at other sizes
// checks, the program declares a const for each dimension and writes
// those literals as expressions of the consts: `tec build -D batch=8`
// then builds the model at batch 8, reshape targets computed from the
// input's shape included. Where they differ otherwise (an operator that
// the size changes the structure of, a folded constant that holds the
// size as data, a param whose values depend on it, more than
// maxSymbolicDims dimensions), the program keeps the sizes it was
// imported at, with a warning saying why.

// maxSymbolicDims bounds the dimensions made consts: the imports needed
// double with each.
const maxSymbolicDims = 3

// generalize returns m's import with the symbolic dimensions dims as
// consts of its program, at the sizes base was imported at, where the
// programs imported at other sizes allow (see above), or base itself with
// a warning.
func generalize(m *onnxpb.ModelProto, opts Options, base *Result, dims []symbolicDim) *Result {
	// A dimension that a param's values depend on stays fixed, when the
	// corner that changes it alone shows it (the first corners change one
	// dimension each); the others may still be consts.
	vary := dims
	var fixedWhy []string
	var prog []byte
	var params map[string]*te.Array
	var err error
	for {
		prog, params, err = symbolicProgram(m, opts, dims, vary)
		var pe *paramError
		if !errors.As(err, &pe) || len(pe.dims) != 1 || len(vary) == 1 {
			break
		}
		fixedWhy = append(fixedWhy, err.Error())
		vary = slices.DeleteFunc(slices.Clone(vary), func(d symbolicDim) bool { return d.name == pe.dims[0].name })
	}
	res := *base
	res.Warnings = nil
	for _, w := range base.Warnings {
		if !strings.Contains(w, "has no static size") {
			res.Warnings = append(res.Warnings, w)
		}
	}
	if err != nil {
		vary, fixedWhy = nil, append(fixedWhy, err.Error())
	}
	var fixed []string
	for _, d := range dims {
		if !slices.Contains(vary, d) {
			fixed = append(fixed, fmt.Sprintf("%s = %d", d.name, d.size))
		}
	}
	var b strings.Builder
	if len(fixed) > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("the program's sizes are fixed at %s: %s (change them with tec import --dim NAME=SIZE)", strings.Join(fixed, ", "), strings.Join(fixedWhy, "; ")))
		fmt.Fprintf(&b, "# Fixed at the sizes imported (tec import --dim NAME=SIZE), the model's symbolic\n# dimensions %s: %s.\n", strings.Join(fixed, ", "), strings.Join(fixedWhy, "; "))
	}
	if len(vary) == 0 {
		res.Program = withHeader(base.Program, b.String())
		return &res
	}
	b.WriteString("# The model's symbolic dimensions (the export's dynamic axes) below are consts:\n# choose their sizes with -D NAME=SIZE (tec build, tec run).\n")
	for _, d := range vary {
		fmt.Fprintf(&b, "const %s = %d", d.ident, d.size)
		if d.ident != d.name {
			fmt.Fprintf(&b, " # %q", d.name)
		}
		b.WriteString("\n")
		if _, ok := opts.Dims[d.name]; !ok {
			res.Warnings = append(res.Warnings, fmt.Sprintf("symbolic dimension %q has no size given; the program's const %s is %d (choose another with -D %s=SIZE when building or running, or tec import --dim %s=SIZE)", d.name, d.ident, d.size, d.ident, d.name))
		}
	}
	res.Program, res.Params = withHeader(prog, b.String()), params
	return &res
}

// withHeader returns program with text inserted after its header comment
// (the lines before its first blank line), followed by a blank line.
func withHeader(program []byte, text string) []byte {
	s := string(program)
	i := strings.Index(s, "\n\n")
	if i < 0 {
		return []byte(text + "\n" + s)
	}
	return []byte(s[:i+1] + text + s[i+1:])
}

// paramError is symbolicProgram's error for a param, a value the import
// folds, whose values depend on the sizes of some symbolic dimensions.
type paramError struct {
	param string
	dims  []symbolicDim
}

func (e *paramError) Error() string {
	var names []string
	for _, d := range e.dims {
		names = append(names, d.name)
	}
	return fmt.Sprintf("the values of param %s, which the import computes from the inputs' sizes, depend on %s", e.param, strings.Join(names, " and "))
}

// symbolicProgram returns the program and params of m imported with the
// symbolic dimensions dims at size 2 (and the others of all at their
// sizes), with the number literals that follow
// them written as expressions of their consts, or an error saying why
// they cannot be. Size 2 rather than the sizes asked for: at size 1 the
// importer writes a broadcast as the index 0, which holds at that size
// only, and the general program holds at 1 too.
func symbolicProgram(m *onnxpb.ModelProto, opts Options, all, dims []symbolicDim) ([]byte, map[string]*te.Array, error) {
	k := len(dims)
	if k > maxSymbolicDims {
		return nil, nil, fmt.Errorf("the model has %d symbolic dimensions, more than the %d tec makes consts", k, maxSymbolicDims)
	}
	// The corners of {2, 3}^k, corner c having dimension i at 3 where
	// bit i of c is set, then the check at 4, 5, 6.
	var points [][]int
	for c := range 1 << k {
		p := make([]int, k)
		for i := range k {
			p[i] = 2 + c>>i&1
		}
		points = append(points, p)
	}
	check := make([]int, k)
	for i := range k {
		check[i] = 4 + i
	}
	points = append(points, check)
	var frame *Result // corner 0's import, the program rewritten
	var frameLits []syntax.Literal
	var frameSkel []string
	values := make([][]string, len(points)) // each point's literals
	for j, p := range points {
		sizes := map[string]int{}
		for _, d := range all {
			sizes[d.name] = d.size
		}
		for i, d := range dims {
			sizes[d.name] = p[i]
		}
		r, _, err := importAt(m, opts, sizes)
		if err != nil {
			return nil, nil, fmt.Errorf("imported at %s, %w", pointString(dims, p), err)
		}
		lits, err := syntax.Literals(r.Program)
		if err != nil {
			return nil, nil, fmt.Errorf("internal error: the program does not lex: %w", err)
		}
		skel := skeleton(r.Program, lits)
		if j == 0 {
			frame, frameLits, frameSkel = r, lits, skel
		} else {
			if name, ok := paramDiffers(frame.Params, r.Params); ok {
				var which []symbolicDim
				for i, d := range dims {
					if p[i] != points[0][i] {
						which = append(which, d)
					}
				}
				return nil, nil, &paramError{name, which}
			}
			if !slices.Equal(skel, frameSkel) {
				return nil, nil, fmt.Errorf("the program imported at %s differs from the one at %s in more than its sizes", pointString(dims, p), pointString(dims, points[0]))
			}
		}
		for _, l := range lits {
			values[j] = append(values[j], string(r.Program[l.Span.Start.Offset:l.Span.End.Offset]))
		}
	}
	var out strings.Builder
	at := 0
	for n, l := range frameLits {
		same := true
		for j := range points {
			same = same && values[j][n] == values[0][n]
		}
		if same {
			continue
		}
		expr, err := literalExpr(l.Float, values, n, dims, points)
		if err != nil {
			line := l.Span.Start.Line
			return nil, nil, fmt.Errorf("the literal %s of %q: %w", values[0][n], strings.TrimSpace(lineOf(frame.Program, line)), err)
		}
		if needsParens(expr, string(frame.Program[:l.Span.Start.Offset]), string(frame.Program[l.Span.End.Offset:])) {
			expr = "(" + expr + ")"
		}
		out.Write(frame.Program[at:l.Span.Start.Offset])
		out.WriteString(expr)
		at = l.Span.End.Offset
	}
	out.Write(frame.Program[at:])
	return []byte(out.String()), frame.Params, nil
}

// literalExpr returns the expression of the consts of dims that gives the
// literal n of the programs imported at points (values[j][n] at points[j],
// the corners and then the check): a polynomial of degree one in each
// dimension, with integer coefficients.
func literalExpr(float bool, values [][]string, n int, dims []symbolicDim, points [][]int) (string, error) {
	k := len(dims)
	f := make([]int64, len(points))
	for j := range points {
		v, err := literalInt(float, values[j][n])
		if err != nil {
			return "", err
		}
		f[j] = v
	}
	// Corner c of the unit cube in u_i = x_i - 2: the coefficient of
	// the product of u_i over the dimensions in c is the alternating sum
	// of f over the corners below c (Möbius inversion).
	cu := make([]int64, 1<<k)
	for c := range 1 << k {
		for s := c; ; s = (s - 1) & c {
			sign := int64(1)
			if popcount(c^s)%2 == 1 {
				sign = -1
			}
			cu[c] += sign * f[s]
			if s == 0 {
				break
			}
		}
	}
	// In x: the product over c of (x_i - 2) is the sum over r ⊆ c of
	// x_r (-2)^|c - r|.
	cx := make([]int64, 1<<k)
	for c := range 1 << k {
		for r := c; ; r = (r - 1) & c {
			cx[r] += cu[c] * pow(-2, popcount(c^r))
			if r == 0 {
				break
			}
		}
	}
	eval := func(p []int) int64 {
		var v int64
		for r := range 1 << k {
			term := cx[r]
			for i := range k {
				if r>>i&1 == 1 {
					term *= int64(p[i])
				}
			}
			v += term
		}
		return v
	}
	if got := eval(points[len(points)-1]); got != f[len(points)-1] {
		return "", fmt.Errorf("it is %d at %s, not the %d that its values at sizes 2 and 3 predict", f[len(points)-1], pointString(dims, points[len(points)-1]), got)
	}
	expr := polynomial(cx, dims)
	if float {
		return "f32(" + expr + ")", nil
	}
	return expr, nil
}

// needsParens reports whether expr, written in place of a literal between
// the texts before and after it, needs parentheses to keep its value: a
// sum anywhere but between delimiters (brackets, commas, "=", ".."), a
// product after a division or a remainder, whose left operand it would
// otherwise join.
func needsParens(expr, before, after string) bool {
	before, after = strings.TrimRight(before, " "), strings.TrimLeft(after, " ")
	switch {
	case !strings.ContainsAny(expr, " "):
		return false // a name or a number
	case !strings.Contains(expr, " + ") && !strings.Contains(expr, " - ") && !strings.HasPrefix(expr, "-"):
		return strings.HasSuffix(before, "/") || strings.HasSuffix(before, "%")
	}
	open := slices.ContainsFunc([]string{"[", "(", ",", "=", ".."}, func(d string) bool { return strings.HasSuffix(before, d) })
	closed := slices.ContainsFunc([]string{"]", ")", ",", "..", "\n", "#", "where "}, func(d string) bool { return strings.HasPrefix(after, d) })
	return !(open && closed && !strings.HasSuffix(before, "=="))
}

// literalInt returns the integer a literal's text stands for: an integer
// literal's value, or a float literal's where it is a whole number.
func literalInt(float bool, text string) (int64, error) {
	if !float {
		v, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("not an integer: %w", err)
		}
		return v, nil
	}
	v, err := strconv.ParseFloat(text, 64)
	if err != nil || v != float64(int64(v)) {
		return 0, fmt.Errorf("a float that is not a whole number at every size (%s)", text)
	}
	return int64(v), nil
}

// polynomial writes the polynomial of coefficients c (c[r] that of the
// product of the dimensions in r) in the consts of dims, the terms of
// higher degree first.
func polynomial(c []int64, dims []symbolicDim) string {
	order := make([]int, len(c))
	for r := range order {
		order[r] = r
	}
	slices.SortStableFunc(order, func(a, b int) int { return popcount(b) - popcount(a) })
	var b strings.Builder
	for _, r := range order {
		v := c[r]
		if v == 0 {
			continue
		}
		var factors []string
		for i, d := range dims {
			if r>>i&1 == 1 {
				factors = append(factors, d.ident)
			}
		}
		mag := v
		if mag < 0 {
			mag = -mag
		}
		if mag != 1 || len(factors) == 0 {
			factors = append(factors, strconv.FormatInt(mag, 10))
		}
		term := strings.Join(factors, " * ")
		switch {
		case b.Len() == 0 && v < 0:
			b.WriteString("-" + term)
		case b.Len() == 0:
			b.WriteString(term)
		case v < 0:
			b.WriteString(" - " + term)
		default:
			b.WriteString(" + " + term)
		}
	}
	if b.Len() == 0 {
		return "0"
	}
	return b.String()
}

// skeleton returns src's text between its literals lits.
func skeleton(src []byte, lits []syntax.Literal) []string {
	var out []string
	at := 0
	for _, l := range lits {
		out = append(out, string(src[at:l.Span.Start.Offset]))
		at = l.Span.End.Offset
	}
	return append(out, string(src[at:]))
}

// paramDiffers returns the name of a param that a and b do not both hold
// with the same shape and values, if any.
func paramDiffers(a, b map[string]*te.Array) (string, bool) {
	for _, name := range slices.Sorted(maps.Keys(a)) {
		x, y := a[name], b[name]
		if y == nil || !slices.Equal(x.Shape, y.Shape) || !slices.EqualFunc(x.Data, y.Data, sameBits) || x.DType != y.DType {
			return name, true
		}
	}
	for name := range b {
		if a[name] == nil {
			return name, true
		}
	}
	return "", false
}

// sameBits reports whether x and y are the same float64, NaNs included.
func sameBits(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) }

// pointString formats sizes of dims as "batch = 2, seq = 3".
func pointString(dims []symbolicDim, sizes []int) string {
	var parts []string
	for i, d := range dims {
		parts = append(parts, fmt.Sprintf("%s = %d", d.name, sizes[i]))
	}
	return strings.Join(parts, ", ")
}

// lineOf returns line n (from 1) of src.
func lineOf(src []byte, n int) string {
	lines := strings.Split(string(src), "\n")
	if n < 1 || n > len(lines) {
		return ""
	}
	return lines[n-1]
}

// popcount returns the number of dimensions in the set x.
func popcount(x int) int { return bits.OnesCount(uint(x)) }

// pow returns b^e.
func pow(b int64, e int) int64 {
	v := int64(1)
	for range e {
		v *= b
	}
	return v
}
