// Package dedup finds the kernels of a kernel-IR module that are the same
// code up to the global buffers they are given, so that emitters can write
// one function for all of them: an unrolled model (an LSTM's steps, a
// transformer's layers) launches the same few kernels thousands of times,
// and compilers are slow on thousands of identical functions.
package dedup

import (
	"fmt"
	"strconv"

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
	offsets, _ := m.WorkspaceLayout()
	return GroupsLaidOut(m, offsets)
}

// GroupsLaidOut is Groups given m's workspace layout, the offsets that
// m.WorkspaceLayout returns, for emitters that need the layout anyway.
func GroupsLaidOut(m *kir.Module, offsets map[*kir.Buffer]int64) map[*kir.Kernel]*kir.Kernel {
	out := make(map[*kir.Kernel]*kir.Kernel, len(m.Kernels))
	// Kernels of different launch shapes never share code: only those
	// that share theirs with another need a key, and a persistent kernel
	// alone in its module, whose key is as long as its code, needs none.
	type shape struct {
		grid  string
		block int
	}
	shapes := make(map[shape]int, len(m.Kernels))
	for _, k := range m.Kernels {
		shapes[shape{k.Grid.String(), k.Block}]++
	}
	first := map[string]*kir.Kernel{}
	w := newKeyWriter()
	for _, k := range m.Kernels {
		if shapes[shape{k.Grid.String(), k.Block}] == 1 {
			out[k] = k
			continue
		}
		key := w.key(m, k, offsets, true)
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
	return newKeyWriter().key(m, k, offsets, true)
}

// CodeKey returns a string that two kernels share exactly when they are the
// same code taking every global buffer as a pointer parameter, in the order
// of k.Params, whatever the buffers' lengths: a key for code that is
// handed its buffers, such as a device function.
func CodeKey(k *kir.Kernel) string {
	return newKeyWriter().key(&kir.Module{}, k, nil, false)
}

// keyWriter writes keys; one may write many, one after another, reusing
// its buffer and maps.
type keyWriter struct {
	b    []byte
	bufs map[*kir.Buffer]string
	vars map[*kir.Var]int
}

func newKeyWriter() *keyWriter {
	return &keyWriter{bufs: map[*kir.Buffer]string{}, vars: map[*kir.Var]int{}}
}

// key is Key with m's workspace layout given.
func (w *keyWriter) key(m *kir.Module, k *kir.Kernel, offsets map[*kir.Buffer]int64, lengths bool) string {
	w.b = w.b[:0]
	clear(w.bufs)
	clear(w.vars)
	w.str(k.Grid.String())
	w.b = append(w.b, ' ')
	w.int(int64(k.Block))
	w.b = append(w.b, ' ')
	w.int(int64(k.BlocksPerSM))
	w.b = append(w.b, '\n')
	args, ws := m.KernelArgs(k)
	aliased := kir.Overlapping(k, offsets) // emitted without restrict
	for i, p := range args {
		name := "p" + strconv.Itoa(i)
		w.bufs[p] = name
		n := p.Len()
		if !lengths {
			n = 0
		}
		w.str(name)
		w.b = append(w.b, ' ')
		w.str(p.DType.String())
		w.b = append(w.b, ' ')
		w.int(int64(n))
		w.b = append(w.b, ' ')
		w.b = strconv.AppendBool(w.b, aliased[p])
		w.b = append(w.b, '\n')
	}
	if ws {
		for _, p := range k.Params {
			if off, ok := offsets[p]; ok {
				name := "w" + strconv.FormatInt(off, 10)
				w.bufs[p] = name
				w.str(name)
				w.b = append(w.b, ' ')
				w.str(p.DType.String())
				w.b = append(w.b, ' ')
				w.int(int64(p.Len()))
				w.b = append(w.b, '\n')
			}
		}
	}
	for i, s := range k.Shared {
		w.array("s"+strconv.Itoa(i), s)
	}
	for i, l := range k.Locals {
		w.array("l"+strconv.Itoa(i), l)
	}
	w.stmts(k.Body)
	return string(w.b)
}

// array names a shared or local array and writes its type and shape.
func (w *keyWriter) array(name string, a *kir.Buffer) {
	w.bufs[a] = name
	w.str(name)
	w.b = append(w.b, ' ')
	w.str(a.DType.String())
	w.b = append(w.b, " ["...)
	for i, d := range a.Shape {
		if i > 0 {
			w.b = append(w.b, ' ')
		}
		w.int(int64(d))
	}
	w.b = append(w.b, "]\n"...)
}

func (w *keyWriter) str(s string) { w.b = append(w.b, s...) }

func (w *keyWriter) int(n int64) { w.b = strconv.AppendInt(w.b, n, 10) }

func (w *keyWriter) v(x *kir.Var) {
	n, ok := w.vars[x]
	if !ok {
		n = len(w.vars)
		w.vars[x] = n
	}
	w.b = append(w.b, 'v')
	w.int(int64(n))
	w.b = append(w.b, ':')
	w.str(x.T.String())
}

func (w *keyWriter) stmts(body []kir.Stmt) {
	w.b = append(w.b, '{')
	for _, s := range body {
		w.stmt(s)
		w.b = append(w.b, ';')
	}
	w.b = append(w.b, '}')
}

func (w *keyWriter) stmt(s kir.Stmt) {
	switch s := s.(type) {
	case *kir.Let:
		w.str("let ")
		w.v(s.Var)
		w.expr(s.Value)
	case *kir.Assign:
		w.str("set ")
		w.v(s.Var)
		w.expr(s.Value)
	case *kir.Store:
		w.str("st ")
		w.str(w.bufs[s.Buf])
		w.expr(s.Index)
		w.expr(s.Value)
	case *kir.Atomic:
		w.str("at ")
		w.str(s.Op.String())
		w.b = append(w.b, ' ')
		w.str(w.bufs[s.Buf])
		w.expr(s.Index)
		w.expr(s.Value)
	case *kir.If:
		w.str("if")
		w.expr(s.Cond)
		w.stmts(s.Then)
		w.stmts(s.Else)
	case *kir.For:
		w.str("for ")
		w.str(s.Kind.String())
		w.b = append(w.b, ' ')
		w.int(int64(s.Step))
		w.b = append(w.b, ' ')
		w.int(int64(s.Unroll))
		w.b = append(w.b, ' ')
		w.v(s.Var)
		w.expr(s.Lo)
		w.expr(s.Hi)
		w.stmts(s.Body)
	case *kir.SyncThreads:
		w.str("sync")
	case *kir.GridSync:
		w.str("gridsync")
	case *kir.Stage:
		w.str("stage")
		w.stmts(s.Body)
	case *kir.MMA:
		w.str(fmt.Sprintf("mma %s %s ", s.Shape, s.In))
		for _, f := range []kir.Frag{s.D, s.A, s.B, s.C} {
			w.frag(f)
		}
	case *kir.LdMatrix:
		w.str(fmt.Sprintf("ldmatrix %d %t ", s.Num, s.Trans))
		w.frag(s.Dst)
		w.str(w.bufs[s.Src])
		w.expr(s.Index)
	case *kir.VecCopy:
		w.str(fmt.Sprintf("vec %d ", s.Size()))
		w.copy(s.Dst, s.DstIndex, s.Src, s.SrcIndex)
	case *kir.CopyAsync:
		w.str(fmt.Sprintf("cp.async %t ", s.Bypass))
		w.copy(s.Dst, s.DstIndex, s.Src, s.SrcIndex)
	case *kir.CommitGroup:
		w.str("commit")
	case *kir.WaitGroup:
		w.str("wait ")
		w.int(int64(s.N))
	case *kir.Signal:
		w.str("signal ")
		w.str(w.bufs[s.Counter])
		w.expr(s.Index)
	case *kir.Wait:
		w.str("waitcounter ")
		w.str(w.bufs[s.Counter])
		w.expr(s.Index)
		w.expr(s.Target)
	case *kir.Prefetch:
		w.str("prefetch ")
		w.str(w.bufs[s.Buf])
		w.expr(s.Index)
	default:
		w.str(fmt.Sprintf("%T", s))
	}
}

// frag writes a fragment: its array and offset.
func (w *keyWriter) frag(f kir.Frag) {
	w.str(w.bufs[f.Buf])
	w.b = append(w.b, '@')
	w.int(int64(f.Off))
	w.b = append(w.b, ' ')
}

// copy writes the operands of a 16-byte copy.
func (w *keyWriter) copy(dst *kir.Buffer, di kir.Expr, src *kir.Buffer, si kir.Expr) {
	w.str(w.bufs[dst])
	w.expr(di)
	w.str(w.bufs[src])
	w.expr(si)
}

func (w *keyWriter) expr(e kir.Expr) {
	w.b = append(w.b, '(')
	switch e := e.(type) {
	case *kir.Const:
		w.str("c ")
		w.str(e.T.String())
		w.b = append(w.b, ' ')
		w.b = strconv.AppendFloat(w.b, e.Value, 'g', -1, 64)
	case *kir.Var:
		w.v(e)
	case *kir.Special:
		w.str(e.Reg.String())
	case *kir.Load:
		w.str("ld ")
		w.str(w.bufs[e.Buf])
		w.expr(e.Index)
	case *kir.Unary:
		w.str(e.Op.String())
		w.expr(e.X)
	case *kir.Binary:
		w.str(e.Op.String())
		w.expr(e.X)
		w.expr(e.Y)
	case *kir.Select:
		w.str("sel")
		w.expr(e.Cond)
		w.expr(e.Then)
		w.expr(e.Else)
	case *kir.Cast:
		w.str(e.To.String())
		w.expr(e.X)
	case *kir.Shuffle:
		w.str(fmt.Sprintf("shfl.%s %d %d", e.Mode, e.Offset, e.Width))
		w.expr(e.X)
		w.expr(e.Mask)
	case *kir.Bounded:
		w.str(fmt.Sprintf("bounded %d %s %d %t", e.N, w.bufs[e.Buf], e.Dim, e.Update))
		w.expr(e.X)
		if e.Record != nil {
			// Kernels that report different gathers differ.
			w.str(fmt.Sprintf("report %s %d", w.bufs[e.Record], e.Site))
			w.expr(e.At)
		}
	default:
		w.str(fmt.Sprintf("%T", e))
	}
	w.b = append(w.b, ')')
}
