package lower

import (
	"math/rand/v2"

	"tec/te"
)

// builder assembles te programs for tests.
type builder struct{ p *te.Program }

func newBuilder(name string) *builder { return &builder{p: &te.Program{Name: name}} }

func (b *builder) add(t *te.Tensor) *te.Tensor {
	t.ID = len(b.p.Tensors)
	b.p.Tensors = append(b.p.Tensors, t)
	return t
}

func (b *builder) input(name string, dt te.DType, shape ...int) *te.Tensor {
	return b.add(&te.Tensor{Name: name, Kind: te.Input, DType: dt, Shape: shape})
}

func (b *builder) param(name string, dt te.DType, shape ...int) *te.Tensor {
	return b.add(&te.Tensor{Name: name, Kind: te.Param, DType: dt, Shape: shape})
}

const axisNames = "ijlmnopq"

// compute defines a tensor whose body is body(axes).
func (b *builder) compute(name string, dt te.DType, shape []int, body func(ax []te.Index) te.Expr) *te.Tensor {
	t := &te.Tensor{Name: name, Kind: te.Compute, DType: dt, Shape: shape}
	ax := make([]te.Index, len(shape))
	for d, n := range shape {
		v := te.NewVar(axisNames[d:d+1], n)
		t.Axes = append(t.Axes, v)
		ax[d] = te.VarIndex(v)
	}
	t.Body = body(ax)
	return b.add(t)
}

func (b *builder) f32(name string, shape []int, body func(ax []te.Index) te.Expr) *te.Tensor {
	return b.compute(name, te.F32, shape, body)
}

func (b *builder) outputs(ts ...*te.Tensor) *te.Program {
	b.p.Outputs = ts
	return b.p
}

func shp(dims ...int) []int { return dims }

func ld(t *te.Tensor, idx ...te.Index) te.Expr { return &te.Load{Tensor: t, Index: idx} }
func cf(v float64) te.Expr                     { return &te.ConstExpr{Value: v, DType: te.F32} }
func ci(v int) te.Expr                         { return &te.ConstExpr{Value: float64(v), DType: te.I32} }
func ix(x te.Index) te.Expr                    { return &te.IndexExpr{Index: x} }
func c(v int) te.Index                         { return te.Const(v) }

func bin(op te.BinaryOp, x, y te.Expr) te.Expr { return &te.Binary{Op: op, X: x, Y: y} }
func add(x, y te.Expr) te.Expr                 { return bin(te.Add, x, y) }
func sub(x, y te.Expr) te.Expr                 { return bin(te.Sub, x, y) }
func mul(x, y te.Expr) te.Expr                 { return bin(te.Mul, x, y) }
func div(x, y te.Expr) te.Expr                 { return bin(te.Div, x, y) }
func un(op te.UnaryOp, x te.Expr) te.Expr      { return &te.Unary{Op: op, X: x} }
func sel(c, t, e te.Expr) te.Expr              { return &te.Select{Cond: c, Then: t, Else: e} }

func and(cs ...te.Expr) te.Expr {
	e := cs[0]
	for _, c := range cs[1:] {
		e = bin(te.And, e, c)
	}
	return e
}

// red reduces body over fresh axes of the given extents.
func red(op te.ReduceOp, exts []int, body func(ks []te.Index) te.Expr) te.Expr {
	r := &te.Reduce{Op: op}
	ks := make([]te.Index, len(exts))
	for i, n := range exts {
		v := te.NewVar("k"+string(rune('0'+i)), n)
		r.Axes = append(r.Axes, v)
		ks[i] = te.VarIndex(v)
	}
	r.Body = body(ks)
	return r
}

func sum1(n int, body func(k te.Index) te.Expr) te.Expr {
	return red(te.Sum, []int{n}, func(ks []te.Index) te.Expr { return body(ks[0]) })
}

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
