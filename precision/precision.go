// Package precision holds the precision pass: the TE→TE rewrite that puts
// a model at the arithmetic precision that `tec build --precision` asks
// for, so that the reference evaluator, the simulator and both emitters
// all see the same rounding points. It runs before every other pass.
//
// Under f16 and bf16 (the half type H), tensors are stored as follows:
//
//   - Inputs and outputs keep their declared types: the caller's data is
//     what the model's signature says. An f32 input that the model updates
//     in place (a decode step's key and value caches, its state across
//     calls rather than the caller's data) is stored in H, as PyTorch's
//     and vLLM's half caches are: a long context moves half the bytes.
//   - Params declared f32 are stored in H: the compiled module takes half
//     weights (`tec run` rounds f32 arrays it is given, as TensorRT --fp16
//     converts an f32 model's weights; the C interface converts nothing).
//   - Compute tensors declared f32 are stored in H, except statistics,
//     which stay f32. A statistic is a tensor whose body holds a reduction
//     that is not a contraction (a max, min or product, or a sum that is
//     not a sum of products of two different operands: softmax's max and
//     denominator, layer norm's mean and its variance Σ d·d), or whose
//     float loads all read statistics (layer norm's rsqrt(var + eps)).
//   - A compute tensor whose body is an explicit cast keeps its type, and
//     casts in bodies keep their meaning: the pass adds casts, it never
//     removes or changes one. Tensors of other types than f32 keep them.
//
// A contraction is a sum whose body is the product of two different
// factors that each load a float tensor with an index that uses one of
// the sum's axes (a matrix product, attention's scores and context), or
// selects such a product where a condition holds and zero elsewhere (a
// padded convolution). Its products are of half values and accumulate in f32: a
// factor that is not already of precision H (a load of an f32 input or
// statistic, an expression) is cast to H. Under tf32, storage is left
// alone and each factor of a contraction is rounded to TF32
// (te.RoundTF32), as tensor cores read their f32 operands; f16 and bf16
// values are exact in TF32 and are not rounded again.
//
// Applying the pass twice gives the same program as applying it once, and
// at f32 it returns the program unchanged.
package precision

import (
	"fmt"
	"strings"

	"tec/te"
)

// Mode is a precision of `tec build --precision`.
type Mode int

// The precisions.
const (
	// F32 is f32 storage and arithmetic: the program as written.
	F32 Mode = iota
	// TF32 keeps f32 storage and rounds contraction operands to TF32.
	TF32
	// BF16 stores params and activations in bf16 (statistics stay f32).
	BF16
	// F16 stores params and activations in f16 (statistics stay f32).
	F16
)

var modeNames = [...]string{F32: "f32", TF32: "tf32", BF16: "bf16", F16: "f16"}

// String returns the mode's name as --precision takes it.
func (m Mode) String() string {
	if m >= 0 && int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("precision(%d)", int(m))
}

// Names returns the names of every mode, in order.
func Names() []string { return modeNames[:] }

// Parse returns the mode named s.
func Parse(s string) (Mode, error) {
	for i, n := range modeNames {
		if n == s {
			return Mode(i), nil
		}
	}
	return 0, fmt.Errorf("unknown precision %q (want %s)", s, strings.Join(Names(), ", "))
}

// Half returns the storage type of params and activations under m, and
// false for the modes that keep f32 storage.
func (m Mode) Half() (te.DType, bool) {
	switch m {
	case F16:
		return te.F16, true
	case BF16:
		return te.BF16, true
	}
	return te.F32, false
}

// Apply returns p at precision m, as the package doc describes. p is not
// modified; the result's tensors have p's names, positions and bodies
// except for the casts and roundings the pass adds.
func Apply(p *te.Program, m Mode) *te.Program {
	if m == F32 {
		return p
	}
	outputs := map[*te.Tensor]bool{}
	for _, t := range p.Outputs {
		outputs[t] = true
	}
	r := &rewriter{mode: m, nu: map[*te.Tensor]*te.Tensor{}}
	stats, updated := map[*te.Tensor]bool{}, map[*te.Tensor]bool{}
	for _, u := range p.Updates() {
		updated[u.Update.Target] = true
	}
	q := &te.Program{Name: p.Name}
	for _, t := range p.Tensors {
		c := *t
		if t.Kind == te.Compute {
			stats[t] = isStatistic(t.Body, stats)
			c.Body = r.expr(t.Body)
		}
		if h, ok := m.Half(); ok && halved(t, outputs[t], stats[t], updated[t]) {
			c.DType = h
		}
		r.nu[t] = &c
		q.Tensors = append(q.Tensors, &c)
	}
	for _, t := range p.Outputs {
		q.Outputs = append(q.Outputs, r.nu[t])
	}
	for _, t := range q.Tensors {
		if u := t.Update; u != nil { // the updated input and its indexes, rewritten
			t.Update = &te.Update{Target: r.nu[u.Target], Index: u.Index, Gather: r.gather(u.Gather)}
		}
	}
	return q
}

// halved reports whether t is stored in the half type: an f32 param, an
// f32 input updated in place (an output too, as every such input is), or
// an f32 compute tensor that is neither an output, a statistic nor an
// explicit cast.
func halved(t *te.Tensor, output, statistic, updated bool) bool {
	switch {
	case t.DType != te.F32:
		return false
	case t.Kind == te.Input:
		return updated
	case output:
		return false
	}
	switch t.Kind {
	case te.Param:
		return true
	case te.Compute:
		_, cast := t.Body.(*te.Cast)
		return !statistic && !cast
	}
	return false
}

// isStatistic reports whether a body makes its tensor a statistic: it holds
// a reduction other than a contraction, or its float loads, of which it has
// at least one, all read statistics.
func isStatistic(body te.Expr, stats map[*te.Tensor]bool) bool {
	reduces, loads, allStats := false, 0, true
	te.Walk(body, func(x te.Expr) bool {
		switch x := x.(type) {
		case *te.Reduce:
			if !isContraction(x) {
				reduces = true
			}
		case *te.Load:
			if x.Tensor.DType.IsFloat() {
				loads++
				allStats = allStats && stats[x.Tensor]
			}
		}
		return true
	})
	return reduces || (loads > 0 && allStats)
}

// isContraction reports whether r is a sum of products of two different
// factors, each loading a float tensor at an index that uses one of r's
// axes.
func isContraction(r *te.Reduce) bool {
	if r.Op != te.Sum {
		return false
	}
	mul := product(r.Body)
	if mul == nil || sameExpr(mul.X, mul.Y) {
		return false
	}
	return loadsAlong(mul.X, r.Axes) && loadsAlong(mul.Y, r.Axes)
}

// product returns the product that a contraction's body sums: the body
// itself, or the product a padded convolution's body selects where its
// window is inside the image, select(cond, x * w, 0); nil if there is none.
func product(body te.Expr) *te.Binary {
	if s, ok := body.(*te.Select); ok {
		if c, ok := s.Else.(*te.ConstExpr); ok && c.Value == 0 {
			body = s.Then
		}
	}
	if mul, ok := body.(*te.Binary); ok && mul.Op == te.Mul {
		return mul
	}
	return nil
}

// loadsAlong reports whether e loads a float tensor, outside any nested
// reduction, at an index that uses one of axes.
func loadsAlong(e te.Expr, axes []*te.Var) bool {
	found := false
	te.Walk(e, func(x te.Expr) bool {
		switch x := x.(type) {
		case *te.Reduce:
			return false
		case *te.Load:
			if !x.Tensor.DType.IsFloat() {
				return true
			}
			for _, ix := range x.Index {
				for _, a := range axes {
					found = found || ix.Uses(a)
				}
			}
		}
		return !found
	})
	return found
}

// sameExpr reports whether a and b are the same expression, node for node
// (reductions are never the same: their axes are their own).
func sameExpr(a, b te.Expr) bool {
	switch a := a.(type) {
	case *te.ConstExpr:
		b, ok := b.(*te.ConstExpr)
		return ok && *a == *b
	case *te.IndexExpr:
		b, ok := b.(*te.IndexExpr)
		return ok && a.Index.Equal(b.Index)
	case *te.Load:
		b, ok := b.(*te.Load)
		if !ok || a.Tensor != b.Tensor {
			return false
		}
		for d := range a.Index {
			if !a.Index[d].Equal(b.Index[d]) || !sameExpr(a.Gathered(d), b.Gathered(d)) && (a.Gathered(d) != nil || b.Gathered(d) != nil) {
				return false
			}
		}
		return true
	case *te.Unary:
		b, ok := b.(*te.Unary)
		return ok && a.Op == b.Op && sameExpr(a.X, b.X)
	case *te.Binary:
		b, ok := b.(*te.Binary)
		return ok && a.Op == b.Op && sameExpr(a.X, b.X) && sameExpr(a.Y, b.Y)
	case *te.Select:
		b, ok := b.(*te.Select)
		return ok && sameExpr(a.Cond, b.Cond) && sameExpr(a.Then, b.Then) && sameExpr(a.Else, b.Else)
	case *te.Cast:
		b, ok := b.(*te.Cast)
		return ok && a.To == b.To && sameExpr(a.X, b.X)
	}
	return false
}

// rewriter copies bodies into the new program: loads read the new tensors
// and the factors of contractions are rounded to the mode's precision. A
// body is a DAG: an inlined function that uses its argument twice (gelu of
// a sum) shares the argument's node, and the copy shares it too (te.Map),
// so that a shared reduction stays one reduction binding its axes once.
type rewriter struct {
	mode Mode
	nu   map[*te.Tensor]*te.Tensor
}

// expr returns the copy of e.
func (r *rewriter) expr(e te.Expr) te.Expr {
	return te.Map(e, r.node)
}

// node returns the copy of e, a node whose operands are copied already.
func (r *rewriter) node(e te.Expr) te.Expr {
	switch e := e.(type) {
	case *te.Load:
		return &te.Load{Tensor: r.nu[e.Tensor], Index: e.Index, Gather: e.Gather}
	case *te.Reduce:
		if !isContraction(e) {
			return e
		}
		mul := product(e.Body)
		var body te.Expr = &te.Binary{Op: te.Mul, X: r.operand(mul.X), Y: r.operand(mul.Y)}
		if s, ok := e.Body.(*te.Select); ok {
			body = &te.Select{Cond: s.Cond, Then: body, Else: s.Else}
		}
		return &te.Reduce{Op: e.Op, Axes: e.Axes, Body: body}
	}
	return e
}

// gather rewrites the run-time indexes of a gather (nil for a plain load).
func (r *rewriter) gather(g []te.Expr) []te.Expr {
	if g == nil {
		return nil
	}
	out := make([]te.Expr, len(g))
	for d, x := range g {
		if x != nil {
			out[d] = r.expr(x)
		}
	}
	return out
}

// operand returns x, the copy of a factor of a contraction, rounded to the
// precision its products are taken in unless it has that precision already.
func (r *rewriter) operand(x te.Expr) te.Expr {
	if h, ok := r.mode.Half(); ok {
		if precisionOf(x) == h {
			return x
		}
		return &te.Cast{To: h, X: x}
	}
	switch precisionOf(x) {
	case te.F16, te.BF16:
		return x // exact in TF32
	}
	if u, ok := x.(*te.Unary); ok && u.Op == te.RoundTF32 {
		return x
	}
	return &te.Unary{Op: te.RoundTF32, X: x}
}

// precisionOf returns the precision of e's value where e is a load of a
// half tensor or a cast to a half type, and F32 otherwise.
func precisionOf(e te.Expr) te.DType {
	switch e := e.(type) {
	case *te.Load:
		return e.Tensor.DType
	case *te.Cast:
		return e.To
	}
	return te.F32
}
