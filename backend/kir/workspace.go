package kir

import (
	"cmp"
	"math"
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
	Accesses(s, func(b *Buffer, _ bool) { w.touch(b, first, last) })
	Exprs(s, func(e Expr) {
		WalkExpr(e, func(x Expr) bool {
			switch x := x.(type) {
			case *Load:
				w.touch(x.Buf, first, last)
			case *Bounded:
				if x.Record != nil {
					w.touch(x.Record, first, last)
				}
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
	if r := m.ErrorRecord; r != nil {
		// Written by any kernel and read by the host after the last: it
		// shares its bytes with no other temporary.
		all := Epochs{First: math.MaxInt, Last: math.MinInt}
		for _, e := range spans {
			all = Epochs{min(all.First, e.First), max(all.Last, e.Last)}
		}
		spans[r] = all
	}
	slices.SortStableFunc(order, func(a, b *Buffer) int {
		if c := cmp.Compare(b.Bytes(), a.Bytes()); c != 0 {
			return c
		}
		return cmp.Compare(spans[a].First, spans[b].First)
	})
	placed := newPlacedTemps(spans)
	offsets = make(map[*Buffer]int64, len(temps))
	for _, b := range order {
		n := align(b.Bytes())
		live := spans[b]
		off := placed.lowestFree(live, n)
		offsets[b] = off
		if n > 0 {
			placed.add(live, byteRange{off, off + n})
		}
		size = max(size, off+n)
	}
	return offsets, size
}

// byteRange is the bytes [lo, hi) of the workspace.
type byteRange struct{ lo, hi int64 }

// byteRanges is a set of bytes: disjoint ranges in order, none empty, none
// touching another.
type byteRanges []byteRange

// add returns the set with r's bytes added.
func (s byteRanges) add(r byteRange) byteRanges {
	i, _ := slices.BinarySearchFunc(s, r.lo, func(x byteRange, lo int64) int { return cmp.Compare(x.hi, lo) })
	j := i
	for j < len(s) && s[j].lo <= r.hi {
		r = byteRange{min(r.lo, s[j].lo), max(r.hi, s[j].hi)}
		j++
	}
	return slices.Replace(s, i, j, r)
}

// clash returns the end of a range of s that overlaps [off, off+n), and
// whether there is one.
func (s byteRanges) clash(off, n int64) (int64, bool) {
	i, _ := slices.BinarySearchFunc(s, off+1, func(x byteRange, end int64) int { return cmp.Compare(x.hi, end) })
	if i < len(s) && s[i].lo < off+n {
		return s[i].hi, true
	}
	return 0, false
}

// placedTemps are the temporaries placed so far: the bytes each occupies
// over the epochs it is live. Where a temporary may go depends only on the
// union of the bytes of the placed temporaries that are live with it, so
// that union is what the index answers, from a segment tree over the
// epochs: each node keeps the bytes of the temporaries whose spans cover
// its epochs and not its parent's (own), and of all temporaries kept at it
// or below it (below). The temporaries live with a span [first, last] are
// those kept below the nodes that tile the span and those kept at the
// ancestors of first's and last's leaves. A layout that packs temporaries
// keeps each node's set to a few ranges, whatever the number of
// temporaries. (Placing against every earlier temporary live with one took
// time quadratic in their number: the 10,000-cell LSTM has a thousand
// temporaries live across hundreds of epochs.)
type placedTemps struct {
	least  int // the least epoch of any temporary: leaf 0
	leaves int // the number of leaves, a power of two
	own    []byteRanges
	below  []byteRanges
}

func newPlacedTemps(spans map[*Buffer]Epochs) *placedTemps {
	ps := &placedTemps{leaves: 1}
	greatest, first := 0, true
	for _, e := range spans {
		if first {
			ps.least, greatest, first = e.First, e.Last, false
		}
		ps.least, greatest = min(ps.least, e.First), max(greatest, e.Last)
	}
	for ps.leaves < greatest-ps.least+1 {
		ps.leaves *= 2
	}
	ps.own = make([]byteRanges, 2*ps.leaves)
	ps.below = make([]byteRanges, 2*ps.leaves)
	return ps
}

// leaf returns the node of epoch e.
func (ps *placedTemps) leaf(e int) int { return e - ps.least + ps.leaves }

// tiling calls f with each node of the fewest whose epochs tile e.
func (ps *placedTemps) tiling(e Epochs, f func(node int)) {
	lo, hi := ps.leaf(e.First), ps.leaf(e.Last)+1
	for lo < hi {
		if lo&1 == 1 {
			f(lo)
			lo++
		}
		if hi&1 == 1 {
			hi--
			f(hi)
		}
		lo, hi = lo/2, hi/2
	}
}

// ancestors calls f with the leaves of e's first and last epochs and all
// their ancestors, each once.
func (ps *placedTemps) ancestors(e Epochs, f func(node int)) {
	for a, b := ps.leaf(e.First), ps.leaf(e.Last); a >= 1; a, b = a/2, b/2 {
		f(a)
		if b != a {
			f(b)
		}
	}
}

// add records the bytes r of a temporary live in the epochs e. The nodes
// whose parents' epochs the span only partly covers are the ancestors of
// its first and last leaves, so those, with the tiling, are the nodes with
// something of the span below them.
func (ps *placedTemps) add(e Epochs, r byteRange) {
	ps.tiling(e, func(node int) {
		ps.own[node] = ps.own[node].add(r)
		ps.below[node] = ps.below[node].add(r)
	})
	ps.ancestors(e, func(node int) { ps.below[node] = ps.below[node].add(r) })
}

// lowestFree returns the lowest offset, 0 or the end of a placed
// temporary, at which n bytes overlap no placed temporary live in the
// epochs e: the first gap of n bytes or more in the union of their bytes.
func (ps *placedTemps) lowestFree(e Epochs, n int64) int64 {
	if n == 0 {
		return 0
	}
	var sets []byteRanges
	ps.tiling(e, func(node int) { sets = append(sets, ps.below[node]) })
	ps.ancestors(e, func(node int) { sets = append(sets, ps.own[node]) })
	// Move past every range that overlaps [off, off+n) until none does:
	// off never passes the first gap, since every range it moves past
	// ends at or before it.
	var off int64
	for moved := true; moved; {
		moved = false
		for _, s := range sets {
			for {
				end, ok := s.clash(off, n)
				if !ok {
					break
				}
				off, moved = end, true
			}
		}
	}
	return off
}

func align(n int64) int64 { return (n + WorkspaceAlign - 1) &^ (WorkspaceAlign - 1) }

// Layout is a module's workspace layout, as WorkspaceLayout returns it,
// kept in one value so that a build computes it once for all its emitters.
type Layout struct {
	Offsets map[*Buffer]int64 // the offset of every temporary
	Bytes   int64             // the workspace's size
}

// Layout returns m's workspace layout (see WorkspaceLayout).
func (m *Module) Layout() *Layout {
	offsets, size := m.WorkspaceLayout()
	return &Layout{Offsets: offsets, Bytes: size}
}

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
