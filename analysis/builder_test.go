package analysis

import (
	"math/rand/v2"
	"testing"

	"tec/te"
)

// builder assembles programs for tests.
type builder struct {
	p *te.Program
}

func newBuilder(name string) *builder { return &builder{p: &te.Program{Name: name}} }

func (b *builder) add(t *te.Tensor) *te.Tensor {
	t.ID = len(b.p.Tensors)
	b.p.Tensors = append(b.p.Tensors, t)
	return t
}

func (b *builder) input(name string, shape ...int) *te.Tensor {
	return b.add(&te.Tensor{Name: name, Kind: te.Input, DType: te.F32, Shape: shape})
}

func (b *builder) param(name string, shape ...int) *te.Tensor {
	return b.add(&te.Tensor{Name: name, Kind: te.Param, DType: te.F32, Shape: shape})
}

// axisNames names output axes in order.
var axisNames = []string{"i", "j", "l", "m", "n", "o", "p", "q"}

// compute defines an f32 tensor of the given shape whose body is body(axes).
func (b *builder) compute(name string, shape []int, body func(ax []te.Index) te.Expr) *te.Tensor {
	t := &te.Tensor{Name: name, Kind: te.Compute, DType: te.F32, Shape: shape}
	ax := make([]te.Index, len(shape))
	for d, n := range shape {
		v := te.NewVar(axisNames[d], n)
		t.Axes = append(t.Axes, v)
		ax[d] = te.VarIndex(v)
	}
	t.Body = body(ax)
	return b.add(t)
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

// and returns the conjunction of cs.
func and(cs ...te.Expr) te.Expr {
	e := cs[0]
	for _, c := range cs[1:] {
		e = bin(te.And, e, c)
	}
	return e
}

// red reduces body over fresh axes with the given names and extents.
func red(op te.ReduceOp, names []string, exts []int, body func(ks []te.Index) te.Expr) te.Expr {
	r := &te.Reduce{Op: op}
	ks := make([]te.Index, len(exts))
	for i, n := range exts {
		v := te.NewVar(names[i], n)
		r.Axes = append(r.Axes, v)
		ks[i] = te.VarIndex(v)
	}
	r.Body = body(ks)
	return r
}

// sum1 sums body over one fresh axis named name.
func sum1(name string, n int, body func(k te.Index) te.Expr) te.Expr {
	return red(te.Sum, []string{name}, []int{n}, func(ks []te.Index) te.Expr { return body(ks[0]) })
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
