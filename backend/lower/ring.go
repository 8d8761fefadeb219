package lower

import (
	"tec/backend/kir"
	"tec/contraction"
	"tec/te"
)

// A weight ring (schedule.MatVec.Ring) streams a matrix-vector stage's
// wide factor through shared memory with cp.async: each thread owns Ring
// 16-byte slots, and vector i of its tile lives in slot i mod Ring. While
// it sums vector i, the copies of vectors i+1 to i+Ring−1 are in flight;
// having waited for vector i (cp.async.wait_group Ring−1), it reads the
// slot back, sums it, and copies vector i+Ring into the slot it just
// read, on into its next tile's first vectors when this tile's run out.
// Loads into registers would be issued a round at a time and waited for
// together, so that a thread's bytes in flight fall to nothing between
// rounds and between tiles; the ring keeps them in flight, with one
// vector's registers. A thread reads only its own slots, after its own
// wait, so the ring needs no barrier; a slot is written again only by the
// copy issued after the read of it, by the same thread.
//
// The block's first tile (tile < gridDim: a grid-stride loop's first
// trip, rotated or not) fills the ring; each tile prefetches the first
// Ring−1 vectors of the block's next tile, tile + gridDim, where there is
// one. Only params are prefetched (the planner's condition), since the
// next tile's dependences, a counter's wait, are met only when it starts.
// Every copy is of a tile the block runs, and is waited for before that
// tile sums it, so that none is in flight when the stage ends, and the
// next stage's scratch arrays may take the ring's bytes: the stage stays
// one grid-stride loop over its tiles, which the per-tile counters
// (counters.go) expect.

// ringCtx is what sumRing needs beyond the tile's entryCtx: the ring, the
// tile's variable and the stage's tiles.
type ringCtx struct {
	buf   *kir.Buffer
	depth int
	tile  *kir.Var
	tiles int
	nt    int
}

// ringSlot returns the first element of the thread's slot s of the ring.
func (c entryCtx) ringSlot(threads, s int) kir.Expr {
	return kir.Mul(kir.Add(kir.I(s*threads), c.tid), kir.I(c.vec))
}

// ringCopy emits the copy of the thread's vector i of tile tile (its
// column of the tile's part of the wide factor, k from vector kz + i·split)
// into its slot s of the ring, and reports whether every part's load
// lowered to a plain global load. The axes it binds are restored after.
func (l *lowerer) ringCopy(g *gen, d contraction.Dims, c entryCtx, tile, i kir.Expr, s int) bool {
	r, rc := d.Reduce, c.ringCtx
	axes := append(append(append([]*te.Var{}, d.BatchAxes...), c.fAxes...), r.Axes...)
	saved := make(map[*te.Var]kir.Expr, len(axes))
	for _, a := range axes {
		if x, ok := g.env[a]; ok {
			saved[a] = x
		}
	}
	defer func() {
		for _, a := range axes {
			if x, ok := saved[a]; ok {
				g.env[a] = x
			} else {
				delete(g.env, a)
			}
		}
	}()
	nf, b, f, kk := kir.NewVar("nf", te.I32), kir.NewVar("b", te.I32), kir.NewVar("f", te.I32), kir.NewVar("kk", te.I32)
	g.emit(
		&kir.Let{Var: nf, Value: kir.Mod(tile, kir.I(rc.nt))},
		&kir.Let{Var: b, Value: kir.Div(tile, kir.I(rc.nt))},
		&kir.Let{Var: f, Value: kir.Add(kir.Mul(nf, kir.I(c.tileF)), c.col)},
		&kir.Let{Var: kk, Value: kir.Mul(kir.Add(c.kz, kir.Mul(i, kir.I(c.split))), kir.I(c.vec))},
	)
	bind(g, d.BatchAxes, b)
	bind(g, c.fAxes, f)
	bind(g, r.Axes, kk)
	ok := true
	copyOf := func(part te.Expr) []kir.Stmt {
		ld, isLoad := g.expr(part).(*kir.Load)
		if !isLoad || ld.Buf.Space != kir.Global || ld.Buf.DType != rc.buf.DType {
			ok = false
			return nil
		}
		return []kir.Stmt{&kir.CopyAsync{Dst: rc.buf, DstIndex: c.ringSlot(l.threads, s), Src: ld.Buf, SrcIndex: ld.Index, Bypass: true}}
	}
	if len(c.parts) == 0 {
		g.emit(copyOf(c.F)...)
		return ok
	}
	var chain []kir.Stmt
	for p := len(c.parts) - 1; p >= 0; p-- {
		part := copyOf(c.parts[p].F)
		if chain == nil {
			chain = part
			continue
		}
		chain = []kir.Stmt{&kir.If{Cond: kir.Lt(nf, kir.I(c.parts[p+1].Tile)), Then: part, Else: chain}}
	}
	g.emit(chain...)
	return ok
}

// sumRing emits sumChunk's sums with the wide factor streamed through the
// thread's ring (see above), for the chunk of k staged at c0 (all of it,
// or one of the chunks of a row too long for shared memory: the ring
// runs on across the chunks, which the block's barriers between them do
// not stop): the block's first tile fills it, at its first chunk, then,
// for each vector i of the thread's per of the chunk (in rounds of Ring,
// unrolled, so that every slot is a constant), the copy of vector
// i + Ring − 1 (of this tile, or of the next one), a commit, the wait for
// vector i, and its products with the staged rows. It reports false,
// emitting nothing, where a part does not lower to a plain load after
// all.
func (l *lowerer) sumRing(g *gen, d contraction.Dims, c entryCtx, acc []*kir.Var, staged int, c0 kir.Expr) bool {
	rc := c.ringCtx
	depth, n, split := rc.depth, c.vec, c.split
	per, all := staged/n/split, c.K/n/split // the chunk's vectors, the tile's
	if per%depth != 0 || per*n*split != staged || c.K%staged != 0 {
		return false
	}
	chunked := staged < c.K
	ok := true
	fill := g.into(func() {
		for s := range depth - 1 {
			ok = ok && l.ringCopy(g, d, c, rc.tile, kir.I(s), s)
			g.emit(&kir.CommitGroup{})
		}
	})
	w := &kir.Buffer{Name: "w.ring", Space: kir.Local, DType: rc.buf.DType, Shape: []int{n}}
	round := kir.NewVar("round", te.I32)
	body := g.into(func() {
		for s := range depth {
			il := kir.NewVar("i", te.I32) // the vector's group in the chunk's staged rows
			i, j := il, kir.NewVar("j", te.I32)
			g.emit(&kir.Let{Var: il, Value: kir.Add(kir.Mul(round, kir.I(depth)), kir.I(s))})
			if chunked {
				i = kir.NewVar("i", te.I32) // and in the tile
				g.emit(&kir.Let{Var: i, Value: kir.Add(kir.Div(c0, kir.I(n*split)), il)})
			}
			g.emit(&kir.Let{Var: j, Value: kir.Add(i, kir.I(depth-1))})
			slot := (s + depth - 1) % depth
			this := g.into(func() { ok = ok && l.ringCopy(g, d, c, rc.tile, j, slot) })
			next := g.into(func() {
				ok = ok && l.ringCopy(g, d, c, kir.Add(rc.tile, kir.Gdim()), kir.Sub(j, kir.I(all)), slot)
			})
			g.emit(
				&kir.If{Cond: kir.Lt(j, kir.I(all)), Then: this, Else: []kir.Stmt{
					&kir.If{Cond: kir.Lt(kir.Add(rc.tile, kir.Gdim()), kir.I(rc.tiles)), Then: next}}},
				&kir.CommitGroup{},
				&kir.WaitGroup{N: depth - 1},
				&kir.VecCopy{Dst: w, DstIndex: kir.I(0), Src: rc.buf, SrcIndex: c.ringSlot(l.threads, s)},
			)
			for e := range n {
				at := c.lanePlace(il, kir.I(e), c.kz)
				accumulate(g, c, acc, func(m int) kir.Expr { return addOffset(kir.I(m*c.rowLen), at) }, func(int) kir.Expr {
					return convert(kir.Ld(w, kir.I(e)), te.F32)
				})
			}
		}
	})
	if !ok {
		return false
	}
	c.tmp.Locals = append(c.tmp.Locals, w)
	first := kir.Expr(kir.Lt(rc.tile, kir.Gdim()))
	if chunked {
		first = kir.And(first, kir.Eq(c0, kir.I(0)))
	}
	g.emit(
		&kir.If{Cond: first, Then: fill},
		&kir.For{Var: round, Kind: kir.Serial, Lo: kir.I(0), Hi: kir.I(per / depth), Step: 1, Body: body},
	)
	return true
}
