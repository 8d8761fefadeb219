package lower

import (
	"fmt"
	"slices"

	"tec/backend/kir"
	"tec/partition"
	"tec/schedule"
	"tec/te"
)

// Stages of a persistent kernel take their tiles in grid-stride loops, so
// tile 0 of every stage runs on block 0. Between two grid syncs the stages
// that do not read one another would then queue on the first blocks while
// the rest of the grid idles: the LSTM's twenty one-tile cell updates of a
// wavefront step all ran on block 0, one after another. The fused lowering
// therefore starts each group of such stages at its own block.
//
// A result kept on chip (partition.Kernel.OnChip) lives in the shared
// memory of the block that wrote it, so it must be read only by that
// block: row r of the producer and row r of every stage that reads it must
// run on the same block, whatever grid syncs lie between them. Rotation
// keeps this by construction: the stages that write or read a result on
// chip, and the groups they belong to, are never rotated (row r runs on
// block r mod the grid in all of them), and the other groups of their epoch
// start after their tiles. checkOnChip verifies it before a kernel is
// emitted, so that a plan breaking it is an error, not a silent miscompile.

// rotations returns, for each stage of pk, the block at which its tiles
// start: within a grid epoch (the stages between two grid syncs), stages
// that read one another, directly or through others of the epoch, form a
// group that keeps one mapping of tiles to blocks (a stage may read what
// its own block or thread computed), and each group starts where the
// tiles of the groups before it end, modulo the grid. Split reductions
// (grid syncs of their own), stages with resident weights (whose tiles
// belong to fixed blocks), and the groups of stages that write or read a
// result on chip keep block 0; the latter come first in their epoch. It
// also returns the most blocks that an epoch's groups span together, at
// most the grid.
func rotations(pk *partition.Kernel, pl *partition.Plan) (off []int, span int) {
	n := len(pk.Stages)
	off = make([]int, n)
	grid := max(pk.Grid, 1)
	fixed := func(j int) bool {
		s := pl.Schedules[pk.Stages[j]]
		return s.Kind == schedule.SplitReduce || s.Resident != nil
	}
	pinned := onChipStages(pk)
	for start := 0; start < n; {
		end := start + 1
		for end < n && !gridSynced(pk, end) && !fixed(end) && !fixed(end-1) {
			end++
		}
		// Groups of the epoch [start, end), by union-find.
		parent := make([]int, end-start)
		for i := range parent {
			parent[i] = i
		}
		var find func(i int) int
		find = func(i int) int {
			for parent[i] != i {
				parent[i] = parent[parent[i]]
				i = parent[i]
			}
			return i
		}
		at := map[*te.Tensor]int{}
		for j := start; j < end; j++ {
			t := pk.Stages[j]
			for _, in := range te.Inputs(t.Body) {
				if i, ok := at[in]; ok {
					parent[find(i-start)] = find(j - start)
				}
			}
			at[t] = j
		}
		width := map[int]int{}
		held := map[int]bool{} // groups that keep block 0
		for j := start; j < end; j++ {
			r := find(j - start)
			width[r] = max(width[r], pl.Schedules[pk.Stages[j]].Tiles)
			if pinned[pk.Stages[j]] {
				held[r] = true
			}
		}
		first := map[int]int{}
		next := 0
		for r := range held {
			next = max(next, width[r])
			first[r] = 0
		}
		for j := start; j < end; j++ {
			r := find(j - start)
			o, ok := first[r]
			if !ok {
				o = next % grid
				first[r] = o
				next += width[r]
			}
			if !fixed(j) {
				off[j] = o
			}
		}
		span = max(span, min(next, grid))
		start = end
	}
	return off, span
}

// gridSynced reports whether a grid sync precedes stage j of pk: one the
// plan places and does not replace by counters. Counters order only the
// tiles a stage reads, which the same block may have computed
// (partition's sameRows), so an epoch of rotations runs across them.
func gridSynced(pk *partition.Kernel, j int) bool {
	return pk.Sync[j] == partition.GridSync && pk.Counters[j] == nil
}

// onChipStages returns the stages of pk that write or read a result it
// keeps on chip.
func onChipStages(pk *partition.Kernel) map[*te.Tensor]bool {
	on := map[*te.Tensor]bool{}
	for _, t := range pk.OnChip {
		on[t] = true
	}
	out := map[*te.Tensor]bool{}
	for _, t := range pk.Stages {
		if on[t] || slices.ContainsFunc(te.Inputs(t.Body), func(u *te.Tensor) bool { return on[u] }) {
			out[t] = true
		}
	}
	return out
}

// checkOnChip verifies that every result pk keeps on chip is read only by
// the blocks that wrote it: each stage that reads it works by rows over the
// same leading axes (schedule.Rows or a row reduction), so that its
// grid-stride loop gives row r to the block that computed row r, and
// starts its tiles at the same block (off, from rotations).
func checkOnChip(pk *partition.Kernel, pl *partition.Plan, off []int) error {
	pos := map[*te.Tensor]int{}
	for j, t := range pk.Stages {
		pos[t] = j
	}
	for _, t := range pk.OnChip {
		p, ok := pos[t]
		if !ok {
			return fmt.Errorf("result %s is kept on chip but is not a stage of the kernel", t.Name)
		}
		rows := rowAxesOf(pl.Schedules[t], t)
		if rows == 0 {
			return fmt.Errorf("result %s is kept on chip but is not computed by rows", t.Name)
		}
		for j, u := range pk.Stages {
			if !slices.Contains(te.Inputs(u.Body), t) {
				continue
			}
			if j < p {
				return fmt.Errorf("stage %s reads %s, kept on chip, before it is computed", u.Name, t.Name)
			}
			if r := rowAxesOf(pl.Schedules[u], u); r != rows || product(u.Axes[:r]) != product(t.Axes[:rows]) {
				return fmt.Errorf("stage %s reads %s, kept on chip, but does not work by its rows", u.Name, t.Name)
			}
			if off[j] != off[p] {
				return fmt.Errorf("stage %s reads %s, kept on chip, from blocks rotated by %d, but it was written by blocks rotated by %d", u.Name, t.Name, off[j], off[p])
			}
		}
	}
	return nil
}

// rowAxesOf returns how many leading axes of t make its rows under s, or 0
// if s does not give each row to one block.
func rowAxesOf(s *schedule.Schedule, t *te.Tensor) int {
	switch s.Kind {
	case schedule.RowReduce:
		return len(t.Shape)
	case schedule.Rows:
		return s.RowAxes
	}
	return 0
}

// rotate makes the grid-stride and thread-stride loops at the top of stage
// start at block off: loop u over [0, hi + off·unit) and take element
// u − off·unit where it is not negative, unit being 1 for tiles and the
// block's threads for elements. Every element is still visited once, and
// element e runs on block (e/unit + off) mod the grid.
func rotate(stage []kir.Stmt, off, threads int) []kir.Stmt {
	if off == 0 {
		return stage
	}
	out := make([]kir.Stmt, len(stage))
	for i, s := range stage {
		out[i] = s
		f, ok := s.(*kir.For)
		if !ok || (f.Kind != kir.GridStride && f.Kind != kir.ThreadStride) {
			continue
		}
		lo, lok := f.Lo.(*kir.Const)
		hi, hok := f.Hi.(*kir.Const)
		if !lok || !hok || lo.Value != 0 {
			continue
		}
		shift := off
		if f.Kind == kir.ThreadStride {
			shift *= threads
		}
		u := kir.NewVar(f.Var.Name+"_r", te.I32)
		out[i] = &kir.For{Var: u, Kind: f.Kind, Lo: kir.I(0), Hi: kir.I(int(hi.Value) + shift), Body: []kir.Stmt{
			&kir.Let{Var: f.Var, Value: kir.Sub(u, kir.I(shift))},
			&kir.If{Cond: kir.Ge(f.Var, kir.I(0)), Then: f.Body},
		}}
	}
	return out
}
