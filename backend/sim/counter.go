package sim

import (
	"fmt"
	"slices"

	"tec/backend/kir"
)

// Counters (kir.Signal, kir.Wait) order memory accesses between the blocks
// that signal and the blocks that wait, and no others, so the race check
// keeps a vector clock per block: clock[j] is the number of block j's
// signals whose earlier accesses the block has acquired (its own entry is
// its own signal count). Every access records its block's own count at the
// time (rec.sig), so an access p of block j happens before the current
// access of block i when i has acquired a signal of j issued after p:
// clock_i[j] > p.sig. A signal is a release: it records, for its counter
// element, the signaller's clock as it was (its own entry counting the new
// signal) joined with those of the signals before it. A satisfied wait for
// target T acquires the join of the first T signals in the order they
// happened, not of every signal that the simulator's schedule happened to
// run before the wait: another schedule could satisfy the wait with just
// those T, so a target one too low leaves the last signaller's stores
// unordered, and the race check says so.
//
// A block whose wait is not satisfied yields, as at a grid sync, and the
// launch loop runs the others; when no block can run and some wait, the
// waits can never be satisfied, and the run stops with a deadlock error.

// counterCell is what the simulator knows of one counter element: the
// joined clocks of its signals since it was last stored to, the nth after
// n+1 signals.
type counterCell struct {
	joined [][]int32
}

// counterState holds the cells of a buffer used as counters.
type counterState struct {
	cells  []counterCell
	launch int32 // the grid epoch of the launch the cells belong to
}

// counters returns the counter state of buf, made on first use.
func (s *machine) counters(buf *kir.Buffer) *counterState {
	if s.ctrs == nil {
		s.ctrs = map[*kir.Buffer]*counterState{}
	}
	cs, ok := s.ctrs[buf]
	if !ok {
		cs = &counterState{cells: make([]counterCell, buf.Len())}
		s.ctrs[buf] = cs
	}
	return cs
}

// cell returns element i's cell, forgetting the signals of earlier
// launches, whose clocks name other blocks.
func (cs *counterState) cell(b *block, i int) *counterCell {
	if cs.launch != b.launch {
		clear(cs.cells)
		cs.launch = b.launch
	}
	return &cs.cells[i]
}

// counterBuffers returns the buffers that k's Signals and Waits use.
func counterBuffers(k *kir.Kernel) map[*kir.Buffer]bool {
	out := map[*kir.Buffer]bool{}
	kir.WalkStmts(k.Body, func(s kir.Stmt) bool {
		switch s := s.(type) {
		case *kir.Signal:
			out[s.Counter] = true
		case *kir.Wait:
			out[s.Counter] = true
		}
		return true
	})
	return out
}

// ownSig returns the block's own signal count, which its accesses record.
func (b *block) ownSig() int32 {
	if b.clock == nil {
		return 0
	}
	return b.clock[b.id]
}

// acquired reports whether the block has acquired a signal of p's block
// issued after access p.
func (b *block) acquired(p rec) bool {
	if b.clock == nil {
		return false
	}
	pb := int((p.thread - 1) / b.threads)
	return pb != b.id && pb < len(b.clock) && b.clock[pb] > p.sig
}

// counterIndex evaluates a block-uniform index of a counter statement and
// checks it.
func (b *block) counterIndex(idx vfn, act []int32, buf *kir.Buffer, what string) int {
	i := int(idx(b, act)[act[0]])
	if i < 0 || i >= buf.Len() {
		b.faultf(act[0], "%s on %s[%d] out of bounds of %s", what, buf.Name, i, typeString(buf))
	}
	return i
}

func (p *program) signal(s *kir.Signal) sfn {
	idx := p.expr(s.Index)
	t := p.threads
	mem := p.m.mem[s.Counter]
	cs := p.m.counters(s.Counter)
	return func(b *block, act []int32) {
		if len(act) != t {
			b.faultf(act[0], "counter signal reached by %d of %d threads", len(act), t)
		}
		i := b.counterIndex(idx, act, s.Counter, "counter signal")
		mem.touch(b.m.gepoch)
		b.epoch++ // the block barrier before the add
		if mem.shadow != nil {
			b.checkWrite(mem.shadow, s.Counter, i, act[0], true)
		}
		mem.data[i]++
		b.clock[b.id]++
		c := cs.cell(b, i)
		next := slices.Clone(b.clock)
		if n := len(c.joined); n > 0 {
			join(next, c.joined[n-1])
		}
		c.joined = append(c.joined, next)
		b.counts.CounterSignals++
	}
}

func (p *program) wait(s *kir.Wait) sfn {
	idx, target := p.expr(s.Index), p.expr(s.Target)
	t := p.threads
	mem := p.m.mem[s.Counter]
	cs := p.m.counters(s.Counter)
	return func(b *block, act []int32) {
		if len(act) != t {
			b.faultf(act[0], "counter wait reached by %d of %d threads", len(act), t)
		}
		i := b.counterIndex(idx, act, s.Counter, "counter wait")
		want := target(b, act)[act[0]]
		mem.touch(b.m.gepoch)
		// The spinning thread's acquire loads do not race with the
		// signals' atomic adds; they do with a plain store (the zeroing)
		// that nothing orders before them.
		if sh := mem.shadow; sh != nil {
			if w := sh.w[i]; w.thread != 0 && !w.atomic && !b.ordered(w, b.current(act[0], false)) {
				b.report(s.Counter, i, w, true, b.current(act[0], false), false)
			}
		}
		for !(mem.data[i] >= want) {
			b.wait = &blockedWait{buf: s.Counter, index: i, target: want, value: func() float64 { return mem.data[i] }}
			if !b.yield(struct{}{}) {
				panic(errStopped)
			}
		}
		b.wait = nil
		if c := cs.cell(b, i); len(c.joined) > 0 && want >= 1 {
			join(b.clock, c.joined[min(int(want), len(c.joined))-1])
		}
		b.epoch++ // the block barrier after the acquire
		b.counts.CounterWaits++
	}
}

// join sets each entry of dst to the larger of it and src's.
func join(dst, src []int32) {
	for j := range min(len(dst), len(src)) {
		dst[j] = max(dst[j], src[j])
	}
}

// blockedWait is a wait that a block yielded at, not yet satisfied.
type blockedWait struct {
	buf    *kir.Buffer
	index  int
	target float64
	value  func() float64
}

// satisfied reports whether the counter has reached the target.
func (w *blockedWait) satisfied() bool { return w.value() >= w.target }

// deadlock describes blocks waiting on counters that no block can advance.
func deadlock(k *kir.Kernel, blocks []*block, atSync []bool) error {
	for _, b := range blocks {
		if w := b.wait; w != nil {
			msg := fmt.Sprintf("kernel %s%s, block %d: deadlock: counter wait for %s[%d] >= %d never satisfied (it stays %v",
				k.Name, b.stageNote(), b.id, w.buf.Name, w.index, int64(w.target), w.value())
			if slices.Contains(atSync, true) {
				msg += ", while other blocks wait at a grid sync"
			} else {
				msg += ": every block still running waits"
			}
			return fmt.Errorf("%s)", msg)
		}
	}
	return fmt.Errorf("kernel %s: deadlock", k.Name)
}

// prefetch compiles a Prefetch: a hint that changes nothing but must
// name an element of its buffer in every thread that reaches it.
func (p *program) prefetch(s *kir.Prefetch) sfn {
	idx := p.expr(s.Index)
	return func(b *block, act []int32) {
		v := idx(b, act)
		res := b.m.res
		if res.Prefetched == nil {
			res.Prefetched = map[string][]int{}
		}
		for _, l := range act {
			i := int(v[l])
			if i < 0 || i >= s.Buf.Len() {
				b.faultf(l, "prefetch of %s[%d] out of bounds of %s", s.Buf.Name, i, typeString(s.Buf))
			}
			res.Prefetched[s.Buf.Name] = append(res.Prefetched[s.Buf.Name], i)
		}
	}
}
