package partition

import (
	"tec/contraction"
	"tec/cost"
	"tec/schedule"
	"tec/te"
)

// L2 prefetch of the next epoch's weights. A decode step alternates
// between stages that stream weights from DRAM at its bandwidth (the
// projections) and epochs of small stages bound by latency (attention over
// the cache, the merge), during which the DRAM idles, as it does through
// the grid syncs around them. Hand-written megakernels fill that time: the
// blocks that have no tile in such an epoch prefetch into L2 the weights
// that the stage after the next grid sync will read, which then reads
// them from L2. placePrefetches finds the epochs whose idle DRAM time the
// cost model predicts can move the next stage's weights, or part of them,
// and prices the stage that reads them with those bytes from L2
// (Kernel.Prefetches); backend/lower emits the prefetches
// (prefetch.global.L2, a hint that orders nothing and changes no value).

// Limits of L2 prefetching.
const (
	// prefetchShare is the share of an epoch's idle DRAM time (its own
	// bytes aside) that the prefetches are counted on: they start when
	// the idle blocks reach them, and the epoch's loads come first.
	prefetchShare = 0.75
	// prefetchL2Share is the share of L2 that prefetched weights may take,
	// so that what the epoch and the stage read beside them stays.
	prefetchL2Share = 0.5
	// prefetchSlack bounds the elements prefetched for a weight against
	// those the stage reads (the hull of its reads).
	prefetchSlack = 1.25
)

// placePrefetches gives each kernel of pl its prefetches: before each grid
// sync kept, where the epoch that it ends leaves blocks without tiles and
// its predicted time and the sync's, less its own DRAM traffic, leave the
// DRAM time to move the whole of the weights of a matrix-vector stage of
// the next epoch (its wide factor, all params), within a share of L2 — or
// as many of them as that time moves: the first k of each of its columns
// (firstOfRows), or for a stage of several waves of tiles its leading
// weights (leading), whichever is more. The stage's time is repriced with
// those bytes from L2, and the kernel's predicted time falls by what its
// epoch's critical path saves.
func placePrefetches(pl *Plan) {
	for _, k := range pl.Kernels {
		k.placePrefetches(pl)
	}
}

func (k *Kernel) placePrefetches(pl *Plan) {
	if len(k.StageCosts) != len(k.Stages) || k.Grid <= 0 {
		return
	}
	g := pl.GPU
	epochs := k.epochs()
	for e := 0; e+1 < len(epochs); e++ {
		issue, next := epochs[e], epochs[e+1]
		own := int64(0)
		fixed := false
		for _, j := range issue {
			s := pl.Schedules[k.Stages[j]]
			own += k.StageCosts[j].DRAM
			fixed = fixed || fixedTiles(s) || s.InnerSync() || s.KSplit > 1
		}
		busy := k.busyBlocks(pl, issue)
		if fixed || busy >= k.Grid {
			continue
		}
		window := (k.epochTime(pl, issue) + g.GridSyncCost) * g.DRAMBandwidth * prefetchShare
		budget := min(int64(window)-own, int64(float64(g.L2Bytes)*prefetchL2Share))
		before := k.epochTime(pl, next)
		for _, j := range next {
			t := k.Stages[j]
			ranges, bytes, ok := prefetchRanges(t, pl.Schedules[t])
			sc := k.StageCosts[j]
			if !ok {
				continue
			}
			if bytes > budget {
				// Part of them: what the tiles read from L2 they read
				// sooner, whether they share the DRAM's bandwidth or wait
				// on its latency. The first k of each of the stage's
				// columns, which every tile reads first; or, for a stage
				// of several waves, its leading weights, the first
				// tiles', where that is more.
				rows, b := firstOfRows(ranges, budget)
				if pl.Schedules[t].Tiles > k.Grid {
					if lead, lb := leading(ranges, budget); lb > b {
						rows, b = lead, lb
					}
				}
				if b == 0 {
					continue
				}
				ranges, bytes = rows, b
			}
			dram := max(sc.DRAM-bytes, 0)
			occ, _ := pl.stageGPU(t).BlocksPerSM(pl.stageResources(t).Block())
			s := pl.stage(t)
			time, bound := cost.StageBound(g, s.Schedule, s.Price, dram, occ, k.Grid)
			if time >= sc.Time {
				continue
			}
			k.StageCosts[j] = cost.StageEstimate{Time: time, DRAM: dram, Bound: bound}
			saved := before - k.epochTime(pl, next)
			k.Cost.Stages -= saved // the bytes still come from DRAM, earlier
			if k.Prefetches == nil {
				k.Prefetches = map[int]*Prefetch{}
			}
			k.Prefetches[next[0]] = &Prefetch{For: t, Ranges: ranges, Busy: busy, Bytes: bytes, Saved: saved}
			break // one stage's weights an epoch
		}
	}
}

// epochs returns the indexes of k's stages by epoch: the runs of stages
// between the grid syncs kept (not replaced by counters).
func (k *Kernel) epochs() [][]int {
	var out [][]int
	for j := range k.Stages {
		if j == 0 || k.Sync[j] == GridSync && k.Counters[j] == nil {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], j)
	}
	return out
}

// busyBlocks returns the blocks that the stages js of an epoch give
// tiles: the stages that read one another, directly or through others of
// the epoch, take their tiles from one block on, and each such group
// starts where the one before it ends (backend/lower's rotations), so
// the blocks from the sum of the groups' most tiles on have none.
func (k *Kernel) busyBlocks(pl *Plan, js []int) int {
	group := map[*te.Tensor]*te.Tensor{} // union-find over the epoch's stages
	var find func(t *te.Tensor) *te.Tensor
	find = func(t *te.Tensor) *te.Tensor {
		if p := group[t]; p != t {
			group[t] = find(p)
		}
		return group[t]
	}
	for _, j := range js {
		t := k.Stages[j]
		group[t] = t
		for _, u := range te.Inputs(t.Body) {
			if _, in := group[u]; in {
				group[find(u)] = find(t)
			}
		}
	}
	width := map[*te.Tensor]int{}
	for _, j := range js {
		r := find(k.Stages[j])
		width[r] = max(width[r], pl.Schedules[k.Stages[j]].Tiles)
	}
	busy := 0
	for _, w := range width {
		busy += w
	}
	return busy
}

// epochTime returns the predicted time of the stages js of an epoch: the
// longest chain of stages that read one another, by their StageCosts.
func (k *Kernel) epochTime(pl *Plan, js []int) float64 {
	finish := map[*te.Tensor]float64{}
	longest := 0.0
	for _, j := range js {
		t := k.Stages[j]
		start := 0.0
		for _, u := range te.Inputs(t.Body) {
			start = max(start, finish[u])
		}
		finish[t] = start + k.StageCosts[j].Time
		longest = max(longest, finish[t])
	}
	return longest
}

// prefetchRanges returns the elements of the weights that the
// matrix-vector stage t reads in its wide factor, by weight, and their
// bytes: false where the factor loads anything but params, or where the
// runs of elements would take much more than the stage reads.
func prefetchRanges(t *te.Tensor, s *schedule.Schedule) ([]PrefetchRange, int64, bool) {
	if s.Kind != schedule.Contraction || s.MatVec == nil || s.Resident != nil || s.EpilogueOf != nil || s.Mask != nil {
		return nil, 0, false
	}
	d, ok := contraction.Of(t)
	if !ok {
		return nil, 0, false
	}
	wide, cols := d.Y, d.N
	if s.MatVec.Wide == 0 {
		wide, cols = d.X, d.M
	}
	var ranges []PrefetchRange
	var bytes int64
	ok = true
	te.Walk(wide, func(x te.Expr) bool {
		l, isLoad := x.(*te.Load)
		if !isLoad || !ok {
			return ok
		}
		if l.Tensor.Kind != te.Param || l.IsGather() {
			ok = false
			return false
		}
		strides := te.Strides(l.Tensor.Shape)
		lo, hi := 0, 0
		for i, ix := range l.Index {
			a, b := ix.Simplify().ExtentBounds()
			a, b = max(a, 0), min(b, l.Tensor.Shape[i]-1)
			lo += a * strides[i]
			hi += b * strides[i]
		}
		// Rows: the last axis read whole along the contraction's k.
		row := 0
		last := len(l.Index) - 1
		if k := d.Reduce.Axes; len(k) == 1 && l.Index[last].Simplify().Equal(te.VarIndex(k[0])) && k[0].Extent == l.Tensor.Shape[last] {
			row = l.Tensor.Shape[last]
		}
		for i, r := range ranges {
			if r.Tensor == l.Tensor {
				bytes -= int64(r.Hi-r.Lo) * int64(l.Tensor.DType.Size())
				lo, hi = min(lo, r.Lo), max(hi+1, r.Hi)-1
				if r.Row != row {
					row = 0
				}
				ranges = append(ranges[:i], ranges[i+1:]...)
				break
			}
		}
		ranges = append(ranges, PrefetchRange{Tensor: l.Tensor, Lo: lo, Hi: hi + 1, Row: row})
		bytes += int64(hi+1-lo) * int64(l.Tensor.DType.Size())
		return false
	})
	read := int64(d.Batch) * int64(d.K) * int64(cols) * int64(cost.ElemSize(wide))
	if !ok || len(ranges) == 0 || float64(bytes) > prefetchSlack*float64(read) {
		return nil, 0, false
	}
	return ranges, bytes, true
}

// leading returns the first elements of ranges, in order, that take at
// most budget bytes, in whole L2 lines (128 bytes), and their bytes.
func leading(ranges []PrefetchRange, budget int64) ([]PrefetchRange, int64) {
	var out []PrefetchRange
	var bytes int64
	for _, r := range ranges {
		size := int64(r.Tensor.DType.Size())
		left := (budget - bytes) / size
		if left <= 0 {
			break
		}
		n := int64(r.Hi - r.Lo)
		if n > left {
			per := int64(128) / size
			n = left / per * per
		}
		if n > 0 {
			out = append(out, PrefetchRange{Tensor: r.Tensor, Lo: r.Lo, Hi: r.Lo + int(n), Row: r.Row})
			bytes += n * size
		}
	}
	return out, bytes
}

// firstOfRows returns the first elements of each row of every range,
// as many as budget bytes allow, the same in each, in whole L2 lines (128
// bytes), and their bytes: 0 where a range has no rows (Row) or not a
// line of each fits.
func firstOfRows(ranges []PrefetchRange, budget int64) ([]PrefetchRange, int64) {
	var rows int64
	size := 0
	for _, r := range ranges {
		if r.Row == 0 || (r.Hi-r.Lo)%r.Row != 0 || size != 0 && r.Tensor.DType.Size() != size {
			return nil, 0
		}
		size = r.Tensor.DType.Size()
		rows += int64((r.Hi - r.Lo) / r.Row)
	}
	if size == 0 {
		return nil, 0
	}
	per := 128 / size
	n := int(budget/(rows*int64(size))) / per * per // elements of each row
	var out []PrefetchRange
	var bytes int64
	for _, r := range ranges {
		if n <= 0 || n >= r.Row {
			return nil, 0
		}
		r.Len = n
		out = append(out, r)
		bytes += int64(r.Elements()) * int64(size)
	}
	return out, bytes
}
