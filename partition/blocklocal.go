package partition

import (
	"tec/contraction"
	"tec/cost"
	"tec/gpu"
	"tec/schedule"
	"tec/te"
)

// Block-local chains. A decode step's attention is, per query head, a
// chain of small stages: the scores (a batched contraction over the
// head's keys), their maximum and sum (row reductions), and the context
// (a batched matrix-vector product over the head's values). Each stage
// reads the ones before it only at its own head, so when every stage of
// the chain gives a head to one tile, the grid-stride loops of a fused
// kernel give head r to the same block in all of them (backend/lower
// rotates the stages of an epoch that read one another together), and
// the chain needs block barriers between its stages instead of grid
// syncs. blockRows extends the row stages that sameBlock knows (row
// reductions and Rows stages) to contractions whose tile is one entry of
// their batch, or for a matrix-vector tile one row of the batch and the
// leading columns axes (a flash-decoding chunk of a head's scores,
// transform.Split.Scores: the chunk's keys are its columns), and
// alignRows tiles a matrix-vector stage so, where the grid sync that saves
// pays for the SMs that fewer, larger tiles leave idle, and
// rowsForReaders makes an element-wise producer of such a chain (RoPE's
// queries) rows of it too.

// alignRows gives each matrix-vector stage of stages a tile per row of a
// stage it reads, or that reads it, only in its own row (readsRows),
// working by rows (blockRows) over its batch axes or over them and its
// leading columns axes (matVecRows): a tile per batch entry, or per chunk
// of a head's scores, where its time on the GPU g so tiled is less than
// now plus the grid sync that those reads then no longer need.
func alignRows(stages []*te.Tensor, pl *Plan, g gpu.Model) {
	scheds := pl.Schedules
	readers := map[*te.Tensor][]*te.Tensor{}
	for _, y := range stages {
		for _, u := range te.Inputs(y.Body) {
			readers[u] = append(readers[u], y)
		}
	}
	for _, t := range stages {
		g := pl.stageGPU(t)
		s := pl.stage(t)
		if s.Kind != schedule.Contraction || s.MatVec == nil || s.Resident != nil || s.TensorCores || s.MatVec.NT == 1 {
			continue
		}
		d, ok := contraction.Of(t)
		if !ok || len(d.BatchAxes) == 0 {
			continue
		}
		// The rows of a neighbour: over the batch axes, or over them and
		// leading columns axes (a chunk of the scores' keys, whose max
		// is a row reduction over the chunk).
		l := 0
		rows := func(n int) bool {
			return n == len(d.BatchAxes) || n > len(d.BatchAxes) && n < len(t.Axes) && matVecRows(t, d, s.MatVec.Wide, product(t.Axes[n:])) == n
		}
		for _, u := range te.Inputs(t.Body) {
			if su := scheds[u]; su != nil {
				if n := blockRows(u, su); rows(n) && readsRows(t, u, n) {
					l = max(l, n)
				}
			}
		}
		for _, y := range readers[t] {
			if n := blockRows(y, scheds[y]); rows(n) && readsRows(y, t, n) {
				l = max(l, n)
			}
		}
		if l == 0 {
			continue
		}
		width := d.N // all the wide factor's columns, a tile per batch entry
		if s.MatVec.Wide == 0 {
			width = d.M
		}
		if l > len(d.BatchAxes) {
			width = product(t.Axes[l:])
		}
		a := s.clone()
		if !a.alignedMatVec(d, g, t.Bytes(), width) || contractionRows(t, a.Schedule) != l {
			continue
		}
		if a.KMask != nil && a.LiveK < a.K {
			a.Bytes = a.Bytes * int64(a.LiveK) / int64(a.K) // as priceKMask left it
		}
		if cost.Solo(g, a.Schedule, a.Price) >= cost.Solo(g, s.Schedule, s.Price)+g.GridSyncCost {
			continue
		}
		s.set(a)
	}
}

// alignedMatVec gives the matrix-vector schedule s (of the contraction d)
// tiles of width of the wide factor's columns (all of them: one tile per
// batch entry), and reports whether it could: of the columns per thread
// (Cols, up to matVecMaxCols) that make such a tile fit the block, the
// one predicted fastest on g alone (solo), then the one with the fewest
// registers, which bound the occupancy of the kernel it joins.
func (s stage) alignedMatVec(d contraction.Dims, g gpu.Model, out int64, width int) bool {
	wide := s.MatVec.Wide
	rows, cols := d.M, width
	if wide == 0 {
		rows = d.N
	}
	if rows > matVecMaxRows {
		return false
	}
	var best stage
	bestTime := inf
	for c := 1; c <= matVecMaxCols; c *= 2 {
		tf := cols / c
		if tf*c != cols || tf < 1 || s.Threads%tf != 0 {
			continue
		}
		try := s.clone()
		if !try.setMatVec(d, &schedule.MatVec{Wide: wide, TileF: tf, Cols: c}, g, out) {
			continue
		}
		if t := cost.Solo(g, try.Schedule, try.Price); best.Schedule == nil || t < bestTime || t == bestTime && try.RegsPerThread < best.RegsPerThread {
			best, bestTime = try, t
		}
	}
	if best.Schedule == nil {
		return false
	}
	s.set(best)
	return true
}

// rowsForReaders makes each element-wise stage of stages a Rows stage
// over its first l axes when every stage that reads it works by rows
// over l axes (blockRows) and reads it only in its own row, its rows
// have at least 32 elements, and it costs no more so (on as many blocks
// as rows) than as it is plus the grid sync it saves: RoPE's rotated
// query heads, computed by the block that then computes the head's
// scores.
func rowsForReaders(stages []*te.Tensor, pl *Plan, g gpu.Model) {
	scheds := pl.Schedules
	readers := map[*te.Tensor][]*te.Tensor{}
	for _, y := range stages {
		for _, u := range te.Inputs(y.Body) {
			readers[u] = append(readers[u], y)
		}
	}
	for _, t := range stages {
		g := pl.stageGPU(t)
		s := pl.stage(t)
		if s.Kind != schedule.Elementwise || len(readers[t]) == 0 {
			continue
		}
		l := blockRows(readers[t][0], scheds[readers[t][0]])
		if l <= 0 || l >= len(t.Shape) || product(t.Axes[l:]) < 32 {
			continue
		}
		ok := true
		for _, y := range readers[t] {
			ok = ok && blockRows(y, scheds[y]) == l && readsRows(y, t, l)
		}
		if !ok {
			continue
		}
		r := s.clone()
		r.Kind, r.RowAxes, r.Tiles = schedule.Rows, l, product(t.Axes[:l])
		r.setVectorPath(t)
		if cost.Solo(g, r.Schedule, r.Price) >= cost.Solo(g, s.Schedule, s.Price)+g.GridSyncCost {
			continue
		}
		s.set(r)
	}
}

// fitDep returns the dependence of stage y's tiles on stage u's, both
// taking runs of elements as tiles, fitted to y's reads of u point by
// point (readPoints, fitReads): finer than rowDep where the reads are not
// at y's own leading axes, as a query head's scores read the key head
// that its group of heads shares (TileDep.Div).
func fitDep(pl *Plan, y *te.Tensor, sy *schedule.Schedule, u *te.Tensor, su *schedule.Schedule) (TileDep, bool) {
	ty, cy, oky := tiling(y, sy, pl.Threads)
	tu, cu, oku := tiling(u, su, pl.Threads)
	if !oky || !oku {
		return TileDep{}, false
	}
	reads, ok := pl.readPoints(y, u, false, true)
	if !ok {
		return TileDep{}, false
	}
	base := TileDep{Producer: u, Tile: ty, N: y.NumElements(), Width: tu, Tiles: su.Tiles, Chunks: cy, ProducerChunks: cu}
	return fitReads(base, y, reads, nil)
}

// preferredGroups returns, for each matrix-vector stage of the epoch that
// does not signal yet, the tiles per counter (a power of two) that make
// the fewest waits, priced as counterDeps prices them, over all the
// stages that would wait on it if counters replaced the grid sync before
// stage j: the first reader's best group may cost the others many waits
// (a head's RoPE reads 4 column tiles, the keys' elementwise chunks 16).
func (k *Kernel) preferredGroups(pl *Plan, j int, epoch map[*te.Tensor]int, signalled map[*te.Tensor]int) map[*te.Tensor]int {
	grid := max(k.Grid, 1)
	type reader struct {
		y  *te.Tensor
		sy *schedule.Schedule
	}
	readers := map[*te.Tensor][]reader{}
	for f := j; f < len(k.Stages) && (f == j || k.Sync[f] != GridSync); f++ {
		y := k.Stages[f]
		sy := pl.Schedules[y]
		for _, u := range te.Inputs(y.Body) {
			su := pl.Schedules[u]
			if i, in := epoch[u]; !in || i < 0 || su == nil || pl.reuse && sameRows(y, sy, u, su) {
				continue
			}
			if _, done := signalled[u]; done {
				continue
			}
			if _, _, ok := matVecWidth(u, su); ok {
				readers[u] = append(readers[u], reader{y, sy})
			}
		}
	}
	prefer := map[*te.Tensor]int{}
	for u, rs := range readers {
		su := pl.Schedules[u]
		// Each reader's fit is the same for every group: fit once.
		fits := make([][]TileDep, len(rs))
		fitted := true
		for i, r := range rs {
			fits[i], fitted = pl.matVecFit(r.y, r.sy, u, su)
			if !fitted {
				break
			}
		}
		best, fewest := 0, inf
		for g := 1; fitted && g <= su.Tiles; g *= 2 {
			n := 0.0
			for i, r := range rs {
				ds := grouped(fits[i], g)
				n += float64(te.CeilDiv(r.sy.Tiles, grid) * waits(ds))
			}
			if n < fewest {
				best, fewest = g, n
			}
		}
		prefer[u] = best
	}
	return prefer
}
