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
		return foldCall("pow", []number{x, y})
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

// foldCall applies a compile-time function to numbers. A cast of a number
// applies the cast's rounding, as it would at run time: f16(0.3) is
// 0.300048828125 and bf16(0.3) 0.30078125. (f32 and float leave numbers
// exact, as arithmetic is carried out in f32 or wider.)
func foldCall(name string, args []number) (number, error) {
	if len(args) == 2 {
		x, y := args[0], args[1]
		switch name {
		case "min", "max":
			if x.isInt && y.isInt {
				if (name == "min") == (x.i < y.i) {
					return x, nil
				}
				return y, nil
			}
			if name == "min" {
				return floatNum(math.Min(x.float(), y.float())), nil
			}
			return floatNum(math.Max(x.float(), y.float())), nil
		case "pow":
			if x.isInt && y.isInt && y.i >= 0 {
				r := intNum(1)
				for k := 0; k < y.i; k++ {
					var err error
					if r, err = foldBinary("*", r, x); err != nil {
						return number{}, err
					}
					if r.i == 0 || r.i == 1 {
						break
					}
				}
				return r, nil
			}
			return floatNum(math.Pow(x.float(), y.float())), nil
		}
		return number{}, errors.New(name + " takes one argument")
	}
	x := args[0]
	v := x.float()
	switch name {
	case "abs":
		if x.isInt {
			if x.i == math.MinInt {
				return number{}, errOverflow
			}
			if x.i < 0 {
				return intNum(-x.i), nil
			}
			return x, nil
		}
		return floatNum(math.Abs(v)), nil
	case "neg":
		if x.isInt {
			if x.i == math.MinInt {
				return number{}, errOverflow
			}
			return intNum(-x.i), nil
		}
		return floatNum(-v), nil
	case "sqrt":
		return floatNum(math.Sqrt(v)), nil
	case "rsqrt":
		return floatNum(1 / math.Sqrt(v)), nil
	case "exp":
		return floatNum(math.Exp(v)), nil
	case "log":
		return floatNum(math.Log(v)), nil
	case "tanh":
		return floatNum(math.Tanh(v)), nil
	case "sigmoid":
		return floatNum(1 / (1 + math.Exp(-v))), nil
	case "erf":
		return floatNum(math.Erf(v)), nil
	case "sin":
		return floatNum(math.Sin(v)), nil
	case "cos":
		return floatNum(math.Cos(v)), nil
	case "i32":
		// As the cast computes at run time (te.Round): truncation towards
		// zero, saturation to the i32 range, NaN as 0.
		return intNum(int(te.Round(te.I32, v))), nil
	case "int":
		if x.isInt {
			return x, nil
		}
		if math.IsNaN(v) || v >= 1<<62 || v <= -(1<<62) {
			return number{}, errors.New("the value " + x.String() + " does not fit in an int")
		}
		return intNum(int(v)), nil
	case "float", "f32":
		return floatNum(v), nil
	case "f16":
		return floatNum(te.Round(te.F16, v)), nil
	case "bf16":
		return floatNum(te.Round(te.BF16, v)), nil
	case "bool":
		return boolNum(v != 0), nil
	}
	return number{}, errors.New(name + " takes two arguments")
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
