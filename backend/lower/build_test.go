package lower

import (
	"math/rand/v2"

	tb "tec/internal/testkit/tebuild"
	"tec/te"
)

// builder assembles te programs for tests; see package tebuild.
type builder struct{ *tb.Builder }

func newBuilder(name string) *builder { return &builder{tb.New(name)} }

func (b *builder) input(name string, dt te.DType, shape ...int) *te.Tensor {
	return b.InputOf(name, dt, shape...)
}

func (b *builder) param(name string, dt te.DType, shape ...int) *te.Tensor {
	return b.ParamOf(name, dt, shape...)
}

// compute defines a tensor whose body is body(axes).
func (b *builder) compute(name string, dt te.DType, shape []int, body func(ax []te.Index) te.Expr) *te.Tensor {
	return b.ComputeOf(name, dt, shape, body)
}

func (b *builder) f32(name string, shape []int, body func(ax []te.Index) te.Expr) *te.Tensor {
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

// red reduces body over fresh axes k0, k1, ... of the given extents.
func red(op te.ReduceOp, exts []int, body func(ks []te.Index) te.Expr) te.Expr {
	names := make([]string, len(exts))
	for i := range exts {
		names[i] = "k" + string(rune('0'+i))
	}
	return tb.ReduceN(op, names, exts, body)
}

func sum1(n int, body func(k te.Index) te.Expr) te.Expr { return tb.Reduce(te.Sum, "k0", n, body) }

// randFeeds fills every placeholder with values uniform in [-1, 1) rounded
// to its dtype (i32 in [-8, 8), bool 0 or 1).
func randFeeds(p *te.Program, seed uint64) map[string]*te.Array {
	rng := rand.New(rand.NewPCG(seed, 1))
	feeds := map[string]*te.Array{}
	for _, t := range p.Placeholders() {
		a := te.NewArray(t.DType, t.Shape)
		for i := range a.Data {
			switch t.DType {
			case te.I32:
				a.Data[i] = float64(rng.IntN(16) - 8)
			case te.Bool:
				a.Data[i] = float64(rng.IntN(2))
			default:
				a.Data[i] = te.Round(t.DType, 2*rng.Float64()-1)
			}
		}
		feeds[t.Name] = a
	}
	return feeds
}
