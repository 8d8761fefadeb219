package partition

import (
	"fmt"
	"slices"
	"strconv"

	"tec/analysis"
	"tec/cost"
	"tec/schedule"
	"tec/te"
)

// coster predicts the time of candidate kernels over the stages of a plan.
type coster struct {
	pl     *Plan
	a      *analysis.Analysis
	opts   Options
	stages []*te.Tensor
	pos    map[*te.Tensor]int
	scheds []*schedule.Schedule
	prices []*cost.Price
	// prods[j] are stage j's compute producers in the plan, with the
	// barrier each needs if it was written since the last grid sync.
	prods [][]edge
	// pre[o][j] sums the times of stages [0, j) at o blocks per SM when
	// every access goes to DRAM.
	pre [][]float64
	// keys[j] are the regions of tensors stage j touches (the bounding
	// box of its loads of each tensor, and its output), as ids into seen,
	// with their bytes; a segment's working set counts each region once.
	keys   [][]region
	seen   []int // seen[id] is the serial of the last segment that counted it
	serial int
	// touched[id] is the segment's stream (see segment) when it last
	// touched region id.
	touched []int64
	// bufs[j] are ids of the buffers stage j touches (each a kernel
	// parameter), with bufSeen playing seen's part for them.
	bufs    [][]int
	bufSeen []int
	// own[j] is stage j's occupancy alone.
	own []int
	// sufBufs[j] is the number of distinct buffers that stages [j, n)
	// touch, and sufRes[j] their merged resources: bounds on what any
	// extension of a kernel past stage j can add (see dominated).
	sufBufs []int
	sufRes  []schedule.Resources
}

// stage returns stage j's schedule and price.
func (c *coster) stage(j int) stage { return stage{c.scheds[j], c.prices[j]} }

// res returns what one block of stage j occupies (Plan.stageResources).
func (c *coster) res(j int) schedule.Resources { return c.pl.stageResources(c.stages[j]) }

func newCoster(pl *Plan, stages []*te.Tensor, opts Options) *coster {
	c := &coster{pl: pl, opts: opts, stages: stages, pos: map[*te.Tensor]int{}}
	for i, t := range stages {
		c.pos[t] = i
	}
	g := pl.GPU
	c.pre = make([][]float64, g.MaxBlocksPerSM+1)
	for o := range c.pre {
		c.pre[o] = make([]float64, len(stages)+1)
	}
	ids := map[regionKey]int{}
	bufIDs := map[*te.Tensor]int{}
	workspace := &te.Tensor{Name: "workspace"}
	outputs := map[*te.Tensor]bool{}
	for _, t := range pl.Program.Outputs {
		outputs[t] = true
	}
	for j, t := range stages {
		s := pl.stage(t)
		c.scheds = append(c.scheds, s.Schedule)
		c.prices = append(c.prices, s.Price)
		occ, _ := g.BlocksPerSM(c.res(j).Block())
		c.own = append(c.own, occ)
		c.prods = append(c.prods, nil)
		inputs := te.Inputs(t.Body)
		for _, in := range inputs {
			if p, ok := c.pos[in]; ok {
				c.prods[j] = append(c.prods[j], edge{p: p, need: c.need(p, j)})
			}
		}
		for o := 1; o <= g.MaxBlocksPerSM; o++ {
			c.pre[o][j+1] = c.pre[o][j] + cost.StageTime(c.pl.GPU, s.Schedule, s.Price, s.Bytes, occ, g.SMs*o)
		}
		c.keys = append(c.keys, regions(t, ids))
		var bs []int
		for _, u := range append(inputs, t) {
			if opts.TempsInWorkspace && u.Kind == te.Compute && !outputs[u] {
				u = workspace
			}
			id, ok := bufIDs[u]
			if !ok {
				id = len(bufIDs)
				bufIDs[u] = id
			}
			bs = append(bs, id)
		}
		if s.InnerSync() && !opts.TempsInWorkspace { // its accumulators or partials
			bs = append(bs, len(bufIDs))
			bufIDs[&te.Tensor{}] = len(bufIDs)
		}
		c.bufs = append(c.bufs, bs)
	}
	c.seen = make([]int, len(ids))
	c.touched = make([]int64, len(ids))
	c.bufSeen = make([]int, len(bufIDs))
	c.suffixes()
	return c
}

// suffixes fills sufBufs and sufRes, walking the stages from the last: a
// buffer counts at the last stage that touches it.
func (c *coster) suffixes() {
	n := len(c.stages)
	c.sufBufs = make([]int, n+1)
	c.sufRes = make([]schedule.Resources, n+1)
	bufSeen := make([]bool, len(c.bufSeen))
	for j := n - 1; j >= 0; j-- {
		c.sufBufs[j] = c.sufBufs[j+1]
		c.sufRes[j] = mergeRes(c.sufRes[j+1], c.res(j))
		for _, id := range c.bufs[j] {
			if !bufSeen[id] {
				bufSeen[id] = true
				c.sufBufs[j]++
			}
		}
	}
}

// region is a part of a tensor that a stage touches.
type region struct {
	id    int
	bytes int64
}

// regions returns the regions t touches: the bounding box of each of its
// loads, and all of t.
func regions(t *te.Tensor, ids map[regionKey]int) []region {
	intern := func(key regionKey) (int, bool) {
		id, ok := ids[key]
		if !ok {
			id = len(ids)
			ids[key] = id
		}
		return id, !ok
	}
	id, _ := intern(regionKey{t: t})
	rs := []region{{id: id, bytes: t.Bytes()}}
	mine := map[int]bool{id: true}
	te.Walk(t.Body, func(x te.Expr) bool {
		l, ok := x.(*te.Load)
		if !ok {
			return true
		}
		lo, hi := make([]int, len(l.Index)), make([]int, len(l.Index))
		n := int64(l.Tensor.DType.Size())
		for d := range l.Index {
			lo[d], hi[d] = l.IndexBounds(d)
			n *= int64(max(hi[d]-lo[d]+1, 0))
		}
		key := regionKey{t: l.Tensor} // all of it: the same region as its producer's
		if n != l.Tensor.Bytes() {
			key.box = boxKey(lo, hi)
		}
		id, _ := intern(key)
		if !mine[id] {
			mine[id] = true
			rs = append(rs, region{id: id, bytes: n})
		}
		return true
	})
	return rs
}

// regionKey identifies a region of a tensor: all of it, or the box of
// boxKey.
type regionKey struct {
	t   *te.Tensor
	box string
}

// boxKey returns a string that identifies the box [lo, hi].
func boxKey(lo, hi []int) string {
	b := make([]byte, 0, 8*len(lo))
	for i := range lo {
		b = strconv.AppendInt(b, int64(lo[i]), 10)
		b = append(b, ':')
		b = strconv.AppendInt(b, int64(hi[i]), 10)
		b = append(b, ',')
	}
	return string(b)
}

// edge is a producer of a stage and the barrier the stage needs after it.
type edge struct {
	p    int
	need Barrier
}

// need returns the barrier that stage j needs between itself and its
// producer p when p ran after the last grid sync.
func (c *coster) need(p, j int) Barrier {
	if e := c.scheds[j].EpilogueOf; e != nil && (e == c.stages[p] || e == c.scheds[p].EpilogueOf) {
		return NoBarrier // computed by the threads that wrote what it reads
	}
	switch {
	case c.scheds[p].EpilogueOf != nil:
		return GridSync // written by whichever block had its tile

	case c.sameThread(p, j):
		return NoBarrier
	case c.opts.Reuse && c.sameBlock(p, j):
		return BlockSync
	}
	return GridSync
}

// barrier returns how stage j must be separated from the stages of its
// kernel, which begins at i and last passed a grid sync before stage last.
func (c *coster) barrier(i, last, j int) Barrier {
	if j == i {
		return NoBarrier
	}
	b := NoBarrier
	for _, e := range c.prods[j] {
		if e.p >= i && e.p >= last {
			b = max(b, e.need)
		}
	}
	if b == GridSync {
		return b
	}
	if c.scheds[j].Kind == schedule.SplitReduce {
		// Its accumulators are zeroed by its init phase, which must follow
		// whatever the stages before it read.
		return max(b, BlockSync)
	}
	return b
}

// sameThread reports whether stage j reads stage p's elements only where
// the same thread wrote them: both element-wise over the same number of
// elements, j loading p at its own output index.
func (c *coster) sameThread(p, j int) bool {
	sp, sj := c.scheds[p], c.scheds[j]
	return sp.Kind == schedule.Elementwise && sj.Kind == schedule.Elementwise &&
		identityReads(c.stages[j], c.stages[p])
}

// sameBlock reports whether stage j reads stage p's elements only where the
// same block wrote them: both work by rows (row reductions, Rows stages,
// contractions with a tile per batch entry: blockRows) over the same
// leading axes, so that the grid-stride loop gives row r to the same block
// in both, and j loads p only in its own row.
func (c *coster) sameBlock(p, j int) bool {
	tp, tj := c.stages[p], c.stages[j]
	lp, lj := blockRows(tp, c.scheds[p]), blockRows(tj, c.scheds[j])
	return lp > 0 && lp == lj && readsRows(tj, tp, lp)
}

// identityReads reports whether t loads u only at t's own output index, u
// and t having the same shape.
func identityReads(t, u *te.Tensor) bool {
	if len(t.Shape) != len(u.Shape) {
		return false
	}
	for d := range t.Shape {
		if t.Shape[d] != u.Shape[d] {
			return false
		}
	}
	ok := true
	te.Walk(t.Body, func(x te.Expr) bool {
		if l, isLoad := x.(*te.Load); isLoad && l.Tensor == u {
			ok = ok && !l.IsGather()
			for d, ix := range l.Index {
				if v, isVar := ix.AsVar(); !isVar || v != t.Axes[d] {
					ok = false
				}
			}
		}
		return ok
	})
	return ok
}

// segment accumulates a candidate kernel of stages [i, j).
type segment struct {
	i, j      int
	res       schedule.Resources
	occ       int
	last      int // position of the last stage that began with a grid sync
	syncs     int
	syncBar   []Barrier
	fits      bool
	why       string
	heaviest  int
	splitSync int
	serial    int
	foot      int64 // working set: bytes of the distinct regions touched
	// stream counts the bytes moved from DRAM so far, each region each
	// time it is (re)loaded: the clock of the regions' reuse distances.
	stream int64
	params int // distinct buffers touched: the kernel's parameters
	// done[o] sums the times of the grid epochs before the current one
	// at o blocks per SM when the working set fits in L2, each stage
	// moving only the bytes of the regions no earlier stage of the
	// segment touched (the rest hit in L2); cur[o] is the current epoch's
	// time so far: the longest chain of its stages that read one another
	// (finish[k][o] is when its stage epoch+k ends), or its stages' work
	// spread over the whole GPU (work[o]) if that takes longer, since the
	// lowering starts independent stages of an epoch on different blocks.
	done, cur, work []float64
	epoch           int // position of the current epoch's first stage
	finish          [][]float64
	pool            []float64
	// When record is set, times[k][o] is stage i+k's own time at o blocks
	// per SM, bounds[k][o] what bounds it (cost.StageBound), and fresh[k]
	// the bytes it moves from DRAM (see kernel).
	record bool
	times  [][]float64
	bounds [][]cost.Bound
	fresh  []int64
	dram   int64 // the sum of fresh
}

// newEpoch closes the current grid epoch: stage j begins the next.
func (sg *segment) newEpoch(j int) {
	for o := range sg.cur {
		sg.done[o] += sg.cur[o]
		sg.cur[o], sg.work[o] = 0, 0
	}
	sg.epoch = j
	sg.finish = sg.finish[:0]
	sg.pool = sg.pool[:0]
}

// fit returns the segment's stage time at o blocks per SM when its working
// set fits in L2.
func (sg *segment) fit(o int) float64 { return sg.done[o] + sg.cur[o] }

func (c *coster) begin(i int) *segment {
	c.serial++
	n := c.pl.GPU.MaxBlocksPerSM + 1
	return &segment{i: i, j: i, last: i, fits: true, heaviest: i, serial: c.serial, epoch: i,
		done: make([]float64, n), cur: make([]float64, n), work: make([]float64, n)}
}

// extend adds stage sg.j to the segment.
func (c *coster) extend(sg *segment) {
	j := sg.j
	s := c.stage(j)
	if j == sg.i {
		sg.res = c.res(j)
	} else {
		prev := sg.res
		sg.res = mergeRes(sg.res, c.res(j))
		if sg.res != prev {
			sg.heaviest = j
		}
	}
	sg.occ, sg.why = c.pl.GPU.BlocksPerSM(sg.res.Block())
	for _, id := range c.bufs[j] {
		if c.bufSeen[id] != sg.serial {
			c.bufSeen[id] = sg.serial
			sg.params++
		}
	}
	if lim := c.pl.GPU.ParamLimit(); sg.params > lim && sg.occ > 0 {
		sg.occ, sg.why = 0, fmt.Sprintf("%d buffer parameters > %d (%d bytes of kernel parameters)", sg.params, lim, 8*lim)
	}
	sg.fits = sg.occ > 0
	b := c.barrier(sg.i, sg.last, j)
	if b == GridSync {
		sg.syncs++
		sg.last = j
	}
	if b == GridSync || s.InnerSync() || (j > sg.epoch && c.scheds[j-1].InnerSync()) {
		sg.newEpoch(j)
	}
	if s.InnerSync() {
		sg.splitSync += 2
		if s.KSplit > 1 {
			sg.splitSync-- // no initialisation phase
		}
		sg.last = j // its finishing phase follows a grid sync, which orders all before it
	}
	sg.syncBar = append(sg.syncBar, b)
	// A region moves from DRAM the first time the segment touches it, and
	// again if more than L2 holds has streamed through since its last touch
	// (its reuse distance: LRU would have evicted it). The stage's loads
	// come first and its output (keys[j][0]) last, as it is written after
	// what it reads has streamed through.
	// A masked contraction's skipped tiles (and a k-masked one's skipped
	// k) load none of their factors: its inputs move in the share of its
	// tiles (and k) that run (the whole region
	// still counts for reuse, as the tiles that run are known only then).
	var fresh int64
	l2 := int64(c.pl.GPU.L2Bytes)
	keys := c.keys[j]
	for i := range keys {
		r := keys[(i+1)%len(keys)]
		switch {
		case c.seen[r.id] != sg.serial:
			c.seen[r.id] = sg.serial
			sg.foot += r.bytes
			fallthrough
		case sg.stream-c.touched[r.id] > l2:
			moved := r.bytes
			if i+1 < len(keys) {
				num, den := cost.RunShare(s.Schedule)
				moved = moved * num / den
			}
			fresh += moved
			sg.stream += r.bytes
		}
		c.touched[r.id] = sg.stream
	}
	// Occupancy only falls as the segment grows: the times at higher
	// occupancies are never needed again.
	bytes := min(s.Bytes, s.Foot, fresh)
	n := len(sg.cur)
	if cap(sg.pool)-len(sg.pool) < n {
		sg.pool = make([]float64, 0, max(4*n, 2*cap(sg.pool)))
		// Earlier finish times stay valid in the old pool.
	}
	fin := sg.pool[len(sg.pool) : len(sg.pool)+n]
	sg.pool = sg.pool[:len(sg.pool)+n]
	sg.dram += bytes
	var times []float64
	var bounds []cost.Bound
	if sg.record {
		times, bounds = make([]float64, n), make([]cost.Bound, n)
		sg.times, sg.bounds = append(sg.times, times), append(sg.bounds, bounds)
		sg.fresh = append(sg.fresh, bytes)
	}
	for o := 1; o <= sg.occ; o++ {
		grid := c.pl.GPU.SMs * o
		t, bound := cost.StageBound(c.pl.GPU, s.Schedule, s.Price, bytes, c.own[j], grid)
		if sg.record {
			times[o], bounds[o] = t, bound
		}
		start := 0.0
		for _, e := range c.prods[j] {
			if e.p >= sg.epoch && e.p >= sg.i {
				start = max(start, sg.finish[e.p-sg.epoch][o])
			}
		}
		fin[o] = start + t
		sg.work[o] += t * min(1, float64(s.Tiles)/float64(grid))
		sg.cur[o] = max(sg.cur[o], fin[o], sg.work[o])
	}
	sg.finish = append(sg.finish, fin)
	sg.j++
}

// cost returns the predicted cost of the segment as one kernel.
func (c *coster) cost(sg *segment) cost.Estimate {
	g := c.pl.GPU
	if !sg.fits {
		return cost.Estimate{Stages: inf}
	}
	// Re-reads, and reads of what an earlier stage wrote, hit in L2 unless
	// more than L2 holds streamed through in between (see extend): a
	// kernel that streams gigabytes of weights once still finds its small
	// activations in L2.
	stages := sg.fit(sg.occ)
	return cost.Estimate{
		Launch: g.LaunchCost,
		Sync:   float64(sg.syncs) * g.GridSyncCost,
		Stages: stages,
		DRAM:   sg.dram,
	}
}

// kernel builds the Kernel of stages [i, e).
func (c *coster) kernel(i, e int) *Kernel {
	sg := c.begin(i)
	sg.record = c.opts.Strategy != PerTE
	for sg.j < e {
		c.extend(sg)
	}
	k := &Kernel{
		Stages:      c.stages[i:e],
		Sync:        sg.syncBar,
		Resources:   sg.res,
		BlocksPerSM: sg.occ,
		Grid:        c.pl.GPU.SMs * sg.occ,
		GridSyncs:   sg.syncs + sg.splitSync,
		Cost:        c.cost(sg),
	}
	if c.opts.Strategy == PerTE {
		// A kernel of its own is launched with as many blocks as it has
		// tiles, not cooperatively: no occupancy loss, no grid syncs.
		s := c.stage(i)
		bytes := s.Bytes
		if s.Foot <= int64(c.pl.GPU.L2Bytes) {
			bytes = min(bytes, s.Foot)
		}
		k.Cost.Stages = cost.StageTime(c.pl.GPU, s.Schedule, s.Price, bytes, c.own[i], s.Tiles)
		k.Grid = max(1, s.Tiles)
	}
	for _, s := range c.prices[i:e] {
		k.Cost.Bytes += s.Bytes
		k.Cost.FLOPs += s.FLOPs
	}
	for j, t := range sg.times {
		o := max(sg.occ, 1)
		k.StageCosts = append(k.StageCosts, cost.StageEstimate{Time: t[o], DRAM: sg.fresh[j], Bound: sg.bounds[j][o]})
	}
	return k
}

// dp returns the kernel starts that minimise predicted time, and the
// boundaries' explanations. Starts are tried in order, each kernel grown
// stage by stage from its start. A kernel is grown no further when it has
// fallen behind the best plan found to the same stage by more than slack,
// or when the kernel that made that best plan dominates it (see
// dominated). Without these cuts every start would be grown to the end of
// the program, and partitioning would take time quadratic in its length.
func (c *coster) dp() ([]int, []*Boundary) {
	n := len(c.stages)
	best := make([]float64, n+1)
	from := make([]int, n+1)
	for j := 1; j <= n; j++ {
		best[j] = inf
	}
	// marks[j] is the state, at stage j, of the kernel that made best[j].
	marks := make([]mark, n+1)
	tol := c.tolerance()
	probe := c.opts.search
	for i := 0; i < n; i++ {
		if best[i] == inf {
			continue
		}
		sg := c.begin(i)
		for sg.j < n {
			c.extend(sg)
			if probe != nil {
				probe.grown++
			}
			if !sg.fits {
				break
			}
			t := best[i] + c.cost(sg).Total()
			if t < best[sg.j] {
				best[sg.j], from[sg.j] = t, i
				marks[sg.j].record(sg, best[i])
			} else if t > best[sg.j]+c.slack() {
				break // fallen behind: see slack
			} else if (probe == nil || !probe.noDominance) && c.dominated(sg, best[i], &marks[sg.j], tol) {
				break
			}
		}
	}
	var starts []int
	for j := n; j > 0; j = from[j] {
		starts = append([]int{from[j]}, starts...)
	}
	var bounds []*Boundary
	for k := 1; k < len(starts); k++ {
		end := n
		if k+1 < len(starts) {
			end = starts[k+1]
		}
		bounds = append(bounds, c.explain(starts[k-1], starts[k], end))
	}
	return starts, bounds
}

// slack is how far behind the best plan to a stage a kernel may fall and
// still be grown: just under one launch. The best plan to stage j, followed
// by a new kernel of the stages after j, differs from growing the kernel
// past j by that launch, a grid sync, and what growing wins through L2
// reuse and overlap with the stages before j; a kernel a whole launch
// behind would need those wins to exceed a launch to catch up, a case the
// cut gives up for a search linear in practice. (A kernel that is exactly a
// launch behind, as every later start of a chain of element-wise stages
// is, is cut at once.)
func (c *coster) slack() float64 { return 0.99 * c.pl.GPU.LaunchCost }

// mark is what dominated needs of a candidate kernel at a stage: the
// kernel that made the best plan to that stage.
type mark struct {
	synced bool // its last stage began a grid epoch after a grid sync
	start  int
	base   float64 // the best plan's time to its start
	res    schedule.Resources
	params int
	foot   int64
	syncs  int
	done   []float64
}

// record keeps sg's state, reusing m's storage.
func (m *mark) record(sg *segment, base float64) {
	m.synced = sg.synced()
	m.start, m.base, m.res, m.params, m.foot, m.syncs = sg.i, base, sg.res, sg.params, sg.foot, sg.syncs
	m.done = append(m.done[:0], sg.done...)
}

// synced reports whether the segment's last stage follows a grid sync
// (or finishes a split reduction) and begins a grid epoch: then no stage
// after it waits on, or runs in one epoch with, any stage before it.
func (sg *segment) synced() bool { return sg.last == sg.j-1 && sg.epoch == sg.j-1 }

// dominated reports whether the kernel a, begun at a.i after a plan of
// time base and grown to stage p = a.j, can never give a better plan to
// any later stage than the kernel b recorded by m, which made the best plan
// to p from an earlier start: then growing a further is wasted.
//
// The argument. Let both have just passed a grid sync before stage p-1, so
// that their barriers and epochs from p-1 on are the same (each depends
// only on producers since the last sync), and let them have the same
// resources, so that grown by the same stages they have the same
// occupancy o at every length. b's stages include a's, so from a's start
// on, every region b moves from DRAM a moves too (by induction over the
// stages: a region b has never touched a has not either; one that b
// touched last at a stage of a, a touched there too, and the bytes each
// moved since then are b's no more than a's, so a's reuse distance is no
// shorter; one b touched last before a began, a has not touched): each
// later stage moves no more bytes in b than in a, and stage time only
// grows with bytes, with the chains and sums of an epoch only growing
// with stage times. a's time to any later stage k, less b's, is therefore
// at least base - m.base + GridSyncCost × (a.syncs - m.syncs) +
// (a.done[o] - m.done[o]): the closed epochs differ by what they are now,
// and the open and later ones only in a's disfavour. The bound is taken at
// its least over the occupancies the kernels can still have (down to that
// with the resources of every later stage merged in); b fits wherever a
// does, having the same resources and either a's buffers or room for all
// the program's later ones under the parameter limit. If the bound exceeds
// tol, a's every later offer loses to b's, made earlier; b itself is only
// cut where a would be (by slack, at a time no better, or by a kernel that
// dominates it in turn), so the cut changes no plan. tol covers rounding:
// the difference is exact in real arithmetic, and the floating-point sums
// that price a plan err by far less than tol (see tolerance).
func (c *coster) dominated(a *segment, base float64, m *mark, tol float64) bool {
	p := a.j
	if !m.synced || m.start >= a.i || !a.synced() || a.res != m.res {
		return false
	}
	g := c.pl.GPU
	if a.params != m.params && m.params+c.sufBufs[p] > g.ParamLimit() {
		return false
	}
	diff := func(o int) float64 { return a.done[o] - m.done[o] }
	lo, _ := g.BlocksPerSM(mergeRes(a.res, c.sufRes[p]).Block())
	bound := inf
	for o := max(lo, 1); o <= a.occ; o++ {
		bound = min(bound, diff(o))
	}
	bound += base - m.base + g.GridSyncCost*float64(a.syncs-m.syncs)
	return bound > tol
}

// tolerance returns a margin above the rounding error of any plan's
// predicted time: 1e-9 of a bound on every plan's time (a launch and a
// grid sync per stage, and every stage at one block per SM from DRAM).
// Each time is a sum of at most a few terms per stage, so its relative
// rounding error stays below 1e-9 for programs of fewer than millions of
// stages.
func (c *coster) tolerance() float64 {
	n := len(c.stages)
	g := c.pl.GPU
	return 1e-9 * (float64(n)*(g.LaunchCost+g.GridSyncCost) + c.pre[1][n])
}

// explain says why kernels [a, b) and [b, e) are not one.
func (c *coster) explain(a, b, e int) *Boundary {
	m := c.begin(a)
	for m.j < e {
		c.extend(m)
		if !m.fits {
			break
		}
	}
	left, right := c.begin(a), c.begin(b)
	for left.j < b {
		c.extend(left)
	}
	for right.j < e {
		c.extend(right)
	}
	split := c.cost(left).Total() + c.cost(right).Total()
	bd := &Boundary{Before: c.stages[b], SplitCost: split}
	if !m.fits {
		bd.MergedCost = inf
		bd.Reason = "resources: the merged kernel does not fit: " + m.why
		return bd
	}
	merged := c.cost(m).Total()
	bd.MergedCost = merged
	hv := c.stages[m.heaviest]
	bd.Reason = fmt.Sprintf("cost model: merged %.2f µs (%d blocks/SM, limited by %s; working set %.1f MB, L2 %.0f MB) > split %.2f µs (%d and %d blocks/SM)",
		merged*1e6, m.occ, hv.Name, float64(m.foot)/1e6, float64(c.pl.GPU.L2Bytes)/1e6, split*1e6, left.occ, right.occ)
	return bd
}

// greedy is the paper's Alg. 1 partitioning: walk the stages in order and
// split before a compute-intensive stage whose tiles outnumber the blocks
// the kernel can hold resident.
func (c *coster) greedy() ([]int, []*Boundary) {
	starts := []int{0}
	var bounds []*Boundary
	g := c.pl.GPU
	res := c.res(0)
	params := map[int]bool{}
	for _, id := range c.bufs[0] {
		params[id] = true
	}
	for j := 1; j < len(c.stages); j++ {
		s := c.scheds[j]
		merged := mergeRes(res, c.res(j))
		occ, why := g.BlocksPerSM(merged.Block())
		n := len(params)
		for _, id := range c.bufs[j] {
			if !params[id] {
				n++
			}
		}
		if n > g.ParamLimit() && occ > 0 {
			occ, why = 0, fmt.Sprintf("%d buffer parameters > %d", n, g.ParamLimit())
		}
		if occ == 0 {
			clear(params)
		}
		for _, id := range c.bufs[j] {
			params[id] = true
		}
		ci := false
		if x := c.a; x != nil {
			if te := x.TE(c.stages[j]); te != nil {
				ci = te.Intensity.Class == analysis.ComputeIntensive
			}
		} else {
			ci = s.Kind == schedule.Contraction
		}
		switch {
		case occ == 0:
			starts = append(starts, j)
			bounds = append(bounds, &Boundary{Before: c.stages[j], Reason: "resources: " + why})
			res = c.res(j)
		case ci && s.Tiles > g.SMs*occ:
			starts = append(starts, j)
			bounds = append(bounds, &Boundary{Before: c.stages[j],
				Reason: fmt.Sprintf("Alg. 1: %s needs %d blocks > %d resident (%d SMs × %d)", c.stages[j].Name, s.Tiles, g.SMs*occ, g.SMs, occ)})
			res = c.res(j)
		default:
			res = merged
		}
	}
	return starts, bounds
}

// onChip chooses the row reductions of k to keep in shared memory: those
// that are not program outputs and whose every consumer is a stage of k
// that reads them in its own rows (a block barrier apart). It walks them in
// program order and gives each a slot, a shared array: a slot whose
// occupant's last reader has run is reused (grown if need be), and results
// whose lives in the kernel do not overlap share one. When the slots would
// exceed the budget (Options.OnChipBytes), the least recently used result
// on chip is spilled to global memory, and its slot taken, until the new
// one fits; a result that still does not fit, or that would lower the
// kernel's occupancy, stays in global memory.
func (c *coster) onChip(k *Kernel, a *analysis.Analysis) {
	budget := c.opts.onChipBudget()
	in := map[*te.Tensor]bool{}
	for _, t := range k.Stages {
		in[t] = true
	}
	type slot struct {
		bytes    int
		occupant *te.Tensor // nil when free
		last     int        // position of the occupant's last reader
		used     int        // position of its most recent access so far
	}
	var slots []*slot
	total := func() int {
		n := 0
		for _, s := range slots {
			n += s.bytes
		}
		return n
	}
	base := k.Resources.SharedBytes
	fits := func(extra int) bool {
		if total()+extra > budget {
			return false
		}
		res := k.Resources
		res.SharedBytes = base + total() + extra
		occ, _ := c.pl.GPU.BlocksPerSM(res.Block())
		return occ >= k.BlocksPerSM
	}
	for pos, t := range k.Stages {
		for _, s := range slots {
			if s.occupant == nil {
				continue
			}
			if s.last < pos {
				s.occupant = nil // its readers have all run
			} else if readsTensor(t, s.occupant) {
				s.used = pos
			}
		}
		p := c.pos[t]
		if c.scheds[p].Kind != schedule.RowReduce || a.Graph.IsOutput(t) || t.DType != te.F32 {
			continue
		}
		last, ok := pos, true
		for _, u := range a.Graph.Consumers(t) {
			// Readers by rows only: the lowering reads a slot in row
			// stages (a contraction's staged factors read global memory).
			if !in[u] || c.need(p, c.pos[u]) != BlockSync || rowAxes(u, c.scheds[c.pos[u]]) == 0 {
				ok = false
				break
			}
			last = max(last, slices.Index(k.Stages, u))
		}
		if !ok {
			continue
		}
		n := int(t.Bytes())
		var chosen *slot
		for {
			// The free slot that needs the least growth.
			grow := -1
			for _, s := range slots {
				if s.occupant != nil {
					continue
				}
				if g := max(n-s.bytes, 0); (grow < 0 || g < grow) && fits(g) {
					chosen, grow = s, g
				}
			}
			if chosen == nil && fits(n) {
				chosen = &slot{}
				slots = append(slots, chosen)
			}
			if chosen != nil {
				break
			}
			// Spill the least recently used result on chip.
			var lru *slot
			for _, s := range slots {
				if s.occupant != nil && (lru == nil || s.used < lru.used) {
					lru = s
				}
			}
			if lru == nil {
				break
			}
			k.Spilled = append(k.Spilled, lru.occupant)
			k.OnChip = slices.DeleteFunc(k.OnChip, func(x *te.Tensor) bool { return x == lru.occupant })
			delete(k.Slot, lru.occupant)
			lru.occupant = nil
		}
		if chosen == nil {
			continue
		}
		chosen.bytes = max(chosen.bytes, n)
		chosen.occupant, chosen.last, chosen.used = t, last, pos
		if k.Slot == nil {
			k.Slot = map[*te.Tensor]int{}
		}
		k.Slot[t] = slices.Index(slots, chosen)
		k.OnChip = append(k.OnChip, t)
	}
	k.SlotBytes = nil
	for _, s := range slots {
		k.SlotBytes = append(k.SlotBytes, s.bytes)
	}
	k.Resources.SharedBytes = base + total()
}

// readsTensor reports whether t's body loads u.
func readsTensor(t, u *te.Tensor) bool {
	return slices.Contains(te.Inputs(t.Body), u)
}
