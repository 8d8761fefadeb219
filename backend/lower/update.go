package lower

import (
	"fmt"
	"strings"

	"tec/backend/kir"
	"tec/te"
)

// updates appends the kernel that applies the program's in-place updates
// (te.Update), if it has any: a stage per update tensor copies each of its
// elements into the updated input at its slot, a run-time index bounded by
// a kir.Bounded as a gather's is. It runs after every other kernel, so
// that every read of the input has seen the old values; it writes only the
// updated slots, never the rest of the input. When the last kernel has an
// all-resident grid, the stages are appended to it after a grid sync
// instead, so that a persistent kernel stays the step's only kernel.
func (l *lowerer) updates() error {
	us := l.p.Updates()
	if len(us) == 0 {
		return nil
	}
	threads := l.opts.BlockSize
	if l.threads > 0 {
		threads = l.threads
	}
	n := 1
	for _, u := range us {
		n = max(n, u.NumElements())
	}
	k := &kir.Kernel{Name: "update", Block: threads, Grid: kir.Grid{Blocks: max(1, te.CeilDiv(n, threads))}}
	var stages []kir.Stmt
	var names []string
	for _, u := range us {
		dst := l.bufs[u.Update.Target]
		src := l.bufs[u]
		if dst == nil || src == nil || !dst.InPlace {
			return fmt.Errorf("lower: update %s: its target is not an input updated in place", u.Name)
		}
		if len(u.Update.Index) != len(dst.Shape) {
			return fmt.Errorf("lower: update %s: %d indexes for the %d dimensions of %s", u.Name, len(u.Update.Index), len(dst.Shape), dst.Name)
		}
		names = append(names, u.Name)
		i := kir.NewVar("i", te.I32)
		g := l.gen(nil)
		inner := g.into(func() {
			bind(g, u.Axes, i)
			var at kir.Expr
			if d := u.Update.Dest(); d.IsGather() {
				at = g.gather(d).(*kir.Load).Index
				kir.WalkExpr(at, func(x kir.Expr) bool {
					if b, ok := x.(*kir.Bounded); ok {
						b.Update = true
						if b.Record != nil {
							g.m.Gathers[b.Site].Update = true
						}
					}
					return true
				})
			} else {
				at = g.flat(dst.Shape, d.Index)
			}
			g.emit(&kir.Store{Buf: dst, Index: at, Value: convert(kir.Ld(src, i), dst.ValueType())})
		})
		loop := &kir.For{Var: i, Kind: kir.ThreadStride, Lo: kir.I(0), Hi: kir.I(u.NumElements()), Body: inner}
		stages = append(stages, &kir.Stage{Name: u.Name, Span: u.Span, Body: []kir.Stmt{loop}})
	}
	doc := "in-place updates: " + strings.Join(names, ", ")
	if ks := l.m.Kernels; len(ks) > 0 && ks[len(ks)-1].Grid.Resident && ks[len(ks)-1].Block == threads {
		last := ks[len(ks)-1]
		last.Body = append(append(last.Body, &kir.GridSync{}), stages...)
		last.Doc += "; then " + doc
		last.Params = nil
		l.params(last)
		return nil
	}
	k.Body, k.Doc = stages, doc
	l.params(k)
	l.m.Kernels = append(l.m.Kernels, k)
	return nil
}
