package sim

import (
	"fmt"
	"math"
	"slices"

	"tec/backend/kir"
	"tec/te"
)

// vfn evaluates an expression for the active lanes of a block and returns a
// vector indexed by lane, valid at the active lanes until the same node is
// evaluated again.
type vfn func(b *block, act []int32) []float64

// sfn executes a statement for the active lanes of a block.
type sfn func(b *block, act []int32)

// program is a kernel compiled to closures, with the layout of the per-block
// state they use.
type program struct {
	k        *kir.Kernel
	m        *machine
	threads  int
	regs     map[*kir.Var]int
	consts   []constSlot // common scratch vectors filled once per program
	bidSlots []int       // scratch vectors holding blockIdx.x
	shared   map[*kir.Buffer]int
	locals   map[*kir.Buffer]int
	// localOffs and localSize place the local arrays in a block's
	// storage of them (localPlaces).
	localOffs []int
	localSize int
	assigned  map[*kir.Var]bool
	stages    []string
	body      sfn
	// hasAsync says that the kernel issues cp.async, whose groups each
	// block tracks.
	hasAsync bool
	// counters says that the kernel signals or waits on counters, so
	// that each block keeps a vector clock; counterBufs are the buffers
	// it uses as counters.
	counters    bool
	counterBufs map[*kir.Buffer]bool

	// syncs says what spans a grid sync; ownRegs, ownScratch and ownLists
	// say, by slot, which vectors every block has a copy of, and common
	// holds the others, shared by the blocks (nil until the first block).
	syncs                         *syncInfo
	ownRegs, ownScratch, ownLists []bool
	common                        *vectors
}

// vectors are a block's registers (by variable), expression temporaries
// (by expression node) and lists of active lanes (by If, For and Select),
// each as long as the block has threads.
type vectors struct {
	regs    [][]float64
	scratch [][]float64
	lists   [][]int32
}

type constSlot struct {
	slot  int
	value float64
}

// block is the state of one block of threads.
type block struct {
	prog    *program
	m       *machine
	id      int
	grid    int
	threads int32
	all     []int32 // every lane
	vectors
	shared  [][]float64
	sshadow []*shadow
	local   [][]float64
	epoch   int32 // block barriers passed
	stage   int16 // index of the current stage, -1 outside stages
	yield   func(struct{}) bool
	counts  kir.Counts
	banks   []kir.Banks // by shared array
	async   *asyncState // nil unless the kernel issues cp.async
	// clock is the block's vector clock of counter signals (see
	// counter.go), nil in a kernel without counters; wait is the counter
	// wait it yielded at, nil when none; launch is the grid epoch at which
	// its kernel was launched.
	clock  []int32
	wait   *blockedWait
	launch int32
}

func compileKernel(k *kir.Kernel, m *machine) (p *program, err error) {
	p = &program{
		k: k, m: m, threads: k.Block,
		regs: map[*kir.Var]int{}, shared: map[*kir.Buffer]int{}, locals: map[*kir.Buffer]int{},
		assigned: map[*kir.Var]bool{},
		syncs:    findSyncs(k.Body),
	}
	p.counterBufs = counterBuffers(k)
	p.counters = len(p.counterBufs) > 0
	for i, b := range k.Shared {
		p.shared[b] = i
	}
	for i, b := range k.Locals {
		p.locals[b] = i
	}
	p.localOffs, p.localSize = localPlaces(k)
	kir.WalkStmts(k.Body, func(s kir.Stmt) bool {
		if a, ok := s.(*kir.Assign); ok {
			p.assigned[a.Var] = true
		}
		return true
	})
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(*fault)
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("kernel %s: %s", k.Name, f.msg)
		}
	}()
	p.body = p.stmts(k.Body)
	return p, nil
}

// newBlock allocates the state of a block of a grid of the given size:
// its own vectors, and the program's common ones (see syncs.go), which the
// first block allocates.
func (p *program) newBlock(grid int) *block {
	t := p.threads
	if p.common == nil {
		p.common = p.newCommon()
	}
	b := &block{
		prog: p, m: p.m, grid: grid, threads: int32(t), stage: -1,
		all: make([]int32, t),
		vectors: vectors{
			regs:    ownOrCommon(p.ownRegs, p.common.regs, func() []float64 { return make([]float64, t) }),
			scratch: ownOrCommon(p.ownScratch, p.common.scratch, func() []float64 { return make([]float64, t) }),
			lists:   ownOrCommon(p.ownLists, p.common.lists, func() []int32 { return make([]int32, 0, t) }),
		},
	}
	for i := range b.all {
		b.all[i] = int32(i)
	}
	for _, buf := range p.k.Shared {
		b.shared = append(b.shared, make([]float64, buf.Len()))
		if p.m.opts.Race {
			b.sshadow = append(b.sshadow, newShadow(buf.Len()))
		} else {
			b.sshadow = append(b.sshadow, nil)
		}
	}
	b.banks = make([]kir.Banks, len(p.k.Shared))
	storage := make([]float64, p.localSize*t)
	for i, buf := range p.k.Locals {
		at := p.localOffs[i] * t
		b.local = append(b.local, storage[at:at+buf.Len()*t:at+buf.Len()*t])
	}
	if p.hasAsync {
		b.async = p.newAsync()
	}
	return b
}

// newCommon allocates the vectors that no block holds across a grid sync,
// with the constant vectors filled in.
func (p *program) newCommon() *vectors {
	t := p.threads
	c := &vectors{
		regs:    commonOnly(p.ownRegs, func() []float64 { return make([]float64, t) }),
		scratch: commonOnly(p.ownScratch, func() []float64 { return make([]float64, t) }),
		lists:   commonOnly(p.ownLists, func() []int32 { return make([]int32, 0, t) }),
	}
	for _, k := range p.consts {
		v := c.scratch[k.slot]
		for l := range v {
			if math.IsNaN(k.value) { // the thread index
				v[l] = float64(l)
			} else {
				v[l] = k.value
			}
		}
	}
	return c
}

// commonOnly returns a vector made by alloc for each slot that is not own,
// nil for the others.
func commonOnly[T any](own []bool, alloc func() []T) [][]T {
	vs := make([][]T, len(own))
	for i, mine := range own {
		if !mine {
			vs[i] = alloc()
		}
	}
	return vs
}

// ownOrCommon returns a block's vectors: one made by alloc for each slot
// that is own, common's for the others; common itself when no slot is own
// (nothing writes a block's slice of vectors, only the vectors).
func ownOrCommon[T any](own []bool, common [][]T, alloc func() []T) [][]T {
	if !slices.Contains(own, true) {
		return common
	}
	vs := make([][]T, len(own))
	for i, mine := range own {
		if mine {
			vs[i] = alloc()
		} else {
			vs[i] = common[i]
		}
	}
	return vs
}

// reset makes b the block numbered id, with fresh shared and local memory.
func (b *block) reset(id int) {
	b.id = id
	b.epoch = 0
	b.stage = -1
	b.counts = kir.Counts{}
	clear(b.banks)
	b.launch = b.m.gepoch
	b.wait = nil
	if b.prog.counters {
		b.clock = make([]int32, b.grid)
	}
	for _, s := range b.prog.bidSlots {
		v := b.scratch[s]
		for l := range v {
			v[l] = float64(id)
		}
	}
	for i, s := range b.shared {
		fillNaN(s)
		if b.sshadow[i] != nil {
			b.sshadow[i].clear()
		}
	}
	for _, l := range b.local {
		fillNaN(l)
	}
	if b.async != nil {
		b.async.reset()
	}
}

func fillNaN(s []float64) {
	nan := math.NaN()
	for i := range s {
		s[i] = nan
	}
}

func (b *block) stageNote() string {
	if b.stage >= 0 {
		return ", stage " + b.prog.stages[b.stage]
	}
	return ""
}

// faultf stops the kernel with a run-time error at a lane.
func (b *block) faultf(lane int32, format string, args ...any) {
	panic(&fault{fmt.Sprintf("thread %d: %s", lane, fmt.Sprintf(format, args...))})
}

// newScratch returns a new expression temporary, common to the blocks.
func (p *program) newScratch() int {
	return p.newScratchOwn(false)
}

// newScratchOwn returns a new scratch vector, each block's own if own is
// set.
func (p *program) newScratchOwn(own bool) int {
	p.ownScratch = append(p.ownScratch, own)
	return len(p.ownScratch) - 1
}

// newList returns a new list of lanes, each block's own if own is set.
func (p *program) newList(own bool) int {
	p.ownLists = append(p.ownLists, own)
	return len(p.ownLists) - 1
}

// reg returns v's register, each block's own if v is in scope at a grid
// sync.
func (p *program) reg(v *kir.Var) int {
	if s, ok := p.regs[v]; ok {
		return s
	}
	s := len(p.regs)
	p.regs[v] = s
	p.ownRegs = append(p.ownRegs, p.syncs.live[v])
	return s
}

// invariant reports whether e has the same value wherever it is evaluated
// within the scope of the variables it uses: it loads nothing and uses no
// variable that is ever reassigned.
func (p *program) invariant(e kir.Expr) bool {
	ok := true
	kir.WalkExpr(e, func(x kir.Expr) bool {
		switch x := x.(type) {
		case *kir.Load:
			ok = false
		case *kir.Var:
			ok = ok && !p.assigned[x]
		}
		return ok
	})
	return ok
}

func (p *program) stmts(body []kir.Stmt) sfn {
	fs := make([]sfn, 0, len(body))
	for _, s := range body {
		fs = append(fs, p.stmt(s))
	}
	switch len(fs) {
	case 0:
		return func(*block, []int32) {}
	case 1:
		return fs[0]
	}
	return func(b *block, act []int32) {
		for _, f := range fs {
			f(b, act)
		}
	}
}

func (p *program) stmt(s kir.Stmt) sfn {
	switch s := s.(type) {
	case *kir.Let:
		return p.assign(s.Var, s.Value)
	case *kir.Assign:
		return p.assign(s.Var, s.Value)
	case *kir.Store:
		return p.store(s.Buf, s.Index, s.Value, -1)
	case *kir.Atomic:
		return p.store(s.Buf, s.Index, s.Value, s.Op)
	case *kir.If:
		return p.ifStmt(s)
	case *kir.For:
		return p.forStmt(s)
	case *kir.SyncThreads:
		t := p.threads
		return func(b *block, act []int32) {
			if len(act) != t {
				b.faultf(act[0], "syncthreads reached by %d of %d threads", len(act), t)
			}
			b.epoch++
			b.counts.BlockBarriers++
		}
	case *kir.GridSync:
		t := p.threads
		return func(b *block, act []int32) {
			if len(act) != t {
				b.faultf(act[0], "gridsync reached by %d of %d threads", len(act), t)
			}
			if !b.yield(struct{}{}) {
				panic(errStopped)
			}
		}
	case *kir.Signal:
		return p.signal(s)
	case *kir.Wait:
		return p.wait(s)
	case *kir.Prefetch:
		return p.prefetch(s)
	case *kir.MMA:
		return p.mma(s)
	case *kir.LdMatrix:
		return p.ldmatrix(s)
	case *kir.VecCopy:
		return p.vecCopy(s)
	case *kir.CopyAsync:
		return p.copyAsync(s)
	case *kir.CommitGroup:
		return p.commitGroup()
	case *kir.WaitGroup:
		return p.waitGroup(s.N)
	case *kir.Stage:
		idx := int16(len(p.stages))
		p.stages = append(p.stages, s.Name)
		body := p.stmts(s.Body)
		return func(b *block, act []int32) {
			outer := b.stage
			b.stage = idx
			body(b, act)
			b.stage = outer
		}
	}
	panic(&fault{fmt.Sprintf("unknown statement %T", s)})
}

// errStopped unwinds a block coroutine that is stopped at a grid sync.
var errStopped = &fault{"stopped at a grid sync"}

func (p *program) assign(v *kir.Var, value kir.Expr) sfn {
	r := p.reg(v)
	val := p.expr(value)
	return func(b *block, act []int32) {
		x := val(b, act)
		reg := b.regs[r]
		for _, l := range act {
			reg[l] = x[l]
		}
	}
}

func (p *program) ifStmt(s *kir.If) sfn {
	cond := p.expr(s.Cond)
	then := p.stmts(s.Then)
	var els sfn
	if len(s.Else) > 0 {
		els = p.stmts(s.Else)
	}
	own := p.syncs.spans[s]
	lt, lf := p.newList(own), p.newList(own)
	return func(b *block, act []int32) {
		c := cond(b, act)
		t, f := b.lists[lt][:0], b.lists[lf][:0]
		for _, l := range act {
			if c[l] != 0 {
				t = append(t, l)
			} else {
				f = append(f, l)
			}
		}
		if len(t) > 0 {
			then(b, t)
		}
		if len(f) > 0 && els != nil {
			els(b, f)
		}
	}
}

func (p *program) forStmt(s *kir.For) sfn {
	r := p.reg(s.Var)
	lo, hi := p.expr(s.Lo), p.expr(s.Hi)
	body := p.stmts(s.Body)
	invariant := p.invariant(s.Hi)
	own := p.syncs.spans[s]
	list := p.newList(own)
	// An invariant bound is evaluated once and kept while the body runs;
	// over a grid sync it is kept in a vector of the block's own.
	kept := -1
	if invariant && own {
		kept = p.newScratchOwn(true)
	}
	kind, step := s.Kind, float64(s.Step)
	t := float64(p.threads)
	return func(b *block, act []int32) {
		lov := lo(b, act)
		reg := b.regs[r]
		stride := step
		switch kind {
		case kir.Serial, kir.Unrolled:
			for _, l := range act {
				reg[l] = lov[l]
			}
		case kir.GridStride:
			stride = float64(b.grid)
			for _, l := range act {
				reg[l] = lov[l] + float64(b.id)
			}
		case kir.BlockStride:
			stride = t
			for _, l := range act {
				reg[l] = lov[l] + float64(l)
			}
		case kir.ThreadStride:
			stride = float64(b.grid) * t
			for _, l := range act {
				reg[l] = lov[l] + float64(b.id)*t + float64(l)
			}
		}
		hiv := hi(b, act)
		if invariant {
			// hi cannot change while the loop runs.
			if kept >= 0 {
				v := b.scratch[kept]
				for _, l := range act {
					v[l] = hiv[l]
				}
				hiv = v
			}
			run := b.lists[list][:0]
			for _, l := range act {
				if reg[l] < hiv[l] {
					run = append(run, l)
				}
			}
			for len(run) > 0 {
				body(b, run)
				n := 0
				for _, l := range run {
					reg[l] += stride
					if reg[l] < hiv[l] {
						run[n] = l
						n++
					}
				}
				run = run[:n]
			}
			return
		}
		run := b.lists[list][:0]
		for _, l := range act {
			if reg[l] < hiv[l] {
				run = append(run, l)
			}
		}
		for len(run) > 0 {
			body(b, run)
			for _, l := range run {
				reg[l] += stride
			}
			hiv = hi(b, run)
			n := 0
			for _, l := range run {
				if reg[l] < hiv[l] {
					run[n] = l
					n++
				}
			}
			run = run[:n]
		}
	}
}

// store compiles a Store (op < 0) or an Atomic.
func (p *program) store(buf *kir.Buffer, index, value kir.Expr, op kir.AtomicOp) sfn {
	idx, val := p.expr(index), p.expr(value)
	dt := buf.DType
	n := buf.Len()
	atomic := op >= 0
	switch buf.Space {
	case kir.Global:
		mem := p.m.mem[buf]
		data, sh := mem.data, mem.shadow
		size := int64(dt.Size())
		var cs *counterState
		if p.counterBufs[buf] {
			cs = p.m.counters(buf) // a store starts a counter afresh
		}
		return func(b *block, act []int32) {
			mem.touch(b.m.gepoch)
			ix, v := idx(b, act), val(b, act)
			for _, l := range act {
				i := int(ix[l])
				if i < 0 || i >= n {
					b.faultf(l, "%s of %s[%d] out of bounds of %s", storeKind(atomic), buf.Name, i, typeString(buf))
				}
				if sh != nil {
					b.checkWrite(sh, buf, i, l, atomic)
				}
				if cs != nil {
					cs.cell(b, i).joined = nil
				}
				if atomic {
					data[i] = atomicOp(op, data[i], v[l])
				} else {
					data[i] = round(dt, v[l])
				}
			}
			b.counts.StoreBytes += size * int64(len(act))
			if atomic {
				b.counts.LoadBytes += size * int64(len(act))
				b.counts.FLOPs += int64(len(act))
			}
		}
	case kir.Shared:
		j := p.shared[buf]
		size := dt.Size()
		return func(b *block, act []int32) {
			ix, v := idx(b, act), val(b, act)
			data, sh := b.shared[j], b.sshadow[j]
			for _, l := range act {
				i := int(ix[l])
				if i < 0 || i >= n {
					b.faultf(l, "%s of shared %s[%d] out of bounds of %s", storeKind(atomic), buf.Name, i, typeString(buf))
				}
				if sh != nil {
					b.checkWrite(sh, buf, i, l, atomic)
				}
				if atomic {
					data[i] = atomicOp(op, data[i], v[l])
				} else {
					data[i] = round(dt, v[l])
				}
			}
			if atomic {
				b.counts.FLOPs += int64(len(act))
			} else {
				b.countShared(j, act, ix, size, 1)
			}
		}
	default:
		j := p.locals[buf]
		return func(b *block, act []int32) {
			ix, v := idx(b, act), val(b, act)
			data := b.local[j]
			for _, l := range act {
				i := int(ix[l])
				if i < 0 || i >= n {
					b.faultf(l, "store of local %s[%d] out of bounds of %s", buf.Name, i, typeString(buf))
				}
				data[int(l)*n+i] = round(dt, v[l])
			}
		}
	}
}

func storeKind(atomic bool) string {
	if atomic {
		return "atomic update"
	}
	return "store"
}

func atomicOp(op kir.AtomicOp, old, v float64) float64 {
	switch op {
	case kir.AtomicMax:
		return math.Max(old, v)
	case kir.AtomicMin:
		return math.Min(old, v)
	}
	return float64(float32(old + v))
}

func (p *program) constVec(v float64) vfn {
	s := p.newScratch()
	p.consts = append(p.consts, constSlot{s, v})
	return func(b *block, _ []int32) []float64 { return b.scratch[s] }
}

func (p *program) expr(e kir.Expr) vfn {
	switch e := e.(type) {
	case *kir.Const:
		return p.constVec(e.Value)
	case *kir.Var:
		r := p.reg(e)
		return func(b *block, _ []int32) []float64 { return b.regs[r] }
	case *kir.Special:
		switch e.Reg {
		case kir.ThreadIdx:
			return p.constVec(math.NaN()) // filled with lane numbers
		case kir.BlockDim:
			return p.constVec(float64(p.threads))
		case kir.BlockIdx:
			s := p.newScratchOwn(true) // filled by reset
			p.bidSlots = append(p.bidSlots, s)
			return func(b *block, _ []int32) []float64 { return b.scratch[s] }
		default:
			s := p.newScratch()
			return func(b *block, act []int32) []float64 {
				o := b.scratch[s]
				for _, l := range act {
					o[l] = float64(b.grid)
				}
				return o
			}
		}
	case *kir.Load:
		return p.load(e)
	case *kir.Unary:
		return p.unary(e)
	case *kir.Binary:
		return p.binary(e)
	case *kir.Select:
		return p.selectExpr(e)
	case *kir.Cast:
		return p.cast(e)
	case *kir.Shuffle:
		return p.shuffle(e)
	case *kir.Bounded:
		return p.bounded(e)
	}
	panic(&fault{fmt.Sprintf("unknown expression %T", e)})
}

// bounded checks a gather's run-time index: one outside [0, N) is an
// error that names the index read, its value and the dimension, e.g.
// "gather index ids[3] = 50000 is outside wte's dimension 0 [0, 30522)".
// With Options.DeviceGathers, a bounded index that reports to the module's
// error record runs as on a device instead (see deviceBounded).
func (p *program) bounded(e *kir.Bounded) vfn {
	if p.m.opts.DeviceGathers && e.Record != nil {
		return p.deviceBounded(e)
	}
	x := p.expr(e.X)
	site, atExpr := kir.SiteOf(e.X, e.Buf, e.Dim, e.N)
	site.Update = e.Update
	var at vfn // the position the index was read at, for the message
	if atExpr != nil {
		at = p.expr(atExpr)
	}
	n := e.N
	return func(b *block, act []int32) []float64 {
		xv := x(b, act)
		for _, l := range act {
			if v := int(xv[l]); v < 0 || v >= n {
				pos := -1
				if at != nil {
					pos = int(at(b, act)[l])
				}
				b.faultf(l, "%s", site.Message(pos, v))
			}
		}
		return xv
	}
}

// deviceBounded runs a bounded index as emitted code does: an index out of
// range is clamped into [0, N), and the first of the run claims the
// module's error record (its flag word from 0 to 1) and writes the site,
// the position read and the value to it.
func (p *program) deviceBounded(e *kir.Bounded) vfn {
	x := p.expr(e.X)
	var at vfn
	if e.At != nil {
		at = p.expr(e.At)
	}
	out := p.newScratch()
	mem := p.m.mem[e.Record]
	n, site := e.N, e.Site
	return func(b *block, act []int32) []float64 {
		xv, o := x(b, act), b.scratch[out]
		var pos []float64
		for _, l := range act {
			v := int(xv[l])
			o[l] = float64(min(max(v, 0), n-1))
			if v >= 0 && v < n {
				continue
			}
			mem.touch(b.m.gepoch)
			if mem.data[kir.RecordFlag] != 0 {
				continue
			}
			if at != nil && pos == nil {
				pos = at(b, act)
			}
			mem.data[kir.RecordFlag] = 1
			mem.data[kir.RecordSite] = float64(site)
			mem.data[kir.RecordAt] = -1
			if pos != nil {
				mem.data[kir.RecordAt] = pos[l]
			}
			mem.data[kir.RecordValue] = float64(v)
		}
		return o
	}
}

func (p *program) load(e *kir.Load) vfn {
	idx := p.expr(e.Index)
	out := p.newScratch()
	buf := e.Buf
	n := buf.Len()
	switch buf.Space {
	case kir.Global:
		mem := p.m.mem[buf]
		data, sh := mem.data, mem.shadow
		size := int64(buf.DType.Size())
		return func(b *block, act []int32) []float64 {
			mem.touch(b.m.gepoch)
			ix, o := idx(b, act), b.scratch[out]
			for _, l := range act {
				i := int(ix[l])
				if i < 0 || i >= n {
					b.faultf(l, "load of %s[%d] out of bounds of %s", buf.Name, i, typeString(buf))
				}
				if sh != nil {
					b.checkRead(sh, buf, i, l, mem.initcheck)
				}
				o[l] = data[i]
			}
			b.counts.LoadBytes += size * int64(len(act))
			return o
		}
	case kir.Shared:
		j := p.shared[buf]
		size := buf.DType.Size()
		return func(b *block, act []int32) []float64 {
			ix, o := idx(b, act), b.scratch[out]
			data, sh := b.shared[j], b.sshadow[j]
			for _, l := range act {
				i := int(ix[l])
				if i < 0 || i >= n {
					b.faultf(l, "load of shared %s[%d] out of bounds of %s", buf.Name, i, typeString(buf))
				}
				b.checkPending(j, buf, i, l)
				if sh != nil {
					b.checkRead(sh, buf, i, l, true)
				}
				o[l] = data[i]
			}
			b.countShared(j, act, ix, size, 1)
			return o
		}
	default:
		j := p.locals[buf]
		return func(b *block, act []int32) []float64 {
			ix, o := idx(b, act), b.scratch[out]
			data := b.local[j]
			for _, l := range act {
				i := int(ix[l])
				if i < 0 || i >= n {
					b.faultf(l, "load of local %s[%d] out of bounds of %s", buf.Name, i, typeString(buf))
				}
				o[l] = data[int(l)*n+i]
			}
			return o
		}
	}
}

// lanes1 applies f lane by lane.
func (p *program) lanes1(x vfn, flops bool, f func(float64) float64) vfn {
	out := p.newScratch()
	return func(b *block, act []int32) []float64 {
		xv, o := x(b, act), b.scratch[out]
		for _, l := range act {
			o[l] = f(xv[l])
		}
		if flops {
			b.counts.FLOPs += int64(len(act))
		}
		return o
	}
}

func f32(v float64) float64 { return float64(float32(v)) }

func (p *program) unary(e *kir.Unary) vfn {
	x := p.expr(e.X)
	isF := e.X.Type() == te.F32
	var f func(float64) float64
	switch e.Op {
	case te.Neg:
		f = func(v float64) float64 { return -v }
	case te.Not:
		return p.lanes1(x, false, func(v float64) float64 { return b2f(v == 0) })
	case te.Abs:
		f = math.Abs
	case te.Exp:
		f = func(v float64) float64 { return f32(math.Exp(v)) }
	case te.Log:
		f = func(v float64) float64 { return f32(math.Log(v)) }
	case te.Sqrt:
		f = func(v float64) float64 { return f32(math.Sqrt(v)) }
	case te.Rsqrt:
		f = func(v float64) float64 { return f32(1 / math.Sqrt(v)) }
	case te.Tanh:
		f = func(v float64) float64 { return f32(math.Tanh(v)) }
	case te.Sigmoid:
		f = func(v float64) float64 { return f32(1 / (1 + math.Exp(-v))) }
	case te.Erf:
		f = func(v float64) float64 { return f32(math.Erf(v)) }
	case te.Sin:
		f = func(v float64) float64 { return f32(math.Sin(v)) }
	case te.Cos:
		f = func(v float64) float64 { return f32(math.Cos(v)) }
	case te.RoundTF32:
		f = te.RoundTF32Value // exact on an f32 operand: the result is an f32 value
	default:
		panic(&fault{fmt.Sprintf("unknown unary operation %v", e.Op)})
	}
	if e.X.Type() == te.I32 {
		// -(-2^31) and |-2^31| do not fit.
		return p.narrowI32(p.lanes1(x, false, f), e.Op.String()+" gives")
	}
	return p.lanes1(x, isF, f)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func (p *program) binary(e *kir.Binary) vfn {
	x, y := p.expr(e.X), p.expr(e.Y)
	out := p.newScratch()
	isF := e.X.Type() == te.F32
	isI := e.X.Type() == te.I32
	isI64 := e.X.Type() == te.I64
	// The hottest operations get loops of their own.
	switch {
	case isF && e.Op == te.Add:
		return func(b *block, act []int32) []float64 {
			xv, yv, o := x(b, act), y(b, act), b.scratch[out]
			for _, l := range act {
				o[l] = float64(float32(xv[l] + yv[l]))
			}
			b.counts.FLOPs += int64(len(act))
			return o
		}
	case isF && e.Op == te.Mul:
		return func(b *block, act []int32) []float64 {
			xv, yv, o := x(b, act), y(b, act), b.scratch[out]
			for _, l := range act {
				o[l] = float64(float32(xv[l] * yv[l]))
			}
			b.counts.FLOPs += int64(len(act))
			return o
		}
	case isI && e.Op == te.Add:
		return func(b *block, act []int32) []float64 {
			xv, yv, o := x(b, act), y(b, act), b.scratch[out]
			for _, l := range act {
				v := xv[l] + yv[l]
				if v < math.MinInt32 || v > math.MaxInt32 {
					b.overflow(l, e, xv[l], yv[l], v)
				}
				o[l] = v
			}
			return o
		}
	case isI && e.Op == te.Mul:
		return func(b *block, act []int32) []float64 {
			xv, yv, o := x(b, act), y(b, act), b.scratch[out]
			for _, l := range act {
				v := xv[l] * yv[l]
				if v < math.MinInt32 || v > math.MaxInt32 {
					b.overflow(l, e, xv[l], yv[l], v)
				}
				o[l] = v
			}
			return o
		}
	}
	var f func(a, c float64) float64
	var intFault string
	switch e.Op {
	case te.Add:
		f = func(a, c float64) float64 { return a + c }
	case te.Sub:
		f = func(a, c float64) float64 { return a - c }
	case te.Mul:
		f = func(a, c float64) float64 { return a * c }
	case te.Div:
		if isI || isI64 {
			f = func(a, c float64) float64 { return float64(te.FloorDiv(int(a), int(c))) }
			intFault = "integer division by zero"
		} else {
			f = func(a, c float64) float64 { return a / c }
		}
	case te.Mod:
		if isI || isI64 {
			f = func(a, c float64) float64 { return float64(te.FloorMod(int(a), int(c))) }
			intFault = "integer modulo by zero"
		} else {
			f = floatMod
		}
	case te.Max:
		f = math.Max
	case te.Min:
		f = math.Min
	case te.Pow:
		f = math.Pow
	case te.Lt:
		f = func(a, c float64) float64 { return b2f(a < c) }
	case te.Le:
		f = func(a, c float64) float64 { return b2f(a <= c) }
	case te.Gt:
		f = func(a, c float64) float64 { return b2f(a > c) }
	case te.Ge:
		f = func(a, c float64) float64 { return b2f(a >= c) }
	case te.Eq:
		f = func(a, c float64) float64 { return b2f(a == c) }
	case te.Ne:
		f = func(a, c float64) float64 { return b2f(a != c) }
	case te.And:
		f = func(a, c float64) float64 { return b2f(a != 0 && c != 0) }
	case te.Or:
		f = func(a, c float64) float64 { return b2f(a != 0 || c != 0) }
	default:
		panic(&fault{fmt.Sprintf("unknown binary operation %v", e.Op)})
	}
	arith := !e.Op.IsComparison() && !e.Op.IsLogical()
	flops := isF && arith
	roundF := isF && arith
	// The widths of the emitted code: an i32 result must fit 32 bits, an
	// i64 one the float64 in which the simulator holds it exactly.
	limit := 0.0
	switch {
	case isI && arith:
		limit = math.MaxInt32
	case isI64 && arith:
		limit = maxExactInt
	}
	return func(b *block, act []int32) []float64 {
		xv, yv, o := x(b, act), y(b, act), b.scratch[out]
		for _, l := range act {
			if intFault != "" && yv[l] == 0 {
				b.faultf(l, "%s", intFault)
			}
			v := f(xv[l], yv[l])
			if roundF {
				v = float64(float32(v))
			}
			if limit != 0 && (v > limit || v < -limit-1) {
				b.overflow(l, e, xv[l], yv[l], v)
			}
			o[l] = v
		}
		if flops {
			b.counts.FLOPs += int64(len(act))
		}
		return o
	}
}

// maxExactInt is 2^53, beyond which a float64 no longer holds every
// integer: the limit of the i64 arithmetic the simulator evaluates.
const maxExactInt = 1 << 53

// overflow stops the kernel where an integer operation's exact value v
// does not fit the width in which the emitted code computes it (kir's
// "Index widths"): 32 bits for i32, which the GPU would wrap.
func (b *block) overflow(lane int32, e *kir.Binary, x, y, v float64) {
	if e.X.Type() == te.I64 {
		b.faultf(lane, "i64 arithmetic %d %s %d = %.17g is beyond ±2^53, which the simulator cannot evaluate exactly",
			int64(x), e.Op, int64(y), v)
	}
	b.faultf(lane, "i32 overflow: %d %s %d = %.17g does not fit the 32 bits in which the GPU computes it",
		int64(x), e.Op, int64(y), v)
}

// narrowI32 checks that i32 results fit 32 bits, as i32 negation and
// absolute value require (a narrowing Cast from i64 saturates instead).
func (p *program) narrowI32(x vfn, what string) vfn {
	out := p.newScratch()
	return func(b *block, act []int32) []float64 {
		xv, o := x(b, act), b.scratch[out]
		for _, l := range act {
			v := xv[l]
			if v < math.MinInt32 || v > math.MaxInt32 {
				b.faultf(l, "i32 overflow: %s %.17g does not fit the 32 bits in which the GPU computes it", what, v)
			}
			o[l] = v
		}
		return o
	}
}

// floatMod returns x - y·floor(x/y), which has the sign of y.
func floatMod(x, y float64) float64 {
	m := math.Mod(x, y)
	if m != 0 && (m < 0) != (y < 0) {
		m += y
	}
	return m
}

func (p *program) selectExpr(e *kir.Select) vfn {
	cond, th, el := p.expr(e.Cond), p.expr(e.Then), p.expr(e.Else)
	out := p.newScratch()
	lt, lf := p.newList(false), p.newList(false)
	return func(b *block, act []int32) []float64 {
		c := cond(b, act)
		t, f := b.lists[lt][:0], b.lists[lf][:0]
		for _, l := range act {
			if c[l] != 0 {
				t = append(t, l)
			} else {
				f = append(f, l)
			}
		}
		o := b.scratch[out]
		if len(t) > 0 {
			v := th(b, t)
			for _, l := range t {
				o[l] = v[l]
			}
		}
		if len(f) > 0 {
			v := el(b, f)
			for _, l := range f {
				o[l] = v[l]
			}
		}
		return o
	}
}

func (p *program) cast(e *kir.Cast) vfn {
	x := p.expr(e.X)
	from := e.X.Type()
	switch {
	case e.To == from:
		return x
	case e.To == te.Bool:
		return p.lanes1(x, false, func(v float64) float64 { return b2f(v != 0) })
	case e.To == te.I64:
		return x // from i32: exact
	case e.To == te.I32:
		return p.lanes1(x, false, func(v float64) float64 { return te.Round(te.I32, v) })
	case e.To == te.F32:
		return p.lanes1(x, false, f32)
	}
	to := e.To
	return p.lanes1(x, false, func(v float64) float64 { return te.Round(to, v) })
}
