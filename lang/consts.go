package lang

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"tec/lang/syntax"
	"tec/te"
)

// number is a compile-time number: an int or a float.
type number struct {
	isInt bool
	i     int
	f     float64
}

func intNum(i int) number       { return number{isInt: true, i: i} }
func floatNum(f float64) number { return number{f: f} }

func boolNum(b bool) number {
	if b {
		return intNum(1)
	}
	return intNum(0)
}

// float returns the number's value as a float.
func (n number) float() float64 {
	if n.isInt {
		return float64(n.i)
	}
	return n.f
}

// truth reports whether the number counts as true (non-zero).
func (n number) truth() bool { return n.float() != 0 }

// String formats the number as the language writes it: ints plainly, floats
// with a point or an exponent.
func (n number) String() string {
	if n.isInt {
		return strconv.Itoa(n.i)
	}
	switch {
	case math.IsInf(n.f, 1):
		return "inf"
	case math.IsInf(n.f, -1):
		return "-inf"
	}
	s := strconv.FormatFloat(n.f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eIN") {
		s += ".0"
	}
	return s
}

// Errors of compile-time arithmetic.
var (
	errDivZero  = errors.New("division by zero")
	errOverflow = errors.New("integer overflow")
	// errNotNumber is parseDefine's error for text that is no number.
	errNotNumber = errors.New("the value is not a number")
)

// literal converts a number literal, failing for numbers that a float or
// an int cannot hold: too large, or so small that they would be 0.
func literal(n *syntax.Number) (number, error) {
	if n.IsInt {
		i, err := strconv.ParseInt(n.Text, 10, 64)
		if err != nil {
			return number{}, errors.New("the integer " + n.Text + " is too large: ints range over ±9223372036854775807")
		}
		return intNum(int(i)), nil
	}
	if err := floatRange(n.Text, n.Value); err != nil {
		return number{}, err
	}
	return floatNum(n.Value), nil
}

// floatRange reports a float literal text that f, its value as ParseFloat
// gives it, does not hold: one beyond the float range, which became ±inf,
// and one below it, which became 0 although text is not zero.
func floatRange(text string, f float64) error {
	switch {
	case math.IsInf(f, 0) || math.IsNaN(f):
		return fmt.Errorf("the number %s is too large for a float, which would make it infinite: the largest float is 1.7976931348623157e308", text)
	case f == 0 && !isZeroLiteral(text):
		return fmt.Errorf("the number %s is too small for a float, which would make it 0: the least non-zero float is 4.9e-324", text)
	}
	return nil
}

// isZeroLiteral reports whether the number literal text denotes zero: its
// mantissa (before any exponent) has no non-zero digit.
func isZeroLiteral(text string) bool {
	mant := strings.ToLower(text)
	hex := strings.HasPrefix(strings.TrimLeft(mant, "+-"), "0x")
	if hex {
		mant = strings.TrimLeft(mant, "+-")[2:]
		mant, _, _ = strings.Cut(mant, "p")
	} else {
		mant, _, _ = strings.Cut(mant, "e")
	}
	for _, r := range mant {
		if r >= '1' && r <= '9' || hex && r >= 'a' && r <= 'f' {
			return false
		}
	}
	return true
}

// parseDefine converts the text of a -D value to a number, or says why it
// is not one.
func parseDefine(s string) (number, error) {
	s = strings.TrimSpace(s)
	i, err := strconv.ParseInt(s, 10, 64)
	if err == nil {
		return intNum(int(i)), nil
	}
	if errors.Is(err, strconv.ErrRange) {
		return number{}, fmt.Errorf("the integer %s is too large: ints range over ±9223372036854775807", s)
	}
	f, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil && !errors.Is(err, strconv.ErrRange), math.IsNaN(f),
		math.IsInf(f, 0) && !errors.Is(err, strconv.ErrRange): // inf, nan
		return number{}, errNotNumber
	}
	if err := floatRange(s, f); err != nil {
		return number{}, err
	}
	return floatNum(f), nil
}

// foldBinary applies a binary operator of the language to two numbers.
func foldBinary(op string, x, y number) (number, error) {
	switch op {
	case "==", "!=", "<", "<=", ">", ">=":
		var r bool
		if x.isInt && y.isInt {
			r = compareInts(op, x.i, y.i)
		} else {
			r = compareFloats(op, x.float(), y.float())
		}
		return boolNum(r), nil
	case "**":
		return foldPow([]number{x, y})
	case "&&":
		return boolNum(x.truth() && y.truth()), nil
	case "||":
		return boolNum(x.truth() || y.truth()), nil
	}
	if x.isInt && y.isInt {
		a, b := x.i, y.i
		switch op {
		case "+":
			r := a + b
			if (a > 0 && b > 0 && r < 0) || (a < 0 && b < 0 && r >= 0) {
				return number{}, errOverflow
			}
			return intNum(r), nil
		case "-":
			r := a - b
			if (a >= 0 && b < 0 && r < 0) || (a < 0 && b > 0 && r >= 0) {
				return number{}, errOverflow
			}
			return intNum(r), nil
		case "*":
			if a == 0 || b == 0 {
				return intNum(0), nil
			}
			r := a * b
			if r/b != a || (a == -1 && b == math.MinInt) || (b == -1 && a == math.MinInt) {
				return number{}, errOverflow
			}
			return intNum(r), nil
		case "/":
			if b == 0 {
				return number{}, errDivZero
			}
			if a == math.MinInt && b == -1 {
				return number{}, errOverflow
			}
			return intNum(te.FloorDiv(a, b)), nil
		case "%":
			if b == 0 {
				return number{}, errDivZero
			}
			if b == -1 {
				return intNum(0), nil
			}
			return intNum(te.FloorMod(a, b)), nil
		}
	}
	a, b := x.float(), y.float()
	switch op {
	case "+":
		return floatNum(a + b), nil
	case "-":
		return floatNum(a - b), nil
	case "*":
		return floatNum(a * b), nil
	case "/":
		if b == 0 {
			return number{}, errDivZero
		}
		return floatNum(a / b), nil
	case "%":
		return number{}, errors.New("% needs two ints")
	}
	return number{}, errors.New("unknown operator " + op)
}

func compareInts(op string, a, b int) bool {
	switch op {
	case "==":
		return a == b
	case "!=":
		return a != b
	case "<":
		return a < b
	case "<=":
		return a <= b
	case ">":
		return a > b
	}
	return a >= b
}

func compareFloats(op string, a, b float64) bool {
	switch op {
	case "==":
		return a == b
	case "!=":
		return a != b
	case "<":
		return a < b
	case "<=":
		return a <= b
	case ">":
		return a > b
	}
	return a >= b
}

// foldNeg negates a number, as unary minus does.
func foldNeg(x number) (number, error) {
	if !x.isInt {
		return floatNum(-x.float()), nil
	}
	if x.i == math.MinInt {
		return number{}, errOverflow
	}
	return intNum(-x.i), nil
}

// constValue evaluates a top-level constant, once.
func (c *checker) constValue(d *constDecl, use syntax.Span, useFile string) Value {
	switch d.state {
	case 2:
		return d.val
	case 1:
		e := c.errorAt(useFile, use, "recursion", "", "constant %s is defined in terms of itself", d.decl.Name.Name)
		related(e, d.file, d.decl.Name.Span, "%s is declared here", d.decl.Name.Name)
		d.val = poison{}
		return d.val
	}
	d.state = 1
	if d.override != nil {
		d.val = *d.override
	} else {
		sc := newScope(nil, d.scope, d.file)
		v := c.eval(sc, d.decl.Value)
		switch v.(type) {
		case number, poison:
		default:
			c.errorAt(d.file, d.decl.Value.NodeSpan(), "type", "", "constant %s must be a number, not %s", d.decl.Name.Name, describe(v))
			v = poison{}
		}
		if d.val == nil {
			d.val = v
		}
	}
	d.state = 2
	return d.val
}

// applyDefines records the -D overrides of the main file's constants.
func (c *checker) applyDefines(f *fileScope, defines map[string]string) {
	names := make([]string, 0, len(defines))
	for n := range defines {
		names = append(names, n)
	}
	sortStrings(names)
	var consts []string
	for _, n := range f.order {
		if _, ok := f.names[n].(*constDecl); ok {
			consts = append(consts, n)
		}
	}
	for _, n := range names {
		d, ok := f.names[n].(*constDecl)
		if !ok {
			hint := suggest(n, consts)
			switch {
			case len(consts) == 0:
				hint = "the file declares no constants"
			case hint == "":
				hint = "its constants are " + strings.Join(consts, ", ")
			}
			c.errorAt(f.path, syntax.Span{}, "define", hint, "-D %s: %s declares no constant %s", n, f.path, n)
			continue
		}
		v, err := parseDefine(defines[n])
		if err != nil {
			hint := "give an int such as 128 or a float such as 0.5"
			if err != errNotNumber {
				hint = "give a value within that range (0 itself is fine)"
			}
			c.errorAt(f.path, syntax.Span{}, "define", hint, "-D %s=%s: %v", n, defines[n], err)
			continue
		}
		d.override = &v
	}
}
