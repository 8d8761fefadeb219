package sim

import (
	"fmt"

	"tec/backend/kir"
	"tec/te"
)

// This file executes the warp-level and 16-byte statements of kir's
// warp.go: MMA and LdMatrix warp by warp, lane by lane as the PTX ISA lays
// out their fragments; VecCopy and CopyAsync thread by thread, with their
// alignment checked; and the cp.async groups of each thread, so that a
// read of a shared element whose asynchronous copy has not been waited on
// is reported among the races.

// ref is a buffer as the simulator reaches it: a global buffer's memory,
// or the index of a shared or local array of the block.
type ref struct {
	buf    *kir.Buffer
	global *memory
	slot   int
	n      int
}

func (p *program) ref(buf *kir.Buffer) ref {
	r := ref{buf: buf, n: buf.Len()}
	switch buf.Space {
	case kir.Global:
		r.global = p.m.mem[buf]
	case kir.Shared:
		r.slot = p.shared[buf]
	default:
		r.slot = p.locals[buf]
	}
	return r
}

// read returns element i of r for lane, checking bounds, races, the
// initialisation and, in shared memory, a pending asynchronous copy.
func (r ref) read(b *block, lane int32, i int, what string) float64 {
	if i < 0 || i >= r.n {
		b.faultf(lane, "%s of %s %s[%d] out of bounds of %s", what, r.buf.Space, r.buf.Name, i, typeString(r.buf))
	}
	switch r.buf.Space {
	case kir.Global:
		if sh := r.global.shadow; sh != nil {
			b.checkRead(sh, r.buf, i, lane, r.global.initcheck)
		}
		return r.global.data[i]
	case kir.Shared:
		b.checkPending(r.slot, r.buf, i, lane)
		if sh := b.sshadow[r.slot]; sh != nil {
			b.checkRead(sh, r.buf, i, lane, true)
		}
		return b.shared[r.slot][i]
	}
	return b.local[r.slot][int(lane)*r.n+i]
}

// write stores v, rounded to r's type, to element i of r for lane.
func (r ref) write(b *block, lane int32, i int, v float64, what string) {
	if i < 0 || i >= r.n {
		b.faultf(lane, "%s of %s %s[%d] out of bounds of %s", what, r.buf.Space, r.buf.Name, i, typeString(r.buf))
	}
	v = round(r.buf.DType, v)
	switch r.buf.Space {
	case kir.Global:
		if sh := r.global.shadow; sh != nil {
			b.checkWrite(sh, r.buf, i, lane, false)
		}
		r.global.data[i] = v
	case kir.Shared:
		if sh := b.sshadow[r.slot]; sh != nil {
			b.checkWrite(sh, r.buf, i, lane, false)
		}
		b.shared[r.slot][i] = v
	default:
		b.local[r.slot][int(lane)*r.n+i] = v
	}
}

// touch records a global access in the current grid epoch.
func (r ref) touch(b *block) {
	if r.global != nil {
		r.global.touch(b.m.gepoch)
	}
}

// fullWarps returns the warps that the active lanes act belong to, after
// checking that each of them is whole: a warp-level statement (mma.sync,
// ldmatrix.sync, both .aligned) must be executed by all WarpSize lanes of
// the warp together.
func (b *block) fullWarps(act []int32, what string) []int {
	var lanes [maxWarps]uint32
	var warps []int
	for _, l := range act {
		w := int(l) / kir.WarpSize
		if lanes[w] == 0 {
			warps = append(warps, w)
		}
		lanes[w] |= 1 << (l % kir.WarpSize)
	}
	for _, w := range warps {
		if lanes[w] != ^uint32(0) {
			missing := ^lanes[w]
			b.faultf(int32(w*kir.WarpSize+firstLane(lanes[w])),
				"%s executed by lanes %#08x of warp %d: lane %d is missing, and all %d lanes must execute it together",
				what, lanes[w], w, firstLane(missing), kir.WarpSize)
		}
	}
	return warps
}

// mma compiles an MMA. For each warp, it gathers the matrices A, B and C
// from the lanes' fragments as kir.FragElem lays them out, computes
// D = A·B + C, and scatters D back. Products of f16, bf16 or tf32 values
// are exact in float64, and each element of D is C's element plus the K
// products in order of k, summed in float64 and rounded to f32 once. The
// tensor cores sum in an order and with intermediate roundings that NVIDIA
// does not document; tests compare with a tolerance for that.
func (p *program) mma(s *kir.MMA) sfn {
	m, n, k := s.Shape.Dims()
	a, bb, c, d := p.ref(s.A.Buf), p.ref(s.B.Buf), p.ref(s.C.Buf), p.ref(s.D.Buf)
	tf32 := s.In == te.F32
	flops := int64(2 * m * n * k)
	what := fmt.Sprintf("mma.sync.%s", s.Shape)
	type elem struct{ lane, reg, row, col int }
	layout := func(op kir.MMAOperand) []elem {
		var es []elem
		for lane := range kir.WarpSize {
			for i := range kir.FragLen(s.Shape, op) {
				r, c := kir.FragElem(s.Shape, s.In, op, lane, i)
				es = append(es, elem{lane, i, r, c})
			}
		}
		return es
	}
	la, lb, lc := layout(kir.OperandA), layout(kir.OperandB), layout(kir.OperandC)
	offA, offB, offC, offD := s.A.Off, s.B.Off, s.C.Off, s.D.Off
	return func(b *block, act []int32) {
		A := make([]float64, m*k)
		B := make([]float64, k*n)
		C := make([]float64, m*n)
		for _, w := range b.fullWarps(act, what) {
			base := w * kir.WarpSize
			for _, e := range la {
				v := a.read(b, int32(base+e.lane), offA+e.reg, what)
				if tf32 {
					v = te.RoundTF32Value(v)
				}
				A[e.row*k+e.col] = v
			}
			for _, e := range lb {
				v := bb.read(b, int32(base+e.lane), offB+e.reg, what)
				if tf32 {
					v = te.RoundTF32Value(v)
				}
				B[e.row*n+e.col] = v
			}
			for _, e := range lc {
				C[e.row*n+e.col] = c.read(b, int32(base+e.lane), offC+e.reg, what)
			}
			for _, e := range lc {
				sum := C[e.row*n+e.col]
				for kk := range k {
					sum += A[e.row*k+kk] * B[kk*n+e.col]
				}
				d.write(b, int32(base+e.lane), offD+e.reg, sum, what)
			}
			b.counts.MMAs++
			b.counts.FLOPs += flops
		}
	}
}

// ldmatrix compiles an LdMatrix: for each warp, every lane receives its
// registers from the rows whose addresses lanes 0 to 8·Num-1 give, as
// kir.LdMatrixElem says. Each element read counts as a read by the lane
// that receives it, for the race detector and the cp.async check.
func (p *program) ldmatrix(s *kir.LdMatrix) sfn {
	idx := p.expr(s.Index)
	src, dst := p.ref(s.Src), p.ref(s.Dst.Buf)
	off, regs, trans := s.Dst.Off, 2*s.Num, s.Trans
	what := fmt.Sprintf("ldmatrix.x%d", s.Num)
	return func(b *block, act []int32) {
		ix := idx(b, act)
		for _, w := range b.fullWarps(act, what) {
			base := w * kir.WarpSize
			for r := range 8 * regs / 2 {
				row := int(ix[base+r])
				if row%8 != 0 {
					b.faultf(int32(base+r), "%s row address %s[%d] is not 16-byte aligned (the index is not a multiple of 8)", what, s.Src.Name, row)
				}
			}
			b.countLdMatrix(src.slot, base, s.Num, ix)
			for lane := range kir.WarpSize {
				l := int32(base + lane)
				for i := range regs {
					_, rowLane, col := kir.LdMatrixElem(trans, lane, i)
					v := src.read(b, l, int(ix[base+rowLane])+col, what)
					dst.write(b, l, off+i, v, what)
				}
			}
		}
	}
}

// vecCopy compiles a VecCopy: each lane copies a vector (16 bytes, or
// the copy's Bytes), whose indexes must be aligned to its size.
func (p *program) vecCopy(s *kir.VecCopy) sfn {
	di, si := p.expr(s.DstIndex), p.expr(s.SrcIndex)
	dst, src := p.ref(s.Dst), p.ref(s.Src)
	vl, bytes := s.Len(), s.Size()
	load, store := fmt.Sprintf("%d-bit load", 8*bytes), fmt.Sprintf("%d-bit store", 8*bytes)
	return func(b *block, act []int32) {
		dst.touch(b)
		src.touch(b)
		dv, sv := di(b, act), si(b, act)
		for _, l := range act {
			d, s := int(dv[l]), int(sv[l])
			checkAlignedBytes(b, l, load, src.buf, s, vl, bytes)
			checkAlignedBytes(b, l, store, dst.buf, d, vl, bytes)
			for e := range vl {
				dst.write(b, l, d+e, src.read(b, l, s+e, load), store)
			}
		}
		if src.buf.Space == kir.Shared {
			b.countShared(src.slot, act, sv, src.buf.DType.Size(), vl)
		}
		if dst.buf.Space == kir.Shared {
			b.countShared(dst.slot, act, dv, dst.buf.DType.Size(), vl)
		}
		n := int64(bytes * len(act))
		if src.global != nil {
			b.counts.LoadBytes += n
		}
		if dst.global != nil {
			b.counts.StoreBytes += n
		}
	}
}

// checkAligned faults unless element i of buf starts a 16-byte vector of
// vl elements.
func checkAligned(b *block, lane int32, what string, buf *kir.Buffer, i, vl int) {
	checkAlignedBytes(b, lane, what, buf, i, vl, kir.VecBytes)
}

// checkAlignedBytes faults unless element i of buf starts a vector of
// vl elements, bytes bytes.
func checkAlignedBytes(b *block, lane int32, what string, buf *kir.Buffer, i, vl, bytes int) {
	if i%vl != 0 {
		b.faultf(lane, "misaligned %s of %s %s[%d]: the address is not %d-byte aligned (the index is not a multiple of %d)",
			what, buf.Space, buf.Name, i, bytes, vl)
	}
}

// asyncCopy is a cp.async in flight: the values read from global memory,
// for elements at..at+len(vals)-1 of a shared array.
type asyncCopy struct {
	slot int
	at   int
	vals []float64
}

// asyncState is a block's cp.async bookkeeping: for each thread the copies
// of its open group and its committed groups, oldest first, and for each
// element of each shared array the copy in flight to it (the issuing
// access; thread 0 for none).
type asyncState struct {
	open    [][]asyncCopy
	groups  [][][]asyncCopy
	pending [][]rec
}

func (p *program) newAsync() *asyncState {
	st := &asyncState{open: make([][]asyncCopy, p.threads), groups: make([][][]asyncCopy, p.threads)}
	for _, buf := range p.k.Shared {
		st.pending = append(st.pending, make([]rec, buf.Len()))
	}
	return st
}

func (st *asyncState) reset() {
	clear(st.open)
	clear(st.groups)
	for _, pd := range st.pending {
		clear(pd)
	}
}

// checkPending reports a read by lane of element i of shared array slot
// while a cp.async to it is in flight.
func (b *block) checkPending(slot int, buf *kir.Buffer, i int, lane int32) {
	if b.async == nil {
		return
	}
	if w := b.async.pending[slot][i]; w.thread != 0 {
		b.m.race(Race{Kernel: b.prog.k.Name, Buffer: buf.Name, Space: buf.Space, Index: i, Async: true,
			First: b.access(w, true), Second: b.access(b.current(lane, false), false)})
	}
}

// copyAsync compiles a CopyAsync: the lane reads the global elements now
// and the shared elements are written when a WaitGroup of the lane
// completes the copy's group.
func (p *program) copyAsync(s *kir.CopyAsync) sfn {
	p.hasAsync = true
	di, si := p.expr(s.DstIndex), p.expr(s.SrcIndex)
	dst, src := p.ref(s.Dst), p.ref(s.Src)
	vl := kir.VecLen(s.Src.DType)
	return func(b *block, act []int32) {
		src.touch(b)
		dv, sv := di(b, act), si(b, act)
		for _, l := range act {
			d, s := int(dv[l]), int(sv[l])
			checkAligned(b, l, "cp.async source", src.buf, s, vl)
			checkAligned(b, l, "cp.async destination", dst.buf, d, vl)
			if d < 0 || d+vl > dst.n {
				b.faultf(l, "cp.async to shared %s[%d:%d] out of bounds of %s", dst.buf.Name, d, d+vl, typeString(dst.buf))
			}
			c := asyncCopy{slot: dst.slot, at: d, vals: make([]float64, vl)}
			for e := range vl {
				c.vals[e] = src.read(b, l, s+e, "cp.async source")
				b.async.pending[dst.slot][d+e] = b.current(l, false)
			}
			b.async.open[l] = append(b.async.open[l], c)
		}
		b.countShared(dst.slot, act, dv, dst.buf.DType.Size(), vl)
		b.counts.LoadBytes += int64(kir.VecBytes * len(act))
	}
}

// commitGroup compiles cp.async.commit_group.
func (p *program) commitGroup() sfn {
	return func(b *block, act []int32) {
		if b.async == nil {
			return
		}
		for _, l := range act {
			b.async.groups[l] = append(b.async.groups[l], b.async.open[l])
			b.async.open[l] = nil
		}
	}
}

// waitGroup compiles cp.async.wait_group n: each lane's groups but the n
// newest complete, their copies written to shared memory as writes of the
// lane.
func (p *program) waitGroup(n int) sfn {
	return func(b *block, act []int32) {
		if b.async == nil {
			return
		}
		for _, l := range act {
			gs := b.async.groups[l]
			for len(gs) > n {
				for _, c := range gs[0] {
					r := ref{buf: p.k.Shared[c.slot], slot: c.slot, n: len(b.shared[c.slot])}
					for e, v := range c.vals {
						b.async.pending[c.slot][c.at+e] = rec{}
						r.write(b, l, c.at+e, v, "cp.async")
					}
				}
				gs = gs[1:]
			}
			b.async.groups[l] = gs
		}
	}
}
