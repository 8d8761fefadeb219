package contraction

import (
	"tec/te"
)

// TensorCoreType returns the type in which tensor cores multiply the
// operands X and Y of a contraction (as Factors splits it), and whether
// they can: te.F16 or te.BF16 where both are values of that type (loads of
// such tensors or casts to it, as the precision pass writes them under
// --precision f16 or bf16), te.F32 meaning TF32 where both are rounded to
// TF32 (round_tf32, under --precision tf32). A select between such a value
// and zero (a padded convolution) counts as the value, and one between two
// such values of one type as that type. On either path the
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
		// a choice between two such values (a horizontally concatenated
		// contraction's operand, by the batch it is in)
		a, oka := operandType(e.Then)
		b, okb := operandType(e.Else)
		return a, oka && okb && a == b
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
