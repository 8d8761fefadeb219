package lower

import (
	"fmt"

	"tec/backend/kir"
	"tec/contraction"
	"tec/schedule"
	"tec/te"
)

// A contraction stage of a fused kernel (-O3, -O4) whose schedule is a
// tensor-core one (schedule.Schedule.TensorCores) is lowered as in a
// kernel of its own (mmaContraction), with the kernel's block: its warps
// form the schedule's WarpsM×WarpsN grid over a TileM×TileN tile
// (schedule.TensorCoreBlock). The stage's epilogue (bias, GELU, a
// residual, a mask's select...) is evaluated on each f32 accumulator
// element of the C fragments, where the fragment layout places it
// (kir.FragElem). A fused plan never keeps a contraction's result on chip
// nor reads it in the same tile (its readers follow a grid sync), so no
// later stage depends on which thread computed an output.
//
// Where the plan splits the contraction's K over blocks (KSplit: too few
// output tiles for the GPU's SMs), each block sums one chunk of K for its
// tile into f32 partials, and after a grid sync a finishing pass adds an
// output's partials in chunk order (the same sum on every run, with or
// without --deterministic: no atomics) and evaluates the epilogue once on
// the sum (mmaSplitContraction).

// tensorCoreStage lowers contraction t of a fused kernel under its
// tensor-core schedule s into body, with k receiving its shared and local
// arrays. It fails where the schedule and the contraction disagree, which
// is a partitioner bug, not bad input.
func (l *lowerer) tensorCoreStage(t *te.Tensor, s *schedule.Schedule, k *kir.Kernel, body *[]kir.Stmt) error {
	d, ok := contraction.Of(t)
	if !ok {
		return fmt.Errorf("the plan puts it on tensor cores, but it is not a contraction")
	}
	in, ok := contraction.TensorCoreType(d.X, d.Y)
	if !ok || in != s.TensorIn || !contraction.TensorCoreFits(in, d.M, d.N, d.K) {
		return fmt.Errorf("the plan puts it on tensor cores for %s operands, which it does not have", s.TensorIn)
	}
	blk := s.TCBlock()
	if l.threads%kir.WarpSize != 0 || !blk.Valid(l.threads/kir.WarpSize) {
		return fmt.Errorf("the plan's tensor-core block %+v is not one of %d threads", blk, l.threads)
	}
	split, chunk, mask := max(s.KSplit, 1), s.KChunk, contraction.MaskOf(d)
	if split == 1 {
		chunk = d.K
	}
	if split > 1 && (mask != nil || chunk%schedule.TensorCoreTileK != 0 || split*chunk != d.K) {
		return fmt.Errorf("the plan splits its K of %d over %d blocks of %d, which is not a split in equal whole staged k steps without a mask", d.K, split, chunk)
	}
	l.mmaSplitContraction(t, d.Reduce, d.X, d.Y, in, d.MAxes, d.NAxes, d.BatchAxes, d.M, d.N, d.K, d.Batch, blk, mask, split, chunk, k, body)
	return nil
}

// mergeLocals moves the local arrays of a stage lowered into tmp to k,
// renaming one whose name k already has (two tensor-core stages each have
// fragments and accumulators; their lives do not overlap, and the
// compiler gives them the same registers).
func mergeLocals(k, tmp *kir.Kernel) {
	taken := map[string]bool{}
	for _, b := range k.Locals {
		taken[b.Name] = true
	}
	for _, b := range tmp.Locals {
		name := b.Name
		for i := 2; taken[name]; i++ {
			name = fmt.Sprintf("%s%d", b.Name, i)
		}
		b.Name = name
		taken[name] = true
		k.Locals = append(k.Locals, b)
	}
}
