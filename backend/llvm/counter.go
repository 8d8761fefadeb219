package llvm

import (
	"github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"

	"tec/backend/kir"
)

// Counters (kir.Signal, kir.Wait) are PTX's release reduction and acquire
// load at GPU scope, written as inline assembly: llc-16's NVPTX back end
// cannot select an atomic load with acquire ordering, and a release
// atomicrmw needs the fence it also cannot select. ptxas turns them into
// MEMBAR.ALL.GPU before RED.E.ADD.STRONG.GPU, and LDG.E.STRONG.GPU
// followed by CCTL.IVALL (L1 invalidated), as for CUDA C++'s
// cuda::atomic_ref with memory_order_release and memory_order_acquire.

// signalAsm and acquireAsm are the PTX of a signal and of one spin of a wait.
const (
	signalAsm  = "red.release.gpu.global.add.u32 [$0], 1;"
	acquireAsm = "ld.acquire.gpu.global.u32 $0, [$1];"
)

// signal emits a Signal: a block barrier, then thread 0's release add.
func (kg *kgen) signal(s *kir.Signal) {
	ptr := kg.addr(s.Counter, s.Index)
	kg.g.barrier(kg.cur)
	kg.firstThread("signal", func(b *ir.Block) {
		asm := ir.NewInlineAsm(types.NewPointer(types.NewFunc(types.Void, ptr.Type())), signalAsm, "l,~{memory}")
		asm.SideEffect = true
		b.NewCall(asm, ptr)
	})
}

// wait emits a Wait: thread 0 spins on acquire loads until the counter
// reaches the target, then a block barrier.
func (kg *kgen) wait(s *kir.Wait) {
	ptr := kg.addr(s.Counter, s.Index)
	target := kg.expr(s.Target)
	kg.firstThread("wait", func(b *ir.Block) {
		spin := kg.newBlock("spin")
		b.NewBr(spin)
		asm := ir.NewInlineAsm(types.NewPointer(types.NewFunc(types.I32, ptr.Type())), acquireAsm, "=r,l,~{memory}")
		asm.SideEffect = true
		v := spin.NewCall(asm, ptr)
		kg.cur = kg.newBlock("acquired")
		spin.NewCondBr(spin.NewICmp(enum.IPredSLT, v, target), spin, kg.cur)
	})
	kg.g.barrier(kg.cur)
}

// firstThread emits body, which may end in a block of its own in kg.cur,
// for thread 0 of the block only, and continues after it.
func (kg *kgen) firstThread(name string, body func(b *ir.Block)) {
	then, join := kg.newBlock(name), kg.newBlock(name+"_done")
	tid := kg.g.sreg(kg.cur, "tid.x")
	kg.cur.NewCondBr(kg.cur.NewICmp(enum.IPredEQ, tid, i32(0)), then, join)
	kg.cur = then
	body(then)
	kg.cur.NewBr(join)
	kg.cur = join
}

// prefetchAsm is the PTX of a Prefetch: an L2 prefetch of one line.
const prefetchAsm = "prefetch.global.L2 [$0];"

// prefetch emits a Prefetch by every thread that reaches it.
func (kg *kgen) prefetch(s *kir.Prefetch) {
	ptr := kg.addr(s.Buf, s.Index)
	asm := ir.NewInlineAsm(types.NewPointer(types.NewFunc(types.Void, ptr.Type())), prefetchAsm, "l")
	asm.SideEffect = true
	kg.cur.NewCall(asm, ptr)
}
