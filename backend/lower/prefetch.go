package lower

import (
	"fmt"

	"tec/backend/kir"
	"tec/partition"
	"tec/te"
)

// l2Line is the bytes one prefetch brings into L2: a cache line of the
// GPUs tec targets (128 bytes, four 32-byte sectors).
const l2Line = 128

// prefetchStage returns the stage that issues the L2 prefetches pf of the
// plan (partition.Prefetch) at the end of the epoch whose stages are js,
// which start at blocks starts (rotations): the blocks from the first
// with no tile in the epoch on (at least pf.Busy) share each weight's
// lines in runs, a line per thread at a time. A grid launched with no
// more blocks than that prefetches nothing, which changes no value.
func (l *lowerer) prefetchStage(pk *partition.Kernel, pl *partition.Plan, pf *partition.Prefetch, js []int, starts []int) (*kir.Stage, error) {
	busy := pf.Busy
	for _, j := range js {
		busy = max(busy, starts[j]+pl.Schedules[pk.Stages[j]].Tiles)
	}
	pb, np := kir.NewVar("pb", te.I32), kir.NewVar("np", te.I32)
	body := []kir.Stmt{
		&kir.Let{Var: pb, Value: kir.Sub(kir.Bid(), kir.I(busy))},
		&kir.Let{Var: np, Value: kir.Sub(kir.Gdim(), kir.I(busy))},
	}
	for _, r := range pf.Ranges {
		buf := l.bufs[r.Tensor]
		if buf == nil {
			return nil, fmt.Errorf("lower: prefetch of %s for %s: no buffer", r.Tensor.Name, pf.For.Name)
		}
		per := max(1, l2Line/r.Tensor.DType.Size())
		lines := (r.Hi - r.Lo + per - 1) / per
		share, lo := kir.NewVar("share", te.I32), kir.NewVar("lo", te.I32)
		line := kir.NewVar("line", te.I32)
		// The line's offset in the range, then its start, so that the
		// layers' stages differ by that constant alone (dedup).
		at := kir.Mul(line, kir.I(per))
		if r.Len > 0 {
			// the first Len elements of each row: line q of row p
			rowLines := (r.Len + per - 1) / per
			lines = (r.Hi - r.Lo) / r.Row * rowLines
			at = kir.Add(kir.Mul(kir.Div(line, kir.I(rowLines)), kir.I(r.Row)), kir.Mul(kir.Mod(line, kir.I(rowLines)), kir.I(per)))
		}
		body = append(body,
			&kir.Let{Var: share, Value: kir.Div(kir.Add(kir.I(lines-1), np), np)},
			&kir.Let{Var: lo, Value: kir.Mul(pb, share)},
			&kir.For{Var: line, Kind: kir.BlockStride, Lo: lo, Hi: kir.Bin(te.Min, kir.Add(lo, share), kir.I(lines)), Body: []kir.Stmt{
				&kir.Prefetch{Buf: buf, Index: kir.Add(at, kir.I(r.Lo))},
			}})
	}
	return &kir.Stage{Name: "prefetch/" + pf.For.Name, Body: []kir.Stmt{
		&kir.If{Cond: kir.Ge(kir.Bid(), kir.I(busy)), Then: body},
	}}, nil
}
