package te

import (
	"fmt"
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// A contraction is a reduction sum[k...](A[...] * B[...]) whose loads have
// affine indexes over the output axes of the tensor and the reduction axes,
// statically in bounds. It is the batched matrix product
//
//	C[b, m, n] = Σ_k A[b, m, k] · B[b, k, n]
//
// where the batch axes b are the output axes that both loads use, the row axes
// m those only A uses, the column axes n those only B uses, and k the reduction
// axes. Output axes that neither load uses do not appear in C.
type contraction struct {
	a, b       operand
	batch      []*Var
	m, n, k    []*Var
	nb, nm, nn int // sizes of the groups
	nk         int
}

// operand is one load of a contraction: the flat offset of its element is
// base + Σ stride[v]·v.
type operand struct {
	data   []float64
	base   int
	stride map[*Var]int
}

// contractions evaluates, with GEMM, every reduction of e that is a
// contraction, and records a closure reading its result for expr to use.
// Reductions nested inside other reductions are left alone.
func (c *compiler) contractions(e Expr) error {
	var err error
	Walk(e, func(x Expr) bool {
		r, ok := x.(*Reduce)
		if !ok || err != nil {
			return err == nil
		}
		if m := c.matchContraction(r); m != nil {
			var f scalarFn
			if f, err = c.gemmEval(m); err == nil {
				if c.gemm == nil {
					c.gemm = map[*Reduce]scalarFn{}
				}
				c.gemm[r] = f
			}
		}
		return false
	})
	return err
}

// matchContraction returns r as a contraction, or nil if it is not one.
func (c *compiler) matchContraction(r *Reduce) *contraction {
	mul, ok := r.Body.(*Binary)
	if r.Op != Sum || !ok || mul.Op != Mul || TypeOf(mul) != F32 || len(r.Axes) == 0 {
		return nil
	}
	la, okA := mul.X.(*Load)
	lb, okB := mul.Y.(*Load)
	if !okA || !okB {
		return nil
	}
	red := map[*Var]bool{}
	for _, v := range r.Axes {
		if v == nil || v.Extent <= 0 || red[v] {
			return nil
		}
		if _, out := c.slots[v]; out {
			return nil
		}
		red[v] = true
	}
	m := &contraction{k: r.Axes}
	var okOps bool
	if m.a, okOps = c.operand(la, red); !okOps {
		return nil
	}
	if m.b, okOps = c.operand(lb, red); !okOps {
		return nil
	}
	for _, v := range c.t.Axes {
		inA, inB := m.a.stride[v] != 0, m.b.stride[v] != 0
		switch {
		case inA && inB:
			m.batch = append(m.batch, v)
		case inA:
			m.m = append(m.m, v)
		case inB:
			m.n = append(m.n, v)
		}
	}
	m.nb, m.nm, m.nn, m.nk = groupSize(m.batch), groupSize(m.m), groupSize(m.n), groupSize(m.k)
	if m.nb*m.nm*m.nn*m.nk == 0 {
		return nil
	}
	if m.nb > 1 && m.nm*m.nn*m.nk < 32 {
		return nil // many tiny products: a BLAS call each costs more than it saves
	}
	return m
}

// operand checks that l can be read as a contraction operand: its indexes
// are affine in output axes and the reduction axes red, and statically in
// bounds.
func (c *compiler) operand(l *Load, red map[*Var]bool) (operand, bool) {
	if l.Tensor == nil || len(l.Index) != len(l.Tensor.Shape) || l.IsGather() {
		return operand{}, false
	}
	arr, err := c.ev.value(l.Tensor)
	if err != nil {
		return operand{}, false
	}
	op := operand{data: arr.Data, stride: map[*Var]int{}}
	strides := Strides(l.Tensor.Shape)
	for d, x := range l.Index {
		if !x.IsAffine() {
			return operand{}, false
		}
		if lo, hi := x.Bounds(varRange); lo < 0 || hi >= l.Tensor.Shape[d] {
			return operand{}, false
		}
		op.base += x.Const * strides[d]
		for _, t := range x.Terms {
			v := t.Atom.Var
			if _, out := c.slots[v]; !out && !red[v] {
				return operand{}, false
			}
			op.stride[v] += t.Coef * strides[d]
		}
	}
	return op, true
}

func groupSize(vs []*Var) int {
	n := 1
	for _, v := range vs {
		n *= v.Extent
	}
	return n
}

// offsets returns, for every point of the variables vs in row-major order,
// Σ stride[v]·v.
func offsets(vs []*Var, stride map[*Var]int) []int {
	off := []int{0}
	for _, v := range vs {
		s := stride[v]
		next := make([]int, 0, len(off)*v.Extent)
		for _, o := range off {
			for i := 0; i < v.Extent; i++ {
				next = append(next, o+i*s)
			}
		}
		off = next
	}
	return off
}

// linearStep reports whether off[i] == i·step for every i, and step.
func linearStep(off []int) (step int, ok bool) {
	if len(off) < 2 {
		return 0, true
	}
	step = off[1]
	for i, o := range off {
		if o != i*step {
			return 0, false
		}
	}
	return step, true
}

// matrices returns the operand as one rows×cols matrix per batch, where row r
// and column c of batch b are at offset base + bOff[b] + rOff[r] + cOff[c]. It
// uses the operand's storage directly when it is laid out as a (possibly
// transposed) strided matrix with positive strides, and gathers a contiguous
// copy otherwise. Only the sums are offsets of elements: a reversed axis
// (a[4 - k]) has negative steps, so a partial sum may point before the data
// and is never used as a slice start on its own.
func (op operand) matrices(bOff, rOff, cOff []int) (blas.Transpose, []blas64.General) {
	rows, cols := len(rOff), len(cOff)
	rs, rOK := linearStep(rOff)
	cs, cOK := linearStep(cOff)
	out := make([]blas64.General, len(bOff))
	if rOK && cOK {
		switch {
		case (cols == 1 || cs == 1) && (rows == 1 || rs >= max(cols, 1)):
			stride := rs
			if rows == 1 {
				stride = cols
			}
			for b, o := range bOff {
				out[b] = blas64.General{Rows: rows, Cols: cols, Stride: stride, Data: op.data[op.base+o:]}
			}
			return blas.NoTrans, out
		case (rows == 1 || rs == 1) && (cols == 1 || cs >= max(rows, 1)):
			stride := cs
			if cols == 1 {
				stride = rows
			}
			for b, o := range bOff {
				out[b] = blas64.General{Rows: cols, Cols: rows, Stride: stride, Data: op.data[op.base+o:]}
			}
			return blas.Trans, out
		}
	}
	buf := make([]float64, len(bOff)*rows*cols)
	for b, o := range bOff {
		mat := buf[b*rows*cols : (b+1)*rows*cols]
		for r, ro := range rOff {
			row := mat[r*cols : (r+1)*cols]
			first := op.base + o + ro // the offset of column 0, which may lie after later columns
			for c, co := range cOff {
				row[c] = op.data[first+co]
			}
		}
		out[b] = blas64.General{Rows: rows, Cols: cols, Stride: cols, Data: mat}
	}
	return blas.NoTrans, out
}

// gemmEval computes the contraction m with blas64.Gemm and returns a closure
// that reads its result at the output element given by env.
func (c *compiler) gemmEval(m *contraction) (scalarFn, error) {
	tA, as := m.a.matrices(offsets(m.batch, m.a.stride), offsets(m.m, m.a.stride), offsets(m.k, m.a.stride))
	tB, bs := m.b.matrices(offsets(m.batch, m.b.stride), offsets(m.k, m.b.stride), offsets(m.n, m.b.stride))
	res := make([]float64, m.nb*m.nm*m.nn)
	mul := func(b int) {
		cm := blas64.General{Rows: m.nm, Cols: m.nn, Stride: m.nn, Data: res[b*m.nm*m.nn : (b+1)*m.nm*m.nn]}
		blas64.Gemm(tA, tB, 1, as[b], bs[b], 0, cm)
	}
	// gonum runs one large product on every core itself; many small ones are
	// spread over the workers here.
	const block = 64
	if big := ((m.nm + block - 1) / block) * ((m.nn + block - 1) / block); m.nb == 1 || big >= 4 || c.ev.workers == 1 {
		for b := range m.nb {
			mul(b)
		}
	} else {
		var wg sync.WaitGroup
		next := make(chan int, m.nb)
		for b := range m.nb {
			next <- b
		}
		close(next)
		for range min(c.ev.workers, m.nb) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for b := range next {
					mul(b)
				}
			}()
		}
		wg.Wait()
	}
	if s := c.ev.opts.stats; s != nil {
		s.gemms++
	}

	// The result is laid out as [batch..., m..., n...].
	var a affine
	stride := 1
	vars := append(append(append([]*Var(nil), m.batch...), m.m...), m.n...)
	for i := len(vars) - 1; i >= 0; i-- {
		if err := c.flatten(&a, VarIndex(vars[i]), stride); err != nil {
			return nil, fmt.Errorf("contraction: %w", err)
		}
		stride *= vars[i].Extent
	}
	off := a.fn()
	return func(env []int) float64 { return res[off(env)] }, nil
}
