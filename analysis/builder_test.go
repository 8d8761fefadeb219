package analysis

import (
	"math/rand/v2"
	"testing"

	tb "tec/internal/testkit/tebuild"
	"tec/te"
)

// builder assembles programs for tests; see package tebuild.
type builder struct{ *tb.Builder }

func newBuilder(name string) *builder { return &builder{tb.New(name)} }

func (b *builder) input(name string, shape ...int) *te.Tensor { return b.Input(name, shape...) }
func (b *builder) param(name string, shape ...int) *te.Tensor { return b.Param(name, shape...) }

// compute defines an f32 tensor of the given shape whose body is body(axes).
func (b *builder) compute(name string, shape []int, body func(ax []te.Index) te.Expr) *te.Tensor {
	return b.Compute(name, shape, body)
}

func (b *builder) outputs(ts ...*te.Tensor) *te.Program { return b.Program(ts...) }

func shp(dims ...int) []int { return dims }

func ld(t *te.Tensor, idx ...te.Index) te.Expr { return tb.Ld(t, idx...) }
func cf(v float64) te.Expr                     { return tb.F(v) }
func ci(v int) te.Expr                         { return tb.I(v) }
func ix(x te.Index) te.Expr                    { return tb.Idx(x) }
func c(v int) te.Index                         { return te.Const(v) }

func bin(op te.BinaryOp, x, y te.Expr) te.Expr { return tb.Bin(op, x, y) }
func add(x, y te.Expr) te.Expr                 { return bin(te.Add, x, y) }
func sub(x, y te.Expr) te.Expr                 { return bin(te.Sub, x, y) }
func mul(x, y te.Expr) te.Expr                 { return bin(te.Mul, x, y) }
func div(x, y te.Expr) te.Expr                 { return bin(te.Div, x, y) }
func un(op te.UnaryOp, x te.Expr) te.Expr      { return tb.Un(op, x) }
func sel(c, t, e te.Expr) te.Expr              { return tb.Sel(c, t, e) }
func and(cs ...te.Expr) te.Expr                { return tb.And(cs...) }

// red reduces body over fresh axes with the given names and extents.
func red(op te.ReduceOp, names []string, exts []int, body func(ks []te.Index) te.Expr) te.Expr {
	return tb.ReduceN(op, names, exts, body)
}

// sum1 sums body over one fresh axis named name.
func sum1(name string, n int, body func(k te.Index) te.Expr) te.Expr {
	return tb.Reduce(te.Sum, name, n, body)
}

// mustAnalyze analyses p with the default options.
func mustAnalyze(t testing.TB, p *te.Program) *Analysis {
	t.Helper()
	a, err := Analyze(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// iotaFeeds fills the placeholder in with 1 + the row-major position of each
// element, so that a value read back names the element it came from, and
// every other placeholder with random values.
func iotaFeeds(p *te.Program, in *te.Tensor, seed uint64) map[string]*te.Array {
	rng := rand.New(rand.NewPCG(seed, 7))
	feeds := map[string]*te.Array{}
	for _, t := range p.Placeholders() {
		a := te.NewArray(t.DType, t.Shape)
		for k := range a.Data {
			if t == in {
				a.Data[k] = float64(k + 1)
			} else {
				a.Data[k] = 2*rng.Float64() - 1
			}
		}
		feeds[t.Name] = a
	}
	return feeds
}

// rowMajor returns the row-major position of index in shape, and false if
// the index is out of bounds.
func rowMajor(shape, index []int) (int, bool) {
	k := 0
	for d, n := range shape {
		if index[d] < 0 || index[d] >= n {
			return 0, false
		}
		k = k*n + index[d]
	}
	return k, true
}
