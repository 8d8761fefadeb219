package progfuzz

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// u is the unit roundoff of f32, 2^-24: one rounding of a value v to f32
// changes it by at most |v|·u.
const u = 1.0 / (1 << 24)

// Error bounds are tracked in units of u as absolute bounds: a value whose
// error is e differs from the float64 reference by at most e·u. The
// rounding of a result of magnitude at most m adds m (in units of u).
// Storing to f16 rounds to 11 significant bits, to bf16 to 8: a value that
// the reference and the simulator compute differently within e·u may round
// to neighbouring f16 values, one ulp (2^-10 relative, 2^14 u) apart;
// bf16's ulp is 2^-7 relative, 2^17 u.
var storageULP = map[string]float64{"f32": 1, "f16": 1 << 14, "bf16": 1 << 17}

// Program is a generated program: its source text and, per output, the
// absolute tolerance its comparison with the reference uses.
type Program struct {
	Seed uint64
	Src  []byte
	// Atol is the absolute tolerance of each output, derived from the
	// error bounds the generator tracked (see Tolerance).
	Atol map[string]float64
}

// tensor is a tensor in scope while generating: its shape (each dimension
// a number and the source text that denotes it), storage dtype, a bound on
// the magnitude of its elements and on their error in units of u.
type tensor struct {
	name  string
	dims  []dim
	dt    string
	mag   float64
	err   float64
	param bool
	// placeholder marks inputs and params.
	placeholder bool
}

func (t *tensor) size() int {
	n := 1
	for _, d := range t.dims {
		n *= d.n
	}
	return n
}

func (t *tensor) shapeText() string {
	s := make([]string, len(t.dims))
	for i, d := range t.dims {
		s[i] = d.s
	}
	return t.dt + "[" + strings.Join(s, ", ") + "]"
}

// dim is a dimension: its value and its text in terms of the constants.
type dim struct {
	n int
	s string
}

func (d dim) paren() string {
	if strings.ContainsAny(d.s, " ") {
		return "(" + d.s + ")"
	}
	return d.s
}

// val is a generated element expression: its text and bounds on its
// magnitude and on its error in units of u.
type val struct {
	s   string
	mag float64
	err float64
}

// gen holds the state of one program's generation.
type gen struct {
	r       *rand.Rand
	consts  []string // const declarations
	fns     []string // function declarations
	decls   []string // input and param declarations
	body    []string // statements
	ts      []*tensor
	used    map[string]bool
	nextID  int
	dimName map[int]string
	fnNames []string  // scalar functions declared
	mustOut []*tensor // tensors that must be outputs
	focus   Focus
	mode    string             // the program's --precision: "" (f32), "tf32", "bf16" or "f16"
	maxMag  float64            // the largest magnitude bound of a tensor defined
	feeds   []string           // "# feed" lines
	expect  string             // the input of a planted index outside its dimension, or ""
	updTol  map[string]float64 // the tolerances of the inputs updated in place
}

// Focus biases generation towards one feature, for a campaign of it.
type Focus string

// The foci.
const (
	// FocusNone draws every feature at its usual rate.
	FocusNone Focus = ""
	// FocusDecode writes a decode step (run-time positions in conditions,
	// arithmetic and read indexes) in every program.
	FocusDecode Focus = "decode"
	// FocusUpdate writes a decode step with in-place updates of its cache
	// in every program.
	FocusUpdate Focus = "update"
	// FocusPrecision puts every program at --precision f16, bf16 or tf32,
	// with more contractions large enough for tensor cores.
	FocusPrecision Focus = "precision"
)

// ParseFocus returns the focus named s ("", "decode", "update" or
// "precision").
func ParseFocus(s string) (Focus, error) {
	switch f := Focus(s); f {
	case FocusNone, FocusDecode, FocusUpdate, FocusPrecision:
		return f, nil
	}
	return "", fmt.Errorf("unknown focus %q (want decode, update or precision)", s)
}

// sizes are the dimension sizes the generator picks from: mostly not powers
// of two, all small so that a simulator run takes milliseconds.
var sizes = []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 16, 17, 24, 31, 33, 48}

// halfSafe is the largest magnitude bound of a program put at --precision
// f16: a program whose bounds pass it goes to bf16 instead, whose range is
// f32's, so that the half values do not overflow f16's 65504 (the bounds
// are loose: the values are much smaller).
const halfSafe = 1e4

// maxElems bounds a tensor's element count.
const maxElems = 4096

// Generate returns the program of seed: deterministic, well typed, every
// access in bounds and every value bounded away from overflow, division by
// small numbers and catastrophic cancellation.
func Generate(seed uint64) *Program {
	return GenerateFocus(seed, FocusNone)
}

// GenerateFocus returns the program of seed with the features of focus
// drawn more often (see Focus).
func GenerateFocus(seed uint64, focus Focus) *Program {
	g := newGen(seed, focus)
	g.program()
	return g.finish(seed)
}

// newGen returns the generator of seed's program, with nothing generated.
func newGen(seed uint64, focus Focus) *gen {
	return &gen{r: rand.New(rand.NewPCG(seed, 0x7ecf022)), used: map[string]bool{}, dimName: map[int]string{},
		focus: focus, updTol: map[string]float64{}}
}

// precisionShare is the share of programs generated at a precision other
// than f32 when no focus asks for all of them.
const precisionShare = 0.15

// plantShare is the probability that a decode step whose positions are
// used as indexes gets one planted outside the cache.
const plantShare = 0.05

func (g *gen) intn(n int) int        { return g.r.IntN(n) }
func (g *gen) chance(p float64) bool { return g.r.Float64() < p }
func pick[T any](g *gen, xs []T) T   { return xs[g.r.IntN(len(xs))] }

func (g *gen) fresh(prefix string) string {
	g.nextID++
	return fmt.Sprintf("%s%d", prefix, g.nextID)
}

// newDim returns a dimension of size n, named by a constant half the time.
func (g *gen) newDim(n int) dim {
	if name, ok := g.dimName[n]; ok {
		return dim{n, name}
	}
	if g.chance(0.5) {
		name := string(rune('A'+len(g.dimName)%26)) + strings.Repeat("X", len(g.dimName)/26)
		g.dimName[n] = name
		g.consts = append(g.consts, fmt.Sprintf("const %s = %d", name, n))
		return dim{n, name}
	}
	return dim{n, fmt.Sprint(n)}
}

func (g *gen) randDims(rank int) []dim {
	for {
		ds := make([]dim, rank)
		n := 1
		for i := range ds {
			ds[i] = g.newDim(pick(g, sizes))
			n *= ds[i].n
		}
		if n <= maxElems {
			return ds
		}
	}
}

// placeholder declares an input or param.
func (g *gen) placeholder(dims []dim, dt string, param bool) *tensor {
	kind, prefix := "input", "x"
	if param {
		kind, prefix = "param", "w"
	}
	t := &tensor{name: g.fresh(prefix), dims: dims, dt: dt, mag: 1, param: param, placeholder: true}
	g.decls = append(g.decls, fmt.Sprintf("%s %s: %s", kind, t.name, t.shapeText()))
	g.ts = append(g.ts, t)
	return t
}

// paramMag bounds the values numeric.NewFilled gives a param: those of
// rank 2 or more are scaled by 1/√(size/largest dimension).
func paramMag(dims []dim) float64 {
	if len(dims) < 2 {
		return 1
	}
	size, largest := 1, 1
	for _, d := range dims {
		size *= d.n
		largest = max(largest, d.n)
	}
	return 1 / math.Sqrt(float64(size/largest))
}

func (g *gen) define(t *tensor, stmt string) *tensor {
	g.maxMag = max(g.maxMag, t.mag)
	g.body = append(g.body, stmt)
	g.ts = append(g.ts, t)
	return t
}

func (g *gen) program() {
	if g.focus == FocusPrecision || g.chance(precisionShare) {
		g.mode = pick(g, []string{"f16", "bf16", "tf32"})
	}
	if g.focus == FocusPrecision {
		// operands of at least 16 rows and columns: tensor-core tiles
		g.largeContraction()
	}
	switch {
	case (g.focus == FocusDecode || g.focus == FocusUpdate) && g.chance(0.4):
		g.llmStep(2 * plantShare)
	case g.focus == FocusDecode:
		g.decode(false, 2*plantShare)
	case g.focus == FocusUpdate:
		g.decode(true, 2*plantShare)
	}
	ninputs := 1 + g.intn(3)
	for range ninputs {
		dt := "f32"
		if g.chance(0.2) {
			dt = pick(g, []string{"f16", "bf16"})
		}
		g.placeholder(g.randDims(1+g.intn(3)), dt, g.chance(0.3))
	}
	if g.chance(0.1) {
		g.intInput()
	}
	nstmts := 2 + g.intn(7)
	for range nstmts {
		g.statement()
	}
}

// intInput declares an i32 input (filled with ints in [0, 8)) and a tensor
// made from it, exactly.
func (g *gen) intInput() {
	t := &tensor{name: g.fresh("n"), dims: g.randDims(1), dt: "i32", mag: 8}
	g.decls = append(g.decls, fmt.Sprintf("input %s: %s", t.name, t.shapeText()))
	y := &tensor{name: g.fresh("t"), dims: t.dims, dt: "f32", mag: 1}
	g.define(y, fmt.Sprintf("%s[i] = f32(%s[i]) * 0.125", y.name, t.name))
}

// floats returns the tensors of floating dtype in scope.
func (g *gen) floats(pred func(*tensor) bool) []*tensor {
	var out []*tensor
	for _, t := range g.ts {
		if t.dt != "i32" && t.dt != "bool" && (pred == nil || pred(t)) {
			out = append(out, t)
		}
	}
	return out
}

func (g *gen) any() *tensor {
	ts := g.floats(func(t *tensor) bool { return len(t.dims) > 0 })
	// prefer recent tensors, so that statements chain
	if g.chance(0.6) {
		return ts[len(ts)-1-g.intn(min(3, len(ts)))]
	}
	return pick(g, ts)
}

func (g *gen) rank2() *tensor {
	ts := g.floats(func(t *tensor) bool { return len(t.dims) == 2 && t.dt == "f32" })
	if len(ts) == 0 {
		return g.placeholder(g.randDims(2), "f32", false)
	}
	return ts[len(ts)-1-g.intn(min(2, len(ts)))]
}

func (g *gen) statement() {
	type kind struct {
		w float64
		f func()
	}
	kinds := []kind{
		{4, g.elementwise},
		{2, g.affineAccess},
		{1.5, g.padGuard},
		{2, g.reduction},
		{1.5, g.contraction},
		{0.3, g.largeContraction},
		{1, g.cast},
		{0.5, g.fill},
		{2.5, g.stdlibCall},
		{0.8, g.wholeExpr},
		{0.6, g.rnnLoop},
		{0.4, g.lstmStack},
		{0.3, g.twoChains},
		{0.5, g.attention},
		{0.8, g.maskedContraction},
		{0.4, g.causalAttention},
		{0.5, g.conv},
		{0.5, g.listStack},
		{0.5, g.tensorFn},
		{0.3, g.constBranch},
		{0.4, g.rangeBranch},
		{0.4, g.mask},
		{0.6, g.layout},
		{0.8, g.gather},
		{0.6, g.argIndex},
		{0.4, func() { g.decode(false, plantShare) }},
		{0.4, func() { g.decode(true, plantShare) }},
		{0.3, func() { g.llmStep(plantShare) }},
		{0.5, g.largeIndex},
		{0.3, g.loopParams},
		{0.4, g.maskedMatVec},
		{0.03, g.longChain}, // seconds a program: rare, so that a campaign's time stays
	}
	total := 0.0
	for _, k := range kinds {
		total += k.w
	}
	x := g.r.Float64() * total
	for _, k := range kinds {
		if x -= k.w; x < 0 {
			k.f()
			return
		}
	}
	kinds[0].f()
}

// vars returns n index-variable names.
func vars(n int) []string {
	names := []string{"i", "j", "l", "m", "p"}
	return names[:n]
}

// access reads t at the output's own variables (t has the output's shape,
// or a suffix of it: broadcast), sometimes reversing one axis.
func (g *gen) access(t *tensor, vs []string) val {
	k := len(vs) - len(t.dims)
	idx := make([]string, len(t.dims))
	for a := range t.dims {
		idx[a] = vs[k+a]
		if g.chance(0.15) {
			idx[a] = fmt.Sprintf("%s - 1 - %s", t.dims[a].paren(), vs[k+a])
		}
	}
	if len(idx) == 0 {
		return val{s: t.name, mag: t.mag, err: t.err}
	}
	return val{s: t.name + "[" + strings.Join(idx, ", ") + "]", mag: t.mag, err: t.err}
}

// leaf returns an element of a tensor compatible with out (same shape, or
// a suffix of it), an index value or a constant.
func (g *gen) leaf(out []dim, vs []string) val {
	var cands []*tensor
	for _, t := range g.floats(nil) {
		if len(t.dims) <= len(out) && slices.EqualFunc(t.dims, out[len(out)-len(t.dims):], func(a, b dim) bool { return a.n == b.n }) {
			cands = append(cands, t)
		}
	}
	switch {
	case len(cands) > 0 && g.chance(0.75):
		return g.access(pick(g, cands), vs)
	case g.chance(0.4):
		a := g.intn(len(vs))
		c := pick(g, []int{2, 3, 5})
		return val{s: fmt.Sprintf("f32(%s %% %d) * 0.5", vs[a], c), mag: float64(c) * 0.5}
	default:
		c := pick(g, []float64{0.5, 1.5, 2.0, 0.25, 3.0, 0.1})
		return val{s: float(c), mag: c, err: 0}
	}
}

// tame bounds a value's magnitude below 4, so that exp and products stay
// well conditioned.
func (g *gen) tame(v val) val {
	if v.mag <= 4 {
		return v
	}
	if g.chance(0.5) {
		return val{s: "tanh(" + v.s + ")", mag: 1, err: v.err + 2}
	}
	f := 1 / math.Ceil(v.mag/2)
	return val{s: fmt.Sprintf("%s * %s", paren(v.s), float(f)), mag: v.mag * f, err: v.err*f + v.mag*f}
}

func paren(s string) string { return "(" + s + ")" }

// float writes v as a float literal of the language (with a fraction or an
// exponent, so that it is not an int).
func float(v float64) string {
	s := strconv.FormatFloat(v, 'g', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

// wherePartial returns a where clause for the variables of vs that body
// does not use alone as an index (their range cannot be inferred), and for
// all of them with probability p.
func (g *gen) wherePartial(body string, vs []string, dims []dim, p float64) string {
	all := g.chance(p)
	var parts []string
	for a, v := range vs {
		alone := regexp.MustCompile(`(\[|, )` + v + `(\]|,)`)
		if all || !alone.MatchString(body) {
			parts = append(parts, fmt.Sprintf("%s in 0..%s", v, dims[a].s))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " where " + strings.Join(parts, ", ")
}

// expr builds a random element expression tree of the given depth. Every
// operation keeps its inputs in the region where it is well conditioned.
func (g *gen) expr(out []dim, vs []string, depth int) val {
	if depth == 0 || g.chance(0.25) {
		return g.leaf(out, vs)
	}
	a := g.expr(out, vs, depth-1)
	switch g.intn(14) {
	case 0, 1, 2: // + and -
		b := g.expr(out, vs, depth-1)
		op := pick(g, []string{"+", "-"})
		m := a.mag + b.mag
		return val{s: a.s + " " + op + " " + paren(b.s), mag: m, err: a.err + b.err + m}
	case 3, 4: // *
		a, b := g.tame(a), g.tame(g.expr(out, vs, depth-1))
		m := a.mag * b.mag
		return val{s: paren(a.s) + " * " + paren(b.s), mag: m, err: a.err*b.mag + b.err*a.mag + m}
	case 5: // division by a value at least 1
		b := g.tame(g.expr(out, vs, depth-1))
		return val{s: paren(a.s) + " / (abs(" + b.s + ") + 1.0)", mag: a.mag, err: a.err + b.err*a.mag + 2*a.mag + b.mag}
	case 6: // exp of a bounded value
		a = g.tame(a)
		m := math.Exp(a.mag)
		return val{s: "exp(" + a.s + ")", mag: m, err: m * (a.err + 2)}
	case 7: // log, sqrt and rsqrt of a value at least 0.5
		a = g.tame(a)
		switch g.intn(3) {
		case 0:
			return val{s: "log(abs(" + a.s + ") + 1.0)", mag: math.Log(a.mag + 1), err: a.err + a.mag + 2}
		case 1:
			m := math.Sqrt(a.mag + 0.5)
			return val{s: "sqrt(abs(" + a.s + ") + 0.5)", mag: m, err: a.err + a.mag + 2*m}
		default:
			return val{s: "rsqrt(abs(" + a.s + ") + 0.5)", mag: 1.5, err: 1.5*(a.err+a.mag) + 4}
		}
	case 8: // bounded functions (sin and cos have derivatives at most 1, and
		// are within 10^-7 of the exact value for angles below 10^5)
		f := pick(g, []string{"tanh", "sigmoid", "erf", "sin", "cos"})
		return val{s: f + "(" + a.s + ")", mag: 1, err: 1.2*a.err + 2}
	case 9:
		f := pick(g, []string{"abs", "-"})
		return val{s: f + paren(a.s), mag: a.mag, err: a.err}
	case 10: // max and min
		b := g.expr(out, vs, depth-1)
		f := pick(g, []string{"max", "min"})
		return val{s: f + "(" + a.s + ", " + b.s + ")", mag: max(a.mag, b.mag), err: max(a.err, b.err)}
	case 11: // pow of a base at least 0.5
		a = g.tame(a)
		e := pick(g, []float64{0.5, 2.0, 1.5, -1.0})
		base := a.mag + 0.5
		m := math.Max(math.Pow(base, e), math.Pow(0.5, e))
		d := math.Abs(e) * math.Max(math.Pow(base, e-1), math.Pow(0.5, e-1))
		text := fmt.Sprintf("pow(abs(%s) + 0.5, %s)", a.s, float(e))
		if g.chance(0.5) { // the operator
			text = fmt.Sprintf("(abs(%s) + 0.5) ** %s", a.s, float(e))
		}
		return val{s: text, mag: m, err: d*(a.err+base) + 4*m}
	case 12: // a scalar function: stdlib or the file's own
		f := pick(g, []string{"gelu", "relu", "swish", "sigmoid_fn", "user"})
		if f == "user" {
			f = g.scalarFn()
		}
		a = g.tame(a)
		return val{s: f + "(" + a.s + ")", mag: a.mag + 1, err: 2*a.err + 8*(a.mag+1)}
	default: // a guard on exact data or on an index
		b := g.expr(out, vs, depth-1)
		cond := g.cond(out, vs)
		return val{s: "select(" + cond + ", " + a.s + ", " + b.s + ")", mag: max(a.mag, b.mag), err: max(a.err, b.err)}
	}
}

// cond returns a condition whose value the reference and the simulator
// agree on: on indexes, or on elements that carry no rounding error.
func (g *gen) cond(out []dim, vs []string) string {
	exact := g.floats(func(t *tensor) bool {
		return t.err == 0 && len(t.dims) <= len(out) &&
			slices.EqualFunc(t.dims, out[len(out)-len(t.dims):], func(a, b dim) bool { return a.n == b.n })
	})
	if len(exact) > 0 && g.chance(0.5) {
		v := g.access(pick(g, exact), vs)
		return v.s + " " + pick(g, []string{">", "<", ">="}) + " 0.0"
	}
	a := g.intn(len(vs))
	c := g.intn(out[a].n + 1)
	conds := []string{fmt.Sprintf("%s < %d", vs[a], c), fmt.Sprintf("%s %% 2 == 0", vs[a]),
		fmt.Sprintf("%s >= %d && %s != %d", vs[a], c/2, vs[a], c),
		fmt.Sprintf("!(%s <= %d) || %s %% 3 == 1", vs[a], c/2, vs[len(vs)-1])}
	return pick(g, conds)
}

var scalarBodies = []string{"v * sigmoid(v)", "tanh(v) * 0.5 + v * 0.25", "max(v, 0.0) - 0.5 * min(v, 0.0)", "v / (1.0 + abs(v))"}

func (g *gen) scalarFn() string {
	if len(g.fnNames) > 0 && g.chance(0.5) {
		return pick(g, g.fnNames)
	}
	name := fmt.Sprintf("sf%d", len(g.fnNames))
	g.fns = append(g.fns, fmt.Sprintf("fn %s(v) = %s", name, pick(g, scalarBodies)))
	g.fnNames = append(g.fnNames, name)
	return name
}

// elementwise defines a tensor of an existing tensor's shape by an
// expression tree.
func (g *gen) elementwise() {
	base := g.any()
	vs := vars(len(base.dims))
	v := g.expr(base.dims, vs, 1+g.intn(3))
	if !strings.Contains(v.s, "[") {
		w := g.access(base, vs)
		v = val{s: w.s + " + " + paren(v.s), mag: w.mag + v.mag, err: w.err + v.err + w.mag + v.mag}
	}
	v = g.tame(v)
	y := &tensor{name: g.fresh("t"), dims: base.dims, dt: "f32", mag: v.mag, err: v.err + v.mag}
	g.define(y, fmt.Sprintf("%s[%s] = %s%s", y.name, strings.Join(vs, ", "), v.s, g.wherePartial(v.s, vs, base.dims, 0.3)))
}

// whereAll returns a where clause for vs over dims with probability p.
func (g *gen) whereAll(vs []string, dims []dim, p float64) string {
	if !g.chance(p) {
		return ""
	}
	parts := make([]string, len(vs))
	for a := range vs {
		parts[a] = fmt.Sprintf("%s in 0..%s", vs[a], dims[a].s)
	}
	return " where " + strings.Join(parts, ", ")
}

// affineAccess defines a tensor that reads another at a quasi-affine index
// on one axis: a stride, an offset, a reversal, / or % by a constant.
func (g *gen) affineAccess() {
	src := g.any()
	a := g.intn(len(src.dims))
	d := src.dims[a]
	vs := vars(len(src.dims))
	v := vs[a]
	var idx string
	var out dim
	switch g.intn(6) {
	case 0: // stride 2 with an offset
		if d.n < 2 {
			idx, out = v, d
			break
		}
		idx, out = fmt.Sprintf("2 * %s + 1", v), dim{d.n / 2, fmt.Sprintf("%s / 2", d.paren())}
	case 1: // offset
		k := g.intn(d.n)
		idx, out = fmt.Sprintf("%s + %d", v, k), dim{d.n - k, fmt.Sprintf("%s - %d", d.s, k)}
	case 2: // reversal
		idx, out = fmt.Sprintf("%s - 1 - %s", d.paren(), v), d
	case 3: // upsampling by /
		c := 2 + g.intn(2)
		idx, out = fmt.Sprintf("%s / %d", v, c), dim{d.n * c, fmt.Sprintf("%s * %d", d.paren(), c)}
	case 4: // a permutation by %
		c := 1 + g.intn(4)
		idx, out = fmt.Sprintf("(%s * %d + %d) %% %s", v, 2*c+1, c, d.paren()), d
	default: // a window: two offsets of one variable
		if d.n < 2 {
			idx, out = v, d
			break
		}
		idx, out = fmt.Sprintf("%s + 1", v), dim{d.n - 1, fmt.Sprintf("%s - 1", d.s)}
	}
	if out.n < 1 || out.n > 4*d.n || out.n*src.size()/d.n > maxElems {
		return
	}
	dims := slices.Clone(src.dims)
	dims[a] = out
	idxs := slices.Clone(vs)
	idxs[a] = idx
	body := fmt.Sprintf("%s[%s]", src.name, strings.Join(idxs, ", "))
	mag, err := src.mag, src.err
	if g.chance(0.5) {
		body += " * 2.0 + 0.5"
		mag, err = 2*mag+0.5, 2*err+2*(2*mag+0.5)
	}
	y := &tensor{name: g.fresh("t"), dims: dims, dt: "f32", mag: mag, err: err}
	where := fmt.Sprintf(" where %s in 0..%s", v, out.s)
	if g.chance(0.3) {
		where = g.whereAll(vs, dims, 1)
	}
	g.define(y, fmt.Sprintf("%s[%s] = %s%s", y.name, strings.Join(vs, ", "), body, where))
}

// padGuard defines a zero-padded copy of a tensor: the out-of-range reads
// are guarded by select.
func (g *gen) padGuard() {
	src := g.any()
	a := len(src.dims) - 1
	d := src.dims[a]
	p := 1 + g.intn(2)
	vs := vars(len(src.dims))
	v := vs[a]
	if src.size()/d.n*(d.n+2*p) > maxElems {
		return
	}
	idxs := slices.Clone(vs)
	idxs[a] = fmt.Sprintf("%s - %d", v, p)
	cond := fmt.Sprintf("%s >= %d && %s < %s + %d", v, p, v, d.paren(), p)
	if g.chance(0.3) {
		cond = fmt.Sprintf("%s - %d >= 0 && %s - %d < %s", v, p, v, p, d.s)
	}
	dims := slices.Clone(src.dims)
	dims[a] = dim{d.n + 2*p, fmt.Sprintf("%s + %d", d.s, 2*p)}
	y := &tensor{name: g.fresh("t"), dims: dims, dt: "f32", mag: src.mag, err: src.err}
	g.define(y, fmt.Sprintf("%s[%s] = select(%s, %s[%s], 0.0) where %s in 0..%s", y.name, strings.Join(vs, ", "),
		cond, src.name, strings.Join(idxs, ", "), v, dims[a].s))
}

// constBranch reads out of bounds in a branch that a compile-time
// condition removes, and in bounds in the other; the docs say the removed
// branch needs no proof.
func (g *gen) constBranch() {
	src := g.any()
	if len(src.dims) != 1 {
		return
	}
	d := src.dims[0]
	y := &tensor{name: g.fresh("t"), dims: []dim{d}, dt: "f32", mag: src.mag, err: src.err}
	g.define(y, fmt.Sprintf("%s[i] = select(%s > %d, %s[i + %d], %s[i])", y.name, d.s, d.n+5, src.name, d.n+5, src.name))
}

// mask stores a comparison of exact data as a bool tensor and selects with
// it.
func (g *gen) mask() {
	exact := g.floats(func(t *tensor) bool { return t.err == 0 && len(t.dims) > 0 })
	if len(exact) == 0 {
		return
	}
	src := pick(g, exact)
	vs := vars(len(src.dims))
	idx := strings.Join(vs, ", ")
	m := &tensor{name: g.fresh("mk"), dims: src.dims, dt: "bool"}
	g.define(m, fmt.Sprintf("%s[%s] = %s[%s] > 0.0", m.name, idx, src.name, idx))
	y := &tensor{name: g.fresh("t"), dims: src.dims, dt: "f32", mag: 2 * src.mag, err: 2 * src.mag}
	g.define(y, fmt.Sprintf("%s[%s] = select(%s[%s], %s[%s] * 2.0, 0.0 - %s[%s])", y.name, idx, m.name, idx, src.name, idx, src.name, idx))
}

// layout applies the standard library's layout functions: ravel and
// reshape, permute3, batch_matmul, pad2d and flatten.
func (g *gen) layout() {
	src := g.any()
	if src.dt != "f32" {
		return
	}
	switch len(src.dims) {
	case 2:
		a, b := src.dims[0], src.dims[1]
		y := &tensor{name: g.fresh("t"), dims: []dim{b, a}, dt: "f32", mag: src.mag, err: src.err}
		g.define(y, fmt.Sprintf("%s = reshape2(ravel2(%s), %s, %s)", y.name, src.name, b.s, a.s))
	case 3:
		d := src.dims
		if g.chance(0.5) && d[2].n <= 32 {
			w := g.placeholder([]dim{d[0], d[2], d[1]}, "f32", true)
			w.mag = 1 / math.Sqrt(float64(d[2].n*d[1].n)/float64(max(d[0].n, d[1].n, d[2].n)))
			L := float64(d[2].n)
			y := &tensor{name: g.fresh("t"), dims: []dim{d[0], d[1], d[1]}, dt: "f32"}
			y.mag = L * src.mag * w.mag
			y.err = L*src.err*w.mag + L*L*src.mag*w.mag + y.mag
			g.define(y, fmt.Sprintf("%s = batch_matmul(%s, %s)", y.name, src.name, w.name))
			return
		}
		perm := pick(g, [][3]int{{0, 2, 1}, {1, 0, 2}, {2, 1, 0}, {1, 2, 0}})
		dims := []dim{d[perm[0]], d[perm[1]], d[perm[2]]}
		y := &tensor{name: g.fresh("t"), dims: dims, dt: "f32", mag: src.mag, err: src.err}
		g.define(y, fmt.Sprintf("%s = permute3(%s, %d, %d, %d)", y.name, src.name, perm[0], perm[1], perm[2]))
	case 4:
		d := src.dims
		if (d[2].n+2)*(d[3].n+2)*d[0].n*d[1].n > maxElems {
			return
		}
		p := &tensor{name: g.fresh("t"), dims: []dim{d[0], d[1], {d[2].n + 2, d[2].s + " + 2"}, {d[3].n + 2, d[3].s + " + 2"}}, dt: "f32", mag: src.mag, err: src.err}
		g.define(p, fmt.Sprintf("%s = pad2d(%s, 1)", p.name, src.name))
		y := &tensor{name: g.fresh("t"), dims: []dim{d[0], {p.size() / d[0].n, fmt.Sprint(p.size() / d[0].n)}}, dt: "f32", mag: src.mag, err: src.err}
		g.define(y, fmt.Sprintf("%s = flatten(%s)", y.name, p.name))
	}
}

// rangeBranch writes guards whose condition the variables' ranges decide:
// a branch that can never be taken reads out of bounds (the checker proves
// nothing about it), and a piecewise definition (a concatenation by
// select) is read at a constant index, so that inlining it leaves a
// constant condition and an out-of-bounds constant index in the other
// branch.
func (g *gen) rangeBranch() {
	src := g.any()
	if len(src.dims) != 1 {
		return
	}
	d := src.dims[0]
	if g.chance(0.5) {
		// i ranges over 0..n with n <= k: i - k >= 0 never holds
		n := 1 + g.intn(min(d.n, 4))
		k := n + g.intn(2)
		y := &tensor{name: g.fresh("t"), dims: []dim{{n, fmt.Sprint(n)}}, dt: "f32", mag: src.mag, err: src.err}
		g.define(y, fmt.Sprintf("%s[i] = select(i - %d >= 0, %s[i - %d], %s[i]) where i in 0..%d", y.name, k, src.name, k, src.name, n))
		return
	}
	other := g.any()
	if len(other.dims) != 1 {
		return
	}
	e := other.dims[0]
	c := &tensor{name: g.fresh("t"), dims: []dim{{d.n + e.n, fmt.Sprintf("%s + %s", d.s, e.s)}}, dt: "f32", mag: max(src.mag, other.mag), err: max(src.err, other.err)}
	g.define(c, fmt.Sprintf("%s[i] = select(i < %s, %s[i], %s[i - %s]) where i in 0..%s", c.name, d.s, src.name, other.name, d.paren(), c.dims[0].s))
	at := g.intn(c.dims[0].n)
	y := &tensor{name: g.fresh("t"), dims: []dim{d}, dt: "f32", mag: c.mag + src.mag, err: c.err + src.err + c.mag + src.mag}
	g.define(y, fmt.Sprintf("%s[i] = %s[%d] + %s[i]", y.name, c.name, at, src.name))
}

// reduction reduces a tensor over one or several axes with sum, max, min
// or prod (prod over short axes of values at most 1, which cannot
// overflow).
func (g *gen) reduction() {
	src := g.any()
	r := len(src.dims)
	vs := vars(r)
	op := pick(g, []string{"sum", "sum", "max", "min", "prod"})
	// reduce the trailing axes from k on
	k := g.intn(r)
	if g.chance(0.3) {
		k = r - 1
	}
	L := 1
	for _, d := range src.dims[k:] {
		L *= d.n
	}
	body := g.access(src, vs)
	if op == "prod" {
		if L > 12 || src.size() > 12*len(src.dims) {
			op = "sum"
		} else {
			body = val{s: "tanh(" + body.s + ")", mag: 1, err: body.err*1.2 + 2}
		}
	}
	if op == "sum" && g.chance(0.3) {
		other := g.leaf(src.dims, vs)
		other = g.tame(other)
		body = val{s: paren(body.s) + " * " + paren(other.s), mag: body.mag * other.mag, err: body.err*other.mag + other.err*body.mag + body.mag*other.mag}
	}
	red, out := vs[k:], vs[:k]
	dims := src.dims[:k]
	if k == r-1 && r >= 2 && g.chance(0.3) {
		// reduce the leading axis instead
		red, out = vs[:1], vs[1:]
		dims = src.dims[1:]
		L = src.dims[0].n
	}
	var mag, err float64
	switch op {
	case "sum": // sequential summation: (L-1)·u·Σ|terms| plus the terms' errors
		mag, err = float64(L)*body.mag, float64(L)*body.err+float64(L*L)*body.mag
	case "prod": // L roundings of products of factors at most 1
		mag, err = 1, float64(L)*(body.err+2)
	default:
		mag, err = body.mag, body.err
	}
	s := fmt.Sprintf("%s[%s](%s)", op, strings.Join(red, ", "), body.s)
	if op == "sum" && g.chance(0.5) {
		s = fmt.Sprintf("%s / %d", s, L)
		mag, err = mag/float64(L), err/float64(L)+2*mag/float64(L)
	}
	y := &tensor{name: g.fresh("t"), dims: dims, dt: "f32", mag: mag, err: err + mag}
	where := g.wherePartial(body.s, vs, src.dims, 0.3)
	if len(out) == 0 {
		g.define(y, fmt.Sprintf("%s = %s%s", y.name, s, where))
		return
	}
	g.define(y, fmt.Sprintf("%s[%s] = %s%s", y.name, strings.Join(out, ", "), s, where))
}

// contraction defines c[i, j] = sum[k](a[i, k] * b[k, j]) on a tensor in
// scope and a new param, with operand axes sometimes reversed.
func (g *gen) contraction() {
	a := g.rank2()
	K := a.dims[1]
	N := g.newDim(pick(g, sizes))
	if a.dims[0].n*N.n > maxElems || K.n > 64 {
		N = g.newDim(3)
	}
	var w *tensor
	for _, t := range g.ts {
		if t.param && len(t.dims) == 2 && t.dims[0].n == K.n && t.dt == "f32" && a.dims[0].n*t.dims[1].n <= maxElems && g.chance(0.6) {
			w, N = t, t.dims[1] // reuse a weight, as matrix-vector chains and RNN steps do
			break
		}
	}
	if w == nil {
		w = g.placeholder([]dim{K, N}, "f32", true)
	}
	ai, bi := "k", "k"
	if g.chance(0.25) {
		ai = fmt.Sprintf("%s - 1 - k", K.paren())
	}
	if g.chance(0.15) {
		bi = fmt.Sprintf("%s - 1 - k", K.paren())
	}
	wm := paramMag(w.dims)
	w.mag = wm
	L := float64(K.n)
	mag := L * a.mag * wm
	err := L*a.err*wm + L*L*a.mag*wm
	y := &tensor{name: g.fresh("t"), dims: []dim{a.dims[0], N}, dt: "f32", mag: mag, err: err + mag}
	where := ""
	if ai != "k" && bi != "k" {
		where = " where k in 0.." + K.s
	}
	switch g.intn(4) {
	case 0: // the transposed product, the weight's columns indexing rows: y[j, i]
		y.dims = []dim{N, a.dims[0]}
		g.define(y, fmt.Sprintf("%s[j, i] = sum[k](%s[%s, j] * %s[i, %s])%s", y.name, w.name, bi, a.name, ai, where))
		return
	case 1: // the weight on the left, the activation transposed: y[i, j] = w·aᵀ
		if N.n != K.n {
			break // the weight must be square
		}
		y.dims = []dim{K, a.dims[0]}
		g.define(y, fmt.Sprintf("%s[i, j] = sum[k](%s[i, %s] * %s[j, %s])%s", y.name, w.name, bi, a.name, ai, where))
		return
	}
	g.define(y, fmt.Sprintf("%s[i, j] = sum[k](%s[i, %s] * %s[%s, j])%s", y.name, a.name, ai, w.name, bi, where))
}

// largeContraction defines y[i, j] = f(sum[k](a[i, k] * w[k, j]) + b[j])
// with M, N and K of at least 16 (an input a, a new param w, sometimes a
// bias and a GELU or tanh): large enough for the tensor-core kernels at
// --precision f16, bf16 and tf32.
func (g *gen) largeContraction() {
	// up to 64 (several 64-wide tiles) in a campaign of the precision
	// focus, up to 33 otherwise (a simulation of a few milliseconds)
	mn, ks := []int{16, 17, 24, 32, 33}, []int{16, 17, 24, 32}
	if g.focus == FocusPrecision {
		mn, ks = []int{16, 17, 24, 32, 33, 48, 64}, []int{16, 17, 24, 32, 40, 48, 64}
	}
	var M, N dim
	for {
		M, N = g.newDim(pick(g, mn)), g.newDim(pick(g, mn))
		if M.n*N.n <= maxElems {
			break
		}
	}
	K := g.newDim(pick(g, ks))
	a := g.placeholder([]dim{M, K}, "f32", false)
	w := g.placeholder([]dim{K, N}, "f32", true)
	w.mag = paramMag(w.dims)
	L := float64(K.n)
	v := val{s: fmt.Sprintf("sum[k](%s[i, k] * %s[k, j])", a.name, w.name), mag: L * w.mag}
	v.err = L*L*w.mag + v.mag
	if g.chance(0.5) {
		b := g.placeholder([]dim{N}, "f32", true)
		v = val{s: fmt.Sprintf("%s + %s[j]", v.s, b.name), mag: v.mag + 1, err: v.err + v.mag + 1}
	}
	switch g.intn(3) {
	case 0:
		v = val{s: "gelu(" + v.s + ")", mag: v.mag + 1, err: 2*v.err + 8*(v.mag+1)}
	case 1:
		v = val{s: "tanh(" + v.s + ")", mag: 1, err: 1.2*v.err + 2}
	}
	y := &tensor{name: g.fresh("t"), dims: []dim{M, N}, dt: "f32", mag: v.mag, err: v.err + v.mag}
	g.define(y, fmt.Sprintf("%s[i, j] = %s", y.name, v.s))
	g.mustOut = append(g.mustOut, y) // not eliminated as dead code
}

// cast stores an expression in f16 or bf16; the reference rounds there too.
func (g *gen) cast() {
	src := g.any()
	vs := vars(len(src.dims))
	v := g.tame(g.expr(src.dims, vs, 1))
	if !strings.Contains(v.s, "[") {
		v = g.access(src, vs)
	}
	dt := pick(g, []string{"f16", "bf16", "f32"})
	y := &tensor{name: g.fresh("h"), dims: src.dims, dt: dt, mag: v.mag, err: v.err + v.mag*storageULP[dt]}
	g.define(y, fmt.Sprintf("%s[%s] = %s(%s)%s", y.name, strings.Join(vs, ", "), dt, v.s, g.wherePartial(v.s, vs, src.dims, 0.2)))
	// use it in f32 arithmetic
	z := &tensor{name: g.fresh("t"), dims: src.dims, dt: "f32", mag: y.mag + src.mag, err: y.err + src.err + y.mag + src.mag}
	g.define(z, fmt.Sprintf("%s[%s] = %s[%s] + %s", z.name, strings.Join(vs, ", "), y.name, strings.Join(vs, ", "), g.access(src, vs).s))
}

// fill defines a constant tensor with full, zeros or ones and adds it to a
// tensor in scope.
func (g *gen) fill() {
	src := g.any()
	dt := pick(g, []string{"f32", "f16", "bf16"})
	c := &tensor{name: g.fresh("c"), dims: src.dims, dt: dt, mag: 1}
	shape := c.shapeText()
	switch g.intn(3) {
	case 0:
		v := pick(g, []float64{0.3, 0.7, 0.1, 1.5})
		g.define(c, fmt.Sprintf("%s = full(%s, %s)", c.name, shape, float(v)))
		c.mag = v
	case 1:
		g.define(c, fmt.Sprintf("%s = zeros(%s)", c.name, shape))
	default:
		g.define(c, fmt.Sprintf("%s = ones(%s)", c.name, shape))
	}
	y := &tensor{name: g.fresh("t"), dims: src.dims, dt: "f32", mag: src.mag * 2.5, err: src.err*1.5 + 2.5*src.mag}
	g.define(y, fmt.Sprintf("%s = %s * %s + %s", y.name, src.name, c.name, src.name))
}

// wholeExpr combines whole tensors of one shape with element-wise operators
// and scalar functions.
func (g *gen) wholeExpr() {
	a := g.any()
	same := g.floats(func(t *tensor) bool {
		return slices.EqualFunc(t.dims, a.dims, func(x, y dim) bool { return x.n == y.n })
	})
	b := pick(g, same)
	am, bm := min(a.mag, 4), min(b.mag, 4)
	as, bs := a.name, b.name
	if a.mag > 4 {
		as = "tanh(" + as + ")"
	}
	if b.mag > 4 {
		bs = "tanh(" + bs + ")"
	}
	f := pick(g, []string{"relu", "gelu", "swish", "tanh", "sigmoid"})
	y := &tensor{name: g.fresh("t"), dims: a.dims, dt: "f32", mag: am*bm + am + 1, err: 4 * (a.err + b.err + 4*(am*bm+am+1))}
	g.define(y, fmt.Sprintf("%s = %s(%s * %s + %s)", y.name, f, as, bs, as))
}

// stdlibCall applies a function of the standard library to a rank-2 f32
// tensor in scope.
func (g *gen) stdlibCall() {
	x := g.rank2()
	M, N := x.dims[0], x.dims[1]
	xs := x.name
	xm, xe := x.mag, x.err
	if x.mag > 4 {
		y := &tensor{name: g.fresh("t"), dims: x.dims, dt: "f32", mag: 1, err: x.err + 2}
		g.define(y, fmt.Sprintf("%s = tanh(%s)", y.name, x.name))
		xs, xm, xe = y.name, 1, y.err
	}
	Lf := float64(N.n)
	switch g.intn(8) {
	case 0: // softmax: outputs in [0, 1]; exp of x - max amplifies x's error by at most 2 per element
		y := &tensor{name: g.fresh("t"), dims: x.dims, dt: "f32", mag: 1, err: 4*xe + 8*Lf + 8}
		g.define(y, fmt.Sprintf("%s = softmax(%s)", y.name, xs))
	case 1: // layernorm with eps 0.25: 1/√(var + eps) ≤ 2
		gn := g.placeholder([]dim{N}, "f32", true)
		bn := g.placeholder([]dim{N}, "f32", true)
		m := 2*2*xm + 1
		y := &tensor{name: g.fresh("t"), dims: x.dims, dt: "f32", mag: m, err: 16*(xe+4*Lf*xm) + 8*m}
		g.define(y, fmt.Sprintf("%s = layernorm(%s, %s, %s, 0.25)", y.name, xs, gn.name, bn.name))
	case 2, 3: // linear or matmul
		if N.n > 64 {
			return
		}
		O := g.newDim(pick(g, sizes))
		if M.n*O.n > maxElems {
			return
		}
		w := g.placeholder([]dim{N, O}, "f32", true)
		w.mag = paramMag(w.dims)
		m := Lf*xm*w.mag + 1
		y := &tensor{name: g.fresh("t"), dims: []dim{M, O}, dt: "f32", mag: m, err: Lf*xe*w.mag + Lf*Lf*xm*w.mag + 2*m}
		if g.chance(0.5) {
			b := g.placeholder([]dim{O}, "f32", true)
			g.define(y, fmt.Sprintf("%s = linear(%s, %s, %s)", y.name, xs, w.name, b.name))
		} else {
			g.define(y, fmt.Sprintf("%s = matmul(%s, %s)", y.name, xs, w.name))
		}
	case 4: // transpose
		y := &tensor{name: g.fresh("t"), dims: []dim{N, M}, dt: "f32", mag: xm, err: xe}
		g.define(y, fmt.Sprintf("%s = transpose(%s)", y.name, xs))
	case 5: // slice and concat along an axis
		axis := g.intn(2)
		d := x.dims[axis]
		if d.n < 2 {
			return
		}
		lo := g.intn(d.n - 1)
		hi := lo + 1 + g.intn(d.n-lo-1)
		dims := slices.Clone(x.dims)
		dims[axis] = dim{hi - lo, fmt.Sprint(hi - lo)}
		s := &tensor{name: g.fresh("t"), dims: dims, dt: "f32", mag: xm, err: xe}
		g.define(s, fmt.Sprintf("%s = slice2(%s, %d, %d, %d)", s.name, xs, axis, lo, hi))
		cd := slices.Clone(x.dims)
		cd[axis] = dim{d.n + hi - lo, fmt.Sprint(d.n + hi - lo)}
		if cd[0].n*cd[1].n > maxElems {
			return
		}
		c := &tensor{name: g.fresh("t"), dims: cd, dt: "f32", mag: xm, err: xe}
		g.define(c, fmt.Sprintf("%s = concat2(%s, %s, %d)", c.name, s.name, xs, axis))
	case 6: // an MLP: linear, gelu, linear
		if N.n > 64 {
			return
		}
		H := g.newDim(pick(g, []int{5, 8, 12, 16}))
		w1 := g.placeholder([]dim{N, H}, "f32", true)
		b1 := g.placeholder([]dim{H}, "f32", true)
		w2 := g.placeholder([]dim{H, N}, "f32", true)
		h := g.fresh("t")
		m1 := math.Sqrt(Lf)*xm + 1
		m := math.Sqrt(float64(H.n)) * (m1 + 1)
		y := &tensor{name: g.fresh("t"), dims: x.dims, dt: "f32", mag: m, err: 8 * (Lf*xe + Lf*Lf*xm + float64(H.n*H.n)*m1 + 4*m)}
		g.define(y, fmt.Sprintf("%s = gelu(linear(%s, %s, %s))\n  %s = matmul(%s, %s)", h, xs, w1.name, b1.name, y.name, h, w2.name))
	default: // layernorm then softmax
		gn := g.placeholder([]dim{N}, "f32", true)
		bn := g.placeholder([]dim{N}, "f32", true)
		n := g.fresh("t")
		y := &tensor{name: g.fresh("t"), dims: x.dims, dt: "f32", mag: 1, err: 64*(16*(xe+4*Lf*xm)+8*(4*xm+1)) + 8*Lf}
		g.define(y, fmt.Sprintf("%s = layernorm(%s, %s, %s, 0.5)\n  %s = softmax(tanh(%s))", n, xs, gn.name, bn.name, y.name, n))
	}
}

// rnnLoop unrolls a few steps of an RNN cell (or an LSTM-like gated cell)
// with a compile-time loop over a sequence input.
func (g *gen) rnnLoop() {
	T := g.newDim(2 + g.intn(3))
	B := g.newDim(1 + g.intn(3))
	H := g.newDim(pick(g, []int{3, 5, 8, 12}))
	xs := g.placeholder([]dim{T, B, H}, "f32", false)
	w := g.placeholder([]dim{H, H}, "f32", true)
	uu := g.placeholder([]dim{H, H}, "f32", true)
	h := g.fresh("h")
	y := &tensor{name: g.fresh("t"), dims: []dim{B, H}, dt: "f32", mag: 1}
	Hf, Tf := float64(H.n), float64(T.n)
	// each step: two contractions of length H of values at most 1 (weights
	// 1/√H), then tanh; errors add up over the steps
	y.err = Tf * 4 * (2*Hf*Hf + 8)
	step := fmt.Sprintf("%s[n, j] = tanh(sum[k](%s[t, n, k] * %s[k, j]) + sum[k](%s[n, k] * %s[k, j]))", h, xs.name, w.name, h, uu.name)
	if g.chance(0.4) {
		step = fmt.Sprintf("%s[n, j] = %s[n, j] * sigmoid(sum[k](%s[t, n, k] * %s[k, j])) + tanh(sum[k](%s[n, k] * %s[k, j])) * 0.5", h, h, xs.name, w.name, h, uu.name)
		y.mag = 1 + Tf*0.5
		y.err *= 2
	}
	g.define(y, fmt.Sprintf("%s = zeros(f32[%s, %s])\n  for t in 0..%s {\n    %s\n  }\n  %s = %s * 1.0", h, B.s, H.s, T.s, step, y.name, h))
}

// lstmStack is the LSTM example's motif: a function with two results,
// lists of states replaced element by element, nested loops over steps and
// layers, views of a stacked weight.
func (g *gen) lstmStack() {
	T := g.newDim(1 + g.intn(3))
	L := g.newDim(1 + g.intn(2))
	B := g.newDim(1 + g.intn(2))
	H := g.newDim(pick(g, []int{3, 4, 6, 8}))
	xs := g.placeholder([]dim{T, B, H}, "f32", false)
	W := g.placeholder([]dim{L, {4, "4"}, H, H}, "f32", true)
	cell := g.fresh("cell")
	g.fns = append(g.fns, fmt.Sprintf(`fn %s(x: f32[Bs, Hs], h: f32[Bs, Hs], c: f32[Bs, Hs], W: f32[4, Hs, Hs]) -> (f32[Bs, Hs], f32[Bs, Hs]) {
  g[q, n, j] = sum[k](x[n, k] * W[q, k, j]) + sum[k](h[n, k] * W[q, k, j])
  c2[n, j] = c[n, j] * sigmoid(g[2, n, j]) + sigmoid(g[0, n, j]) * tanh(g[1, n, j])
  h2[n, j] = tanh(c2[n, j]) * sigmoid(g[3, n, j])
  return h2, c2
}`, cell))
	hs, cs, inp := g.fresh("hs"), g.fresh("cs"), g.fresh("inp")
	y := &tensor{name: g.fresh("t"), dims: []dim{B, H}, dt: "f32", mag: 1}
	// h is at most 1 and c at most T in magnitude; the gates' arguments
	// are contractions of length H, whose rounding errors tanh and sigmoid
	// pass on at most unchanged, and c carries them over the steps
	Tf, Hf, Lf := float64(T.n), float64(H.n), float64(L.n)
	y.err = 8 * Tf * Lf * (Tf + 1) * (4*Hf*Hf + 16)
	g.define(y, fmt.Sprintf(`%s = [zeros(f32[%s, %s]) for ly in 0..%s]
  %s = [zeros(f32[%s, %s]) for ly in 0..%s]
  for st in 0..%s {
    %s = %s[st]
    for ly in 0..%s {
      %s[ly], %s[ly] = %s(%s, %s[ly], %s[ly], %s[ly])
      %s = %s[ly]
    }
  }
  %s = %s[len(%s) - 1] * 1.0`, hs, B.s, H.s, L.s, cs, B.s, H.s, L.s, T.s, inp, xs.name, L.s,
		hs, cs, cell, inp, hs, cs, W.name, inp, hs, y.name, hs, hs))
}

// twoChains is two independent chains of two matrix products, the second
// on a transposed weight of the first, both output: the shape horizontal
// fusion batches.
func (g *gen) twoChains() {
	M := g.newDim(pick(g, []int{1, 2, 5, 8, 16}))
	K := g.newDim(pick(g, []int{4, 8, 12, 16}))
	N := g.newDim(pick(g, []int{3, 8, 16, 24}))
	x := g.placeholder([]dim{M, K}, "f32", false)
	w1 := g.placeholder([]dim{K, N}, "f32", true)
	w2 := g.placeholder([]dim{N, K}, "f32", true)
	w3 := g.placeholder([]dim{N, K}, "f32", true)
	w4 := g.placeholder([]dim{K, N}, "f32", true)
	a, tr, c := g.fresh("t"), g.fresh("t"), g.fresh("t")
	b := &tensor{name: g.fresh("t"), dims: []dim{M, K}, dt: "f32"}
	d := &tensor{name: g.fresh("t"), dims: []dim{K, N}, dt: "f32"}
	// each product of length L with factors at most m and 1/√L-scaled
	// weights: magnitude √L·m, error L·(err·w + L·m·w)
	Kf, Nf := float64(K.n), float64(N.n)
	am := math.Sqrt(Kf)
	b.mag = math.Sqrt(Nf) * am
	b.err = 4 * (Nf*Kf*Kf*paramMag(w1.dims) + Nf*Nf*am + b.mag)
	cm := Nf * paramMag(w2.dims) * paramMag(w3.dims) * Nf
	d.mag = Kf * cm * paramMag(w4.dims)
	d.err = 4 * (Kf*Nf*Nf + Kf*Kf*cm + d.mag)
	g.define(b, fmt.Sprintf("%s = matmul(%s, %s)\n  %s = matmul(%s, %s)", a, x.name, w1.name, b.name, a, w2.name))
	g.define(d, fmt.Sprintf("%s[i, j] = %s[j, i]\n  %s = matmul(%s, %s)\n  %s = matmul(%s, %s)", tr, w2.name, c, tr, w3.name, d.name, c, w4.name))
	g.mustOut = append(g.mustOut, b, d)
}

// attention is scaled dot-product attention over one head.
func (g *gen) attention() {
	S := g.newDim(pick(g, []int{3, 5, 7, 8, 12}))
	D := g.newDim(pick(g, []int{4, 6, 8, 16}))
	q := g.placeholder([]dim{S, D}, "f32", false)
	k := g.placeholder([]dim{S, D}, "f32", false)
	v := g.placeholder([]dim{S, D}, "f32", false)
	Df, Sf := float64(D.n), float64(S.n)
	sc, p := g.fresh("t"), g.fresh("t")
	y := &tensor{name: g.fresh("t"), dims: []dim{S, D}, dt: "f32", mag: 1}
	// scores ≤ D/√D = √D; softmax amplifies their error by at most 2
	y.err = Sf*(4*Df*Df+8*Sf) + Sf*Sf
	g.define(y, fmt.Sprintf("%s[a, b] = sum[e](%s[a, e] * %s[b, e]) * rsqrt(%d.0)\n  %s = softmax(%s)\n  %s = matmul(%s, %s)",
		sc, q.name, k.name, D.n, p, sc, y.name, p, v.name))
}

// maskedContraction is a contraction under a select on its output indexes
// (a causal, padding or band mask, the contraction in either branch) or on
// exact data read at them: a masked epilogue of a tiled contraction, whose
// tiles the mask removes compute no products.
func (g *gen) maskedContraction() {
	a := g.rank2()
	M, K := a.dims[0], a.dims[1]
	N := g.newDim(pick(g, sizes))
	if M.n*N.n > maxElems || K.n > 64 {
		return
	}
	w := g.placeholder([]dim{K, N}, "f32", true)
	wm := paramMag(w.dims)
	w.mag = wm
	L := float64(K.n)
	mag := L * a.mag * wm
	err := L*a.err*wm + L*L*a.mag*wm + mag
	sum := fmt.Sprintf("sum[k](%s[i, k] * %s[k, j])", a.name, w.name)
	if g.chance(0.3) { // scaled inside the select
		sum += " * 0.5"
		mag, err = mag*0.5, err*0.5+mag
	}
	other := pick(g, []val{{s: "0.0"}, {s: "-3.0", mag: 3}, {s: "1.5", mag: 1.5}})
	if g.chance(0.3) {
		other = g.tame(g.expr([]dim{M, N}, []string{"i", "j"}, 1))
	}
	c := 1 + g.intn(N.n)
	conds := []string{"j <= i", fmt.Sprintf("j < %d", c), fmt.Sprintf("j <= i && i - j < %d", 1+g.intn(max(M.n, 1))),
		fmt.Sprintf("i >= %d || j < %d", g.intn(M.n+1), c), "2 * j > i + 1"}
	exact := g.floats(func(t *tensor) bool {
		return t.err == 0 && len(t.dims) == 2 && t.dims[0].n == M.n && t.dims[1].n == N.n
	})
	if len(exact) > 0 {
		conds = append(conds, pick(g, exact).name+"[i, j] > 0.0")
	}
	cond := pick(g, conds)
	if g.chance(0.3) {
		cond = g.runtimeMask(M, N)
	}
	body := fmt.Sprintf("select(%s, %s, %s)", cond, sum, other.s)
	if g.chance(0.3) { // the contraction in the else branch
		body = fmt.Sprintf("select(!(%s), %s, %s)", cond, other.s, sum)
	}
	y := &tensor{name: g.fresh("t"), dims: []dim{M, N}, dt: "f32", mag: max(mag, other.mag), err: max(err, other.err)}
	g.define(y, fmt.Sprintf("%s[i, j] = %s", y.name, body))
}

// runtimeMask returns a condition on the output indexes i and j of an
// M×N contraction and a run-time scalar, an i32 input whose values the
// program gives in a "# feed" line (any, the limits included: it is never
// an index): the tiles a compile-time condition lets the lowering skip
// depend here on a value known only when the kernel runs.
func (g *gen) runtimeMask(M, N dim) string {
	lim := g.fresh("lim")
	n, at := 1, lim+"[0]"
	if g.chance(0.5) {
		n, at = M.n, lim+"[i]"
	}
	g.decls = append(g.decls, fmt.Sprintf("input %s: i32[%d]", lim, n))
	vs := make([]string, n)
	for k := range vs {
		vs[k] = fmt.Sprint(pick(g, []int{0, N.n, g.intn(N.n + 1), g.intn(N.n + 1)}))
	}
	g.feeds = append(g.feeds, fmt.Sprintf("# feed %s %s", lim, strings.Join(vs, " ")))
	return pick(g, []string{"j < " + at, "j <= i + " + at, "j >= " + at + " && j <= i", "i + j < " + at + " + 3"})
}

// causalAttention is scaled dot-product attention over one head with a
// causal mask written as users write it: a select around the scores'
// contraction, then a softmax.
func (g *gen) causalAttention() {
	S := g.newDim(pick(g, []int{5, 12, 17, 24, 33, 40}))
	D := g.newDim(pick(g, []int{4, 6, 8, 16}))
	q := g.placeholder([]dim{S, D}, "f32", false)
	k := g.placeholder([]dim{S, D}, "f32", false)
	v := g.placeholder([]dim{S, D}, "f32", false)
	Df, Sf := float64(D.n), float64(S.n)
	sc, p := g.fresh("t"), g.fresh("t")
	y := &tensor{name: g.fresh("t"), dims: []dim{S, D}, dt: "f32", mag: 1}
	y.err = Sf*(4*Df*Df+8*Sf) + Sf*Sf // as attention's
	g.define(y, fmt.Sprintf("%s[a, b] = select(b <= a, sum[e](%s[a, e] * %s[b, e]) * rsqrt(%d.0), -1e30)\n  %s = softmax(%s)\n  %s = matmul(%s, %s)",
		sc, q.name, k.name, D.n, p, sc, y.name, p, v.name))
}

// conv applies a small convolution (plain, depthwise or grouped), then a
// pooling, to an NCHW input.
func (g *gen) conv() {
	N := g.newDim(1 + g.intn(2))
	// groups of a grouped convolution: 2 or 3 of 1 or 2 input channels,
	// of 2 output channels (point by point) or 8 (a batched contraction
	// from -O3, pipeline's groups pass)
	groups, inGroup, outGroup := 1, 1, 1
	if g.chance(0.25) {
		groups, inGroup, outGroup = pick(g, []int{2, 3}), pick(g, []int{1, 2}), pick(g, []int{2, 8})
	}
	channels := groups * inGroup
	if groups == 1 {
		channels = pick(g, []int{1, 2, 3, 4})
	}
	C := g.newDim(channels)
	Hn := pick(g, []int{5, 6, 7, 9})
	H, W := g.newDim(Hn), g.newDim(pick(g, []int{5, 6, 8}))
	x := g.placeholder([]dim{N, C, H, W}, "f32", false)
	kk := pick(g, []int{1, 2, 3})
	stride, pad := 1+g.intn(2), g.intn(2)
	var stmt string
	var L float64
	y := g.fresh("t")
	if groups > 1 {
		w := g.placeholder([]dim{g.newDim(groups * outGroup), g.newDim(inGroup), g.newDim(kk), g.newDim(kk)}, "f32", true)
		stmt = fmt.Sprintf("%s = conv2d(%s, %s, %d, %d, 1, %d)", y, x.name, w.name, stride, pad, groups)
		L = float64(inGroup * kk * kk)
	} else if g.chance(0.4) {
		w := g.placeholder([]dim{C, g.newDim(1), g.newDim(kk), g.newDim(kk)}, "f32", true)
		stmt = fmt.Sprintf("%s = depthwise_conv2d(%s, %s, %d, %d)", y, x.name, w.name, stride, pad)
		L = float64(kk * kk)
	} else {
		O := g.newDim(pick(g, []int{2, 3, 4}))
		w := g.placeholder([]dim{O, C, g.newDim(kk), g.newDim(kk)}, "f32", true)
		stmt = fmt.Sprintf("%s = conv2d(%s, %s, %d, %d, 1, 1)", y, x.name, w.name, stride, pad)
		L = float64(C.n * kk * kk)
	}
	oh := (H.n+2*pad-kk)/stride + 1
	ow := (W.n+2*pad-kk)/stride + 1
	if oh < 2 || ow < 2 {
		return
	}
	pool := pick(g, []string{"max_pool2d", "avg_pool2d", "global_avg_pool2d"})
	pooled := g.fresh("t")
	call := fmt.Sprintf("%s = %s(%s, 2, 1, 0)", pooled, pool, y)
	axes := "a, b, c, d"
	if pool == "global_avg_pool2d" {
		call = fmt.Sprintf("%s = global_avg_pool2d(%s)", pooled, y)
		axes = "a, b"
	}
	// the conv's outputs are at most L (weights at most 1); a rank-0 sum of
	// the pooled values keeps the generator's shape bookkeeping simple
	n := float64(N.n * 4 * oh * ow)
	s := &tensor{name: g.fresh("t"), dt: "f32", mag: L * n / 4}
	s.err = (4*(L*L+4*L) + n*L) * n / 4
	g.define(s, fmt.Sprintf("%s\n  %s\n  %s = sum[%s](%s[%s]) / 4.0", stmt, call, s.name, axes, pooled, axes))
}

// listStack builds a list by a comprehension and stacks it.
func (g *gen) listStack() {
	src := g.any()
	if len(src.dims) > 2 || src.size()*4 > maxElems {
		return
	}
	L := 2 + g.intn(3)
	name := g.fresh("t")
	dims := append([]dim{{L, fmt.Sprint(L)}}, src.dims...)
	y := &tensor{name: g.fresh("t"), dims: dims, dt: "f32", mag: src.mag * (1 + float64(L)*0.5), err: (src.err + src.mag) * (1 + float64(L)*0.5) * 2}
	g.define(y, fmt.Sprintf("%s = [%s * (1.0 + q * 0.5) for q in 0..%d]\n  %s = stack(%s)", name, src.name, L, y.name, name))
}

// tensorFn declares a tensor function with shape symbols and calls it.
func (g *gen) tensorFn() {
	x := g.rank2()
	if x.mag > 4 {
		return
	}
	name := g.fresh("tf")
	g.fns = append(g.fns, fmt.Sprintf("fn %s(x: f32[Rs, Qs], s: float) -> f32[Rs, Qs] {\n  r[a] = max[b](x[a, b])\n  y[a, b] = (x[a, b] - r[a]) * s + x[a, Qs - 1 - b]\n  return y\n}", name))
	m := 3 * x.mag
	y := &tensor{name: g.fresh("t"), dims: x.dims, dt: "f32", mag: m, err: 4*x.err + 4*m}
	g.define(y, fmt.Sprintf("%s = %s(%s, 0.5)", y.name, name, x.name))
}

// finish chooses the outputs and renders the file.
func (g *gen) finish(seed uint64) *Program {
	var cands []*tensor
	for _, t := range g.ts {
		if !t.placeholder {
			cands = append(cands, t)
		}
	}
	if len(cands) == 0 {
		cands = g.floats(nil)
	}
	nout := 1 + g.intn(min(3, len(cands)))
	outs := []*tensor{cands[len(cands)-1]}
	for _, t := range g.mustOut {
		if !slices.Contains(outs, t) {
			outs = append(outs, t)
		}
	}
	for len(outs) < nout {
		t := pick(g, cands)
		if !slices.Contains(outs, t) {
			outs = append(outs, t)
		}
	}
	p := &Program{Seed: seed, Atol: map[string]float64{}}
	var b strings.Builder
	fmt.Fprintf(&b, "# progfuzz seed %d\n", seed)
	if g.mode == "f16" && g.maxMag > halfSafe {
		g.mode = "bf16" // f32's exponent range
	}
	if g.mode != "" {
		fmt.Fprintf(&b, "# precision %s\n", g.mode)
	}
	for _, o := range outs {
		p.Atol[o.name] = Tolerance(o.mag, o.err)
		fmt.Fprintf(&b, "# tol %s %g\n", o.name, p.Atol[o.name])
	}
	for _, name := range slices.Sorted(maps.Keys(g.updTol)) {
		p.Atol[name] = g.updTol[name]
		fmt.Fprintf(&b, "# tol %s %g\n", name, p.Atol[name])
	}
	for _, f := range g.feeds {
		b.WriteString(f + "\n")
	}
	if g.expect != "" {
		fmt.Fprintf(&b, "# expect outside %s\n", g.expect)
	}
	for _, c := range g.consts {
		b.WriteString(c + "\n")
	}
	for _, f := range g.fns {
		b.WriteString(f + "\n")
	}
	b.WriteString("\nmodel m {\n")
	for _, d := range g.decls {
		b.WriteString("  " + d + "\n")
	}
	for _, s := range g.body {
		b.WriteString("  " + s + "\n")
	}
	names := make([]string, len(outs))
	for i, o := range outs {
		names[i] = o.name
	}
	b.WriteString("  output " + strings.Join(names, ", ") + "\n}\n")
	p.Src = []byte(b.String())
	return p
}

// Tolerance returns the absolute tolerance of an output whose elements are
// at most mag in magnitude with an error bound of err units of u: twice the
// bound (the bounds are derived for one evaluation order; the simulator's
// tree reductions and atomics reorder), plus the final rounding, plus a
// floor of 2^-40 for outputs that are exactly zero.
func Tolerance(mag, err float64) float64 {
	return 2*(err+mag)*u + 0x1p-40
}
