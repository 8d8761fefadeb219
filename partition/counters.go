package partition

import (
	"slices"
	"strings"

	"tec/schedule"
	"tec/te"
)

// A persistent kernel separates a stage that reads what other blocks wrote
// from those writes by a grid sync. Where each tile of the stage reads only
// some tiles of the stages before it, hand-written megakernels wait instead
// on per-tile counters in global memory that the producing tiles signal
// (kir.Signal, kir.Wait): a block waits only for the tiles it reads, and
// the rest of the grid moves on. placeCounters finds the grid syncs that
// such counters can replace, from the exact row dependences of the stages,
// and keeps those that the cost model says pay: Kernel.Counters.
//
// A stage's tiles are its grid-stride loop's trips (see schedule.Schedule.Tiles);
// the dependences the plan knows exactly are those between stages that
// work by rows (row reductions and Rows stages): consumer tile r, the flat
// index of its first rows axes, reads its producer only where the
// producer's first l axes are r's (readsRows), so only the producer tiles
// whose rows hold those elements.

// The cost of counters, seconds on a block's critical path: a signal is a
// block barrier, a GPU-scope fence that waits for the block's stores to
// reach L2, and a reduction; a wait already satisfied is one acquire load
// from L2 and a block barrier. Each is taken as one L2 round trip with the
// barrier, a quarter of a microsecond: Jia et al. measure about 200 cycles
// of L2 hit latency on Volta and Turing ("Dissecting the NVIDIA Volta GPU
// Architecture via Microbenchmarking", 2018; "... Turing T4 GPU ...",
// 2019), 0.15 µs at the 1.4 GHz of an A100, which the fence and barrier
// round up. A grid sync (GPU.GridSyncCost, 1 µs) does the same fence,
// atomic and spin in every block, and then waits for the slowest block.
// Both are estimates of this model, not measurements of ours.
const (
	CounterSignalCost = 0.25e-6
	CounterWaitCost   = 0.25e-6
)

// rowDep returns the dependence of stage y's tiles on stage u's, when
// both take runs of elements as tiles and y reads u only at its own first
// axes (readsRows), as many as it can.
func rowDep(y *te.Tensor, sy *schedule.Schedule, u *te.Tensor, su *schedule.Schedule, threads int) (TileDep, bool) {
	ty, cy, oky := tiling(y, sy, threads)
	tu, cu, oku := tiling(u, su, threads)
	if !oky || !oku {
		return TileDep{}, false
	}
	for l := min(len(y.Shape), len(u.Shape)); l >= 1; l-- {
		if readsRows(y, u, l) {
			return TileDep{Producer: u, Tile: ty, N: y.NumElements(), Prefix: product(y.Axes[l:]), Span: product(u.Axes[l:]), Width: tu,
				Chunks: cy, ProducerChunks: cu}, true
		}
	}
	return TileDep{}, false
}

// placeCounters decides, for each kernel of pl, which of its grid syncs
// counters replace (see the comment at the top of this file). A grid sync
// before stage j can go when:
//
//   - stage j takes runs of its elements as tiles (rows of a row
//     reduction or a Rows stage, blocks' worth of an element-wise stage),
//     and so does every stage it reads that was computed since the last
//     grid sync kept (its epoch, which grows as syncs go), which is not
//     kept on chip and is read only at j's own leading axes (rowDep): j
//     then waits for exactly the producer tiles of its tile;
//   - no stage after j before the next grid sync reads a stage of that
//     epoch computed before j, since those reads were ordered by the sync;
//   - a grid sync precedes the epoch (one kept, a split reduction's, or the
//     one after the split reductions' initialisation), before which the
//     kernel zeroes its counters;
//   - in CountersByCost mode, the signals of the producers that signal
//     for the first time and j's waits, a tile per block's share of the
//     grid at a time, cost less than a grid sync.
//
// It updates each kernel's GridSyncs and its predicted Sync time.
func placeCounters(pl *Plan, mode CounterMode) {
	if mode == CountersOff {
		return
	}
	pl.fits, pl.reads = map[fitKey]fitResult{}, map[readKey]readSet{}
	defer func() { pl.fits, pl.reads = nil, nil }()
	for _, k := range pl.Kernels {
		k.placeCounters(pl, mode)
	}
}

func (k *Kernel) placeCounters(pl *Plan, mode CounterMode) {
	synced := false // a grid sync precedes the current epoch
	for _, t := range k.Stages {
		if pl.Schedules[t].Kind == schedule.SplitReduce {
			synced = true // the initialisation's grid sync starts the kernel
		}
	}
	onChip := map[*te.Tensor]bool{}
	for _, t := range k.OnChip {
		onChip[t] = true
	}
	groups := map[*te.Tensor]int{} // the producers that signal, and their tiles per counter
	start := 0                     // the current epoch's first stage
	for j := 1; j < len(k.Stages); j++ {
		if pl.Schedules[k.Stages[j-1]].InnerSync() {
			// Its grid sync lies between its two phases; its finishing
			// pass writes by threads, in the epoch that follows.
			start, synced = j-1, true
		}
		if k.Sync[j] != GridSync {
			continue
		}
		deps, cost, ok := k.counterDeps(pl, j, start, onChip, groups)
		if ok && synced && (mode == CountersWherever || cost < pl.GPU.GridSyncCost) {
			if k.Counters == nil {
				k.Counters = map[int][]TileDep{}
			}
			for f, ds := range deps {
				k.Counters[f] = ds
				for _, d := range ds {
					groups[d.Producer] = d.group()
				}
			}
			k.GridSyncs--
			k.Cost.Sync += cost - pl.GPU.GridSyncCost
			continue
		}
		start, synced = j, true
	}
}

// counterDeps returns the dependences on the stages of the epoch that
// begins at stage start of stage j and of the stages after it before the
// next grid sync that read the epoch (by stage index), and what counters
// instead of the grid sync before j would cost, or false if counters
// cannot order them after the epoch (see placeCounters). groups holds the
// producers that signal already, with their tiles per counter.
func (k *Kernel) counterDeps(pl *Plan, j, start int, onChip map[*te.Tensor]bool, groups map[*te.Tensor]int) (map[int][]TileDep, float64, bool) {
	epoch := map[*te.Tensor]int{}
	for i := start; i < j; i++ {
		epoch[k.Stages[i]] = i
	}
	// Stages computed in a resident stage's tiles write where their
	// producer's tiles do, which no row dependence describes.
	for t, s := range pl.Schedules {
		if s.EpilogueOf != nil {
			if _, in := epoch[s.EpilogueOf]; in {
				epoch[t] = -1
			}
		}
	}
	grid := max(k.Grid, 1)
	signalled := map[*te.Tensor]int{}
	for u, g := range groups {
		signalled[u] = g
	}
	prefer := k.preferredGroups(pl, j, epoch, signalled) // blocklocal.go
	out := map[int][]TileDep{}
	cost := 0.0
	for f := j; f < len(k.Stages) && (f == j || k.Sync[f] != GridSync); f++ {
		y := k.Stages[f]
		sy := pl.Schedules[y]
		// Each producer's waits, or nil where no few waits order it; then,
		// from the epoch's last producer back, those that the waits kept
		// imply are dropped (impliedBy), and the rest must fit.
		type producer struct {
			u  *te.Tensor
			ds []TileDep
		}
		var ps []producer
		for _, u := range te.Inputs(y.Body) {
			i, in := epoch[u]
			if !in {
				continue
			}
			if i < 0 || onChip[u] {
				return nil, 0, false
			}
			if pl.reuse && sameRows(y, sy, u, pl.Schedules[u]) {
				continue // the same block wrote it, before the block barrier that stays
			}
			ds, _ := k.stageDeps(pl, y, sy, u, signalled, prefer[u])
			ps = append(ps, producer{u, ds})
		}
		slices.SortStableFunc(ps, func(a, b producer) int { return epoch[b.u] - epoch[a.u] })
		var deps []TileDep
		for _, p := range ps {
			if k.impliedBy(pl, f, p.u, deps, epoch) {
				continue
			}
			if p.ds == nil {
				return nil, 0, false
			}
			if _, done := signalled[p.u]; !done {
				cost += float64(te.CeilDiv(pl.Schedules[p.u].Tiles, grid)) * CounterSignalCost
				signalled[p.u] = p.ds[0].group()
			}
			for _, d := range p.ds {
				cost += float64(te.CeilDiv(sy.Tiles, grid)*d.Most()) * CounterWaitCost
			}
			deps = append(deps, p.ds...)
		}
		if len(deps) == 0 {
			if f == j {
				return nil, 0, false
			}
			continue
		}
		slices.SortStableFunc(deps, func(a, b TileDep) int { return strings.Compare(a.Producer.Name, b.Producer.Name) })
		out[f] = deps
	}
	return out, cost, true
}

// stageDeps returns the dependences of stage y's tiles on producer u, at
// most MaxWaits waits each: a row dependence, or those on a
// matrix-vector producer (matVecDeps), grouped as u signals already or
// else by prefer (if not 0).
func (k *Kernel) stageDeps(pl *Plan, y *te.Tensor, sy *schedule.Schedule, u *te.Tensor, signalled map[*te.Tensor]int, prefer int) ([]TileDep, bool) {
	su := pl.Schedules[u]
	group, done := signalled[u]
	if _, _, ok := matVecWidth(u, su); ok {
		if !done {
			group = prefer
		}
		fit, ok := pl.matVecFit(y, sy, u, su)
		ds := grouped(fit, group)
		if !ok || waits(ds) > MaxWaits {
			return nil, false
		}
		return ds, true
	}
	d, ok := rowDep(y, sy, u, su, pl.Threads)
	if ok && d.Most() <= 1 {
		// one producer tile a tile: no fit does better (and fitting
		// reads y's every point)
	} else if f, fits := fitDep(pl, y, sy, u, su); fits && (!ok || f.Most() < d.Most()) {
		d, ok = f, true // blocklocal.go
	}
	if !ok {
		return nil, false
	}
	d.Tiles = su.Tiles
	switch {
	case done:
		d.Group = group
	case d.Most() > MaxWaits:
		// a tile reads a run of many producer tiles (a merge, every
		// chunk of its heads): a counter per run's worth of them
		d.Group = bestGroup(d)
	}
	if d.Most() > MaxWaits {
		return nil, false
	}
	return []TileDep{d}, true
}

// impliedBy reports whether the waits deps of stage f's tiles order it
// after every tile of producer u that it reads, although it waits on no
// counter of u: where each tile t of u that a tile of f reads shares its
// index with a tile of a producer w later in u's epoch that the tile
// waits for. The stages of an epoch that read one another take their
// tiles at one rotation (backend/lower's rotations), f joining u and w to
// it, so the block that signals w's tile t computed u's tile t before it,
// and the signal, a block barrier and a fence, releases those stores too:
// a chain's last stage (a flash-decoding chunk's partial context) signals
// for the chunk's max and denominator that the merge reads beside it.
// Stages whose tiles belong to fixed blocks (split reductions, resident
// weights) are not rotated with the rest and end a rotation's epoch: with
// one from u to f, nothing is implied.
func (k *Kernel) impliedBy(pl *Plan, f int, u *te.Tensor, deps []TileDep, epoch map[*te.Tensor]int) bool {
	y, sy, su := k.Stages[f], pl.Schedules[k.Stages[f]], pl.Schedules[u]
	for _, t := range k.Stages[epoch[u] : f+1] {
		if fixedTiles(pl.Schedules[t]) {
			return false
		}
	}
	need, ok := rowDep(y, sy, u, su, pl.Threads)
	if !ok || len(deps) == 0 {
		return false
	}
	for r := range te.CeilDiv(need.N, need.Tile) {
		lo, hi := need.Range(r)
		for t := lo; t < hi; t++ {
			if !waitsFor(deps, r, t, epoch[u], epoch) {
				return false
			}
		}
	}
	return true
}

// waitsFor reports whether consumer tile r, waiting as deps say, waits for
// tile t of a producer that stage index after follows in its epoch.
func waitsFor(deps []TileDep, r, t, after int, epoch map[*te.Tensor]int) bool {
	for _, d := range deps {
		if i, in := epoch[d.Producer]; !in || i <= after || t >= d.Tiles {
			continue
		}
		lo, hi := d.Waits(r)
		if t >= lo*d.group() && t < hi*d.group() {
			return true
		}
	}
	return false
}

// fixedTiles reports whether a stage's tiles run on fixed blocks, not at
// its epoch's rotation (see backend/lower's rotations).
func fixedTiles(s *schedule.Schedule) bool {
	return s.Kind == schedule.SplitReduce || s.Resident != nil
}
