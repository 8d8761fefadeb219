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
	var locals []*kir.Buffer
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
		if loop, vecs := l.updateVector(u, dst, src); loop != nil {
			stages = append(stages, &kir.Stage{Name: u.Name, Span: u.Span, Body: []kir.Stmt{loop}})
			locals = append(locals, vecs...)
			continue
		}
		i := kir.NewVar("i", te.I32)
		g := l.gen(nil)
		inner := g.into(func() {
			bind(g, u.Axes, i)
			g.emit(&kir.Store{Buf: dst, Index: destIndex(g, u, dst), Value: convert(kir.Ld(src, i), dst.ValueType())})
		})
		loop := &kir.For{Var: i, Kind: kir.ThreadStride, Lo: kir.I(0), Hi: kir.I(u.NumElements()), Body: inner}
		stages = append(stages, &kir.Stage{Name: u.Name, Span: u.Span, Body: []kir.Stmt{loop}})
	}
	doc := "in-place updates: " + strings.Join(names, ", ")
	if ks := l.m.Kernels; len(ks) > 0 && ks[len(ks)-1].Grid.Resident && ks[len(ks)-1].Block == threads {
		last := ks[len(ks)-1]
		last.Body = append(append(last.Body, &kir.GridSync{}), stages...)
		last.Locals = append(last.Locals, locals...)
		last.Doc += "; then " + doc
		last.Params = nil
		l.params(last)
		return nil
	}
	k.Body, k.Doc, k.Locals = stages, doc, locals
	l.params(k)
	l.m.Kernels = append(l.m.Kernels, k)
	return nil
}

// destIndex returns the flat index in dst of update u's element that g
// binds u's axes to: a run-time slot bounded as a gather's is.
func destIndex(g *gen, u *te.Tensor, dst *kir.Buffer) kir.Expr {
	d := u.Update.Dest()
	if !d.IsGather() {
		return g.flat(dst.Shape, d.Index)
	}
	at := g.gather(d).(*kir.Load).Index
	kir.WalkExpr(at, func(x kir.Expr) bool {
		if b, ok := x.(*kir.Bounded); ok {
			b.Update = true
			if b.Record != nil {
				g.m.Gathers[b.Site].Update = true
			}
		}
		return true
	})
	return at
}

// updateVector returns the loop that copies update u from src into dst a
// 16-byte vector of src's elements per thread (stored element by element:
// dst is an input, which vector copies do not write), and the local array
// it uses, where u's last axis is a multiple of the vector and its slot in
// dst is contiguous and aligned along it (te's ContiguousGathered: a
// run-time slot of a leading dimension moves it by whole vectors); nil
// otherwise.
func (l *lowerer) updateVector(u *te.Tensor, dst, src *kir.Buffer) (*kir.For, []*kir.Buffer) {
	if len(u.Axes) == 0 || src.DType.Size() == 0 {
		return nil, nil
	}
	n := 16 / src.DType.Size()
	last := u.Axes[len(u.Axes)-1]
	if 16%src.DType.Size() != 0 || last.Extent%n != 0 || n*dst.DType.Size()%16 != 0 || !u.Update.Dest().ContiguousGathered(last, n) {
		return nil, nil
	}
	switch src.DType {
	case te.F32, te.I32, te.F16, te.BF16:
	default:
		return nil, nil
	}
	in := &kir.Buffer{Name: u.Name + ".uv", Space: kir.Local, DType: src.DType, Shape: []int{n}}
	iv, i := kir.NewVar("iv", te.I32), kir.NewVar("i", te.I32)
	g := l.gen(nil)
	body := g.into(func() {
		g.emit(&kir.Let{Var: i, Value: kir.Mul(iv, kir.I(n))})
		bind(g, u.Axes, i)
		at := destIndex(g, u, dst)
		g.emit(&kir.VecCopy{Dst: in, DstIndex: kir.I(0), Src: src, SrcIndex: i})
		for j := range n {
			g.emit(&kir.Store{Buf: dst, Index: addIndex(at, j), Value: convert(kir.Ld(in, kir.I(j)), dst.ValueType())})
		}
	})
	return &kir.For{Var: iv, Kind: kir.ThreadStride, Lo: kir.I(0), Hi: kir.I(u.NumElements() / n), Body: body}, []*kir.Buffer{in}
}
