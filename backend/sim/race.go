package sim

import "tec/backend/kir"

// rec is one access in shadow memory.
type rec struct {
	thread int32 // block·blockDim + thread + 1; 0 for none
	bepoch int32 // the block's barrier count at the access
	gepoch int32 // the machine's grid epoch at the access
	sig    int32 // the block's own counter signals before the access
	stage  int16 // index of the stage executing, -1 for none
	atomic bool
}

// shadow holds, for each element of a buffer, its last write and its last
// reads by two different threads.
type shadow struct {
	w, r1, r2 []rec
}

func newShadow(n int) *shadow {
	return &shadow{w: make([]rec, n), r1: make([]rec, n), r2: make([]rec, n)}
}

func (sh *shadow) clear() {
	clear(sh.w)
	clear(sh.r1)
	clear(sh.r2)
}

// ordered reports whether access p happens before access c of block b:
// the same thread, a grid sync or kernel boundary between them, a block
// barrier between two threads of one block, or a signal of p's block after
// p that b has acquired by a counter wait (see counter.go).
func (b *block) ordered(p, c rec) bool {
	threads := b.threads
	return p.thread == c.thread || p.gepoch < c.gepoch ||
		(p.thread-1)/threads == (c.thread-1)/threads && p.bepoch < c.bepoch ||
		b.acquired(p)
}

// current returns the record of an access by lane of b now.
func (b *block) current(lane int32, atomic bool) rec {
	return rec{thread: int32(b.id)*b.threads + lane + 1, bepoch: b.epoch, gepoch: b.m.gepoch, sig: b.ownSig(), stage: b.stage, atomic: atomic}
}

// checkRead records a read of element i and reports a race with an earlier
// unordered write, or, with initcheck, a read of an element never written.
func (b *block) checkRead(sh *shadow, buf *kir.Buffer, i int, lane int32, initcheck bool) {
	c := b.current(lane, false)
	switch w := sh.w[i]; {
	case w.thread == 0:
		if initcheck {
			b.m.race(Race{Kernel: b.prog.k.Name, Buffer: buf.Name, Space: buf.Space, Index: i, Uninit: true, Second: b.access(c, false)})
		}
	case !b.ordered(w, c):
		b.report(buf, i, w, true, c, false)
	}
	if r := sh.r1[i]; r.thread != c.thread {
		sh.r2[i] = r
	}
	sh.r1[i] = c
}

// checkWrite records a write (or atomic update) of element i and reports a
// race with an earlier unordered access.
func (b *block) checkWrite(sh *shadow, buf *kir.Buffer, i int, lane int32, atomic bool) {
	c := b.current(lane, atomic)
	if w := sh.w[i]; w.thread != 0 && !(w.atomic && atomic) && !b.ordered(w, c) {
		b.report(buf, i, w, true, c, true)
	} else {
		for _, r := range [2]rec{sh.r1[i], sh.r2[i]} {
			if r.thread != 0 && !b.ordered(r, c) {
				b.report(buf, i, r, false, c, true)
				break
			}
		}
	}
	sh.w[i] = c
	sh.r1[i], sh.r2[i] = rec{}, rec{}
}

func (b *block) report(buf *kir.Buffer, i int, p rec, pWrite bool, c rec, cWrite bool) {
	b.m.race(Race{
		Kernel: b.prog.k.Name,
		Buffer: buf.Name,
		Space:  buf.Space,
		Index:  i,
		First:  b.access(p, pWrite),
		Second: b.access(c, cWrite),
	})
}

func (b *block) access(r rec, write bool) Access {
	a := Access{Block: int((r.thread - 1) / b.threads), Thread: int((r.thread - 1) % b.threads), Kind: "read"}
	switch {
	case r.atomic:
		a.Kind = "atomic"
	case write:
		a.Kind = "write"
	}
	if r.stage >= 0 && int(r.stage) < len(b.prog.stages) {
		a.Stage = b.prog.stages[r.stage]
	}
	return a
}
