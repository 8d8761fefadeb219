// Package tebuild assembles small TE programs in Go, for the tests of the
// packages that transform and lower programs without going through the
// language front end.
package tebuild

import "tec/te"

// Builder assembles one program. Its methods add tensors in definition
// order.
type Builder struct {
	p *te.Program
}

// New returns a builder of a program named name.
func New(name string) *Builder { return &Builder{p: &te.Program{Name: name}} }

// Add appends t, as it is, to the program's tensors, giving it the next
// ID: for programs that the other methods would not make, such as a tensor
// added after one that loads it.
func (b *Builder) Add(t *te.Tensor) *te.Tensor {
	t.ID = len(b.p.Tensors)
	b.p.Tensors = append(b.p.Tensors, t)
	return t
}

// Input adds an f32 input.
func (b *Builder) Input(name string, shape ...int) *te.Tensor {
	return b.InputOf(name, te.F32, shape...)
}

// InputOf adds an input of dtype dt.
func (b *Builder) InputOf(name string, dt te.DType, shape ...int) *te.Tensor {
	return b.Add(&te.Tensor{Name: name, Kind: te.Input, DType: dt, Shape: shape})
}

// Param adds an f32 param.
func (b *Builder) Param(name string, shape ...int) *te.Tensor {
	return b.ParamOf(name, te.F32, shape...)
}

// ParamOf adds a param of dtype dt.
func (b *Builder) ParamOf(name string, dt te.DType, shape ...int) *te.Tensor {
	return b.Add(&te.Tensor{Name: name, Kind: te.Param, DType: dt, Shape: shape})
}

var axisNames = []string{"i", "j", "l", "m", "n", "o", "p", "q"}

// Compute adds an f32 tensor of the given shape whose body is body(axes).
func (b *Builder) Compute(name string, shape []int, body func(ax []te.Index) te.Expr) *te.Tensor {
	return b.ComputeOf(name, te.F32, shape, body)
}

// ComputeOf adds a tensor of dtype dt and the given shape whose body is
// body(axes); the axes are named i, j, l, m, n, o, p, q in order.
func (b *Builder) ComputeOf(name string, dt te.DType, shape []int, body func(ax []te.Index) te.Expr) *te.Tensor {
	t := &te.Tensor{Name: name, Kind: te.Compute, DType: dt, Shape: shape}
	var ax []te.Index
	t.Axes, ax = vars(axisNames, shape)
	t.Body = body(ax)
	return b.Add(t)
}

// Program sets the outputs and returns the program.
func (b *Builder) Program(outputs ...*te.Tensor) *te.Program {
	b.p.Outputs = outputs
	return b.p
}

// Shape returns its arguments, for Compute's shape.
func Shape(dims ...int) []int { return dims }

// Ld loads t at idx.
func Ld(t *te.Tensor, idx ...te.Index) te.Expr { return &te.Load{Tensor: t, Index: idx} }

// Gather loads t at idx, where each dimension d with dyn[d] != nil is read
// at the run-time index dyn[d] + idx[d].
func Gather(t *te.Tensor, dyn []te.Expr, idx ...te.Index) te.Expr {
	return &te.Load{Tensor: t, Index: idx, Gather: dyn}
}

// F is an f32 constant.
func F(v float64) te.Expr { return &te.ConstExpr{Value: v, DType: te.F32} }

// I is an i32 constant.
func I(v int) te.Expr { return &te.ConstExpr{Value: float64(v), DType: te.I32} }

// Idx is the value of index x.
func Idx(x te.Index) te.Expr { return &te.IndexExpr{Index: x} }

// Sel is cond ? then : els.
func Sel(cond, then, els te.Expr) te.Expr { return &te.Select{Cond: cond, Then: then, Else: els} }

// And is the conjunction of cs, of which there is at least one.
func And(cs ...te.Expr) te.Expr {
	e := cs[0]
	for _, c := range cs[1:] {
		e = Bin(te.And, e, c)
	}
	return e
}

// Bin applies op.
func Bin(op te.BinaryOp, x, y te.Expr) te.Expr { return &te.Binary{Op: op, X: x, Y: y} }

// Un applies op.
func Un(op te.UnaryOp, x te.Expr) te.Expr { return &te.Unary{Op: op, X: x} }

// Reduce returns op over a fresh axis of extent n named name; body gets
// the axis.
func Reduce(op te.ReduceOp, name string, n int, body func(k te.Index) te.Expr) te.Expr {
	return ReduceN(op, []string{name}, []int{n}, func(ks []te.Index) te.Expr { return body(ks[0]) })
}

// ReduceN returns op over fresh axes with the given names and extents;
// body gets the axes.
func ReduceN(op te.ReduceOp, names []string, exts []int, body func(ks []te.Index) te.Expr) te.Expr {
	r := &te.Reduce{Op: op}
	var ks []te.Index
	r.Axes, ks = vars(names, exts)
	r.Body = body(ks)
	return r
}

// vars returns fresh variables with the given names and extents, and
// their indexes.
func vars(names []string, exts []int) ([]*te.Var, []te.Index) {
	vs := make([]*te.Var, len(exts))
	ix := make([]te.Index, len(exts))
	for i, n := range exts {
		vs[i] = te.NewVar(names[i], n)
		ix[i] = te.VarIndex(vs[i])
	}
	return vs, ix
}

// Matmul adds out[i, j] = sum[k](x[i, k] * w[k, j]).
func (b *Builder) Matmul(name string, x, w *te.Tensor) *te.Tensor {
	m, k, n := x.Shape[0], x.Shape[1], w.Shape[1]
	return b.Compute(name, Shape(m, n), func(ax []te.Index) te.Expr {
		return Reduce(te.Sum, "k", k, func(kk te.Index) te.Expr {
			return Bin(te.Mul, Ld(x, ax[0], kk), Ld(w, kk, ax[1]))
		})
	})
}
