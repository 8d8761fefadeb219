package kirtest

import (
	"tec/backend/kir"
	"tec/te"
)

// CounterBug is a mistake planted in the module of Counters.
type CounterBug int

// The mistakes.
const (
	NoCounterBug  CounterBug = iota
	MissingWait              // the consumer does not wait
	WrongTile                // it waits on the next tile's counter
	LowTarget                // it waits for one signal of the two
	HighTarget               // it waits for three signals of the two
	Unzeroed                 // nothing zeroes the counters
	ZeroUnordered            // the zeroing is not ordered before the signals
)

// Counters is a persistent kernel of two stages joined by counters,
// rows of w elements: stage y doubles x a row per tile (2n tiles), each
// tile signalling counter c[t/2]; stage z, a tile per pair of rows taken
// in reverse order so that a pair's rows were written by other blocks,
// waits for c[u] >= 2 and adds the two rows. The counters are zeroed
// before a grid sync at the start. The consumer's first skip tiles do
// nothing, so that its work starts on block skip mod the grid.
func Counters(n, w, skip int, bug CounterBug) *kir.Module {
	x := &kir.Buffer{Name: "x", Role: kir.Input, DType: te.F32, Shape: []int{2 * n, w}}
	y := &kir.Buffer{Name: "y", Role: kir.Temp, DType: te.F32, Shape: []int{2 * n, w}}
	z := &kir.Buffer{Name: "z", Role: kir.Output, DType: te.F32, Shape: []int{n, w}}
	c := &kir.Buffer{Name: "c", Role: kir.Temp, DType: te.I32, Shape: []int{n}}
	i, t, e := kir.NewVar("i", te.I32), kir.NewVar("t", te.I32), kir.NewVar("e", te.I32)
	u, r, f := kir.NewVar("u", te.I32), kir.NewVar("r", te.I32), kir.NewVar("f", te.I32)
	var body []kir.Stmt
	if bug != Unzeroed {
		body = append(body, &kir.Stage{Name: "counters", Body: []kir.Stmt{
			&kir.For{Var: i, Kind: kir.ThreadStride, Lo: kir.I(0), Hi: kir.I(n), Body: []kir.Stmt{
				&kir.Store{Buf: c, Index: i, Value: kir.I(0)},
			}},
		}})
		if bug != ZeroUnordered {
			body = append(body, &kir.GridSync{})
		}
	}
	at := func(row kir.Expr, col *kir.Var) kir.Expr { return kir.Add(kir.Mul(row, kir.I(w)), col) }
	body = append(body, &kir.Stage{Name: "y", Body: []kir.Stmt{
		&kir.For{Var: t, Kind: kir.GridStride, Lo: kir.I(0), Hi: kir.I(2 * n), Body: []kir.Stmt{
			&kir.For{Var: e, Kind: kir.BlockStride, Lo: kir.I(0), Hi: kir.I(w), Body: []kir.Stmt{
				&kir.Store{Buf: y, Index: at(t, e), Value: kir.Mul(kir.Ld(x, at(t, e)), kir.F(2))},
			}},
			&kir.Signal{Counter: c, Index: kir.Div(t, kir.I(2))},
		}},
	}})
	var wait kir.Stmt = &kir.Wait{Counter: c, Index: r, Target: kir.I(2)}
	switch bug {
	case MissingWait:
		wait = &kir.SyncThreads{}
	case WrongTile:
		wait = &kir.Wait{Counter: c, Index: kir.Mod(kir.Add(r, kir.I(1)), kir.I(n)), Target: kir.I(2)}
	case LowTarget:
		wait = &kir.Wait{Counter: c, Index: r, Target: kir.I(1)}
	case HighTarget:
		wait = &kir.Wait{Counter: c, Index: r, Target: kir.I(3)}
	}
	body = append(body, &kir.Stage{Name: "z", Body: []kir.Stmt{
		&kir.For{Var: u, Kind: kir.GridStride, Lo: kir.I(0), Hi: kir.I(n + skip), Body: []kir.Stmt{
			&kir.Let{Var: r, Value: kir.Sub(kir.I(n-1+skip), u)},
			&kir.If{Cond: kir.Lt(r, kir.I(n)), Then: []kir.Stmt{
				wait,
				&kir.For{Var: f, Kind: kir.BlockStride, Lo: kir.I(0), Hi: kir.I(w), Body: []kir.Stmt{
					&kir.Store{Buf: z, Index: at(r, f), Value: kir.Add(
						kir.Ld(y, at(kir.Mul(r, kir.I(2)), f)),
						kir.Ld(y, at(kir.Add(kir.Mul(r, kir.I(2)), kir.I(1)), f)))},
				}},
			}},
		}},
	}})
	bufs := []*kir.Buffer{x, y, z, c}
	return &kir.Module{
		Name: "counters", Buffers: bufs, Outputs: []*kir.Buffer{z},
		Kernels: []*kir.Kernel{{Name: "pipe", Grid: kir.Grid{Resident: true}, Block: 8, Params: bufs, Body: body}},
	}
}
