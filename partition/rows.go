package partition

import (
	"slices"

	"tec/contraction"
	"tec/schedule"
	"tec/te"
)

// rowAxes returns how many leading axes of t make its rows under schedule
// s, or 0 if s does not work by rows.
func rowAxes(t *te.Tensor, s *schedule.Schedule) int {
	switch s.Kind {
	case schedule.RowReduce:
		return len(t.Shape)
	case schedule.Rows:
		return s.RowAxes
	}
	return 0
}

// readsRows reports whether t's first l axes have u's first l extents and
// every load of u in t indexes u's first l axes by them.
func readsRows(t, u *te.Tensor, l int) bool {
	if len(u.Shape) < l || len(t.Shape) < l {
		return false
	}
	for d := range l {
		if t.Shape[d] != u.Shape[d] {
			return false
		}
	}
	ok := true
	te.Walk(t.Body, func(x te.Expr) bool {
		if ld, isLoad := x.(*te.Load); isLoad && ld.Tensor == u {
			ok = ok && !ld.IsGather()
			for d := range l {
				if v, isVar := ld.Index[d].AsVar(); !isVar || v != t.Axes[d] {
					ok = false
				}
			}
		}
		return ok
	})
	return ok
}

// blockRows returns how many leading axes of t make its rows under
// schedule s, one block computing each row: a row reduction's or a Rows
// stage's (rowAxes), or a row contraction's (contractionRows); 0 if s
// does not give each row to one block.
func blockRows(t *te.Tensor, s *schedule.Schedule) int {
	if l := rowAxes(t, s); l > 0 {
		return l
	}
	return contractionRows(t, s)
}

// contractionRows returns l when s computes the contraction t one tile
// per row of its first l axes, so that tile r computes the row of t whose
// first l axes flatten to r: the batch axes, t's first, and, for a
// matrix-vector tile, the leading columns axes before those its tile
// covers (a chunk of a decode step's scores, 128 of its keys). A SIMT
// tile covering all of M and N, or a matrix-vector tile covering all the
// wide factor's columns, gives one row per batch entry. Tensor-core,
// split-K and resident schedules, whose tiles map otherwise, return 0.
func contractionRows(t *te.Tensor, s *schedule.Schedule) int {
	mv := s.MatVec
	perEntry := s.Tiles == s.Batch
	if s.Kind != schedule.Contraction || s.TensorCores || s.KSplit > 1 || s.Resident != nil || s.EpilogueOf != nil || s.Batch < 1 ||
		!perEntry && (mv == nil || s.Tiles != s.Batch*mv.NT) {
		return 0
	}
	d, ok := contraction.Of(t)
	if !ok || d.Batch != s.Batch || len(d.BatchAxes) == 0 || !slices.Equal(t.Axes[:len(d.BatchAxes)], d.BatchAxes) {
		return 0
	}
	if perEntry {
		return len(d.BatchAxes)
	}
	return matVecRows(t, d, mv.Wide, mv.Width())
}

// matVecRows returns l when a matrix-vector tile of width columns of the
// contraction d (t's, the wide factor's columns its M axes when wide is
// 0, its N axes when 1) covers one row of t's first l axes: t's axes are
// the batch axes, then the column axes, none of the narrow factor's own
// (its rows), and width is the product of the trailing column axes. It
// returns 0 otherwise.
func matVecRows(t *te.Tensor, d contraction.Dims, wide, width int) int {
	cols, own := d.NAxes, d.MAxes
	if wide == 0 {
		cols, own = d.MAxes, d.NAxes
	}
	nb := len(d.BatchAxes)
	if len(own) > 0 || !slices.Equal(t.Axes[nb:], cols) {
		return 0
	}
	for m := range cols {
		if product(cols[m:]) == width {
			return nb + m
		}
	}
	return 0
}

// sameRows reports whether stage y reads stage u only in rows that the
// same block computed: both work by rows over the same leading axes
// (blockRows), and y loads u only in its own row (readsRows).
func sameRows(y *te.Tensor, sy *schedule.Schedule, u *te.Tensor, su *schedule.Schedule) bool {
	l := blockRows(y, sy)
	return l > 0 && blockRows(u, su) == l && readsRows(y, u, l)
}
