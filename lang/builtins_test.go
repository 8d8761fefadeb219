package lang

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"tec/lang/syntax"
	"tec/te"
)

// TestBuiltinTable checks that every builtin has all its parts: a name of
// its own, documentation, a signature whose call form takes the builtin's
// arity, a lowering that fits its kind, and a fold where it is arithmetic
// on numbers.
func TestBuiltinTable(t *testing.T) {
	// formRules says what each lowering form asks of a builtin: the kinds it may
	// have, the arities its call may take, and whether it is arithmetic on
	// numbers, and so folds.
	formRules := map[lowerForm]struct {
		kinds      []BuiltinKind
		arities    []int
		arithmetic bool
	}{
		lowerUnary:    {[]BuiltinKind{ElemFunc}, []int{1}, true},
		lowerBinary:   {[]BuiltinKind{ElemFunc, Reduction}, []int{2}, true},
		lowerCast:     {[]BuiltinKind{DType}, []int{1}, true},
		lowerConvert:  {[]BuiltinKind{ElemFunc}, []int{1}, true},
		lowerSelect:   {[]BuiltinKind{ElemFunc}, []int{3}, false},
		lowerReduce:   {[]BuiltinKind{Reduction}, []int{0}, false},
		lowerLen:      {[]BuiltinKind{ElemFunc}, []int{1}, false},
		lowerFill:     {[]BuiltinKind{Constructor}, []int{1, 2}, false},
		lowerStack:    {[]BuiltinKind{Constructor}, []int{1}, false},
		lowerConstant: {[]BuiltinKind{Constant}, []int{0}, false},
	}
	seen := map[string]bool{}
	for _, b := range builtinTable() {
		if b.name == "" || seen[b.name] {
			t.Errorf("builtin %q: empty or listed twice", b.name)
		}
		seen[b.name] = true
		if b.doc == "" || !strings.HasPrefix(b.signature, b.name) {
			t.Errorf("%s: signature %q, doc %q", b.name, b.signature, b.doc)
		}
		if got := callArity(b.signature, b.name); got != b.arity {
			t.Errorf("%s: the signature %q shows %d arguments, the arity is %d", b.name, b.signature, got, b.arity)
		}
		rule, ok := formRules[b.lower.form]
		if !ok {
			t.Errorf("%s: no lowering", b.name)
			continue
		}
		if !slices.Contains(rule.kinds, b.kind) || !slices.Contains(rule.arities, b.arity) {
			t.Errorf("%s: kind %d and arity %d do not fit its lowering", b.name, b.kind, b.arity)
		}
		if rule.arithmetic != (b.fold != nil) {
			t.Errorf("%s: arithmetic %v, but folds %v", b.name, rule.arithmetic, b.fold != nil)
		}
		if b.lower.reduces != syntax.IsReduceOp(b.name) || b.lower.reduces != (b.kind == Reduction) {
			t.Errorf("%s: reduces %v, the parser's reduction %v, kind %d", b.name, b.lower.reduces, syntax.IsReduceOp(b.name), b.kind)
		}
		if b.lower.form == lowerCast && b.lower.dtype.String() != b.name {
			t.Errorf("%s: casts to %s", b.name, b.lower.dtype)
		}
	}
}

// callArity counts the arguments of the call form name(...) in a signature,
// or returns 0 where it has none.
func callArity(signature, name string) int {
	_, call, ok := strings.Cut(signature, name+"(")
	if !ok {
		return 0
	}
	n, depth := 1, 0
	for _, r := range call {
		switch r {
		case '(', '[':
			depth++
		case ']':
			depth--
		case ')':
			if depth == 0 {
				return n
			}
			depth--
		case ',':
			if depth == 0 {
				n++
			}
		}
	}
	return -1
}

// TestBuiltinAccessors checks that the exported accessors and the lookups
// of the checker give the table's builtins.
func TestBuiltinAccessors(t *testing.T) {
	table := builtinTable()
	docs := Builtins()
	if len(docs) != len(table) {
		t.Fatalf("Builtins gives %d, the table has %d", len(docs), len(table))
	}
	var names []string
	for i, b := range table {
		names = append(names, b.name)
		if want := b.documentation(); docs[i] != want {
			t.Errorf("Builtins()[%d] = %+v, want %+v", i, docs[i], want)
		}
		if got, ok := LookupBuiltin(b.name); !ok || got != b.documentation() {
			t.Errorf("LookupBuiltin(%q) = %+v, %v", b.name, got, ok)
		}
		if lookupBuiltin(b.name) == nil {
			t.Errorf("lookupBuiltin(%q) = nil", b.name)
		}
		if dt, ok := dtypeNamed(b.name); ok != (b.lower.form == lowerCast) || dt != b.lower.dtype {
			t.Errorf("dtypeNamed(%q) = %s, %v", b.name, dt, ok)
		}
	}
	slices.Sort(names)
	if got := builtinNames(); !slices.Equal(got, names) {
		t.Errorf("builtinNames() = %v, want %v", got, names)
	}
	if _, ok := LookupBuiltin("softmax"); ok {
		t.Error("LookupBuiltin finds softmax, a function of the standard library")
	}
}

// TestBuiltinFolds folds a call of each arithmetic builtin on numbers.
func TestBuiltinFolds(t *testing.T) {
	tests := []struct {
		name string
		args []number
		want number
	}{
		{"exp", []number{intNum(0)}, floatNum(1)},
		{"log", []number{floatNum(1)}, floatNum(0)},
		{"sqrt", []number{intNum(4)}, floatNum(2)},
		{"rsqrt", []number{intNum(4)}, floatNum(0.5)},
		{"tanh", []number{intNum(0)}, floatNum(0)},
		{"sigmoid", []number{intNum(0)}, floatNum(0.5)},
		{"erf", []number{intNum(0)}, floatNum(0)},
		{"sin", []number{intNum(0)}, floatNum(0)},
		{"cos", []number{intNum(0)}, floatNum(1)},
		{"abs", []number{intNum(-3)}, intNum(3)},
		{"abs", []number{floatNum(-2.5)}, floatNum(2.5)},
		{"pow", []number{intNum(2), intNum(10)}, intNum(1024)},
		{"pow", []number{intNum(4), floatNum(0.5)}, floatNum(2)},
		{"max", []number{intNum(2), intNum(3)}, intNum(3)},
		{"min", []number{floatNum(2.5), intNum(1)}, floatNum(1)},
		{"f32", []number{intNum(3)}, floatNum(3)},
		{"f16", []number{floatNum(0.3)}, floatNum(0.300048828125)},
		{"bf16", []number{floatNum(0.3)}, floatNum(0.30078125)},
		{"i32", []number{floatNum(-2.7)}, intNum(-2)},
		{"bool", []number{intNum(2)}, intNum(1)},
		{"int", []number{floatNum(2.7)}, intNum(2)},
		{"float", []number{intNum(3)}, floatNum(3)},
	}
	folded := map[string]bool{}
	for _, tt := range tests {
		folded[tt.name] = true
		got, err := lookupBuiltin(tt.name).fold(tt.args)
		if err != nil || got != tt.want {
			t.Errorf("%s%v = %v, %v; want %v", tt.name, tt.args, got, err, tt.want)
		}
	}
	for _, b := range builtinTable() {
		if b.fold != nil && !folded[b.name] {
			t.Errorf("%s folds, but no test folds it", b.name)
		}
	}
	if _, err := lookupBuiltin("abs").fold([]number{intNum(math.MinInt)}); err != errOverflow {
		t.Errorf("abs(MinInt): %v, want %v", err, errOverflow)
	}
	if _, err := lookupBuiltin("int").fold([]number{floatNum(math.NaN())}); err == nil {
		t.Error("int(NaN) folds")
	}
}

// TestBuiltinLowering lowers a call of each builtin that becomes a TE op
// and looks for that op in the tensor's body.
func TestBuiltinLowering(t *testing.T) {
	calls := map[lowerForm]string{
		lowerUnary:  "%s(x[i])",
		lowerBinary: "%s(x[i], x[i])",
		lowerCast:   "%s(x[i])",
		lowerSelect: "%s(x[i] > 0.0, x[i], 0.0)",
	}
	for _, b := range builtinTable() {
		type use struct {
			text   string
			reduce bool
		}
		var uses []use
		if call, ok := calls[b.lower.form]; ok {
			uses = append(uses, use{fmt.Sprintf(call, b.name), false})
		}
		if b.lower.reduces {
			uses = append(uses, use{b.name + "[j](x[i] + x[j])", true})
		}
		for _, u := range uses {
			src := "model m {\n  input x: f32[4]\n  y[i] = " + u.text + "\n  output y\n}\n"
			p, ds := Check("builtin.te", []byte(src), Config{})
			if ds.HasErrors() || p == nil {
				t.Errorf("%s: %s", u.text, render("builtin.te", []byte(src), ds))
				continue
			}
			found := false
			te.Walk(p.Lookup("y").Body, func(e te.Expr) bool {
				found = found || lowersTo(e, b.lower, u.reduce)
				return !found
			})
			if !found {
				t.Errorf("%s: no %s op in %s", u.text, b.name, p.Lookup("y").Body)
			}
		}
	}
}

// lowersTo reports whether e is the op of lowering l: its reduction, where
// reduce is set.
func lowersTo(e te.Expr, l lowering, reduce bool) bool {
	switch e := e.(type) {
	case *te.Reduce:
		return reduce && e.Op == l.reduce
	case *te.Unary:
		return !reduce && l.form == lowerUnary && e.Op == l.unary
	case *te.Binary:
		return !reduce && l.form == lowerBinary && e.Op == l.binary
	case *te.Cast:
		return !reduce && l.form == lowerCast && e.To == l.dtype
	case *te.Select:
		return !reduce && l.form == lowerSelect
	}
	return false
}
