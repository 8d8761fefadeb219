package lower

import (
	"tec/backend/kir"
	"tec/partition"
	"tec/te"
)

// Stages of a persistent kernel take their tiles in grid-stride loops, so
// tile 0 of every stage runs on block 0. Between two grid syncs the stages
// that do not read one another would then queue on the first blocks while
// the rest of the grid idles: the LSTM's twenty one-tile cell updates of a
// wavefront step all ran on block 0, one after another. The fused lowering
// therefore starts each group of such stages at its own block.

// rotations returns, for each stage of pk, the block at which its tiles
// start: within a grid epoch (the stages between two grid syncs), stages
// that read one another, directly or through others of the epoch, form a
// group that keeps one mapping of tiles to blocks (a stage may read what
// its own block or thread computed), and each group starts where the
// tiles of the groups before it end, modulo the grid. Split reductions
// (grid syncs of their own) and stages with resident weights (whose tiles
// belong to fixed blocks) keep block 0. It also returns the most blocks
// that an epoch's groups span together, at most the grid.
func rotations(pk *partition.Kernel, pl *partition.Plan) (off []int, span int) {
	n := len(pk.Stages)
	off = make([]int, n)
	grid := max(pk.Grid, 1)
	fixed := func(j int) bool {
		s := pl.Schedules[pk.Stages[j]]
		return s.Kind == partition.SplitReduce || s.Resident != nil
	}
	for start := 0; start < n; {
		end := start + 1
		for end < n && pk.Sync[end] != partition.GridSync && !fixed(end) && !fixed(end-1) {
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
		for j := start; j < end; j++ {
			r := find(j - start)
			width[r] = max(width[r], pl.Schedules[pk.Stages[j]].Tiles)
		}
		first := map[int]int{}
		next := 0
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
