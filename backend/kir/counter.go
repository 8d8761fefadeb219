package kir

import (
	"fmt"

	"tec/te"
)

// This file holds the per-tile dependency counters that let a stage of a
// persistent kernel wait for exactly the tiles of an earlier stage that it
// reads, instead of for the whole grid at a GridSync, as hand-written
// megakernels do.
//
// A counter is an i32 element of a global temporary (a buffer of role Temp
// in the workspace). A producer's block, after its stores of a tile,
// executes Signal: a block barrier, so that every thread's stores of the
// tile come before, then one thread adds 1 to the counter with release
// semantics at GPU scope (red.release.gpu.global.add.u32). A consumer's
// block, before it reads a tile's inputs, executes Wait: one thread spins
// on an acquire load at GPU scope (ld.acquire.gpu.u32) until the counter
// reaches the target, then a block barrier, so that every thread of the
// block reads after the acquire. A satisfied wait orders after it exactly
// the stores that the signalling blocks made before their signals (the
// release sequence of the adds the acquire load read), not those of other
// blocks; the simulator's race check treats it so.
//
// A wait spins, so it is only sound where the blocks that will signal are
// running or will run whatever the waiting block does: in an all-resident
// grid (Grid.Resident), every block of which is on the GPU at once, and
// where the signals come from tiles of earlier stages, which every block
// finishes before it takes a tile of a later stage (the lowering's
// grid-stride loops). The verifier checks the first; a wait that can
// never be satisfied is a deadlock, which the simulator reports.
//
// Counters start at zero. Rather than targets that grow from launch to
// launch (which need a generation number kept by the host between
// launches and passed to every kernel), the kernel zeroes its counters
// itself with plain stores before a grid sync that precedes every signal
// (the lowering puts them before one the kernel has anyway), and a kernel
// boundary orders them after the previous launch's waits.

// Signal marks the end of the block's work on a tile: a block barrier,
// then one thread atomically adds 1 to element Index of Counter with
// release semantics at GPU scope. Every thread of the block executes it
// together (block-uniform control flow and Index).
type Signal struct {
	Counter *Buffer
	Index   Expr
}

// Wait holds the block until element Index of Counter is at least Target:
// one thread spins on an acquire load at GPU scope, then a block barrier.
// Every thread of the block executes it together (block-uniform control
// flow, Index and Target), and only in an all-resident grid.
type Wait struct {
	Counter       *Buffer
	Index, Target Expr
}

func (*Signal) stmtNode() {}
func (*Wait) stmtNode()   {}

// HasCounters reports whether the kernel's body signals or waits on a
// counter.
func (k *Kernel) HasCounters() bool {
	found := false
	WalkStmts(k.Body, func(s Stmt) bool {
		switch s.(type) {
		case *Signal, *Wait:
			found = true
		}
		return !found
	})
	return found
}

// counterStmt checks a Signal or Wait in control flow of uniformity ctx.
func (v *verifier) counterStmt(s Stmt, ctx uniformity) {
	var c *Buffer
	var exprs []Expr
	switch s := s.(type) {
	case *Signal:
		c, exprs = s.Counter, []Expr{s.Index}
	case *Wait:
		c, exprs = s.Counter, []Expr{s.Index, s.Target}
	}
	u := ctx
	for _, e := range exprs {
		u = max(u, v.expr(e, s))
	}
	if !v.check {
		return
	}
	what := "signal"
	if _, ok := s.(*Wait); ok {
		what = "wait"
		v.wantType(s.(*Wait).Target, te.I32, "wait target", s)
		if !v.k.Grid.Resident {
			v.errorf("counter wait in a kernel launched with a fixed %s, not all-resident: its signalling blocks may never run: %s", v.k.Grid, v.describe(s))
		}
	}
	if u > blockUniform {
		v.errorf("counter %s under thread-divergent control flow or with a thread-dependent operand: %s", what, v.describe(s))
	}
	if c == nil {
		v.errorf("counter %s on a nil buffer", what)
		return
	}
	if msg := counterErr(c); msg != "" {
		v.errorf("counter %s on %s: %s: %s", what, c.Name, msg, v.describe(s))
	}
	v.buffer(c, exprs[0], s)
}

// counterErr says why b cannot hold counters, or returns "".
func counterErr(b *Buffer) string {
	switch {
	case b.Space != Global || b.Role != Temp:
		return fmt.Sprintf("want a global temporary in the workspace, not %s %s", b.Space, b.Role)
	case b.DType != te.I32:
		return fmt.Sprintf("want i32 elements, not %s", b.DType)
	}
	return ""
}
