package lower

import (
	"fmt"
	"slices"

	"tec/backend/kir"
	"tec/contraction"
	"tec/schedule"
	"tec/te"
)

// opTile is one operand's tile in a tensor-core k loop: the operand, how
// it is staged (contraction.StagingOf), its shared array and layout,
// and its shape, rows×cols with cols contiguous in shared memory. The
// rows are k (kRows: an n-major Y) or the operand's m or n points (X, a
// k-major Y), whose tile index ti and extent ext place the tile.
type opTile struct {
	e          te.Expr
	op         contraction.Operand
	s          *kir.Buffer
	lay        tile
	rows, cols int
	kRows      bool
	axes       []*te.Var // the operand's m or n axes
	ti         *kir.Var
	ext        int
	// A register prefetch's loads (contraction.StageVector): the loads
	// that move along the contiguous axis, each read into its array of
	// vectors (one vector per chunk a thread stages), and the vector of
	// values that a chunk stores.
	moving []*te.Load
	vecs   []*kir.Buffer
	out    *kir.Buffer
	// guards[i] are the selects that moving[i] lies under, whose
	// conditions a chunk's points share: it is fetched only where they
	// choose its branch (a chunk of a horizontally concatenated
	// contraction fetches its own batch's tensor, not the others').
	guards [][]branch
}

// branch is the arm of a select, Then where then is set, that a load lies
// under.
type branch struct {
	cond te.Expr
	then bool
}

// operandTile returns the tile of an operand e staged as op says, in a
// shared array name of stages copies, whose m or n axes axes of ext
// points it takes tm of: rows of k and columns of tm where the operand is
// not k-major, else the transpose. Rows of 32 elements are rotated with
// one chunk per wavefront (ldmatrix rows, TF32 fragments' columns of 4
// words), wider ones with two for TF32, whose fragments read 8 of their
// columns in 4 rows.
func (l *lowerer) operandTile(e te.Expr, op contraction.Operand, name string, axes []*te.Var, tm, ext, stages int, in te.DType) *opTile {
	tk := schedule.TensorCoreTileK
	o := &opTile{e: e, op: op, axes: axes, ext: ext, rows: tk, cols: tm, kRows: !op.KMajor}
	if op.KMajor {
		o.rows, o.cols = tm, tk
	}
	o.s = &kir.Buffer{Name: name, Space: kir.Shared, DType: in, Shape: []int{stages, o.rows, o.cols}}
	o.lay = newTile(o.cols, in, 1, l.opts.flatTiles)
	if o.kRows && in == te.F32 {
		o.lay.w *= 2
	}
	return o
}

// vec returns the elements of a 16-byte vector of the tile.
func (o *opTile) vec() int { return o.lay.vec }

// chunks returns the 16-byte vectors of one stage of the tile.
func (o *opTile) chunks() int { return o.rows * o.cols / o.vec() }

// chunkAt is one vector of a tile as bindChunk places it.
type chunkAt struct {
	row, chunk kir.Expr // its row and its index in the row
	along      *kir.Var // the first element's position on the contiguous axis
	inK        kir.Expr // when not nil, the condition that its k lies below K
	// kk is its first element's k, and partialK says that K cuts through
	// the chunk (it runs along k, and K is not a multiple of the tile's
	// vector): whether its elements from q on lie below K is kk + q < K.
	kk       *kir.Var
	partialK bool
	K        int
}

// below returns the condition that the chunk's elements from q lie
// below K, or nil where all of them always do.
func (c chunkAt) below(q int) kir.Expr {
	if c.partialK {
		return kir.Lt(addIndex(c.kk, q), kir.I(c.K))
	}
	return c.inK
}

// bindChunk emits the lets of chunk v of o at the k step from k0 and
// binds the operand's axes (r's and o.axes) at its first element. Rows
// past the extent read the last row and columns past it the last vector
// (their products reach only outputs that are not stored); where K is not
// a multiple of the staged k, inK says whether the chunk's k lies below
// it. Where the extent along the tile's columns is not a multiple of the
// tile's vector (o.op.Vec is narrower), the columns stay unclamped here:
// fetch clamps each of the chunk's loads.
func (l *lowerer) bindChunk(g *gen, o *opTile, r *te.Reduce, v kir.Expr, k0 kir.Expr, K int) chunkAt {
	n := o.vec()
	perRow := o.cols / n
	row, chunk := kir.NewVar("row", te.I32), kir.NewVar("chunk", te.I32)
	g.emit(
		&kir.Let{Var: row, Value: kir.Div(v, kir.I(perRow))},
		&kir.Let{Var: chunk, Value: kir.Mod(v, kir.I(perRow))},
	)
	col := kir.Mul(chunk, kir.I(n))
	kk, x := kir.NewVar("kk", te.I32), kir.NewVar("x", te.I32)
	var xv kir.Expr
	if o.kRows {
		g.emit(&kir.Let{Var: kk, Value: addOffset(k0, row)})
		xv = kir.Add(kir.Mul(o.ti, kir.I(o.cols)), col)
		if o.ext%o.cols != 0 && o.ext%n == 0 {
			xv = kir.Bin(te.Min, xv, kir.I(o.ext-n))
		}
	} else {
		xv = kir.Add(kir.Mul(o.ti, kir.I(o.rows)), row)
		if o.ext%o.rows != 0 {
			xv = kir.Bin(te.Min, xv, kir.I(o.ext-1))
		}
		g.emit(&kir.Let{Var: kk, Value: addOffset(k0, col)})
	}
	g.emit(&kir.Let{Var: x, Value: xv})
	bind(g, o.axes, x)
	bind(g, r.Axes, kk)
	c := chunkAt{row: row, chunk: chunk, along: kk, kk: kk, K: K}
	if o.kRows {
		c.along = x
	}
	if K%schedule.TensorCoreTileK != 0 {
		c.inK = kir.Lt(kk, kir.I(K))
	}
	c.partialK = !o.kRows && K%n != 0
	return c
}

// loadLen returns the elements of type dt that each load of o's register
// prefetch reads at once: a 16-byte vector's, or fewer where o's layout
// allows only a narrower one (contraction.Operand.Vec).
func (o *opTile) loadLen(dt te.DType) int {
	return min(kir.VecLen(dt), o.op.Vec)
}

// alongAxes returns the axes along o's tile's columns: the operand's own
// where its rows are k, else k.
func (o *opTile) alongAxes(r *te.Reduce) []*te.Var {
	if o.kRows {
		return o.axes
	}
	return r.Axes
}

// stageAsync issues the cp.async copies of one k step of o's tile, from
// k0, into its stage at element off.
func (l *lowerer) stageAsync(g *gen, o *opTile, r *te.Reduce, k0, off kir.Expr, K int) {
	v := kir.NewVar("v", te.I32)
	g.emit(&kir.For{Var: v, Kind: kir.BlockStride, Lo: kir.I(0), Hi: kir.I(o.chunks()), Body: g.into(func() {
		c := l.bindChunk(g, o, r, v, k0, K)
		ld := o.op.Load
		g.emit(&kir.CopyAsync{Dst: o.s, DstIndex: addOffset(off, o.lay.chunk(c.row, nil, c.chunk)),
			Src: l.bufs[ld.Tensor], SrcIndex: g.flat(ld.Tensor.Shape, ld.Index), Bypass: true})
	})})
}

// prepareVector sets up o's register prefetch (contraction.StageVector)
// for a block of threads threads: its moving loads and their arrays,
// which it adds to k's locals. It reports false, leaving o to be staged
// element by element, where a moving load does not lower to a plain load
// of 16-byte vectors (it is checked on a chunk whose statements are
// dropped).
func (l *lowerer) prepareVector(g *gen, o *opTile, r *te.Reduce, threads int, name string, k *kir.Kernel) bool {
	along := o.alongAxes(r)
	if o.op.Vec == 0 || o.vec()%o.op.Vec != 0 {
		return false
	}
	uses := func(e te.Expr) bool {
		used := te.UsedVars(e)
		return slices.ContainsFunc(along, func(a *te.Var) bool { return used[a] })
	}
	var collect func(e te.Expr, path []branch)
	collect = func(e te.Expr, path []branch) {
		te.Walk(e, func(x te.Expr) bool {
			if s, ok := x.(*te.Select); ok && !uses(s.Cond) && (te.HasLoad(s.Then) || te.HasLoad(s.Else)) {
				collect(s.Cond, path)
				collect(s.Then, append(slices.Clone(path), branch{s.Cond, true}))
				collect(s.Else, append(slices.Clone(path), branch{s.Cond, false}))
				return false
			}
			ld, ok := x.(*te.Load)
			if !ok {
				return true
			}
			if uses(ld) {
				o.moving = append(o.moving, ld)
				o.guards = append(o.guards, path)
			}
			return false
		})
	}
	collect(o.e, nil)
	per := te.CeilDiv(o.chunks(), threads)
	ok := true
	g.into(func() {
		l.bindChunk(g, o, r, kir.I(0), kir.I(0), schedule.TensorCoreTileK)
		for i, ld := range o.moving {
			kl, isLoad := g.expr(ld).(*kir.Load)
			if !isLoad || o.vec()%o.loadLen(kl.Buf.DType) != 0 {
				ok = false
				return
			}
			if j := o.sharedVec(i, kl.Buf.DType); j >= 0 {
				o.vecs = append(o.vecs, o.vecs[j])
				continue
			}
			o.vecs = append(o.vecs, &kir.Buffer{Name: fmt.Sprintf("%sv%d", name, i), Space: kir.Local, DType: kl.Buf.DType, Shape: []int{per * o.vec()}})
		}
	})
	l.unbind(g, o, r)
	if !ok {
		o.moving, o.vecs, o.guards = nil, nil, nil
		return false
	}
	o.out = &kir.Buffer{Name: name + "o", Space: kir.Local, DType: o.s.DType, Shape: []int{o.vec()}}
	for i, b := range o.vecs {
		if !slices.Contains(o.vecs[:i], b) {
			k.Locals = append(k.Locals, b)
		}
	}
	k.Locals = append(k.Locals, o.out)
	return true
}

// unbind forgets the bindings of o's axes.
func (l *lowerer) unbind(g *gen, o *opTile, r *te.Reduce) {
	for _, a := range append(append([]*te.Var{}, o.axes...), r.Axes...) {
		delete(g.env, a)
	}
}

// eachChunk emits f for each chunk that a thread tid of a block of
// threads threads stages, chunks tid, tid + threads, ...: a loop unrolled
// here, of a trip count known when the kernel is compiled, the last
// round guarded where the threads do not divide the chunks.
func eachChunk(g *gen, o *opTile, tid kir.Expr, threads int, f func(u int, v kir.Expr)) {
	for u := range te.CeilDiv(o.chunks(), threads) {
		v := kir.NewVar("v", te.I32)
		body := g.into(func() {
			g.emit(&kir.Let{Var: v, Value: addOffset(tid, kir.I(u*threads))})
			f(u, v)
		})
		if (u+1)*threads > o.chunks() {
			body = []kir.Stmt{&kir.If{Cond: kir.Lt(addOffset(tid, kir.I(u*threads)), kir.I(o.chunks())), Then: body}}
		}
		g.emit(body...)
	}
}

// fetch emits the vector loads of o's moving loads for the k step from
// k0 into its prefetch arrays (two for 8 elements of f32, two or four
// where the layout allows 8 or 4 bytes only, eight element loads where
// it allows none): every load of a thread's
// chunks before any of them is used. Where o's loads read fewer points
// than a chunk's (o.op.Vec), each group of them is addressed at its own
// position, clamped to the extent's last group along the operand's own
// axes, guarded by K along k.
func (l *lowerer) fetch(g *gen, o *opTile, r *te.Reduce, tid kir.Expr, threads int, k0 kir.Expr, K int) {
	n, vec := o.vec(), o.op.Vec
	eachChunk(g, o, tid, threads, func(u int, v kir.Expr) {
		loads := g.into(func() {
			c := l.bindChunk(g, o, r, v, k0, K)
			for q := 0; q < n; q += vec {
				group := g.into(func() {
					if vec < n {
						l.bindGroup(g, o, r, c, q)
					}
					for i, ld := range o.moving {
						copies := g.into(func() {
							kl := g.expr(ld).(*kir.Load) // checked by prepareVector
							vl := o.loadLen(kl.Buf.DType)
							for p := 0; p < vec; p += vl {
								at := kir.I(u*n + q + p)
								b := vl * kl.Buf.DType.Size()
								if b < 4 { // one element: a plain load
									g.emit(&kir.Store{Buf: o.vecs[i], Index: at, Value: kir.Ld(kl.Buf, addIndex(kl.Index, p))})
									continue
								}
								cp := &kir.VecCopy{Dst: o.vecs[i], DstIndex: at, Src: kl.Buf, SrcIndex: addIndex(kl.Index, p)}
								if b != kir.VecBytes {
									cp.Bytes = b
								}
								g.emit(cp)
							}
						})
						g.emit(underBranches(g, o.guards[i], copies)...)
					}
				})
				if in := c.below(q); in != nil {
					group = []kir.Stmt{&kir.If{Cond: in, Then: group}}
				}
				g.emit(group...)
			}
		})
		g.emit(loads...)
		l.unbind(g, o, r)
	})
}

// sharedVec returns the moving load before i whose prefetch array load i
// may share, or -1: one of type dt on another branch of a select than i
// and than every load sharing it (one batch of a horizontally
// concatenated contraction fetches its own tensor into the array, the
// others theirs, and the select reads the array whichever branch it
// takes), so that the branches take the registers of one.
func (o *opTile) sharedVec(i int, dt te.DType) int {
	for j := range i {
		if o.vecs[j].DType != dt {
			continue
		}
		apart := true
		for k := range i {
			if o.vecs[k] == o.vecs[j] && !exclusive(o.guards[i], o.guards[k]) {
				apart = false
				break
			}
		}
		if apart {
			return j
		}
	}
	return -1
}

// exclusive reports whether the branches a and b cannot both be taken:
// they take the two arms of one select.
func exclusive(a, b []branch) bool {
	for _, x := range a {
		for _, y := range b {
			if x.cond == y.cond && x.then != y.then {
				return true
			}
		}
	}
	return false
}

// underBranches returns body under the selects' branches path, outermost
// first: a load fetched only where the conditions choose it.
func underBranches(g *gen, path []branch, body []kir.Stmt) []kir.Stmt {
	for j := len(path) - 1; j >= 0; j-- {
		c := convert(g.expr(path[j].cond), te.Bool)
		if path[j].then {
			body = []kir.Stmt{&kir.If{Cond: c, Then: body}}
		} else {
			body = []kir.Stmt{&kir.If{Cond: c, Else: body}}
		}
	}
	return body
}

// bindGroup binds the axes along o's columns at the group of o's loads
// that starts q points into chunk c (its first point, along the
// operand's own axes clamped to the last group of the extent).
func (l *lowerer) bindGroup(g *gen, o *opTile, r *te.Reduce, c chunkAt, q int) {
	var at kir.Expr = addIndex(c.along, q)
	if o.kRows && o.ext%o.vec() != 0 {
		at = kir.Bin(te.Min, at, kir.I(o.ext-o.op.Vec))
	}
	bind(g, o.alongAxes(r), at)
}

// put emits, for the k step from k0 whose loads fetch made, the
// computation of each of a thread's vectors of o from its prefetch arrays
// and its 16-byte store into o's stage at element off (zeros past K, for
// each group of o's loads where K cuts through a vector).
func (l *lowerer) put(g *gen, o *opTile, r *te.Reduce, tid kir.Expr, threads int, k0, off kir.Expr, K int) {
	n := o.vec()
	local := map[*te.Load]*te.Tensor{}
	for i, b := range o.vecs {
		ld := o.moving[i]
		local[ld] = &te.Tensor{Name: b.Name, Kind: te.Compute, DType: ld.Tensor.DType, Shape: b.Shape}
		g.bufs[local[ld]] = b
	}
	alongAxes := o.alongAxes(r)
	eachChunk(g, o, tid, threads, func(u int, v kir.Expr) {
		c := l.bindChunk(g, o, r, v, k0, K)
		step := n // the elements that K keeps or drops together
		if c.partialK {
			step = o.op.Vec
		}
		for q := 0; q < n; q += step {
			values := g.into(func() {
				for j := q; j < q+step; j++ {
					aj := kir.NewVar(c.along.Name, te.I32)
					g.emit(&kir.Let{Var: aj, Value: kir.Add(c.along, kir.I(j))})
					bind(g, alongAxes, aj)
					e := readLocal(o.e, local, te.Const(u*n+j))
					g.emit(&kir.Store{Buf: o.out, Index: kir.I(j), Value: convert(g.expr(e), te.F32)})
				}
			})
			if in := c.below(q); in != nil {
				zeros := make([]kir.Stmt, step)
				for j := range zeros {
					zeros[j] = &kir.Store{Buf: o.out, Index: kir.I(q + j), Value: kir.F(0)}
				}
				values = []kir.Stmt{&kir.If{Cond: in, Then: values, Else: zeros}}
			}
			g.emit(values...)
		}
		g.emit(&kir.VecCopy{Dst: o.s, DstIndex: addOffset(off, o.lay.chunk(c.row, nil, c.chunk)), Src: o.out, SrcIndex: kir.I(0)})
		l.unbind(g, o, r)
	})
	for _, t := range local {
		delete(g.bufs, t)
	}
}

// addIndex returns x + c, or x when c is 0.
func addIndex(x kir.Expr, c int) kir.Expr {
	if c == 0 {
		return x
	}
	return kir.Add(x, kir.I(c))
}

// stageColumns returns t's body with its loads of columns cols
// (contraction.EpilogueColumns: a bias) read from shared arrays at a variable that
// the epilogue binds to the column's place in tile ni, and that variable.
// It emits the block's staging of the tile's TN columns of each load with
// 16-byte loads, between two barriers (the first keeps the last tile's
// epilogue reading the arrays; the k loop's barriers may be skipped by a
// mask). Where there is no such load it returns nil and t's body. k
// receives the arrays.
func (l *lowerer) stageColumns(g *gen, t *te.Tensor, cols []*te.Load, ns []*te.Var, ni *kir.Var, TN, N int, k *kir.Kernel) (*te.Var, te.Expr) {
	if len(cols) == 0 {
		return nil, t.Body
	}
	local := map[*te.Load]*te.Tensor{}
	stage := g.into(func() {
		for i, ld := range cols {
			n := kir.VecLen(ld.Tensor.DType)
			s := &kir.Buffer{Name: fmt.Sprintf("cols%d", i), Space: kir.Shared, DType: l.bufs[ld.Tensor].DType, Shape: []int{TN}}
			k.Shared = append(k.Shared, s)
			local[ld] = &te.Tensor{Name: s.Name, Kind: te.Compute, DType: ld.Tensor.DType, Shape: []int{TN}}
			g.bufs[local[ld]] = s
			v, x := kir.NewVar("v", te.I32), kir.NewVar("x", te.I32)
			g.emit(&kir.For{Var: v, Kind: kir.BlockStride, Lo: kir.I(0), Hi: kir.I(TN / n), Body: g.into(func() {
				xv := kir.Add(kir.Mul(ni, kir.I(TN)), kir.Mul(v, kir.I(n)))
				if N%TN != 0 {
					xv = kir.Bin(te.Min, xv, kir.I(N-n))
				}
				g.emit(&kir.Let{Var: x, Value: xv})
				bind(g, ns, x)
				kl := g.expr(ld).(*kir.Load)
				g.emit(&kir.VecCopy{Dst: s, DstIndex: kir.Mul(v, kir.I(n)), Src: kl.Buf, SrcIndex: kl.Index})
			})})
		}
	})
	for _, a := range ns {
		delete(g.env, a)
	}
	g.emit(&kir.SyncThreads{})
	g.emit(stage...)
	g.emit(&kir.SyncThreads{})
	// Column n of the tile is element n - ni·TN of the arrays.
	nl := &te.Var{Name: "nl", Extent: TN}
	return nl, readLocal(t.Body, local, te.VarIndex(nl))
}
