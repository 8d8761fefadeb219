// Package dedup finds the kernels of a kernel-IR module that are the same
// code up to the global buffers they are given, so that emitters can write
// one function for all of them: an unrolled model (an LSTM's steps, a
// transformer's layers) launches the same few kernels thousands of times,
// and compilers are slow on thousands of identical functions.
package dedup

import (
	"fmt"
	"strconv"
	"strings"

	"tec/backend/kir"
)

// Groups returns, for each kernel of m, the first kernel of m with the same
// code: the same launch shape, the same parameter types in the same order,
// the same shared and local arrays and the same body, with parameters
// matched by position. Names, docs and stage spans are ignored. When m's
// temporaries live in the workspace (kir.Module.TempsInWorkspace), kernels
// share code only if they also use the same temporaries, which the code
// addresses at fixed offsets.
func Groups(m *kir.Module) map[*kir.Kernel]*kir.Kernel {
	first := map[string]*kir.Kernel{}
	out := make(map[*kir.Kernel]*kir.Kernel, len(m.Kernels))
	offsets, _ := m.WorkspaceLayout()
	for _, k := range m.Kernels {
		key := key(m, k, offsets, true)
		if f, ok := first[key]; ok {
			out[k] = f
			continue
		}
		first[key] = k
		out[k] = k
	}
	return out
}

// Key returns a string that two kernels share exactly when they are the
// same code in the sense of Groups; k is a kernel of m.
func Key(m *kir.Module, k *kir.Kernel) string {
	offsets, _ := m.WorkspaceLayout()
	return key(m, k, offsets, true)
}

// CodeKey returns a string that two kernels share exactly when they are the
// same code taking every global buffer as a pointer parameter, in the order
// of k.Params, whatever the buffers' lengths: a key for code that is
// handed its buffers, such as a device function.
func CodeKey(k *kir.Kernel) string {
	return key(&kir.Module{}, k, nil, false)
}

// key is Key with m's workspace layout given.
func key(m *kir.Module, k *kir.Kernel, offsets map[*kir.Buffer]int64, lengths bool) string {
	w := &keyWriter{bufs: map[*kir.Buffer]string{}, vars: map[*kir.Var]int{}}
	fmt.Fprintf(&w.b, "%s %d\n", k.Grid, k.Block)
	args, ws := m.KernelArgs(k)
	aliased := kir.Overlapping(k, offsets) // emitted without restrict
	for i, p := range args {
		w.bufs[p] = "p" + strconv.Itoa(i)
		n := p.Len()
		if !lengths {
			n = 0
		}
		fmt.Fprintf(&w.b, "p%d %s %d %t\n", i, p.DType, n, aliased[p])
	}
	if ws {
		for _, p := range k.Params {
			if off, ok := offsets[p]; ok {
				w.bufs[p] = "w" + strconv.FormatInt(off, 10)
				fmt.Fprintf(&w.b, "w%d %s %d\n", off, p.DType, p.Len())
			}
		}
	}
	for i, s := range k.Shared {
		w.bufs[s] = "s" + strconv.Itoa(i)
		fmt.Fprintf(&w.b, "s%d %s %v\n", i, s.DType, s.Shape)
	}
	for i, l := range k.Locals {
		w.bufs[l] = "l" + strconv.Itoa(i)
		fmt.Fprintf(&w.b, "l%d %s %v\n", i, l.DType, l.Shape)
	}
	w.stmts(k.Body)
	return w.b.String()
}

type keyWriter struct {
	b    strings.Builder
	bufs map[*kir.Buffer]string
	vars map[*kir.Var]int
}

func (w *keyWriter) v(x *kir.Var) {
	n, ok := w.vars[x]
	if !ok {
		n = len(w.vars)
		w.vars[x] = n
	}
	fmt.Fprintf(&w.b, "v%d:%s", n, x.T)
}

func (w *keyWriter) stmts(body []kir.Stmt) {
	w.b.WriteByte('{')
	for _, s := range body {
		w.stmt(s)
		w.b.WriteByte(';')
	}
	w.b.WriteByte('}')
}

func (w *keyWriter) stmt(s kir.Stmt) {
	switch s := s.(type) {
	case *kir.Let:
		w.b.WriteString("let ")
		w.v(s.Var)
		w.expr(s.Value)
	case *kir.Assign:
		w.b.WriteString("set ")
		w.v(s.Var)
		w.expr(s.Value)
	case *kir.Store:
		fmt.Fprintf(&w.b, "st %s", w.bufs[s.Buf])
		w.expr(s.Index)
		w.expr(s.Value)
	case *kir.Atomic:
		fmt.Fprintf(&w.b, "at %s %s", s.Op, w.bufs[s.Buf])
		w.expr(s.Index)
		w.expr(s.Value)
	case *kir.If:
		w.b.WriteString("if")
		w.expr(s.Cond)
		w.stmts(s.Then)
		w.stmts(s.Else)
	case *kir.For:
		fmt.Fprintf(&w.b, "for %s %d ", s.Kind, s.Step)
		w.v(s.Var)
		w.expr(s.Lo)
		w.expr(s.Hi)
		w.stmts(s.Body)
	case *kir.SyncThreads:
		w.b.WriteString("sync")
	case *kir.GridSync:
		w.b.WriteString("gridsync")
	case *kir.Stage:
		w.b.WriteString("stage")
		w.stmts(s.Body)
	default:
		fmt.Fprintf(&w.b, "%T", s)
	}
}

func (w *keyWriter) expr(e kir.Expr) {
	w.b.WriteByte('(')
	switch e := e.(type) {
	case *kir.Const:
		fmt.Fprintf(&w.b, "c %s %s", e.T, strconv.FormatFloat(e.Value, 'g', -1, 64))
	case *kir.Var:
		w.v(e)
	case *kir.Special:
		w.b.WriteString(e.Reg.String())
	case *kir.Load:
		fmt.Fprintf(&w.b, "ld %s", w.bufs[e.Buf])
		w.expr(e.Index)
	case *kir.Unary:
		w.b.WriteString(e.Op.String())
		w.expr(e.X)
	case *kir.Binary:
		w.b.WriteString(e.Op.String())
		w.expr(e.X)
		w.expr(e.Y)
	case *kir.Select:
		w.b.WriteString("sel")
		w.expr(e.Cond)
		w.expr(e.Then)
		w.expr(e.Else)
	case *kir.Cast:
		w.b.WriteString(e.To.String())
		w.expr(e.X)
	default:
		fmt.Fprintf(&w.b, "%T", e)
	}
	w.b.WriteByte(')')
}
