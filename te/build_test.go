package te

import (
	"math/rand/v2"
)

// builder assembles programs for tests.
type builder struct {
	p *Program
}

func newBuilder(name string) *builder { return &builder{p: &Program{Name: name}} }

func (b *builder) add(t *Tensor) *Tensor {
	t.ID = len(b.p.Tensors)
	b.p.Tensors = append(b.p.Tensors, t)
	return t
}

func (b *builder) input(name string, dt DType, shape ...int) *Tensor {
	return b.add(&Tensor{Name: name, Kind: Input, DType: dt, Shape: shape})
}

func (b *builder) param(name string, dt DType, shape ...int) *Tensor {
	return b.add(&Tensor{Name: name, Kind: Param, DType: dt, Shape: shape})
}

// axisNames names output axes in order.
const axisNames = "ijlmnopqrstu"

// compute defines a tensor of the given shape whose body is body(axes).
func (b *builder) compute(name string, dt DType, shape []int, body func(ax []Index) Expr) *Tensor {
	t := &Tensor{Name: name, Kind: Compute, DType: dt, Shape: shape}
	ax := make([]Index, len(shape))
	for d, n := range shape {
		v := NewVar(axisNames[d:d+1], n)
		t.Axes = append(t.Axes, v)
		ax[d] = VarIndex(v)
	}
	t.Body = body(ax)
	return b.add(t)
}

func (b *builder) f32(name string, shape []int, body func(ax []Index) Expr) *Tensor {
	return b.compute(name, F32, shape, body)
}

func (b *builder) outputs(ts ...*Tensor) *Program {
	b.p.Outputs = ts
	return b.p
}

func shp(dims ...int) []int { return dims }

func ld(t *Tensor, idx ...Index) Expr { return &Load{Tensor: t, Index: idx} }

func cf(v float64) Expr { return &ConstExpr{Value: v, DType: F32} }
func ci(v int) Expr     { return &ConstExpr{Value: float64(v), DType: I32} }
func ix(x Index) Expr   { return &IndexExpr{Index: x} }

func bin(op BinaryOp, x, y Expr) Expr { return &Binary{Op: op, X: x, Y: y} }
func add(x, y Expr) Expr              { return bin(Add, x, y) }
func sub(x, y Expr) Expr              { return bin(Sub, x, y) }
func mul(x, y Expr) Expr              { return bin(Mul, x, y) }
func div(x, y Expr) Expr              { return bin(Div, x, y) }
func un(op UnaryOp, x Expr) Expr      { return &Unary{Op: op, X: x} }
func sel(c, t, e Expr) Expr           { return &Select{Cond: c, Then: t, Else: e} }

// and returns the conjunction of cs.
func and(cs ...Expr) Expr {
	e := cs[0]
	for _, c := range cs[1:] {
		e = bin(And, e, c)
	}
	return e
}

// red reduces body over fresh axes of the given extents, named k, k1, ...
func red(op ReduceOp, exts []int, body func(ks []Index) Expr) Expr {
	r := &Reduce{Op: op}
	ks := make([]Index, len(exts))
	for i, n := range exts {
		name := "k"
		if i > 0 {
			name = "k" + string(rune('0'+i))
		}
		v := NewVar(name, n)
		r.Axes = append(r.Axes, v)
		ks[i] = VarIndex(v)
	}
	r.Body = body(ks)
	return r
}

// sum1 sums body over one fresh axis.
func sum1(n int, body func(k Index) Expr) Expr {
	return red(Sum, []int{n}, func(ks []Index) Expr { return body(ks[0]) })
}

// randFeeds fills every placeholder of p with uniform values in [-1, 1),
// rounded to the placeholder's dtype (i32 values in [-8, 8)).
func randFeeds(p *Program, seed uint64) map[string]*Array {
	rng := rand.New(rand.NewPCG(seed, 1))
	feeds := map[string]*Array{}
	for _, t := range p.Placeholders() {
		a := NewArray(t.DType, t.Shape)
		for i := range a.Data {
			switch t.DType {
			case I32:
				a.Data[i] = float64(rng.IntN(16) - 8)
			case Bool:
				a.Data[i] = float64(rng.IntN(2))
			default:
				a.Data[i] = Round(t.DType, 2*rng.Float64()-1)
			}
		}
		feeds[t.Name] = a
	}
	return feeds
}
