package partition

import (
	"slices"

	"tec/contraction"
	"tec/cost"
	"tec/schedule"
	"tec/te"
)

// The load paths of the stages (schedule.LoadPath), as backend/lower emits
// them: what the cost model prices their round trips from. A stage whose
// schedule is made here first takes scalarPath; the tiles that move more
// at once set their own: tensor-core tiles from their operands' staging
// (tensorCorePath), matrix-vector tiles from their 16-byte loads
// (setLoads), SIMT tiles their staging loops' one load (tileK), and the
// element loops that compute a 16-byte vector of elements per thread
// (setVectorPath: an element-wise kernel of its own, a Rows stage).

// scalarPath returns the load path of t's body as a thread-stride or
// block-stride loop computes it, one point a trip: scalar loads of the
// widest element its body loads (cost.ElemSize), as many in flight as one
// trip's distinct loads, which are independent of one another — the loads
// of t's top-level reductions' bodies where it has any (their loops'
// trips), else those of its body; at least one.
func scalarPath(t *te.Tensor) schedule.LoadPath {
	n := 0
	if reds := te.TopReduces(t.Body); len(reds) > 0 {
		for _, r := range reds {
			n = max(n, distinctLoads(r.Body))
		}
	} else {
		n = distinctLoads(t.Body)
	}
	return schedule.LoadPath{Width: cost.ElemSize(t.Body), InFlight: max(n, 1)}
}

// unrolledPath returns the load path of t's body as a thread per element
// computes it: scalarPath's, but with the loads of a reduction's unrolled
// points in flight together (schedule.ReduceUnroll, as backend/lower's
// reduce unrolls its loops) — a flash-decoding merge's sums over its 8
// chunks, the 49 values of a 7×7 pool two rows (14 points) at a time, a
// longer loop's 16 points at a time — and its loads that do not move with
// the reduction's axes (a softmax's row maximum) once: the bytes in
// flight, in loads of the path's width.
func unrolledPath(t *te.Tensor) schedule.LoadPath {
	p := scalarPath(t)
	for _, r := range te.TopReduces(t.Body) {
		_, n := schedule.ReduceUnroll(r)
		moving, still := 0, 0
		for _, ld := range distinctLoadList(r.Body) {
			if used := te.UsedVars(ld); slices.ContainsFunc(r.Axes, func(a *te.Var) bool { return used[a] }) {
				moving += ld.Tensor.DType.Size()
			} else {
				still += ld.Tensor.DType.Size()
			}
		}
		p.InFlight = max(p.InFlight, te.CeilDiv(n*moving+still, p.Width))
	}
	return p
}

// distinctLoads counts e's distinct loads (distinctLoadList).
func distinctLoads(e te.Expr) int { return len(distinctLoadList(e)) }

// distinctLoadList returns e's distinct loads (tensor and indexes), leaving out
// those of reductions nested in it, in the order they occur.
func distinctLoadList(e te.Expr) []*te.Load {
	seen := map[string]bool{}
	var loads []*te.Load
	te.Walk(e, func(x te.Expr) bool {
		switch x := x.(type) {
		case *te.Reduce:
			return false
		case *te.Load:
			if k := te.FormatExpr(x); !seen[k] {
				seen[k] = true
				loads = append(loads, x)
			}
		}
		return true
	})
	return loads
}

// tensorCorePath returns the load path of a tensor-core tile of tm×tn
// outputs, staging tk of K at a time for threads threads into stages
// copies of its operand tiles, its operands of type in staged as st says
// (contraction.StagingOf). A 16-byte operand (cp.async or a register
// prefetch) has all its step's chunks in flight at once (a prefetch's
// chunks take Loads loads each, an f32 source's two), both operands'
// issued before either is waited for: one round trip a step; with two
// stages in shared memory the next step's are in flight while the warps
// compute this one, one barrier a step, and with n stages of cp.async
// copies (schedule.TCBlock.Stages) the next n − 1 steps'. An operand staged element by
// element has one load in flight a trip of its blockDim.x-stride loop,
// whose trip count the compiler does not know: as many round trips as a
// thread's elements, and two barriers a step (before its stores, after
// the MMAs). The path's loads in flight are the step's bytes over its
// round trips, in loads of its narrowest width.
func tensorCorePath(st contraction.Staging, stages, tm, tn, tk int, in te.DType, threads int) schedule.LoadPath {
	size := in.Size()
	var bytes, trips int
	width, loads, vector := 16, 0, false
	for _, o := range []struct {
		op    contraction.Operand
		elems int
	}{{st.X, tm * tk}, {st.Y, tk * tn}} {
		per := te.CeilDiv(o.elems, threads) // a thread's elements a step
		bytes += per * size
		if o.op.Mode == contraction.StageElements {
			trips += per
			width = min(width, size)
			continue
		}
		vector = true
		if o.op.Width > 0 { // 8 or 4 bytes where the layout allows no 16
			width = min(width, o.op.Width)
		}
		loads += te.CeilDiv(per*size, 16) * max(o.op.Loads, 1)
	}
	if vector {
		trips++ // both operands' 16-byte transfers issued before either waits
	}
	p := schedule.LoadPath{Width: width, Prefetch: stages >= 2, Barriers: 2}
	if p.Prefetch {
		p.Barriers = 1
	}
	if width == 16 {
		p.InFlight = max(loads/trips, 1)
		if st.Async() {
			p.InFlight *= stages - 1
		}
	} else {
		p.InFlight = max(bytes/trips/width, 1)
	}
	return p
}

// elementVectorPath returns the load path of a loop over t's elements
// that computes a 16-byte vector of them per thread, as backend/lower's
// vectorElems does for an element-wise stage in a kernel of its own and
// for a fused kernel's Rows stage, and whether that applies: t of type
// f32, i32, f16 or bf16, its last extent a multiple of the vector, no
// reduction in its body, and each load that moves along its last axis
// reading whole aligned 16-byte vectors (te.Load.Contiguous), none under
// a select. Every thread issues all its moving loads' 16-byte loads (two
// for 8 elements of f32) before it computes; a body with no moving load
// keeps its scalar loads.
func elementVectorPath(t *te.Tensor) (schedule.LoadPath, bool) {
	_, moving := te.VectorElems(t, nil)
	loads := 0
	for _, ld := range moving {
		loads += 16 / t.DType.Size() * ld.Tensor.DType.Size() / 16
	}
	if loads == 0 {
		return schedule.LoadPath{}, false
	}
	return schedule.LoadPath{Width: 16, InFlight: loads}, true
}

// reduceVectorPath returns the load path of a row reduction t whose
// block's threads read their share of each top-level reduction a 16-byte
// vector of 8 terms at a time (backend/lower's blockReduceVector, where
// te.ReduceVectorElems gives 8: the narrowest moving load a half): each
// moving load's 16-byte loads (two for an f32 load) in flight together.
// False where a reduction reads otherwise (an argmax, an f32 row).
func reduceVectorPath(t *te.Tensor) (schedule.LoadPath, bool) {
	reds := te.TopReduces(t.Body)
	loads := 0
	for _, r := range reds {
		n, moving := te.ReduceVectorElems(r)
		if r.Op.IsArg() || n != 8 {
			return schedule.LoadPath{}, false
		}
		per := 0
		for _, ld := range moving {
			per += n * ld.Tensor.DType.Size() / 16
		}
		loads = max(loads, per)
	}
	if loads == 0 {
		return schedule.LoadPath{}, false
	}
	return schedule.LoadPath{Width: 16, InFlight: loads}, true
}

// setVectorPath gives stage s of t the load path of a 16-byte vector of
// elements per thread where elementVectorPath applies.
func (s stage) setVectorPath(t *te.Tensor) {
	if p, ok := elementVectorPath(t); ok {
		s.Load = p
	}
}
