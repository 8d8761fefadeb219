// Package kirtest builds kernel-IR modules that exercise every construct of
// kir, for the tests of the emitters: grid syncs, shared and local arrays,
// atomics, f16/bf16/i32/bool storage, casts, every unary and binary
// operation, selects that must stay lazy, and loops of every kind.
package kirtest

import (
	"fmt"

	"tec/backend/kir"
	"tec/backend/lower"
	"tec/te"
)

// Modules returns the modules of the emitters' golden tests, by name:
// Features, each of Programs lowered a kernel per tensor, Features and the
// softmax and the gather with their temporaries in the workspace
// ("features_ws", "softmax_ws", "gather_ws"), RepeatedStages ("stages"),
// Shuffles ("shuffles"), RowStats lowered with blocks of 128 threads
// ("rowstats"), and the warp-level modules: Pipeline ("pipeline"), MMA of
// bf16 and of tf32 ("mma_m16n8k16_bf16", "mma_m16n8k8_f32") and Vectors
// ("vectors"), and Counters without a bug ("counters").
func Modules() (map[string]*kir.Module, error) {
	ms := map[string]*kir.Module{"features": Features()}
	for name, p := range Programs() {
		m, err := lower.Unfused(p, lower.Options{})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		ms[name] = m
	}
	// Temporaries in the workspace rather than in parameters of their own.
	ws := Features()
	ws.Name, ws.TempsInWorkspace = "features_ws", true
	ms["features_ws"] = ws
	softmax, err := lower.Unfused(Programs()["softmax"], lower.Options{})
	if err != nil {
		return nil, fmt.Errorf("softmax: %w", err)
	}
	softmax.Name, softmax.TempsInWorkspace = "softmax_ws", true
	ms["softmax_ws"] = softmax
	gather, err := lower.Unfused(Programs()["gather"], lower.Options{})
	if err != nil {
		return nil, fmt.Errorf("gather: %w", err)
	}
	gather.Name, gather.TempsInWorkspace = "gather_ws", true
	ms["gather_ws"] = gather
	ms["stages"] = RepeatedStages()
	ms["shuffles"] = Shuffles()
	rows, err := lower.Unfused(RowStats(), lower.Options{BlockSize: 128})
	if err != nil {
		return nil, fmt.Errorf("rowstats: %w", err)
	}
	ms["rowstats"] = rows
	ms["pipeline"] = Pipeline(PipelineBugs{})
	for _, m := range []*kir.Module{MMA(kir.M16N8K16, te.BF16, ISAFragIndex), MMA(kir.M16N8K8, te.F32, ISAFragIndex)} {
		ms[m.Name] = m
	}
	ms["vectors"] = Vectors(0)
	ms["vecloads"] = VectorLoads()
	ms["counters"] = Counters(6, 10, 0, NoCounterBug)
	return ms, nil
}

// Features returns a module of two kernels: a persistent, all-resident one
// in three stages separated by grid syncs (zero the accumulators; reduce
// tiles of x·w in shared memory and accumulate them with atomics; use the
// sums element-wise), and a fixed-grid one with every remaining construct.
func Features() *kir.Module {
	const n, tile = 64, 16
	x := &kir.Buffer{Name: "x", Role: kir.Input, DType: te.F16, Shape: []int{n}}
	w := &kir.Buffer{Name: "w", Role: kir.Param, DType: te.BF16, Shape: []int{n}}
	acc := &kir.Buffer{Name: "acc", Role: kir.Temp, DType: te.F32, Shape: []int{3}}
	y := &kir.Buffer{Name: "y", Role: kir.Output, DType: te.F32, Shape: []int{n}}
	q := &kir.Buffer{Name: "q", Role: kir.Output, DType: te.I32, Shape: []int{n}}
	mask := &kir.Buffer{Name: "mask", Role: kir.Output, DType: te.Bool, Shape: []int{n}}
	h := &kir.Buffer{Name: "h", Role: kir.Output, DType: te.F16, Shape: []int{n}}
	bf := &kir.Buffer{Name: "b.f", Role: kir.Output, DType: te.BF16, Shape: []int{n}}

	red := &kir.Buffer{Name: "red", Space: kir.Shared, DType: te.F32, Shape: []int{tile}}
	lo := &kir.Buffer{Name: "lo", Space: kir.Shared, DType: te.F32, Shape: []int{1}}
	i, t, j, k := kir.NewVar("i", te.I32), kir.NewVar("t", te.I32), kir.NewVar("j", te.I32), kir.NewVar("k", te.I32)
	s := kir.NewVar("s", te.F32)
	tid := kir.NewVar("tid", te.I32)
	sum := kir.Ld(acc, kir.I(0))
	persistent := &kir.Kernel{
		Name: "persistent", Grid: kir.Grid{Resident: true, Blocks: 8}, Block: tile,
		Params: []*kir.Buffer{x, w, acc, y}, Shared: []*kir.Buffer{red, lo},
		Doc: "acc = sum(x * w), max and min of tile sums; y = x / acc",
		Body: []kir.Stmt{
			&kir.Let{Var: tid, Value: kir.Tid()},
			&kir.Stage{Name: "init", Span: te.Span{File: "features.te", Line: 3, Col: 3}, Body: []kir.Stmt{
				&kir.For{Var: i, Kind: kir.ThreadStride, Lo: kir.I(0), Hi: kir.I(3), Body: []kir.Stmt{
					&kir.Store{Buf: acc, Index: i, Value: &kir.Select{Cond: kir.Eq(i, kir.I(1)), Then: kir.F(-1e30), Else: kir.F(0)}},
				}},
			}},
			&kir.GridSync{},
			&kir.Stage{Name: "acc", Span: te.Span{File: "features.te", Line: 4, Col: 3}, Body: []kir.Stmt{
				&kir.For{Var: t, Kind: kir.GridStride, Lo: kir.I(0), Hi: kir.I(n / tile), Body: []kir.Stmt{
					&kir.If{Cond: kir.Eq(tid, kir.I(0)), Then: []kir.Stmt{&kir.Store{Buf: lo, Index: kir.I(0), Value: kir.F(1e30)}}},
					&kir.For{Var: j, Kind: kir.BlockStride, Lo: kir.I(0), Hi: kir.I(tile), Body: []kir.Stmt{
						&kir.Store{Buf: red, Index: j, Value: kir.Mul(kir.Ld(x, kir.Add(kir.Mul(t, kir.I(tile)), j)), kir.Ld(w, kir.Add(kir.Mul(t, kir.I(tile)), j)))},
					}},
					&kir.SyncThreads{},
					&kir.Atomic{Op: kir.AtomicMin, Buf: lo, Index: kir.I(0), Value: kir.Ld(red, tid)},
					&kir.SyncThreads{},
					&kir.If{Cond: kir.Eq(tid, kir.I(0)), Then: []kir.Stmt{
						&kir.Let{Var: s, Value: kir.F(0)},
						&kir.For{Var: k, Kind: kir.Serial, Lo: kir.I(0), Hi: kir.I(tile), Step: 1, Body: []kir.Stmt{
							&kir.Assign{Var: s, Value: kir.Add(s, kir.Ld(red, k))},
						}},
						&kir.Atomic{Op: kir.AtomicAdd, Buf: acc, Index: kir.I(0), Value: s},
						&kir.Atomic{Op: kir.AtomicMax, Buf: acc, Index: kir.I(1), Value: s},
						&kir.Atomic{Op: kir.AtomicAdd, Buf: acc, Index: kir.I(2), Value: kir.Ld(lo, kir.I(0))},
					}},
					&kir.SyncThreads{},
				}},
			}},
			&kir.GridSync{},
			&kir.Stage{Name: "y", Span: te.Span{File: "features.te", Line: 5, Col: 3}, Body: []kir.Stmt{
				&kir.For{Var: kir.NewVar("i", te.I32), Kind: kir.ThreadStride, Lo: kir.I(0), Hi: kir.I(n), Body: nil},
			}},
		},
	}
	// Fill the last stage's loop now that its variable exists.
	last := persistent.Body[len(persistent.Body)-1].(*kir.Stage).Body[0].(*kir.For)
	last.Body = []kir.Stmt{
		&kir.Store{Buf: y, Index: last.Var, Value: kir.Div(kir.Ld(x, last.Var),
			kir.Bin(te.Max, kir.Add(sum, kir.Ld(acc, kir.I(1))), kir.F(1e-6)))},
	}

	loc := &kir.Buffer{Name: "loc", Space: kir.Local, DType: te.F32, Shape: []int{4}}
	e := kir.NewVar("e", te.I32)
	v := kir.NewVar("v", te.F32)
	d := kir.NewVar("d", te.I32)
	u := kir.NewVar("u", te.I32)
	neg := kir.Sub(e, kir.I(n/2)) // may be negative: needs floor division
	xe := kir.Ld(x, e)
	un := func(op te.UnaryOp, a kir.Expr) kir.Expr { return &kir.Unary{Op: op, X: a} }
	misc := &kir.Kernel{
		Name: "misc", Grid: kir.Grid{Blocks: 2}, Block: 32,
		Params: []*kir.Buffer{x, y, q, mask, h, bf}, Locals: []*kir.Buffer{loc},
		Doc: "every operation",
		Body: []kir.Stmt{&kir.Stage{Name: "misc", Body: []kir.Stmt{
			&kir.For{Var: e, Kind: kir.ThreadStride, Lo: kir.I(0), Hi: kir.I(n), Body: []kir.Stmt{
				&kir.For{Var: u, Kind: kir.Unrolled, Lo: kir.I(0), Hi: kir.I(4), Step: 1, Body: []kir.Stmt{
					&kir.Store{Buf: loc, Index: u, Value: kir.Mul(xe, &kir.Cast{To: te.F32, X: u})},
				}},
				&kir.Let{Var: v, Value: kir.Add(kir.Ld(loc, kir.I(3)), kir.Ld(y, e))},
				&kir.Let{Var: d, Value: kir.Add(kir.Div(neg, kir.I(5)), kir.Mod(neg, kir.I(3)))},
				&kir.If{Cond: kir.Lt(v, kir.F(0)), Then: []kir.Stmt{
					&kir.Assign{Var: v, Value: un(te.Neg, un(te.Abs, un(te.Tanh, v)))},
				}, Else: []kir.Stmt{
					&kir.Assign{Var: v, Value: kir.Add(un(te.Sqrt, v), un(te.Rsqrt, kir.Add(v, kir.F(1))))},
				}},
				&kir.Assign{Var: v, Value: kir.Add(v, kir.Add(un(te.Exp, un(te.Neg, v)), un(te.Log, kir.Add(un(te.Abs, v), kir.F(1)))))},
				&kir.Assign{Var: v, Value: kir.Add(un(te.Sigmoid, v), un(te.Erf, v))},
				&kir.Assign{Var: v, Value: kir.Add(un(te.Sin, v), un(te.Cos, kir.Mul(v, kir.F(3))))},
				&kir.Assign{Var: v, Value: kir.Add(kir.Bin(te.Pow, v, kir.F(2)), kir.Bin(te.Min, kir.Mod(v, kir.F(0.75)), kir.Sub(v, kir.F(1))))},
				// A select whose branch loads out of bounds where it is not chosen.
				&kir.Assign{Var: v, Value: kir.Add(v, &kir.Select{Cond: kir.Lt(d, kir.I(0)), Then: kir.F(0),
					Else: kir.Ld(x, kir.Mul(d, kir.I(7)))})},
				&kir.Store{Buf: y, Index: e, Value: v},
				&kir.Store{Buf: q, Index: e, Value: kir.Add(kir.Add(&kir.Cast{To: te.I32, X: v}, kir.Bin(te.Max, d, un(te.Neg, d))),
					kir.Add(kir.Bin(te.Min, d, un(te.Abs, d)), &kir.Cast{To: te.I32, X: kir.Ge(d, kir.I(0))}))},
				&kir.Store{Buf: mask, Index: e, Value: kir.Bin(te.Or, kir.And(kir.Bin(te.Ne, v, kir.F(0)), un(te.Not, kir.Eq(d, kir.I(1)))),
					&kir.Cast{To: te.Bool, X: kir.Bin(te.Gt, v, kir.F(1))})},
				&kir.Store{Buf: h, Index: e, Value: kir.Add(&kir.Cast{To: te.F16, X: v}, &kir.Cast{To: te.F32, X: kir.Le(v, kir.F(0.5))})},
				&kir.Store{Buf: bf, Index: e, Value: kir.Sub(&kir.Cast{To: te.BF16, X: v}, &kir.Cast{To: te.F32, X: d})},
			}},
		}}},
	}
	return &kir.Module{
		Name:    "features",
		Buffers: []*kir.Buffer{x, w, acc, y, q, mask, h, bf},
		Kernels: []*kir.Kernel{persistent, misc},
		Outputs: []*kir.Buffer{y, q, mask, h, bf, x},
	}
}

// RepeatedStages is a grid-synced kernel whose three stages are the same
// code on different buffers, reading rows of one param at different
// offsets and staging them in a shared array: the emitter writes that code
// once, as a device function, and calls it with rebased pointers.
func RepeatedStages() *kir.Module {
	w := &kir.Buffer{Name: "w", Role: kir.Param, DType: te.F32, Shape: []int{4, 32}}
	x := &kir.Buffer{Name: "x", Role: kir.Input, DType: te.F32, Shape: []int{32}}
	y := &kir.Buffer{Name: "y", Role: kir.Output, DType: te.F32, Shape: []int{32}}
	sh := &kir.Buffer{Name: "row", Space: kir.Shared, DType: te.F32, Shape: []int{32}}
	m := &kir.Module{Name: "stages", TempsInWorkspace: true, Outputs: []*kir.Buffer{y}}
	k := &kir.Kernel{Name: "k", Grid: kir.Grid{Resident: true}, Block: 32, Shared: []*kir.Buffer{sh}}
	prev := x
	var bufs []*kir.Buffer
	for s := range 3 {
		out := y
		if s < 2 {
			out = &kir.Buffer{Name: fmt.Sprintf("t%d", s), Role: kir.Temp, DType: te.F32, Shape: []int{32}}
			bufs = append(bufs, out)
		}
		i, v := kir.NewVar("i", te.I32), kir.NewVar("v", te.F32)
		body := []kir.Stmt{
			&kir.For{Var: i, Kind: kir.BlockStride, Lo: kir.I(0), Hi: kir.I(32), Body: []kir.Stmt{
				&kir.Store{Buf: sh, Index: i, Value: kir.Ld(w, kir.Add(i, kir.I(32*(s+1))))},
			}},
			&kir.SyncThreads{},
		}
		j := kir.NewVar("j", te.I32)
		body = append(body, &kir.For{Var: j, Kind: kir.ThreadStride, Lo: kir.I(0), Hi: kir.I(32), Body: []kir.Stmt{
			&kir.Let{Var: v, Value: kir.Add(kir.Ld(sh, kir.Sub(kir.I(31), j)), kir.Ld(prev, j))},
			&kir.Store{Buf: out, Index: j, Value: kir.Mul(v, kir.F(2))},
		}})
		if s > 0 {
			k.Body = append(k.Body, &kir.GridSync{})
		}
		k.Body = append(k.Body, &kir.Stage{Name: out.Name, Body: body})
		prev = out
	}
	m.Buffers = append([]*kir.Buffer{x, w}, append(bufs, y)...)
	k.Params = m.Buffers
	m.Kernels = []*kir.Kernel{k}
	return m
}

// Shuffles returns a module of one kernel of 48 threads (a full warp and a
// half one) that shuffles f32 and i32 values in both modes: a butterfly sum
// of x over each warp, its membermask computed per warp, and a down shuffle
// of an i32 within segments of 8 lanes under a constant mask.
func Shuffles() *kir.Module {
	const threads = 48
	x := &kir.Buffer{Name: "x", Role: kir.Input, DType: te.F32, Shape: []int{threads}}
	y := &kir.Buffer{Name: "y", Role: kir.Output, DType: te.F32, Shape: []int{threads}}
	q := &kir.Buffer{Name: "q", Role: kir.Output, DType: te.I32, Shape: []int{threads}}
	tid, v, mask := kir.NewVar("tid", te.I32), kir.NewVar("v", te.F32), kir.NewVar("mask", te.I32)
	body := []kir.Stmt{
		&kir.Let{Var: tid, Value: kir.Tid()},
		&kir.Let{Var: v, Value: kir.Ld(x, tid)},
		&kir.Let{Var: mask, Value: &kir.Select{Cond: kir.Lt(tid, kir.I(32)), Then: kir.FullMask(), Else: kir.LaneMask(threads - 32)}},
	}
	for off := 8; off > 0; off /= 2 {
		body = append(body, &kir.Assign{Var: v, Value: kir.Add(v, &kir.Shuffle{Mode: kir.ShuffleXor, X: v, Offset: off, Width: 16, Mask: mask})})
	}
	body = append(body,
		&kir.Store{Buf: y, Index: tid, Value: v},
		&kir.If{Cond: kir.Lt(tid, kir.I(32)), Then: []kir.Stmt{
			&kir.Store{Buf: q, Index: tid, Value: &kir.Shuffle{Mode: kir.ShuffleDown, X: kir.Mul(tid, kir.I(3)), Offset: 2, Width: 8, Mask: kir.FullMask()}},
		}, Else: []kir.Stmt{
			&kir.Store{Buf: q, Index: tid, Value: kir.I(0)},
		}})
	return &kir.Module{
		Name: "shuffles", Buffers: []*kir.Buffer{x, y, q}, Outputs: []*kir.Buffer{y, q},
		Kernels: []*kir.Kernel{{Name: "k", Grid: kir.Grid{Blocks: 1}, Block: threads, Params: []*kir.Buffer{x, y, q}, Body: body}},
	}
}

// WorkspaceTemp returns a module of one kernel whose temporary (also
// returned) lives in the workspace, for tests that place it at an offset.
func WorkspaceTemp() (*kir.Module, *kir.Buffer) {
	tmp := &kir.Buffer{Name: "t", Role: kir.Temp, DType: te.F32, Shape: []int{64}}
	y := &kir.Buffer{Name: "y", Role: kir.Output, DType: te.F32, Shape: []int{64}}
	i := kir.NewVar("i", te.I32)
	m := &kir.Module{Name: "ws", TempsInWorkspace: true, Buffers: []*kir.Buffer{tmp, y}, Outputs: []*kir.Buffer{y},
		Kernels: []*kir.Kernel{{Name: "k", Grid: kir.Grid{Resident: true}, Block: 32, Params: []*kir.Buffer{tmp, y},
			Body: []kir.Stmt{&kir.For{Var: i, Kind: kir.ThreadStride, Lo: kir.I(0), Hi: kir.I(64), Body: []kir.Stmt{
				&kir.Store{Buf: tmp, Index: i, Value: kir.F(1)},
				&kir.Store{Buf: y, Index: i, Value: kir.Ld(tmp, i)},
			}}}}}}
	return m, tmp
}
