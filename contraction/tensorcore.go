package contraction

import (
	"tec/schedule"
	"tec/te"
)

// TensorCoreType returns the type in which tensor cores multiply the
// operands X and Y of a contraction (as Factors splits it), and whether
// they can: te.F16 or te.BF16 where both are values of that type (loads of
// such tensors or casts to it, as the precision pass writes them under
// --precision f16 or bf16), te.F32 meaning TF32 where both are rounded to
// TF32 (round_tf32, under --precision tf32). A select between such a value
// and zero (a padded convolution) counts as the value. On either path the
// products are exact in f32, so a tensor-core contraction computes the
// same terms as the SIMT one.
func TensorCoreType(X, Y te.Expr) (te.DType, bool) {
	x, okx := operandType(X)
	y, oky := operandType(Y)
	if !okx || !oky || x != y {
		return 0, false
	}
	return x, true
}

func operandType(e te.Expr) (te.DType, bool) {
	switch e := e.(type) {
	case *te.Load:
		if e.Tensor.DType == te.F16 || e.Tensor.DType == te.BF16 {
			return e.Tensor.DType, true
		}
	case *te.Cast:
		if e.To == te.F16 || e.To == te.BF16 {
			return e.To, true
		}
	case *te.Unary:
		if e.Op == te.RoundTF32 {
			return te.F32, true
		}
	case *te.Select:
		if c, ok := e.Else.(*te.ConstExpr); ok && c.Value == 0 {
			return operandType(e.Then)
		}
		if c, ok := e.Then.(*te.ConstExpr); ok && c.Value == 0 {
			return operandType(e.Else)
		}
	}
	return 0, false
}

// TensorCoreFits reports whether a contraction of extents M, N, K with
// operands of type in (see TensorCoreType) is large enough for tensor
// cores: at least an MMA's 16 rows, two of its 8 columns and its k (16,
// or 8 for TF32).
func TensorCoreFits(in te.DType, M, N, K int) bool {
	k := 16
	if in == te.F32 {
		k = 8
	}
	return M >= 16 && N >= 16 && K >= k
}

// vecLoad returns the load that operand e is, when a tensor-core tile can
// stage it with 16-byte cp.async copies: a load of an f16 or bf16 tensor
// whose flat element offset is affine in the axes, with coefficient 1 on
// axis along (k for X, n for Y, whose extent n is a multiple of 8, so that
// no vector straddles its end) and multiples of 8 on every other axis and
// in the constant, so that every vector is 16-byte aligned.
func vecLoad(e te.Expr, along *te.Var, n int) (*te.Load, bool) {
	ld, ok := e.(*te.Load)
	if !ok || (ld.Tensor.DType != te.F16 && ld.Tensor.DType != te.BF16) || n%8 != 0 {
		return nil, false
	}
	coef := map[*te.Var]int{}
	c, stride := 0, 1
	for d := len(ld.Index) - 1; d >= 0; d-- {
		ix := ld.Index[d].Simplify()
		if !ix.IsAffine() {
			return nil, false
		}
		for _, t := range ix.Terms {
			coef[t.Atom.Var] += t.Coef * stride
		}
		c += ix.Const * stride
		stride *= ld.Tensor.Shape[d]
	}
	if coef[along] != 1 || c%8 != 0 {
		return nil, false
	}
	for v, k := range coef {
		if v != along && k%8 != 0 {
			return nil, false
		}
	}
	return ld, true
}

// AsyncOperands returns the loads of X and Y when both can be staged by
// cp.async (see vecLoad) in a pipelined tensor-core contraction: one
// reduction axis, one n axis, K a multiple of the staged k. Such a
// contraction double-buffers its operands in shared memory
// (backend/lower), and its schedule counts two stages of them.
func AsyncOperands(X, Y te.Expr, ns []*te.Var, r *te.Reduce, N, K int) (xl, yl *te.Load, ok bool) {
	if len(r.Axes) != 1 || len(ns) != 1 || K%schedule.TensorCoreTileK != 0 {
		return nil, nil, false
	}
	xl, okx := vecLoad(X, r.Axes[0], K)
	yl, oky := vecLoad(Y, ns[0], N)
	return xl, yl, okx && oky
}
