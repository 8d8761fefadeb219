package kir

import (
	"cmp"
	"slices"
)

// WorkspaceAlign is the alignment, in bytes, of every temporary in the
// workspace.
const WorkspaceAlign = 256

// Epochs is the span of grid epochs in which the kernels of a module touch
// a buffer. The epochs of a module are numbered in launch order: every
// kernel launch and every grid sync begins a new one, so that whatever is
// done in an epoch is finished, and visible to the whole grid, before the
// next begins. Two temporaries whose spans do not meet may share memory.
type Epochs struct{ First, Last int }

// Meets reports whether the spans e and f have an epoch in common.
func (e Epochs) Meets(f Epochs) bool { return e.First <= f.Last && f.First <= e.Last }

// TempEpochs returns the span of epochs in which m's kernels load, store or
// update each temporary (global buffer of role Temp) that they touch. A
// statement inside a loop or a condition that contains a grid sync is
// taken to touch its buffers over the whole span of that loop or condition,
// since its iterations run in many epochs.
func (m *Module) TempEpochs() map[*Buffer]Epochs {
	w := epochWalker{spans: map[*Buffer]Epochs{}}
	for _, k := range m.Kernels {
		w.epoch++
		w.stmts(k.Body)
	}
	return w.spans
}

type epochWalker struct {
	epoch int
	spans map[*Buffer]Epochs
}

func (w *epochWalker) touch(b *Buffer, first, last int) {
	if b.Space != Global || b.Role != Temp {
		return
	}
	if e, ok := w.spans[b]; ok {
		first, last = min(first, e.First), max(last, e.Last)
	}
	w.spans[b] = Epochs{first, last}
}

func (w *epochWalker) stmts(body []Stmt) {
	for _, s := range body {
		switch s := s.(type) {
		case *GridSync:
			w.epoch++
		case *Stage:
			w.stmts(s.Body)
		case *For, *If:
			w.nested(s)
		default:
			w.direct(s, w.epoch, w.epoch)
		}
	}
}

// nested handles a loop or condition: one without grid syncs touches its
// buffers in the current epoch; one with grid syncs touches all of them
// over every epoch it spans.
func (w *epochWalker) nested(s Stmt) {
	syncs := 0
	WalkStmts([]Stmt{s}, func(x Stmt) bool {
		if _, ok := x.(*GridSync); ok {
			syncs++
		}
		return true
	})
	first := w.epoch
	w.epoch += syncs
	WalkStmts([]Stmt{s}, func(x Stmt) bool {
		w.direct(x, first, w.epoch)
		return true
	})
}

// direct records the buffers that s itself (not its nested statements)
// touches.
func (w *epochWalker) direct(s Stmt, first, last int) {
	switch s := s.(type) {
	case *Store:
		w.touch(s.Buf, first, last)
	case *Atomic:
		w.touch(s.Buf, first, last)
	}
	Exprs(s, func(e Expr) {
		WalkExpr(e, func(x Expr) bool {
			if l, ok := x.(*Load); ok {
				w.touch(l.Buf, first, last)
			}
			return true
		})
	})
}

// WorkspaceLayout returns the byte offset of every temporary (global buffer
// of role Temp) in the workspace, each aligned to WorkspaceAlign, and the
// workspace's total size. Temporaries whose epochs do not meet (see
// TempEpochs) may share bytes: the largest are placed first, each at the
// lowest offset where it overlaps no placed temporary that is live with
// it. A temporary that no kernel touches is live with no other. Emitters
// and host code place temporaries with it, so that they agree.
func (m *Module) WorkspaceLayout() (offsets map[*Buffer]int64, size int64) {
	spans := m.TempEpochs()
	var temps []*Buffer
	for _, b := range m.Buffers {
		if b.Role == Temp {
			temps = append(temps, b)
		}
	}
	never := Epochs{First: -1, Last: -1}
	span := func(b *Buffer) Epochs {
		if e, ok := spans[b]; ok {
			return e
		}
		never.First-- // untouched temporaries meet nothing but themselves
		never.Last = never.First
		spans[b] = never
		return never
	}
	order := slices.Clone(temps)
	for _, b := range order {
		span(b)
	}
	slices.SortStableFunc(order, func(a, b *Buffer) int {
		if c := cmp.Compare(b.Bytes(), a.Bytes()); c != 0 {
			return c
		}
		return cmp.Compare(spans[a].First, spans[b].First)
	})
	placed := newPlacedTemps(order, spans)
	offsets = make(map[*Buffer]int64, len(temps))
	var clash []placedTemp
	for _, b := range order {
		n := align(b.Bytes())
		live := spans[b]
		clash = placed.meeting(live, clash[:0])
		slices.SortFunc(clash, func(x, y placedTemp) int { return cmp.Compare(x.lo, y.lo) })
		var off int64
		for _, p := range clash {
			if off+n <= p.lo {
				break
			}
			off = max(off, p.hi)
		}
		offsets[b] = off
		placed.add(b, placedTemp{off, off + n, live})
		size = max(size, off+n)
	}
	return offsets, size
}

// placedTemp is a temporary placed in the workspace: bytes [lo, hi), live
// in the epochs live.
type placedTemp struct {
	lo, hi int64
	live   Epochs
}

// placedTemps are the temporaries placed so far, indexed by the order of
// their first epochs, so that those whose spans meet a given one are found
// without looking at all of them: a span that meets [first, last] begins
// at or before last and no earlier than first less the longest placed
// span's length. (Placing against every earlier temporary took time
// quadratic in their number.) The gap search in WorkspaceLayout depends
// only on the set of temporaries found, not on their order, so the layout
// is the same.
type placedTemps struct {
	firsts  []int        // the first epochs of all temporaries, in order
	slots   []placedTemp // slots[k]: the temporary of firsts[k], once placed
	placed  []bool
	rank    map[*Buffer]int // the index into firsts of each temporary
	longest int             // the largest Last - First placed
}

func newPlacedTemps(temps []*Buffer, spans map[*Buffer]Epochs) *placedTemps {
	byFirst := slices.Clone(temps)
	slices.SortStableFunc(byFirst, func(x, y *Buffer) int { return cmp.Compare(spans[x].First, spans[y].First) })
	ps := &placedTemps{
		firsts: make([]int, len(byFirst)),
		slots:  make([]placedTemp, len(byFirst)),
		placed: make([]bool, len(byFirst)),
		rank:   make(map[*Buffer]int, len(byFirst)),
	}
	for k, b := range byFirst {
		ps.firsts[k] = spans[b].First
		ps.rank[b] = k
	}
	return ps
}

func (ps *placedTemps) add(b *Buffer, p placedTemp) {
	k := ps.rank[b]
	ps.slots[k], ps.placed[k] = p, true
	ps.longest = max(ps.longest, p.live.Last-p.live.First)
}

// meeting appends to dst the placed temporaries whose spans meet e.
func (ps *placedTemps) meeting(e Epochs, dst []placedTemp) []placedTemp {
	i, _ := slices.BinarySearch(ps.firsts, e.First-ps.longest)
	for k := i; k < len(ps.firsts) && ps.firsts[k] <= e.Last; k++ {
		if ps.placed[k] && ps.slots[k].live.Meets(e) {
			dst = append(dst, ps.slots[k])
		}
	}
	return dst
}

func align(n int64) int64 { return (n + WorkspaceAlign - 1) &^ (WorkspaceAlign - 1) }

// WorkspaceBytes returns the size of the workspace that WorkspaceLayout
// lays out.
func (m *Module) WorkspaceBytes() int64 {
	_, n := m.WorkspaceLayout()
	return n
}

// Overlapping returns the temporaries among k's parameters that the layout
// offsets (from WorkspaceLayout) places in bytes that another temporary of
// k also occupies: k uses them in different grid epochs. Emitted code must
// not promise the compiler that their pointers do not alias (C's restrict)
// or that their memory is read-only for the whole kernel.
func Overlapping(k *Kernel, offsets map[*Buffer]int64) map[*Buffer]bool {
	var temps []*Buffer
	for _, b := range k.Params {
		if _, ok := offsets[b]; ok && b.Bytes() > 0 {
			temps = append(temps, b)
		}
	}
	slices.SortFunc(temps, func(x, y *Buffer) int { return cmp.Compare(offsets[x], offsets[y]) })
	// In order of offset, a temporary overlaps an earlier one exactly when
	// it begins before the furthest end so far, and a later one exactly
	// when the next begins before its own end: one sweep, not a test of
	// every pair.
	out := map[*Buffer]bool{}
	var furthest int64
	for i, x := range temps {
		end := offsets[x] + x.Bytes()
		if i > 0 && offsets[x] < furthest {
			out[x] = true
		}
		if i+1 < len(temps) && offsets[temps[i+1]] < end {
			out[x] = true
		}
		furthest = max(furthest, end)
	}
	return out
}
