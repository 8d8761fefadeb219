package lower

import (
	"fmt"
	"slices"

	"tec/backend/kir"
	"tec/contraction"
	"tec/schedule"
	"tec/te"
)

// weightCache is a fused kernel's shared-memory cache of stationary slices
// (schedule.WeightCache): Slots slices and a tag per slot holding the key
// of the slice it has, -1 for none.
type weightCache struct {
	plan      *schedule.WeightCache
	data, tag *kir.Buffer
}

// newWeightCache declares the cache's arrays in k and returns it with the
// statements that clear its tags, which must run before any stage.
func newWeightCache(wc *schedule.WeightCache, k *kir.Kernel) (*weightCache, []kir.Stmt) {
	c := &weightCache{
		plan: wc,
		data: &kir.Buffer{Name: "wcache", Space: kir.Shared, DType: te.F32, Shape: []int{wc.Slots, wc.SliceFloats}},
		tag:  &kir.Buffer{Name: "wtag", Space: kir.Shared, DType: te.I32, Shape: []int{wc.Slots}},
	}
	k.Shared = append(k.Shared, c.data, c.tag)
	e := kir.NewVar("e", te.I32)
	return c, []kir.Stmt{
		&kir.For{Var: e, Kind: kir.BlockStride, Lo: kir.I(0), Hi: kir.I(wc.Slots), Body: []kir.Stmt{
			&kir.Store{Buf: c.tag, Index: e, Value: kir.I(-1)}}},
		&kir.SyncThreads{},
	}
}

// resident lowers contraction t whose schedule is Resident: every tile
// computes, for Group consecutive batch entries, all M rows of the other
// factor for TileF columns of the stationary one, whose K × TileF slices
// (one per entry) it reads from the cache, loading them first if its slot
// holds another key. Tile (i, nf) of group i has key Keys[i]·NT + nf and
// is computed by the block running virtual block key mod V, so a slice is
// always read by the same block. The threads that write the tile's columns
// then compute the stages of Resident.Epilogue that read this group. It
// reports false, lowering nothing, when t is not such a contraction.
func (l *lowerer) resident(t *te.Tensor, s *schedule.Schedule, wc *weightCache, tmp *kir.Kernel, body *[]kir.Stmt) bool {
	d, ok := contraction.Of(t)
	rs := s.Resident
	if !ok || rs == nil || wc == nil {
		return false
	}
	// The plan's tile, slices and cache agree (partition.Plan.Verify).
	r := d.Reduce
	fAxes, aAxes, F, A := d.NAxes, d.MAxes, d.Y, d.X
	if rs.Wide == 0 {
		fAxes, aAxes, F, A = d.MAxes, d.NAxes, d.X, d.Y
	}
	tf, group := rs.TileF, max(rs.Group, 1)
	rows, K := product(aAxes), product(r.Axes)
	member := K * tf // one batch entry's slice
	slice, slots, virtual := wc.plan.SliceFloats, wc.plan.Slots, wc.plan.Virtual
	buf := l.bufs[t]
	g := l.gen(body)
	xs, red, tid, col, kz := l.matVecSetup(g, tmp, te.F32, rows, K, tf, 1, false)
	hs, pro := hoisted(tmp, A, rows)
	v, gi, nf := kir.NewVar("v", te.I32), kir.NewVar("gi", te.I32), kir.NewVar("nf", te.I32)
	family, first := kir.NewVar("family", te.I32), kir.NewVar("nf0", te.I32)
	perGroup := g.into(func() {
		// The first of this group's tiles that virtual block v owns:
		// key ≡ v (mod V).
		g.emit(
			&kir.Let{Var: family, Value: piecewise(rs.Keys, gi)},
			&kir.Let{Var: first, Value: kir.Mod(kir.Sub(v, kir.Mul(family, kir.I(rs.NT))), kir.I(virtual))},
		)
		tile := g.into(func() {
			key, slot, hit := kir.NewVar("key", te.I32), kir.NewVar("slot", te.I32), kir.NewVar("hit", te.Bool)
			g.emit(
				&kir.Let{Var: key, Value: kir.Add(kir.Mul(family, kir.I(rs.NT)), nf)},
				&kir.Let{Var: slot, Value: digit(key, virtual, slots)},
				&kir.Let{Var: hit, Value: kir.Eq(kir.Ld(wc.tag, slot), key)},
				// Every thread has read the tag, and the last tile's reads of
				// the slot and of xs and red are done.
				&kir.SyncThreads{},
			)
			base := kir.Mul(slot, kir.I(slice))
			load := g.into(func() {
				e := kir.NewVar("e", te.I32)
				g.emit(&kir.For{Var: e, Kind: kir.BlockStride, Lo: kir.I(0), Hi: kir.I(slice), Body: g.into(func() {
					b, kk, f := kir.NewVar("b", te.I32), kir.NewVar("kk", te.I32), kir.NewVar("f", te.I32)
					at := kir.Expr(e)
					if group > 1 {
						at = kir.Mod(e, kir.I(member))
					}
					g.emit(
						&kir.Let{Var: b, Value: kir.Add(kir.Mul(gi, kir.I(group)), kir.Div(e, kir.I(member)))},
						&kir.Let{Var: kk, Value: kir.Div(at, kir.I(tf))},
						&kir.Let{Var: f, Value: kir.Add(kir.Mul(nf, kir.I(tf)), kir.Mod(e, kir.I(tf)))},
					)
					bind(g, d.BatchAxes, b)
					bind(g, fAxes, f)
					bind(g, r.Axes, kk)
					g.emit(&kir.Store{Buf: wc.data, Index: kir.Add(base, e), Value: convert(g.expr(F), te.F32)})
				})})
				g.emit(&kir.If{Cond: kir.Eq(tid, kir.I(0)), Then: []kir.Stmt{&kir.Store{Buf: wc.tag, Index: slot, Value: key}}})
			})
			g.emit(&kir.If{Cond: &kir.Unary{Op: te.Not, X: hit}, Then: load})
			for j := range group {
				if j > 0 {
					g.emit(&kir.SyncThreads{}) // the last entry's reads of xs and red are done
				}
				l.matVecEntry(g, t, d, &rs.MatVec, entryCtx{
					b: kir.Add(kir.Mul(gi, kir.I(group)), kir.I(j)), base: kir.Add(base, kir.I(j*member)),
					tid: tid, col: col, kz: kz, nf: nf, xs: xs, red: red, data: wc.data, out: buf,
					fAxes: fAxes, aAxes: aAxes, A: A, rows: rows, K: K, hoisted: hs, pro: pro, tmp: tmp,
					proOnce: groupPrologue(group, nf, first), columnOwned: len(rs.Epilogue) > 0,
				})
			}
			// The stages in the epilogue: thread col wrote every entry of
			// the group at its columns, and computes them there.
			for e, u := range rs.Epilogue {
				epi := g.into(func() {
					f := kir.NewVar("f", te.I32)
					g.emit(&kir.Let{Var: f, Value: kir.Add(kir.Mul(nf, kir.I(tf)), col)})
					bind(g, fAxes, f)
					for m := range rows {
						mv := kir.NewVar("m", te.I32)
						g.emit(&kir.Let{Var: mv, Value: kir.I(m)})
						bind(g, aAxes, mv)
						for ua, ta := range rs.EpilogueAxes[e] {
							g.env[ua] = g.env[ta]
						}
						ub := l.bufs[u]
						g.emit(&kir.Store{Buf: ub, Index: g.flat(u.Shape, axisIndexes(u)), Value: convert(g.expr(u.Body), ub.ValueType())})
					}
				})
				// Two conditions, not one conjunction: each is a condition on
				// fewer loop variables for the static report to enumerate.
				g.emit(&kir.If{Cond: kir.Eq(gi, kir.I(rs.EpilogueGroup[e])), Then: []kir.Stmt{
					&kir.If{Cond: kir.Lt(tid, kir.I(tf)), Then: epi}}})
			}
		})
		g.emit(&kir.For{Var: nf, Kind: kir.Serial, Lo: first, Hi: kir.I(rs.NT), Step: virtual, Body: tile})
	})
	g.emit(&kir.For{Var: v, Kind: kir.GridStride, Lo: kir.I(0), Hi: kir.I(virtual), Body: []kir.Stmt{
		&kir.For{Var: gi, Kind: kir.Serial, Lo: kir.I(0), Hi: kir.I(d.Batch / group), Step: 1, Body: perGroup}}})
	return true
}

// matVec lowers contraction t under its MatVec schedule: a grid-stride
// loop over tiles (batch entry, nf), each computing every row of the
// narrow factor for TileF columns of the wide one, read from global
// memory, and reports whether it did.
func (l *lowerer) matVec(t *te.Tensor, s *schedule.Schedule, tmp *kir.Kernel, body *[]kir.Stmt) bool {
	d, ok := contraction.Of(t)
	mv := s.MatVec
	if !ok || mv == nil || mv.TileF*mv.Split != l.threads {
		return false
	}
	fAxes, aAxes, F, A := d.NAxes, d.MAxes, d.Y, d.X
	if mv.Wide == 0 {
		fAxes, aAxes, F, A = d.MAxes, d.NAxes, d.X, d.Y
	}
	rows, K := product(aAxes), product(d.Reduce.Axes)
	if product(fAxes) != mv.Width()*mv.NT {
		return false
	}
	g := l.gen(body)
	kLanes := mv.KLanes
	// The rows are staged in f32 words, or, for MMAs, in their operands'
	// type.
	staged := te.F32
	if mv.MMA {
		in, ok := mmaOperandType(F, mv.Parts)
		if !ok {
			return false
		}
		staged = in
	}
	xs, red, tid, col, kz := l.matVecSetup(g, tmp, staged, rows, mv.StagedLen(mv.StagedK(K)), mv.TileF, max(mv.Cols, 1), kLanes)
	hs, pro := hoisted(tmp, A, rows)
	tile, nf := kir.NewVar("tile", te.I32), kir.NewVar("nf", te.I32)
	var ring ringCtx
	if mv.Ring > 0 {
		a := mv.RingArray(l.threads)
		ring = ringCtx{buf: &kir.Buffer{Name: "ring", Space: kir.Shared, DType: a.DType, Shape: []int{a.Len}}, depth: mv.Ring, tile: tile, tiles: d.Batch * mv.NT, nt: mv.NT}
		tmp.Shared = append(tmp.Shared, ring.buf)
	}
	// With its columns' sums combined in their warps and its rows staged
	// once an entry (behind a barrier of their own), a tile reads nothing
	// in shared memory that the next one writes: its warps go on to the
	// next tile's loads without waiting for the others.
	// A masked tile stages its rows itself, under its mask (matVecLive):
	// after a barrier.
	free := kLanes && mv.StagedK(K) == K && s.Mask == nil
	failed := false
	inner := g.into(func() {
		g.emit(&kir.Let{Var: nf, Value: digit(tile, 1, mv.NT)})
		if !free {
			// The last tile's reads of xs and red are done.
			g.emit(&kir.SyncThreads{})
		}
		l.matVecEntry(g, t, d, mv, entryCtx{
			b: kir.Div(tile, kir.I(mv.NT)), tid: tid, col: col, kz: kz, nf: nf, xs: xs, red: red, out: l.bufs[t],
			fAxes: fAxes, aAxes: aAxes, A: A, rows: rows, K: K, F: F, hoisted: hs, pro: pro, tmp: tmp,
			// The block's tiles step by the grid (rotated or not), so that
			// its last tile, tile − gridDim, was of the same entry, and ran
			// the prologue of its rows, exactly where nf ≥ gridDim.
			proOnce:   kir.Lt(nf, kir.Gdim()),
			stageOnce: true,
			kLanes:    kLanes,
			mask:      s.Mask,
			ringCtx:   ring,
			failed:    &failed,
		})
	})
	if failed {
		return false
	}
	g.emit(&kir.For{Var: tile, Kind: kir.GridStride, Lo: kir.I(0), Hi: kir.I(d.Batch * mv.NT), Body: inner})
	return true
}

// matVecSetup declares the shared arrays of a matrix-vector stage in tmp
// (the rows of the narrow factor, of type dt, and the threads' partial
// sums of each row and of each of their cols columns) and emits each
// thread's place: its column col of the tile and its share kz of K.
func (l *lowerer) matVecSetup(g *gen, tmp *kir.Kernel, dt te.DType, rows, K, tileF, cols int, kLanes bool) (xs, red *kir.Buffer, tid, col, kz *kir.Var) {
	xs = &kir.Buffer{Name: "xs", Space: kir.Shared, DType: dt, Shape: []int{rows, K}}
	red = &kir.Buffer{Name: "red", Space: kir.Shared, DType: te.F32, Shape: []int{rows * cols, l.threads}}
	tmp.Shared = []*kir.Buffer{xs, red}
	tid, col, kz = kir.NewVar("tid", te.I32), kir.NewVar("col", te.I32), kir.NewVar("kz", te.I32)
	colOf, kzOf := kir.Mod(tid, kir.I(tileF)), kir.Div(tid, kir.I(tileF))
	if kLanes {
		split := l.threads / tileF
		colOf, kzOf = kir.Div(tid, kir.I(split)), kir.Mod(tid, kir.I(split))
	}
	g.emit(
		&kir.Let{Var: tid, Value: kir.Tid()},
		&kir.Let{Var: col, Value: colOf},
		&kir.Let{Var: kz, Value: kzOf},
	)
	return xs, red, tid, col, kz
}

// entryCtx is what matVecEntry needs of the tile it computes an entry of.
type entryCtx struct {
	b, base            kir.Expr // the batch entry, and its slice's offset in the cache
	tid, col, kz, nf   *kir.Var
	xs, red, data, out *kir.Buffer
	fAxes, aAxes       []*te.Var
	A                  te.Expr
	rows, K            int
	// chunk, when not 0, is the part of K staged at once (MatVec.Chunk).
	chunk int
	// tileF and split are the tile's threads across and the threads per
	// column; cols the columns each thread sums (MatVec.Cols, at least 1).
	tileF, split, cols int
	// colVec is MatVec.ColVec: where set, a thread's cols columns are
	// consecutive, and the wide factor is read across them (sumColVec).
	colVec int
	// F, when set, is the wide factor, read from global memory at each k
	// instead of from the cache slice at base in data; parts, vec and
	// inFlight are MatVec's Parts, Vec and InFlight. tmp is the kernel
	// that takes the local arrays of vector loads (the weights', the
	// prologue's and the epilogue's).
	F        te.Expr
	parts    []schedule.Part
	vec      int
	inFlight int
	tmp      *kir.Kernel
	// stageVec is MatVec.StageVec: the narrow factor's elements staged
	// at once, with 16-byte loads.
	stageVec int
	// hoisted are the reductions of A that the tile computes once per row
	// in its prologue, into pro (see prologue).
	hoisted []*te.Reduce
	pro     *kir.Buffer
	// proOnce, when set, is the block-uniform condition under which the
	// tile computes them: the block's first tile of its batch entry,
	// whose results pro keeps for the block's other tiles of the entry
	// (hoistedOnce); nil where every tile does.
	proOnce kir.Expr
	// stageOnce says that the narrow factor's rows, staged whole (one
	// chunk of K) by a tile of every column (no output mask), may be
	// staged under proOnce too: the block's other tiles of the entry
	// find them in xs, which nothing else writes (stageRows). A decode
	// step's projections then stage the normalised row once a block, not
	// once a tile with two barriers.
	stageOnce bool
	// kLanes is MatVec.KLanes, as matVecSetup laid the threads out: a
	// column's threads are lanes of one warp, its sums combined by
	// shuffles in acc, and the lane of share 0 writes the column; xs holds
	// the rows as MatVec.StagedLen lays them out, rowLen words a row
	// (xsAt). The tile uses neither red nor a barrier after its sums,
	// and, its rows staged once an entry, stages them behind a barrier of
	// their own, no barrier starting its tiles.
	kLanes bool
	rowLen int
	// liveK, when set, gives the condition under which the products at
	// k in [lo, hi] may be nonzero (a k mask, kLive); nil when all may.
	liveK func(lo, hi kir.Expr) kir.Expr
	// mask, when set, is the output mask of a masked contraction
	// (schedule.Mask): a tile whose columns it makes false throughout
	// skips its staging, its products and their combining, and its
	// epilogue writes the select's other branch without reading red.
	mask *schedule.Mask
	// columnOwned says that stages computed after the tile (a resident
	// schedule's Epilogue) read each output column where the thread of
	// that column wrote it: the epilogue stays a column per thread.
	columnOwned bool
	// ringCtx, where its buf is set, is the ring the wide factor streams
	// through (MatVec.Ring, sumRing).
	ringCtx
	// mma, when set, is the place of a tile on tensor cores (MatVec.MMA,
	// sumMMA): its sums are in mma.acc, not in the accumulators of a
	// row and column.
	mma *mmaTile
	// failed, when set, is where matVecEntry reports a tile it could not
	// lower as its schedule says (a tensor-core tile whose wide factor is
	// not a plain load after all).
	failed *bool
}

// fail reports that the tile could not be lowered as its schedule says.
func (c entryCtx) fail() {
	if c.failed != nil {
		*c.failed = true
	}
}

// matVecEntry emits one batch entry of a matrix-vector tile (resident or
// not): stage the other
// factor's rows, let thread (kz, col) sum every split-th k of its column
// against the cached slice, combine the sums in shared memory, and let
// the threads of the first split write the outputs.
func (l *lowerer) matVecEntry(g *gen, t *te.Tensor, d contraction.Dims, rs *schedule.MatVec, c entryCtx) {
	r := d.Reduce
	threads, tf, split := l.threads, rs.TileF, rs.Split
	c.tileF, c.split, c.chunk, c.cols = tf, split, rs.Chunk, max(rs.Cols, 1)
	if c.F != nil {
		c.parts, c.vec, c.inFlight, c.stageVec, c.colVec = rs.Parts, rs.Vec, rs.InFlight, rs.StageVec, rs.ColVec
	}
	c.rowLen = rs.StagedLen(rs.StagedK(c.K))
	cols, width := c.cols, tf*c.cols
	b := kir.NewVar("b", te.I32)
	g.emit(&kir.Let{Var: b, Value: c.b})
	bind(g, d.BatchAxes, b)
	c.liveK = kLive(g, contraction.KMaskOf(d), b)
	staged := c.K
	if c.chunk > 0 {
		staged = c.chunk
	}
	if rs.MMA && c.F != nil {
		in, ok := mmaOperandType(c.F, c.parts)
		if !ok || c.failed == nil {
			c.fail()
			return
		}
		c.mma = newMMATile(g, c.tmp, c.tid, in, tf, c.rows, c.inFlight, threads)
	}
	// acc[m·cols + j] sums row m of column col + j·tf.
	acc := make([]*kir.Var, c.rows*cols)
	if c.mma != nil {
		acc = nil
	}
	for m := range acc {
		acc[m] = kir.NewVar("acc", te.F32)
		g.emit(&kir.Let{Var: acc[m], Value: kir.F(0)})
	}
	var fs []*kir.Var
	if c.F != nil {
		for j := range cols {
			f := kir.NewVar("f", te.I32)
			g.emit(&kir.Let{Var: f, Value: c.column(j)})
			fs = append(fs, f)
		}
	}
	l.hoistedOnce(g, c)
	live := matVecLive(g, c, rs.Wide, width)
	c.stageOnce = c.stageOnce && c.proOnce != nil && live == nil && staged == c.K
	work := g.into(func() { l.matVecSum(g, d, c, acc, fs, staged) })
	if live != nil {
		g.emit(&kir.If{Cond: live, Then: work})
	} else {
		g.emit(work...)
	}
	// sum is the sum of row m and the thread's column j: in red, or, where
	// a column's lanes combined it by shuffles (kLanes), in acc.
	sum := func(m, j int) kir.Expr { return acc[m*cols+j] }
	owner := kir.Expr(kir.Eq(c.kz, kir.I(0)))
	if !c.kLanes {
		g.emit(&kir.SyncThreads{})
		read := func(at kir.Expr) kir.Expr {
			if live == nil {
				return kir.Ld(c.red, at)
			}
			return &kir.Select{Cond: live, Then: kir.Ld(c.red, at), Else: kir.F(0)}
		}
		if l.matVecEpilogueVector(g, t, r, c, width, read) {
			return
		}
		if c.colVec > 0 && c.tmp != nil {
			g.emit(&kir.If{Cond: kir.Lt(c.tid, kir.I(tf)), Then: g.into(func() { l.matVecEpilogueColumns(g, t, r, c, read) })})
			return
		}
		sum = func(m, j int) kir.Expr { return read(kir.Add(kir.I((m*cols+j)*threads), c.col)) }
		owner = kir.Lt(c.tid, kir.I(tf))
	}
	epilogue := g.into(func() {
		for j := range cols {
			f := kir.NewVar("f", te.I32)
			g.emit(&kir.Let{Var: f, Value: c.column(j)})
			bind(g, c.fAxes, f)
			for m := range c.rows {
				s := kir.NewVar("sum", te.F32)
				g.emit(&kir.Let{Var: s, Value: sum(m, j)})
				g.done[r] = s
				mv := kir.NewVar("m", te.I32)
				g.emit(&kir.Let{Var: mv, Value: kir.I(m)})
				bind(g, c.aAxes, mv)
				g.emit(&kir.Store{Buf: c.out, Index: g.flat(t.Shape, axisIndexes(t)), Value: convert(g.expr(t.Body), c.out.ValueType())})
			}
		}
		delete(g.done, r)
	})
	g.emit(&kir.If{Cond: owner, Then: epilogue})
}

// matVecEpilogueColumns emits the epilogue of a thread of a matrix-vector
// tile whose columns are consecutive (c.colVec): for each row, the loads
// of t's body that do not move along the columns (an attention's
// denominator, den[b, n]) read once (invariantLoads, readOnce), then the
// thread's columns computed and stored from the sums in c.red.
func (l *lowerer) matVecEpilogueColumns(g *gen, t *te.Tensor, r *te.Reduce, c entryCtx, read func(at kir.Expr) kir.Expr) {
	for m := range c.rows {
		mv := kir.NewVar("m", te.I32)
		g.emit(&kir.Let{Var: mv, Value: kir.I(m)})
		bind(g, c.aAxes, mv)
		once, bufs := readOnce(g, invariantLoads(t.Body, c.fAxes[0], nil), t.Name+".e")
		c.tmp.Locals = append(c.tmp.Locals, bufs...)
		body := readLocal(t.Body, once, te.Const(0))
		for j := range c.cols {
			f, sum := kir.NewVar("f", te.I32), kir.NewVar("sum", te.F32)
			g.emit(
				&kir.Let{Var: f, Value: c.column(j)},
				&kir.Let{Var: sum, Value: read(kir.Add(kir.I((m*c.cols+j)*l.threads), c.col))},
			)
			bind(g, c.fAxes, f)
			g.done[r] = sum
			g.emit(&kir.Store{Buf: c.out, Index: g.flat(t.Shape, axisIndexes(t)), Value: convert(g.expr(body), c.out.ValueType())})
		}
		for _, s := range once {
			delete(g.bufs, s)
		}
	}
	delete(g.done, r)
}

// column returns the wide factor's column of the thread's column j of
// the tile: col + j·tileF, or col·cols + j where the thread's columns
// are consecutive (colVec).
func (c entryCtx) column(j int) kir.Expr {
	first := kir.Mul(c.nf, kir.I(c.tileF*c.cols))
	if c.colVec > 0 {
		return kir.Add(first, addOffset(kir.I(j), kir.Mul(c.col, kir.I(c.cols))))
	}
	return kir.Add(first, addOffset(kir.I(j*c.tileF), c.col))
}

// xsAt returns the index in c.xs of row m's element at kl of the staged
// k (staged of them): m·staged + kl, or with kLanes the place
// MatVec.StagedLen gives it, vector v = kl / vec of group v / split.
func (c entryCtx) xsAt(m kir.Expr, kl kir.Expr, staged int) kir.Expr {
	if !c.kLanes {
		return kir.Add(kir.Mul(m, kir.I(max(c.rowLen, staged))), kl)
	}
	v := kir.Div(kl, kir.I(c.vec))
	at := c.lanePlace(kir.Div(v, kir.I(c.split)), kir.Mod(kl, kir.I(c.vec)), kir.Mod(v, kir.I(c.split)))
	return kir.Add(kir.Mul(m, kir.I(c.rowLen)), at)
}

// lanePlace is where MatVec.StagedLen's layout puts element e of the
// vector of share kz of group g in a staged row: (g·(vec+1) + e)·split + kz.
func (c entryCtx) lanePlace(g, e, kz kir.Expr) kir.Expr {
	return kir.Add(kir.Mul(kir.Add(kir.Mul(g, kir.I(c.vec+1)), e), kir.I(c.split)), kz)
}

// rowAt is xsAt of a row m known here.
func (c entryCtx) rowAt(m int, kl kir.Expr, staged int) kir.Expr {
	if !c.kLanes {
		return kir.Add(kir.I(m*max(c.rowLen, staged)), kl)
	}
	return c.xsAt(kir.I(m), kl, staged)
}

// matVecLive returns the condition under which a matrix-vector tile of
// width columns (of the wide factor: N where wide is 1, M where 0) needs
// its products, its rows all the narrow factor's, by its output mask
// (tileMask); nil where it has none or every tile does.
func matVecLive(g *gen, c entryCtx, wide, width int) kir.Expr {
	if c.mask == nil {
		return nil
	}
	lo := kir.Mul(c.nf, kir.I(width))
	cols := [2]kir.Expr{lo, kir.Add(lo, kir.I(width-1))}
	rows := [2]kir.Expr{kir.I(0), kir.I(c.rows - 1)}
	if wide == 0 {
		cols, rows = rows, cols
	}
	return tileMask(g, c.mask, rows[0], rows[1], cols[0], cols[1], c.b)
}

// matVecSum emits a matrix-vector tile's products: each chunk of K staged
// and summed (stageRows, sumChunk), and each column's split sums combined
// into c.red.
func (l *lowerer) matVecSum(g *gen, d contraction.Dims, c entryCtx, acc []*kir.Var, fs []*kir.Var, staged int) {
	threads, tf, split := l.threads, c.tileF, c.split
	chunks := c.K / staged
	// Chunk ci stages k in [c0, c0 + staged) of every row, then each
	// thread sums its share of them.
	ci := kir.NewVar("ci", te.I32)
	c0 := kir.Expr(kir.I(0))
	if chunks > 1 {
		c0 = kir.Mul(ci, kir.I(staged))
	}
	chunk := g.into(func() {
		if chunks > 1 {
			g.emit(&kir.SyncThreads{}) // the last chunk's reads of xs are done
		}
		if c.stageOnce {
			g.emit(&kir.If{Cond: c.proOnce, Then: g.into(func() {
				if c.kLanes {
					// The last entry's reads of xs are done.
					g.emit(&kir.SyncThreads{})
				}
				l.stageRows(g, d, c, staged, c0)
			})})
		} else {
			l.stageRows(g, d, c, staged, c0)
		}
		l.sumChunk(g, d, c, acc, fs, staged, c0)
	})
	if c.liveK != nil && chunks > 1 {
		// A chunk wholly past the k mask stages and sums nothing (the
		// test is block-uniform: it reads only the tile's batch entry).
		chunk = []kir.Stmt{&kir.If{Cond: c.liveK(c0, kir.Add(c0, kir.I(staged-1))), Then: chunk}}
	}
	if chunks > 1 {
		g.emit(&kir.For{Var: ci, Kind: kir.Serial, Lo: kir.I(0), Hi: kir.I(chunks), Step: 1, Body: chunk})
	} else {
		g.emit(chunk...)
	}
	for _, a := range c.fAxes {
		delete(g.env, a)
	}
	switch {
	case c.mma != nil:
		combineMMA(g, c, threads)
	case c.kLanes:
		// A column's split lanes are consecutive: xor shuffles within
		// them leave each lane the column's sum.
		for _, a := range acc {
			for off := split / 2; off >= 1; off /= 2 {
				g.emit(&kir.Assign{Var: a, Value: kir.Add(a, &kir.Shuffle{Mode: kir.ShuffleXor, X: a, Offset: off, Width: kir.WarpSize, Mask: kir.FullMask()})})
			}
		}
	case warpSplitCombine(tf, threads):
		combineSplitsByWarps(g, c, acc, tf, threads)
	default:
		for m := range acc {
			g.emit(&kir.Store{Buf: c.red, Index: kir.Add(kir.I(m*threads), c.tid), Value: acc[m]})
		}
		// Combine the split sums of each column by a tree over kz (halvings:
		// any split, not only a power of two).
		for _, h := range halvings(split) {
			var add []kir.Stmt
			for m := range acc {
				at := kir.Add(kir.I(m*threads), c.tid)
				add = append(add, &kir.Store{Buf: c.red, Index: at,
					Value: kir.Add(kir.Ld(c.red, at), kir.Ld(c.red, kir.Add(at, kir.I(h.stride*tf))))})
			}
			g.emit(&kir.SyncThreads{}, &kir.If{Cond: kir.Lt(c.kz, kir.I(h.live)), Then: add})
		}
	}
}

// matVecEpilogueVector emits the epilogue of a matrix-vector tile of
// width columns, the sums of reduction r in c.red, a vector of columns
// per thread where they are consecutive (one column per thread of the
// tile, cols = 1, on t's last axis) and guardedVectorElems allows with a
// load that moves along the columns (t's body then reads it, a residual,
// with 16-byte loads, and stores with one): thread v < width/vec computes
// columns v·vec to v·vec + vec-1 of each row. It reports false, emitting
// nothing, otherwise: for a store alone, the local arrays would keep the
// CUDA emitter from sharing one function among the layers' copies of the
// stage (backend/internal/dedup), and the code would grow for nothing.
func (l *lowerer) matVecEpilogueVector(g *gen, t *te.Tensor, r *te.Reduce, c entryCtx, width int, read func(at kir.Expr) kir.Expr) bool {
	vec, moving, guards := guardedVectorElems(t, c.out, r)
	if vec == 0 || len(moving) == 0 || c.cols != 1 || c.tmp == nil || c.columnOwned || c.out != l.bufs[t] || width%vec != 0 ||
		len(c.fAxes) != 1 || c.fAxes[0] != t.Axes[len(t.Axes)-1] {
		return false
	}
	ok := true
	arrays := map[string]*kir.Buffer{} // the rows' vectors, one set
	epilogue := g.into(func() {
		f := kir.NewVar("f", te.I32)
		g.emit(&kir.Let{Var: f, Value: kir.Add(kir.Mul(c.nf, kir.I(width)), kir.Mul(c.tid, kir.I(vec)))})
		bind(g, c.fAxes, f)
		for m := range c.rows {
			mv := kir.NewVar("m", te.I32)
			g.emit(&kir.Let{Var: mv, Value: kir.I(m)})
			bind(g, c.aAxes, mv)
			sum := func(j int) kir.Expr {
				return read(kir.Add(kir.I(m*l.threads+j), kir.Mul(c.tid, kir.I(vec))))
			}
			ok = ok && l.storeGuardedVector(g, t, vec, moving, guards, g.flat(t.Shape, axisIndexes(t)), c.tmp, r, sum, arrays)
		}
	})
	if !ok {
		return false
	}
	g.emit(&kir.If{Cond: kir.Lt(c.tid, kir.I(width/vec)), Then: epilogue})
	return true
}

// groupPrologue returns the condition under which a resident tile
// computes its entry's hoisted reductions: for groups of one entry, the
// first tile nf of its virtual block and group (the others follow it with
// the same entry, and nothing else writes the prologue array between
// them); nil, every tile, for larger groups, whose entries take turns.
func groupPrologue(group int, nf, first kir.Expr) kir.Expr {
	if group > 1 {
		return nil
	}
	return kir.Eq(nf, first)
}

// hoistedOnce emits the tile's prologue (the hoisted reductions of its
// batch entry's rows into c.pro) under c.proOnce: they read no column of
// the tile, so that the block's tiles of one entry (every tile of a
// decode step's single row) share one computation instead of each
// repeating it. The condition is block-uniform, so that the prologue's
// barriers are reached by all threads or none, and reads only loop
// variables and the grid, so that the static report counts it exactly;
// c.pro is the stage's own array, which nothing else writes between its
// tiles.
func (l *lowerer) hoistedOnce(g *gen, c entryCtx) {
	if c.proOnce == nil || len(c.hoisted) == 0 {
		l.prologue(g, c)
		return
	}
	g.emit(&kir.If{Cond: c.proOnce, Then: g.into(func() { l.prologue(g, c) })})
}

// stageRows emits the staging of k in [c0, c0 + staged) of every row of
// the narrow factor into xs, and the barrier after it.
func (l *lowerer) stageRows(g *gen, d contraction.Dims, c entryCtx, staged int, c0 kir.Expr) {
	if c.stageVec > 0 && staged%c.stageVec == 0 && l.stageRowsVec(g, d, c, staged, c0) {
		return
	}
	e := kir.NewVar("e", te.I32)
	g.emit(&kir.For{Var: e, Kind: kir.BlockStride, Lo: kir.I(0), Hi: kir.I(c.rows * staged), Body: g.into(func() {
		m, kk := kir.NewVar("m", te.I32), kir.NewVar("kk", te.I32)
		g.emit(
			&kir.Let{Var: m, Value: kir.Div(e, kir.I(staged))},
			&kir.Let{Var: kk, Value: addOffset(c0, kir.Mod(e, kir.I(staged)))},
		)
		bind(g, c.aAxes, m)
		bind(g, d.Reduce.Axes, kk)
		forget := useHoisted(g, c, m)
		store := g.into(func() {
			at := kir.Expr(e)
			if c.kLanes || c.rowLen > staged {
				at = c.xsAt(m, kir.Mod(e, kir.I(staged)), staged)
			}
			g.emit(&kir.Store{Buf: c.xs, Index: at, Value: convert(g.expr(c.A), te.F32)})
		})
		forget()
		if c.liveK != nil {
			// sumChunk reads no element at a k the mask makes zero.
			store = []kir.Stmt{&kir.If{Cond: c.liveK(kk, kk), Then: store}}
		}
		g.emit(store...)
	})}, &kir.SyncThreads{})
	for _, a := range append(append(append([]*te.Var{}, c.fAxes...), c.aAxes...), d.Reduce.Axes...) {
		delete(g.env, a)
	}
}

// stageRowsVec emits stageRows's staging with c.stageVec elements of a
// row per thread and step: each load of the narrow factor that moves
// with k reads them with one 16-byte load into a local array, and the
// elements are computed from those (MatVec.StageVec). It reports false,
// emitting nothing, where such a load is not a plain one after all.
func (l *lowerer) stageRowsVec(g *gen, d contraction.Dims, c entryCtx, staged int, c0 kir.Expr) bool {
	n, k := c.stageVec, d.Reduce.Axes[0]
	groups := staged / n
	var moving []*te.Load
	te.Walk(c.A, func(x te.Expr) bool {
		if ld, ok := x.(*te.Load); ok && !slices.Contains(moving, ld) && slices.ContainsFunc(ld.Index, func(ix te.Index) bool { return slices.Contains(ix.Vars(), k) }) {
			moving = append(moving, ld)
		}
		return true
	})
	e := kir.NewVar("e", te.I32)
	ok := true
	local := map[*te.Load]*te.Tensor{}
	var bufs []*kir.Buffer
	m, kk, kl := kir.NewVar("m", te.I32), kir.NewVar("kk", te.I32), kir.NewVar("kl", te.I32)
	// Step e stages the n elements from k = kl of row m. Where the lanes
	// read vectors of more elements than a load stages (f32 rows for
	// bf16 weights), a warp's steps take the same part of consecutive
	// vectors, which the lanes' layout puts in distinct banks, rather
	// than the parts of one vector, which it puts in one.
	place := kir.Expr(kir.Mul(kir.Mod(e, kir.I(groups)), kir.I(n)))
	if parts := c.vec / n; c.kLanes && parts > 1 {
		vecs := staged / c.vec
		q := kir.Mod(e, kir.I(groups))
		place = kir.Add(kir.Mul(kir.Mod(q, kir.I(vecs)), kir.I(c.vec)), kir.Mul(kir.Div(q, kir.I(vecs)), kir.I(n)))
	}
	body := g.into(func() {
		bind(g, c.aAxes, m)
		bind(g, d.Reduce.Axes, kk)
		for _, x := range moving {
			ld, isLoad := g.expr(x).(*kir.Load)
			if !isLoad || ld.Buf.Space != kir.Global || kir.VecLen(ld.Buf.DType) != n {
				ok = false
				return
			}
			buf := &kir.Buffer{Name: ld.Buf.Name + ".vec", Space: kir.Local, DType: ld.Buf.DType, Shape: []int{n}}
			bufs = append(bufs, buf)
			g.emit(&kir.VecCopy{Dst: buf, DstIndex: kir.I(0), Src: ld.Buf, SrcIndex: ld.Index})
			// The element j of the vector is a load of a tensor that is
			// the local array.
			local[x] = &te.Tensor{Name: buf.Name, Kind: te.Compute, DType: x.Tensor.DType, Shape: []int{n}}
			g.bufs[local[x]] = buf
		}
		forget := useHoisted(g, c, m)
		// The n values go to a local array, and from it to the row with
		// 16-byte stores: a thread's n consecutive words stored one at a
		// time would put a warp's stores n to a bank.
		vl := kir.VecLen(c.xs.DType)
		var out *kir.Buffer
		if n%vl == 0 && !c.kLanes {
			out = &kir.Buffer{Name: "xs.vo", Space: kir.Local, DType: c.xs.DType, Shape: []int{n}}
			bufs = append(bufs, out)
		}
		for j := range n {
			kj := kir.NewVar("kk", te.I32)
			g.emit(&kir.Let{Var: kj, Value: kir.Add(kk, kir.I(j))})
			bind(g, d.Reduce.Axes, kj)
			a := readLocal(c.A, local, te.Const(j))
			if out == nil {
				at := kir.Expr(kir.Add(kir.Mul(e, kir.I(n)), kir.I(j)))
				if c.kLanes || c.rowLen > staged {
					// Laid out for the lanes that read it (MatVec.StagedLen):
					// a warp's lanes store to distinct banks.
					at = c.xsAt(m, kir.Add(kl, kir.I(j)), staged)
				}
				g.emit(&kir.Store{Buf: c.xs, Index: at, Value: convert(g.expr(a), te.F32)})
				continue
			}
			g.emit(&kir.Store{Buf: out, Index: kir.I(j), Value: convert(g.expr(a), te.F32)})
		}
		if out != nil {
			at := kir.Expr(kir.Mul(e, kir.I(n)))
			if c.rowLen > staged {
				at = c.xsAt(m, kl, staged)
			}
			bufs = append(bufs, storeRotated(g, c.xs, at, out, e, n, vl)...)
		}
		forget()
	})
	if c.liveK != nil {
		// A group wholly past the k mask is not staged; one that holds
		// its last live k is, whole: its elements past the mask are
		// computed from in-bounds loads (stageElems: plain loads), and
		// the sums read none of them.
		body = []kir.Stmt{&kir.If{Cond: c.liveK(kk, kir.Add(kk, kir.I(n-1))), Then: body}}
	}
	body = append([]kir.Stmt{
		&kir.Let{Var: m, Value: kir.Div(e, kir.I(groups))},
		&kir.Let{Var: kl, Value: place},
		&kir.Let{Var: kk, Value: addOffset(c0, kl)},
	}, body...)
	for _, t := range local {
		delete(g.bufs, t)
	}
	for _, a := range append(append(append([]*te.Var{}, c.fAxes...), c.aAxes...), d.Reduce.Axes...) {
		delete(g.env, a)
	}
	if !ok {
		return false
	}
	c.tmp.Locals = append(c.tmp.Locals, bufs...)
	g.emit(&kir.For{Var: e, Kind: kir.BlockStride, Lo: kir.I(0), Hi: kir.I(c.rows * groups), Body: body}, &kir.SyncThreads{})
	return true
}

// storeRotated emits the stores of a thread's n consecutive elements
// from the local array out into dst at at, vl of them (16 bytes) a
// store. A warp's stores of n/vl > 1 vectors a thread, each lane's n
// elements after the last's, put the vectors of a phase of lanes (8 for
// 16 bytes) n/vl to a bank group when each store takes the same part of
// every lane's elements; so store s of the lane of step e takes part
// (s + r) mod parts, r = (e / (8/parts)) mod parts, which the phase's
// lanes spread over the 8 groups of 16 bytes. The parts are chosen among
// registers by selects, never by a run-time index into out (which would
// put it in local memory). It returns the local array it adds.
func storeRotated(g *gen, dst *kir.Buffer, at kir.Expr, out *kir.Buffer, e *kir.Var, n, vl int) []*kir.Buffer {
	parts := n / vl
	phase := kir.PhaseLanes(kir.VecBytes)
	if parts == 1 || phase%parts != 0 {
		for q := 0; q < n; q += vl {
			g.emit(&kir.VecCopy{Dst: dst, DstIndex: addIndex(at, q), Src: out, SrcIndex: kir.I(q)})
		}
		return nil
	}
	r := kir.NewVar("rot", te.I32)
	g.emit(&kir.Let{Var: r, Value: kir.Mod(kir.Div(e, kir.I(phase/parts)), kir.I(parts))})
	rot := &kir.Buffer{Name: out.Name + ".rot", Space: kir.Local, DType: out.DType, Shape: []int{n}}
	// rot's part s is out's part (s + r) mod parts.
	for s := range parts {
		for i := range vl {
			var v kir.Expr = kir.Ld(out, kir.I(((s+parts-1)%parts)*vl+i))
			for q := parts - 2; q >= 0; q-- {
				v = &kir.Select{Cond: kir.Eq(r, kir.I(q)), Then: kir.Ld(out, kir.I(((s+q)%parts)*vl+i)), Else: v}
			}
			g.emit(&kir.Store{Buf: rot, Index: kir.I(s*vl + i), Value: v})
		}
	}
	for s := range parts {
		part := kir.Mod(kir.Add(r, kir.I(s)), kir.I(parts))
		g.emit(&kir.VecCopy{Dst: dst, DstIndex: kir.Add(at, kir.Mul(part, kir.I(vl))), Src: rot, SrcIndex: kir.I(s * vl)})
	}
	return []*kir.Buffer{rot}
}

// sumChunk emits thread (kz, col)'s sums over its k of the chunk staged at
// c0, each row's staged element times the wide factor's. A wide factor in
// parts (MatVec.Parts) is read in one loop per part, the tile choosing
// its part once, by its nf.
func (l *lowerer) sumChunk(g *gen, d contraction.Dims, c entryCtx, acc, fs []*kir.Var, staged int, c0 kir.Expr) {
	if c.ringCtx.buf != nil && c.F != nil && l.sumRing(g, d, c, acc, staged, c0) {
		return
	}
	if c.F == nil || len(c.parts) == 0 {
		l.sumPart(g, d, c, c.F, acc, fs, staged, c0)
		return
	}
	var chain []kir.Stmt
	for i := len(c.parts) - 1; i >= 0; i-- {
		part := g.into(func() { l.sumPart(g, d, c, c.parts[i].F, acc, fs, staged, c0) })
		if chain == nil {
			chain = part
			continue
		}
		chain = []kir.Stmt{&kir.If{Cond: kir.Lt(c.nf, kir.I(c.parts[i+1].Tile)), Then: part, Else: chain}}
	}
	g.emit(chain...)
}

// sumPart emits sumChunk's sums with the wide factor read as f (c.F, or
// one of its parts; nil for the cache slice): with 16-byte loads where
// the schedule has them (sumVec), else k = c0 + kz + i·split in a loop
// over i (so that the static report counts it exactly).
func (l *lowerer) sumPart(g *gen, d contraction.Dims, c entryCtx, f te.Expr, acc, fs []*kir.Var, staged int, c0 kir.Expr) {
	if c.mma != nil {
		if f == nil || !l.sumMMA(g, d, c, f, staged, c0) {
			c.fail()
		}
		return
	}
	if f != nil && c.vec > 0 && l.sumVec(g, d, c, f, acc, fs, staged, c0) {
		return
	}
	if f != nil && c.colVec > 0 && l.sumColVec(g, d, c, f, acc, fs, staged, c0) {
		return
	}
	r := d.Reduce
	tf, split := c.tileF, c.split
	kl, kk := kir.NewVar("kl", te.I32), kir.NewVar("kk", te.I32)
	i := kir.NewVar("i", te.I32)
	step := g.into(func() {
		g.emit(&kir.Let{Var: kk, Value: addOffset(c0, kl)})
		accumulate(g, c, acc, func(m int) kir.Expr { return c.rowAt(m, kl, staged) }, func(j int) kir.Expr {
			if f == nil {
				return kir.Ld(c.data, kir.Add(c.base, kir.Add(kir.Mul(kk, kir.I(tf)), c.col)))
			}
			bind(g, r.Axes, kk)
			bind(g, c.fAxes, fs[j])
			return convert(g.expr(f), te.F32)
		})
	})
	for _, a := range append(append([]*te.Var{}, r.Axes...), c.fAxes...) {
		delete(g.env, a)
	}
	if c.liveK != nil {
		// No load of either factor, and no product, at a k where one of
		// them is exactly 0 (contraction.ZeroPast).
		step = append([]kir.Stmt{&kir.Let{Var: kk, Value: addOffset(c0, kl)}},
			&kir.If{Cond: c.liveK(kk, kk), Then: step[1:]})
	}
	if staged%split != 0 {
		step = []kir.Stmt{&kir.If{Cond: kir.Lt(kl, kir.I(staged)), Then: step}}
	}
	step = append([]kir.Stmt{&kir.Let{Var: kl, Value: kir.Add(c.kz, kir.Mul(i, kir.I(split)))}}, step...)
	g.emit(&kir.For{Var: i, Kind: kir.Serial, Lo: kir.I(0), Hi: kir.I(te.CeilDiv(staged, split)), Step: 1, Body: step})
}

// accumulate emits the products at the staged k at kl: each row's
// element, read once for the thread's columns, times weight(j), the wide
// factor's element at the thread's column j (weight may emit the
// statements it needs), added to the row's and column's accumulator.
func accumulate(g *gen, c entryCtx, acc []*kir.Var, xsAt func(m int) kir.Expr, weight func(j int) kir.Expr) {
	xv := make([]kir.Expr, c.rows)
	for m := range xv {
		xv[m] = kir.Ld(c.xs, xsAt(m))
		if c.cols > 1 {
			v := kir.NewVar("x", te.F32)
			g.emit(&kir.Let{Var: v, Value: xv[m]})
			xv[m] = v
		}
	}
	for j := range c.cols {
		w := kir.NewVar("w", te.F32)
		value := weight(j)
		g.emit(&kir.Let{Var: w, Value: value})
		for m := range c.rows {
			a := acc[m*c.cols+j]
			g.emit(&kir.Assign{Var: a, Value: kir.Add(a, kir.Mul(xv[m], w))})
		}
	}
}

// sumVec emits sumPart's sums with the wide factor f read c.vec elements
// along k at a time: each load of f that moves with k (te.VectorLoads) is
// read with one 16-byte load into a local array (8 or 4 bytes where its
// type is narrower than the widest such load's: a bf16 key selected
// beside an f32 cache), under the conditions of the selects it lies
// under, and f is computed element by element from those arrays. Thread
// (kz, col) takes the chunk's vectors v = kz + i·split (k from c0 +
// v·vec), c.inFlight of them per round of a loop over rounds, and issues
// a round's loads, for each of its columns, before it uses any. The
// planner proved the loads contiguous and aligned (MatVec.Vec); sumVec
// reports false, emitting nothing, where one does not lower to a plain
// load after all.
func (l *lowerer) sumVec(g *gen, d contraction.Dims, c entryCtx, f te.Expr, acc, fs []*kir.Var, staged int, c0 kir.Expr) bool {
	r := d.Reduce
	n, u, split, cols := c.vec, max(c.inFlight, 1), c.split, c.cols
	moving, guards, ok := te.VectorLoads(f, r.Axes[0], n, nil)
	if !ok || len(moving) == 0 {
		return false
	}
	vecs := staged / n
	rounds := te.CeilDiv(te.CeilDiv(vecs, split), u)
	var arrays []*kir.Buffer
	var stands []*te.Tensor
	i := kir.NewVar("i", te.I32)
	var lets, loads, sums []kir.Stmt
	for q := range u {
		v := kir.NewVar("v", te.I32)
		lets = append(lets, &kir.Let{Var: v, Value: kir.Add(c.kz, kir.Mul(kir.Add(kir.Mul(i, kir.I(u)), kir.I(q)), kir.I(split)))})
		local := make([]map[*te.Load]*te.Tensor, cols)
		load := g.into(func() {
			kk := kir.NewVar("kk", te.I32)
			g.emit(&kir.Let{Var: kk, Value: addOffset(c0, kir.Mul(v, kir.I(n)))})
			for j := range cols {
				if !ok {
					return
				}
				bind(g, r.Axes, kk)
				bind(g, c.fAxes, fs[j])
				var bufs []*kir.Buffer
				local[j], bufs, ok = readVectors(g, moving, guards, n, func(m int, dt te.DType) (*kir.Buffer, kir.Expr) {
					name := fmt.Sprintf("%s.w%d", moving[m].Tensor.Name, len(arrays)+m)
					return &kir.Buffer{Name: name, Space: kir.Local, DType: dt, Shape: []int{n}}, kir.I(0)
				})
				arrays = append(arrays, bufs...)
				for _, t := range local[j] {
					stands = append(stands, t)
				}
			}
		})
		if !ok {
			break
		}
		sum := g.into(func() {
			for e := range n {
				kl := kir.Add(kir.Mul(v, kir.I(n)), kir.I(e))
				xsAt := func(m int) kir.Expr { return c.rowAt(m, kl, staged) }
				if c.kLanes {
					// Vector v = kz + g·split of group g = i·u + q, read
					// where it was staged without a division.
					at := c.lanePlace(kir.Add(kir.Mul(i, kir.I(u)), kir.I(q)), kir.I(e), c.kz)
					xsAt = func(m int) kir.Expr { return addOffset(kir.I(m*c.rowLen), at) }
				}
				accumulate(g, c, acc, xsAt, func(j int) kir.Expr {
					bind(g, r.Axes, addOffset(c0, kl))
					bind(g, c.fAxes, fs[j])
					return convert(g.expr(readLocal(f, local[j], te.Const(e))), te.F32)
				})
			}
		})
		if rounds*u*split > vecs {
			// Threads past the chunk's last vector load and sum nothing.
			load = []kir.Stmt{&kir.If{Cond: kir.Lt(v, kir.I(vecs)), Then: load}}
			sum = []kir.Stmt{&kir.If{Cond: kir.Lt(v, kir.I(vecs)), Then: sum}}
		}
		loads, sums = append(loads, load...), append(sums, sum...)
	}
	return emitRounds(g, c, r, stands, arrays, ok, i, rounds, lets, loads, sums)
}

// sumColVec emits sumPart's sums with the wide factor f read across the
// thread's c.cols consecutive columns (c.colVec): at each of its k, each
// load of f that moves along the columns (te.VectorLoads) is read with
// one 16-byte load into a local array (4 or 8 bytes where its type is
// narrower than the widest such load's), under the conditions of the
// selects it lies under, and column j's element is computed from the
// arrays. Thread (kz, col) takes the chunk's k = kz + i·split, c.inFlight
// of them per round of a loop over rounds, and issues a round's loads
// before it uses any; a k past the chunk or the k mask loads and sums
// nothing (the rows staged there are not written). The planner proved
// the loads contiguous and aligned (MatVec.ColVec); sumColVec reports
// false, emitting nothing, where one does not lower to a plain load after
// all.
func (l *lowerer) sumColVec(g *gen, d contraction.Dims, c entryCtx, f te.Expr, acc, fs []*kir.Var, staged int, c0 kir.Expr) bool {
	r := d.Reduce
	n, u, split := c.colVec, max(c.inFlight, 1), c.split
	if len(c.fAxes) != 1 || n != c.cols {
		return false
	}
	moving, guards, ok := te.VectorLoads(f, c.fAxes[0], n, nil)
	if !ok || len(moving) == 0 {
		return false
	}
	rounds := te.CeilDiv(te.CeilDiv(staged, split), u)
	var arrays []*kir.Buffer
	var stands []*te.Tensor
	i := kir.NewVar("i", te.I32)
	var lets, loads, sums []kir.Stmt
	for q := range u {
		kl, kk := kir.NewVar("kl", te.I32), kir.NewVar("kk", te.I32)
		lets = append(lets,
			&kir.Let{Var: kl, Value: kir.Add(c.kz, kir.Mul(kir.Add(kir.Mul(i, kir.I(u)), kir.I(q)), kir.I(split)))},
			&kir.Let{Var: kk, Value: addOffset(c0, kl)})
		var local map[*te.Load]*te.Tensor
		load := g.into(func() {
			bind(g, r.Axes, kk)
			bind(g, c.fAxes, fs[0])
			var bufs []*kir.Buffer
			local, bufs, ok = readVectors(g, moving, guards, n, func(m int, dt te.DType) (*kir.Buffer, kir.Expr) {
				name := fmt.Sprintf("%s.c%d", moving[m].Tensor.Name, len(arrays)+m)
				return &kir.Buffer{Name: name, Space: kir.Local, DType: dt, Shape: []int{n}}, kir.I(0)
			})
			arrays = append(arrays, bufs...)
			for _, t := range local {
				stands = append(stands, t)
			}
		})
		if !ok {
			break
		}
		sum := g.into(func() {
			accumulate(g, c, acc, func(m int) kir.Expr { return c.rowAt(m, kl, staged) }, func(j int) kir.Expr {
				bind(g, r.Axes, kk)
				bind(g, c.fAxes, fs[j])
				return convert(g.expr(readLocal(f, local, te.Const(j))), te.F32)
			})
		})
		var live kir.Expr
		if rounds*u*split > staged {
			live = kir.Lt(kl, kir.I(staged))
		}
		if c.liveK != nil {
			// No load of either factor, and no product, at a k where one
			// of them is exactly 0 (contraction.ZeroPast).
			if inK := c.liveK(kk, kk); live == nil {
				live = inK
			} else {
				live = kir.And(live, inK)
			}
		}
		if live != nil {
			load = []kir.Stmt{&kir.If{Cond: live, Then: load}}
			sum = []kir.Stmt{&kir.If{Cond: live, Then: sum}}
		}
		loads, sums = append(loads, load...), append(sums, sum...)
	}
	return emitRounds(g, c, r, stands, arrays, ok, i, rounds, lets, loads, sums)
}

// emitRounds ends sumVec's and sumColVec's emission: it forgets the
// bindings of r's axes and of the columns, and the local arrays'
// stand-ins, and, where every vector lowered to a plain load (ok),
// declares the arrays in c.tmp and emits the loop over rounds i, each the
// rounds' lets, then all its loads, then its sums. It reports ok.
func emitRounds(g *gen, c entryCtx, r *te.Reduce, stands []*te.Tensor, arrays []*kir.Buffer, ok bool, i *kir.Var, rounds int, lets, loads, sums []kir.Stmt) bool {
	for _, a := range append(append([]*te.Var{}, r.Axes...), c.fAxes...) {
		delete(g.env, a)
	}
	for _, t := range stands {
		delete(g.bufs, t)
	}
	if !ok {
		return false
	}
	c.tmp.Locals = append(c.tmp.Locals, arrays...)
	body := append(append(lets, loads...), sums...)
	g.emit(&kir.For{Var: i, Kind: kir.Serial, Lo: kir.I(0), Hi: kir.I(rounds), Step: 1, Body: body})
	return true
}

// addOffset returns c0 + x, or x when c0 is the constant 0.
func addOffset(c0, x kir.Expr) kir.Expr {
	if k, ok := c0.(*kir.Const); ok && k.Value == 0 {
		return x
	}
	return kir.Add(c0, x)
}

// warpSplitCombine reports whether the split sums of a block of threads
// threads, tf columns wide, can be combined with warp shuffles: whole warps,
// each holding 32/tf splits of every column (thread (kz, col) is
// kz·tf + col).
func warpSplitCombine(tf, threads int) bool {
	return tf >= 1 && kir.WarpSize%tf == 0 && threads%kir.WarpSize == 0
}

// combineSplitsByWarps leaves the sum of acc over the splits of each column
// in red[m·threads + col]. Each warp combines its splits of a column with
// xor shuffles (offsets tf to 16), and its first tf lanes write the warp's
// sums to red[m·threads + warp·tf + col]; after a barrier, the lanes of warp
// 0 (32/tf of them per column) each add up every (32/tf)-th warp's sum,
// serially, and combine those with the same shuffles. Two barriers with the
// one that follows, instead of one per level of a tree over the splits, in
// an order fixed run to run.
func combineSplitsByWarps(g *gen, c entryCtx, acc []*kir.Var, tf, threads int) {
	perWarp, warps := kir.WarpSize/tf, threads/kir.WarpSize
	butterfly := func(v *kir.Var) []kir.Stmt {
		var ss []kir.Stmt
		for off := tf; off < kir.WarpSize; off *= 2 {
			ss = append(ss, &kir.Assign{Var: v, Value: kir.Add(v, &kir.Shuffle{Mode: kir.ShuffleXor, X: v, Offset: off, Width: kir.WarpSize, Mask: kir.FullMask()})})
		}
		return ss
	}
	var write []kir.Stmt
	for m, a := range acc {
		g.emit(butterfly(a)...)
		at := kir.Add(kir.I(m*threads), kir.Add(kir.Mul(kir.Div(c.tid, kir.I(kir.WarpSize)), kir.I(tf)), c.col))
		write = append(write, &kir.Store{Buf: c.red, Index: at, Value: a})
	}
	g.emit(&kir.If{Cond: kir.Lt(kir.Mod(c.tid, kir.I(kir.WarpSize)), kir.I(tf)), Then: write}, &kir.SyncThreads{})
	var first, final []kir.Stmt
	for m := range acc {
		s, j := kir.NewVar("wsum", te.F32), kir.NewVar("w", te.I32)
		first = append(first,
			&kir.Let{Var: s, Value: kir.F(0)},
			&kir.For{Var: j, Kind: kir.Serial, Lo: c.kz, Hi: kir.I(warps), Step: perWarp, Body: []kir.Stmt{
				&kir.Assign{Var: s, Value: kir.Add(s, kir.Ld(c.red, kir.Add(kir.I(m*threads), kir.Add(kir.Mul(j, kir.I(tf)), c.col))))},
			}})
		first = append(first, butterfly(s)...)
		final = append(final, &kir.Store{Buf: c.red, Index: kir.Add(kir.I(m*threads), c.col), Value: s})
	}
	first = append(first, &kir.If{Cond: kir.Lt(c.tid, kir.I(tf)), Then: final})
	g.emit(&kir.If{Cond: kir.Lt(c.tid, kir.I(kir.WarpSize)), Then: first})
}

// piecewise returns the expression of x that takes value vals[x] for x in
// [0, len(vals)): a chain of selects over the runs in which vals is affine
// in x (one run for an affine table).
func piecewise(vals []int, x kir.Expr) kir.Expr {
	type run struct{ lo, hi, v0, slope int }
	var runs []run
	for i := 0; i < len(vals); {
		r := run{lo: i, hi: i + 1, v0: vals[i]}
		if i+1 < len(vals) {
			r.slope = vals[i+1] - vals[i]
		}
		for r.hi < len(vals) && vals[r.hi] == r.v0+r.slope*(r.hi-r.lo) {
			r.hi++
		}
		runs = append(runs, r)
		i = r.hi
	}
	var e kir.Expr
	for i := len(runs) - 1; i >= 0; i-- {
		r := runs[i]
		var v kir.Expr = kir.I(r.v0)
		if r.slope != 0 {
			off := x
			if r.lo != 0 {
				off = kir.Sub(x, kir.I(r.lo))
			}
			if r.slope != 1 {
				off = kir.Mul(off, kir.I(r.slope))
			}
			v = off
			if r.v0 != 0 {
				v = kir.Add(kir.I(r.v0), off)
			}
		}
		if e == nil {
			e = v
			continue
		}
		e = &kir.Select{Cond: kir.Lt(x, kir.I(r.hi)), Then: v, Else: e}
	}
	return e
}
