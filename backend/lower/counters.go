package lower

import (
	"slices"

	"tec/backend/kir"
	"tec/partition"
	"tec/te"
)

// Where the plan replaces the grid sync before a stage by per-tile
// counters (partition.Kernel.Counters), the fused lowering gives each
// producer stage a counter array in the workspace, one i32 per tile
// (NAME.ready), signals it at the end of each tile (kir.Signal), and makes
// each of the stage's tiles wait for the producer tiles it reads
// (kir.Wait, target 1) before its work; the grid sync becomes a block
// barrier, for the shared memory the stages may reuse. The kernel zeroes
// the counters in a stage of its own before its first grid sync, which
// must come before every producer (the plan chose only such syncs), so
// that the zeroing is ordered before every signal and a kernel boundary
// orders the previous launch's waits before it.
//
// The lowering checks the shape it relies on: the stage and each producer
// are Stages of the kernel body whose work is a grid-stride loop over their
// tiles (rotated or not), and the grid sync is the statement before the
// stage. Where a check fails the grid sync stays, which is always sound.

// counterKernel is the state of placing counters in one kernel's body.
type counterKernel struct {
	l       *lowerer
	body    []kir.Stmt
	threads int
	ready   map[*te.Tensor]*kir.Buffer // counter arrays by producer
	order   []*kir.Buffer
	tiles   map[*kir.Stage]tileWork // stages already in tile form
}

// tileWork is a stage's work in tile form: the tile index (block-uniform)
// and the statements run for each tile by every thread of the block, to
// which waits are prepended and signals appended.
type tileWork struct {
	tile *kir.Var
	body *[]kir.Stmt
}

// counters replaces, in body (a fused kernel's, in order), the grid syncs
// that pk.Counters names, and returns the new body.
func (l *lowerer) counters(pk *partition.Kernel, pl *partition.Plan, body []kir.Stmt) []kir.Stmt {
	if len(pk.Counters) == 0 {
		return body
	}
	ck := &counterKernel{l: l, body: body, threads: pl.Threads, ready: map[*te.Tensor]*kir.Buffer{}, tiles: map[*kir.Stage]tileWork{}}
	zeroAt := firstGridSync(body)
	var js []int
	for j := range pk.Counters {
		if pk.Sync[j] == partition.GridSync {
			js = append(js, j)
		}
	}
	slices.Sort(js)
	for _, j := range js {
		// The stage whose grid sync goes, and those after it before the
		// next grid sync that wait too: all or none.
		set := []*te.Tensor{pk.Stages[j]}
		for f := j + 1; f < len(pk.Stages) && pk.Sync[f] != partition.GridSync; f++ {
			if pk.Counters[f] != nil {
				set = append(set, pk.Stages[f])
			}
		}
		ck.replace(set, pk, pl, zeroAt)
	}
	if len(ck.order) == 0 {
		return body
	}
	return slices.Insert(ck.body, zeroAt, ck.zeroStage())
}

// firstGridSync returns the index of the first statement of body that is
// or holds a grid sync, or len(body).
func firstGridSync(body []kir.Stmt) int {
	for i, s := range body {
		found := false
		kir.WalkStmts([]kir.Stmt{s}, func(x kir.Stmt) bool {
			_, ok := x.(*kir.GridSync)
			found = found || ok
			return !found
		})
		if found {
			return i
		}
	}
	return len(body)
}

// replace puts counters in place of the grid sync before the first stage
// of set, whose other stages (after it, before the next grid sync) wait
// too, if the body has the shape they need and the producers come after
// the zeroing at zeroAt.
func (ck *counterKernel) replace(set []*te.Tensor, pk *partition.Kernel, pl *partition.Plan, zeroAt int) {
	deps := map[*te.Tensor][]partition.TileDep{}
	for j, t := range pk.Stages {
		for _, y := range set {
			if t == y {
				deps[y] = pk.Counters[j]
			}
		}
	}
	iy := stageIndex(ck.body, set[0].Name)
	if iy < 1 {
		return
	}
	if _, ok := ck.body[iy-1].(*kir.GridSync); !ok {
		return
	}
	// Check every stage before changing any.
	for _, y := range set {
		i := stageIndex(ck.body, y.Name)
		ds := deps[y]
		if i < iy || len(ds) == 0 || !ck.tileable(ck.body[i].(*kir.Stage), ds[0].Chunks) {
			return
		}
		for _, d := range ds {
			iu := stageIndex(ck.body, d.Producer.Name)
			if iu <= zeroAt || iu >= iy || !ck.tileable(ck.body[iu].(*kir.Stage), d.ProducerChunks) || pl.Schedules[d.Producer].Tiles < 1 {
				return
			}
		}
	}
	for _, y := range set {
		ds := deps[y]
		w := ck.tileForm(ck.body[stageIndex(ck.body, y.Name)].(*kir.Stage), ds[0].Chunks)
		var waits []kir.Stmt
		for _, d := range ds {
			tiles := pl.Schedules[d.Producer].Tiles
			group := max(d.Group, 1)
			c, fresh := ck.counter(d.Producer, te.CeilDiv(tiles, group))
			if fresh {
				u := ck.tileForm(ck.body[stageIndex(ck.body, d.Producer.Name)].(*kir.Stage), d.ProducerChunks)
				var index kir.Expr = u.tile
				if group > 1 {
					index = kir.Div(u.tile, kir.I(group))
				}
				*u.body = append(*u.body, &kir.Signal{Counter: c, Index: index})
			}
			waits = append(waits, waitFor(c, w.tile, d)...)
		}
		*w.body = append(waits, *w.body...)
	}
	ck.body[iy-1] = &kir.SyncThreads{}
}

// tileable reports whether stage st's work is a loop over its tiles that
// tileForm can take: a grid-stride loop over tiles, or for an element-wise
// stage (chunks) a thread-stride loop over its elements or the loop over
// its chunks that elementwiseChunks made.
func (ck *counterKernel) tileable(st *kir.Stage, chunks bool) bool {
	if _, done := ck.tiles[st]; done {
		return true
	}
	if chunks && !ck.chunked(st) {
		return topLoop(st, kir.ThreadStride) != nil
	}
	return topLoop(st, kir.GridStride) != nil
}

// chunked reports whether stage st's work is a loop over chunks of its
// elements (elementwiseChunks), rotated or not, whose trips are the
// tiles of a thread-stride loop's chunks.
func (ck *counterKernel) chunked(st *kir.Stage) bool {
	loop := topLoop(st, kir.GridStride)
	if loop == nil {
		return false
	}
	if let, _ := rotated(loop); let != nil {
		return ck.l.chunkLoops[let.Var]
	}
	return ck.l.chunkLoops[loop.Var]
}

// tileForm puts stage st's work in tile form, once, and returns it. A
// grid-stride loop over tiles is in tile form already: its trip, or in
// the rotated form (rotate) its guarded body, is a tile. A thread-stride
// loop over the elements of an element-wise stage becomes a grid-stride
// loop over chunks of blockDim elements, each thread taking the element
// of its index in the chunk, which gives every element to the thread that
// had it; a chunk is a tile, less the rotation's shift.
func (ck *counterKernel) tileForm(st *kir.Stage, chunks bool) tileWork {
	if w, done := ck.tiles[st]; done {
		return w
	}
	var w tileWork
	if !chunks || ck.chunked(st) {
		loop := topLoop(st, kir.GridStride)
		w = tileWork{loop.Var, &loop.Body}
		if let, guard := rotated(loop); let != nil {
			w = tileWork{let.Var, &guard.Then}
		}
		ck.tiles[st] = w
		return w
	}
	loop := topLoop(st, kir.ThreadStride)
	b := ck.threads
	hi := int(loop.Hi.(*kir.Const).Value)
	shift := 0
	if let, _ := rotated(loop); let != nil {
		shift = int(let.Value.(*kir.Binary).Y.(*kir.Const).Value) / b
	}
	c := kir.NewVar(loop.Var.Name+"_c", te.I32)
	tile := kir.NewVar(loop.Var.Name+"_t", te.I32)
	work := []kir.Stmt{
		&kir.Let{Var: loop.Var, Value: kir.Add(kir.Mul(c, kir.I(b)), kir.Tid())},
		&kir.If{Cond: kir.Lt(loop.Var, kir.I(hi)), Then: loop.Body},
	}
	guard := &kir.If{Cond: kir.Ge(tile, kir.I(0)), Then: work}
	*loop = kir.For{Var: c, Kind: kir.GridStride, Lo: kir.I(0), Hi: kir.I(te.CeilDiv(hi, b)), Body: []kir.Stmt{
		&kir.Let{Var: tile, Value: kir.Sub(c, kir.I(shift))},
		guard,
	}}
	w = tileWork{tile, &guard.Then}
	ck.tiles[st] = w
	return w
}

// counter returns the counter array of producer u, of tiles elements, and
// whether it is new.
func (ck *counterKernel) counter(u *te.Tensor, tiles int) (*kir.Buffer, bool) {
	if c, ok := ck.ready[u]; ok {
		return c, false
	}
	c := &kir.Buffer{Name: u.Name + ".ready", Space: kir.Global, Role: kir.Temp, DType: te.I32, Shape: []int{tiles}}
	ck.l.m.Buffers = append(ck.l.m.Buffers, c)
	ck.ready[u] = c
	ck.order = append(ck.order, c)
	return c, true
}

// zeroStage returns the stage that zeroes every counter array of the
// kernel.
func (ck *counterKernel) zeroStage() kir.Stmt {
	var body []kir.Stmt
	for _, c := range ck.order {
		i := kir.NewVar("i", te.I32)
		body = append(body, &kir.For{Var: i, Kind: kir.ThreadStride, Lo: kir.I(0), Hi: kir.I(c.Len()), Body: []kir.Stmt{
			&kir.Store{Buf: c, Index: i, Value: kir.I(0)},
		}})
	}
	return &kir.Stage{Name: "counters.zero", Body: body}
}

// waitFor returns the waits of consumer tile r on the counters that d
// says it reads, [lo, hi) (see partition.TileDep.Waits): one wait where
// every tile waits on one, otherwise as many as the most any tile waits
// on, each but the first under a block-uniform condition that its counter
// is below hi, which keeps the static report's counts exact. A counter
// of a group of producer tiles waits for each tile of the group.
func waitFor(c *kir.Buffer, r *kir.Var, d partition.TileDep) []kir.Stmt {
	group := max(d.Group, 1)
	first := kir.Mul(r, kir.I(d.Tile))
	last := kir.Sub(kir.Bin(te.Min, kir.Add(first, kir.I(d.Tile)), kir.I(d.N)), kir.I(1))
	if d.Row > 0 {
		// Within the row, or the whole row where the tile spans rows
		// (partition.TileDep).
		same := kir.Eq(kir.Div(first, kir.I(d.Row)), kir.Div(last, kir.I(d.Row)))
		first, last = &kir.Select{Cond: same, Then: kir.Mod(first, kir.I(d.Row)), Else: kir.I(0)},
			&kir.Select{Cond: same, Then: kir.Mod(last, kir.I(d.Row)), Else: kir.I(d.Row - 1)}
	}
	prefix := func(e kir.Expr) kir.Expr { // e's run of producer elements
		if d.Div > 1 {
			return kir.Div(e, kir.I(d.Prefix*d.Div))
		}
		return kir.Div(e, kir.I(d.Prefix))
	}
	lo := kir.Div(kir.Add(kir.Mul(prefix(first), kir.I(d.Span)), kir.I(d.Offset)), kir.I(d.Width*group))
	target := func(g kir.Expr) kir.Expr {
		if d.Tiles%group == 0 {
			return kir.I(group)
		}
		return kir.Bin(te.Min, kir.I(group), kir.Sub(kir.I(d.Tiles), kir.Mul(g, kir.I(group))))
	}
	if d.Single() {
		return []kir.Stmt{&kir.Wait{Counter: c, Index: lo, Target: target(lo)}}
	}
	hi := kir.Div(kir.Add(kir.Add(kir.Mul(kir.Add(prefix(last), kir.I(1)), kir.I(d.Span)), kir.I(d.Offset)), kir.I(d.Width*group-1)), kir.I(d.Width*group))
	l, h := kir.NewVar("wlo", te.I32), kir.NewVar("whi", te.I32)
	out := []kir.Stmt{&kir.Let{Var: l, Value: lo}, &kir.Let{Var: h, Value: hi}}
	for k := range d.Most() {
		at := kir.Add(l, kir.I(k))
		out = append(out, &kir.If{Cond: kir.Lt(at, h), Then: []kir.Stmt{&kir.Wait{Counter: c, Index: at, Target: target(at)}}})
	}
	return out
}

// stageIndex returns the index in body of the Stage named name, or -1.
func stageIndex(body []kir.Stmt, name string) int {
	for i, s := range body {
		if st, ok := s.(*kir.Stage); ok && st.Name == name {
			return i
		}
	}
	return -1
}

// topLoop returns the loop of kind over a stage's work, starting at 0 and
// ending at a constant, when the stage's body is block-uniform Lets and
// that loop, and its body has no grid sync; otherwise nil. A thread-stride
// loop must have a block's multiple of elements per rotation shift, as
// rotate makes them.
func topLoop(st *kir.Stage, kind kir.LoopKind) *kir.For {
	var loop *kir.For
	for _, s := range st.Body {
		switch s := s.(type) {
		case *kir.Let:
			continue
		case *kir.For:
			if loop != nil || s.Kind != kind {
				return nil
			}
			loop = s
		default:
			return nil
		}
	}
	if loop == nil || hasSync(loop.Body) {
		return nil
	}
	lo, lok := loop.Lo.(*kir.Const)
	_, hok := loop.Hi.(*kir.Const)
	if !lok || !hok || lo.Value != 0 {
		return nil
	}
	if let, _ := rotated(loop); let != nil {
		if _, ok := let.Value.(*kir.Binary).Y.(*kir.Const); !ok {
			return nil
		}
	}
	return loop
}

// rotated returns the Let and the guard of a loop in rotate's form, whose
// body is "let t = u - shift; if t >= 0 { work }", or nils.
func rotated(loop *kir.For) (*kir.Let, *kir.If) {
	if len(loop.Body) != 2 {
		return nil, nil
	}
	let, lok := loop.Body[0].(*kir.Let)
	guard, gok := loop.Body[1].(*kir.If)
	if !lok || !gok || len(guard.Else) != 0 {
		return nil, nil
	}
	b, ok := let.Value.(*kir.Binary)
	if !ok || b.Op != te.Sub || b.X != kir.Expr(loop.Var) {
		return nil, nil
	}
	return let, guard
}

// hasSync reports whether body holds a grid sync.
func hasSync(body []kir.Stmt) bool {
	found := false
	kir.WalkStmts(body, func(s kir.Stmt) bool {
		_, ok := s.(*kir.GridSync)
		found = found || ok
		return !found
	})
	return found
}
