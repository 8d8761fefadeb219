// Package sim executes kernel IR on the CPU with CUDA's semantics, to check on
// a machine without a GPU that what the back end generates computes the right
// values, and to measure what it does.
//
// Every block and every thread of every kernel runs. The threads of a block
// run in lock step, statement by statement, as a vector of lanes with a mask
// of active lanes (SIMT execution): an If runs each branch for the lanes that
// take it, a loop runs while any lane still iterates. Barriers therefore cost
// nothing to implement within a block, since the verifier guarantees that
// every thread of the block reaches them together. Blocks of a fixed grid run
// one after another; the blocks of an all-resident grid run as coroutines
// (iter.Pull) that hand over at each grid sync, so that no block passes a
// grid sync before every block has reached it. Execution is deterministic.
//
// Kernel expressions are compiled once per kernel into closures over lane
// vectors, so that interpretation overhead is paid once per statement and
// block rather than once per thread. The blocks of a launch share the lane
// vectors that none of them holds across a grid sync (temporaries, and
// variables not in scope at one), so that a grid of hundreds of resident
// blocks costs little more memory than one block.
//
// Values are held as float64: f32 results are rounded to float32 after every
// operation, stores round to the buffer's storage type (f16 and bf16 to
// nearest even), and i32 division and modulo round towards negative infinity.
// Integer arithmetic is evaluated at the widths the emitters use (kir's
// "Index widths"): an i32 operation whose exact result does not fit 32 bits,
// or an i64 value narrowed to i32 that does not fit, stops the run with an
// error naming the operands, since the emitted code would wrap there; i64
// arithmetic is exact to ±2^53, and stops beyond. Global temporaries, shared and local memory start
// as NaN, so that a read of memory nobody wrote shows up in the results.
//
// With Options.Race set, every access to global and shared memory is checked
// against shadow memory (the last write and the last two reads of each
// element, each with its thread and its barrier epochs): two accesses to the
// same element by different threads, at least one a write, that no barrier
// orders (a block barrier between threads of one block, a grid sync or a
// kernel boundary between any threads) and that are not both atomic, are a
// data race, reported with kernel, stage, buffer, element and both threads.
// A satisfied counter Wait (kir.Wait) orders after it exactly the accesses
// that the blocks whose signals it acquired made before those signals
// (vector clocks, see counter.go), so a missing wait, a wait on the wrong
// tile's counter or a target too low leaves reads unordered, reported as
// races; a block whose wait is not yet satisfied yields to the others like
// a block at a grid sync, and when no block can run while some wait, the
// run stops with a deadlock error naming the block and the counter.
// The same shadow memory serves an initialisation check, as
// compute-sanitizer's initcheck does on a GPU: a read of a shared-memory
// element that no thread of the block has written, or of a workspace
// temporary's element that no thread of the run has written, is reported
// among the races (Race.Uninit). Inputs and params, which the caller
// supplies, and outputs count as initialised.
//
// The warp-level statements run warp by warp: an MMA gathers each lane's
// fragment registers as the PTX ISA lays them out (kir.FragElem), so a
// fragment loaded from the wrong element gives a wrong result, and an MMA
// or LdMatrix that a warp executes without all its lanes is a fault. A
// VecCopy or CopyAsync whose address is not 16-byte aligned is a fault. A
// CopyAsync reads global memory when it is issued and writes shared memory
// when a WaitGroup of its thread completes its group, as a write of that
// thread; a read of an element whose copy is still in flight is reported
// among the races (Race.Async), with or without Options.Race.
//
// Every warp-level shared-memory access (a warp's loads or stores, an
// LdMatrix, a VecCopy's shared side, a CopyAsync's shared write) counts the
// wavefronts that the GPU's 32 banks take to serve it and those beyond the
// ideal, its bank conflicts (KernelStats.Banks, by array in ArrayBanks),
// by kir.Banks's rule.
//
// When the module records its GPU (kir.Module.GPU), every launch is checked
// against it before it runs, as the CUDA runtime would refuse it: threads
// per block and shared memory per block within the GPU's limits, and for a
// kernel that grid-syncs, its blocks all resident at once (SMs × blocks per
// SM for its threads and shared memory; registers are not modelled). An
// all-resident grid is launched with at most that many blocks when
// Options.ResidentBlocks is left to its default; an explicit
// ResidentBlocks beyond it is an over-sized cooperative launch, an error.
package sim

import (
	"cmp"
	"errors"
	"fmt"
	"iter"
	"math"
	"slices"

	"tec/backend/kir"
	"tec/gpu"
	"tec/te"
)

// DefaultResidentBlocks is the number of blocks an all-resident grid gets
// when Options.ResidentBlocks is 0: a small GPU, so that stages have more
// tiles than blocks.
const DefaultResidentBlocks = 4

// Options controls Run.
type Options struct {
	// ResidentBlocks is the number of blocks launched for an all-resident
	// grid (capped by the grid's Blocks); 0 means DefaultResidentBlocks.
	ResidentBlocks int
	// Race enables the data-race detector and the initialisation check.
	Race bool
	// MaxRaces bounds the races reported in detail (all are counted);
	// 0 means 10.
	MaxRaces int
	// DeviceGathers runs the gathers' bounded indexes that report to the
	// module's error record (kir.Bounded) as emitted code does: an index
	// out of range is clamped, the first is written to the record, and
	// Run returns the record's words and its error in the Result, rather
	// than stopping at the first with an error.
	DeviceGathers bool
	// Progress, when not nil, is called with the counts of the work done
	// so far in the run (every kernel launched before, and the current
	// one's finished blocks or, in an all-resident grid, every block's
	// work up to the last grid sync): after each block of a fixed grid and
	// after each grid sync. It must be cheap; it may throttle itself.
	Progress func(done kir.Counts)
}

// KernelStats is what one kernel launch did.
type KernelStats struct {
	Kernel  string
	Blocks  int // blocks launched
	Threads int // threads per block
	kir.Counts
	// Banks are the kernel's shared-memory wavefronts and bank conflicts
	// (see kir.Banks), and ArrayBanks the same by shared array (nil where
	// the kernel accesses none).
	Banks      kir.Banks
	ArrayBanks map[string]kir.Banks
}

// Access is one side of a data race.
type Access struct {
	Block, Thread int
	Kind          string // "read", "write" or "atomic"
	Stage         string // the stage executing, or ""
}

// Race is a data race: two unordered conflicting accesses to one element;
// or, with Uninit, a read of an element that nothing has written.
type Race struct {
	Kernel string
	Buffer string
	Space  kir.Space
	Index  int
	// Uninit marks an uninitialised read: Second is the read, First is
	// zero.
	Uninit bool
	// Async marks a read of a shared element (Second) while the cp.async
	// that writes it (First) has not been waited on by its thread.
	Async  bool
	First  Access // the earlier access
	Second Access // the later access, which found the race
}

// String describes the race, e.g. "kernel k, stage y: race on shared red[3]:
// write by block 0 thread 3, then read by block 0 thread 1 with no barrier
// between".
func (r Race) String() string {
	if r.Uninit {
		return r.uninitString()
	}
	if r.Async {
		return r.asyncString()
	}
	stage := r.Second.Stage
	if stage == "" {
		stage = r.First.Stage
	}
	where := "kernel " + r.Kernel
	if stage != "" {
		where += ", stage " + stage
	}
	return fmt.Sprintf("%s: race on %s %s[%d]: %s by block %d thread %d%s, then %s by block %d thread %d%s, not ordered by a barrier",
		where, r.Space, r.Buffer, r.Index,
		r.First.Kind, r.First.Block, r.First.Thread, stageNote(r.First.Stage, stage),
		r.Second.Kind, r.Second.Block, r.Second.Thread, stageNote(r.Second.Stage, stage))
}

// uninitString describes an uninitialised read, e.g. "kernel k, stage y:
// uninitialised read of shared red[2] by block 0 thread 1: no thread of
// the block has written it".
func (r Race) uninitString() string {
	where := "kernel " + r.Kernel
	if r.Second.Stage != "" {
		where += ", stage " + r.Second.Stage
	}
	space, who := "workspace", "the run"
	if r.Space == kir.Shared {
		space, who = "shared", "the block"
	}
	return fmt.Sprintf("%s: uninitialised read of %s %s[%d] by block %d thread %d: no thread of %s has written it",
		where, space, r.Buffer, r.Index, r.Second.Block, r.Second.Thread, who)
}

// asyncString describes a read of a cp.async's destination before the
// copy was waited on.
func (r Race) asyncString() string {
	where := "kernel " + r.Kernel
	if r.Second.Stage != "" {
		where += ", stage " + r.Second.Stage
	}
	return fmt.Sprintf("%s: read of shared %s[%d] by block %d thread %d while the cp.async to it by block %d thread %d is in flight: no cp.async.wait_group of that thread has completed it",
		where, r.Buffer, r.Index, r.Second.Block, r.Second.Thread, r.First.Block, r.First.Thread)
}

func stageNote(s, shown string) string {
	if s == shown || s == "" {
		return ""
	}
	return " (stage " + s + ")"
}

// Result is the outcome of Run.
type Result struct {
	// Outputs holds the module's outputs by buffer name.
	Outputs map[string]*te.Array
	// Kernels has one entry per kernel launch, in order.
	Kernels []KernelStats
	// Races lists the first races found (see Options.MaxRaces); RaceCount
	// counts them all.
	Races     []Race
	RaceCount int
	// ErrorRecord holds the words of the module's error record after the
	// run (see kir.ErrorRecordWords), nil without one; GatherError is the
	// error it reports, nil when no index was out of range. Only runs
	// with Options.DeviceGathers write the record.
	ErrorRecord []int32
	GatherError error
	// Prefetched holds, by buffer name, the elements that kir.Prefetch
	// statements named, once per thread that executed one, in the order
	// the run executed them.
	Prefetched map[string][]int
}

// Total returns the sum of the kernels' counts.
func (r *Result) Total() kir.Counts {
	var c kir.Counts
	for _, k := range r.Kernels {
		c.Add(k.Counts)
	}
	return c
}

// Banks returns the sum of the kernels' shared-memory wavefronts and bank
// conflicts.
func (r *Result) Banks() kir.Banks {
	var c kir.Banks
	for _, k := range r.Kernels {
		c.Add(k.Banks)
	}
	return c
}

// Run verifies m and executes its kernels in order on the CPU. feeds holds
// the value of each input and param buffer, by name, with the buffer's dtype
// and shape; f32 values are rounded to float32 on the way in. A run-time
// fault (an access out of bounds, an integer division by zero, a barrier not
// reached by every thread) stops the run with an error naming the kernel,
// stage, block and thread. Data races do not stop it: they are reported in
// the result.
func Run(m *kir.Module, feeds map[string]*te.Array, opts Options) (*Result, error) {
	if err := kir.Verify(m); err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	if err := checkSizes(m); err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	capResident := opts.ResidentBlocks <= 0
	if opts.ResidentBlocks <= 0 {
		opts.ResidentBlocks = DefaultResidentBlocks
	}
	if opts.MaxRaces <= 0 {
		opts.MaxRaces = 10
	}
	s := &machine{opts: opts, gpu: m.GPU, capResident: capResident, mem: map[*kir.Buffer]*memory{}, gepoch: 1}
	used := 0
	for _, b := range m.Buffers {
		mem := &memory{buf: b, data: make([]float64, b.Len())}
		if b.Role.ReadOnly() {
			a, ok := feeds[b.Name]
			if !ok || a == nil {
				return nil, fmt.Errorf("sim: no feed for %s %s (%s)", b.Role, b.Name, typeString(b))
			}
			if err := a.CheckType(b.DType, b.Shape); err != nil {
				return nil, fmt.Errorf("sim: feed for %s %s: %w", b.Role, b.Name, err)
			}
			for i, v := range a.Data {
				mem.data[i] = round(b.DType, v)
			}
			used++
		} else if b != m.ErrorRecord { // which the host zeroes
			for i := range mem.data {
				mem.data[i] = math.NaN()
			}
		}
		if opts.Race {
			mem.shadow = newShadow(len(mem.data))
			mem.initcheck = b.Role == kir.Temp && b != m.ErrorRecord
		}
		s.mem[b] = mem
	}
	if used != len(feeds) {
		for name := range feeds {
			if b := m.Buffer(name); b == nil || !b.Role.ReadOnly() {
				return nil, fmt.Errorf("sim: feed %q names no input or param of module %s", name, m.Name)
			}
		}
	}
	res := &Result{Outputs: map[string]*te.Array{}}
	s.res = res
	for _, k := range m.Kernels {
		st, err := s.launch(k)
		if err != nil {
			return nil, fmt.Errorf("sim: %w", err)
		}
		res.Kernels = append(res.Kernels, st)
		s.done.Add(st.Counts)
	}
	offsets, _ := m.WorkspaceLayout()
	if err := s.checkWorkspace(offsets); err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	for _, b := range m.Outputs {
		a := te.NewArray(b.DType, b.Shape)
		copy(a.Data, s.mem[b].data)
		res.Outputs[b.Name] = a
	}
	if r := m.ErrorRecord; r != nil {
		for _, v := range s.mem[r].data {
			res.ErrorRecord = append(res.ErrorRecord, int32(v))
		}
		res.GatherError = kir.RecordError(res.ErrorRecord, m.Gathers)
	}
	return res, nil
}

// checkWorkspace reports two temporaries that a workspace layout (their
// byte offsets) places in the same bytes although the run accessed both in
// one grid epoch: the simulator gives every buffer memory of its own, so
// this is how it finds a layout under which the GPU would compute
// something else.
func (s *machine) checkWorkspace(offsets map[*kir.Buffer]int64) error {
	type extent struct {
		b      *kir.Buffer
		lo, hi int64
		mem    *memory
	}
	var xs []extent
	for b, off := range offsets {
		if mem := s.mem[b]; mem.first != 0 && b.Bytes() > 0 {
			xs = append(xs, extent{b, off, off + b.Bytes(), mem})
		}
	}
	slices.SortFunc(xs, func(x, y extent) int {
		return cmp.Or(cmp.Compare(x.lo, y.lo), cmp.Compare(x.b.Name, y.b.Name))
	})
	for i, x := range xs {
		for _, y := range xs[i+1:] {
			if y.lo >= x.hi {
				break
			}
			if x.mem.first <= y.mem.last && y.mem.first <= x.mem.last {
				return fmt.Errorf("workspace: temporaries %s (bytes %d-%d) and %s (bytes %d-%d) overlap but are both accessed in grid epoch %d",
					x.b.Name, x.lo, x.hi, y.b.Name, y.lo, y.hi, max(x.mem.first, y.mem.first))
			}
		}
	}
	return nil
}

func typeString(b *kir.Buffer) string {
	return (&te.Tensor{DType: b.DType, Shape: b.Shape}).TypeString()
}

// machine is the state of one Run.
type machine struct {
	opts Options
	// gpu, when set, is the GPU whose limits every launch must fit;
	// capResident says that all-resident grids get at most the blocks
	// that fit on it (ResidentBlocks was left to its default).
	gpu         *gpu.Model
	capResident bool
	mem         map[*kir.Buffer]*memory
	res         *Result
	gepoch      int32      // grid epoch: advanced by every kernel launch and grid sync
	done        kir.Counts // the work of the kernels finished, for Options.Progress
	// ctrs holds what the race check knows of the counters' signals.
	ctrs map[*kir.Buffer]*counterState
}

// progress reports the work done: the finished kernels' and current, that of
// the kernel running.
func (s *machine) progress(current kir.Counts) {
	if s.opts.Progress == nil {
		return
	}
	c := s.done
	c.Add(current)
	s.opts.Progress(c)
}

// memory is one buffer's contents and shadow.
type memory struct {
	buf    *kir.Buffer
	data   []float64
	shadow *shadow // nil without race detection
	// initcheck says that reads of elements never written are reported
	// (workspace temporaries).
	initcheck bool
	// first and last are the grid epochs of the first and last accesses
	// (0: none), checked against the workspace layout after the run.
	first, last int32
}

// touch records an access in grid epoch e.
func (mem *memory) touch(e int32) {
	if mem.first == 0 {
		mem.first = e
	}
	mem.last = e
}

// fault is a run-time error inside a kernel; compiled code panics with it.
type fault struct{ msg string }

func (f *fault) Error() string { return f.msg }

// launch runs one kernel.
func (s *machine) launch(k *kir.Kernel) (st KernelStats, err error) {
	s.gepoch++
	prog, err := compileKernel(k, s)
	if err != nil {
		return st, err
	}
	grid, err := s.gridSize(k)
	if err != nil {
		return st, err
	}
	st = KernelStats{Kernel: k.Name, Blocks: grid, Threads: k.Block}
	var cur *block
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(*fault)
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("kernel %s: %s", k.Name, f.msg)
			if cur != nil {
				err = fmt.Errorf("kernel %s%s, block %d: %s", k.Name, cur.stageNote(), cur.id, f.msg)
			}
		}
	}()
	if !k.HasGridSync() && !prog.counters {
		b := prog.newBlock(grid)
		cur = b
		for id := range grid {
			b.reset(id)
			prog.body(b, b.all)
			st.Counts.Add(b.counts)
			st.addBanks(k, b.banks)
			s.progress(st.Counts)
		}
		return st, nil
	}

	// An all-resident grid: blocks are coroutines that yield at grid syncs
	// and at counter waits not yet satisfied.
	blocks := make([]*block, grid)
	nexts := make([]func() (struct{}, bool), grid)
	for id := range grid {
		b := prog.newBlock(grid)
		b.reset(id)
		blocks[id] = b
		seq := func(yield func(struct{}) bool) {
			defer func() {
				// A block stopped at a grid sync unwinds quietly.
				if r := recover(); r != nil && r != any(errStopped) {
					panic(r)
				}
			}()
			b.yield = yield
			prog.body(b, b.all)
		}
		next, stop := iter.Pull(iter.Seq[struct{}](seq))
		defer stop()
		nexts[id] = next
	}
	atSync := make([]bool, grid)
	live := grid
	for live > 0 {
		ran := false
		for id, next := range nexts {
			b := blocks[id]
			if next == nil || atSync[id] || b.wait != nil && !b.wait.satisfied() {
				continue
			}
			ran = true
			cur = b
			if _, ok := next(); !ok {
				live--
				nexts[id] = nil
				st.Counts.Add(b.counts)
				st.addBanks(k, b.banks)
			} else if b.wait == nil {
				atSync[id] = true
			}
		}
		cur = nil
		if ran && live > 0 {
			continue
		}
		arrived := 0
		for _, at := range atSync {
			if at {
				arrived++
			}
		}
		switch {
		case arrived < live:
			return st, deadlock(k, blocks, atSync)
		case arrived > 0 && live < grid:
			return st, errors.New("grid sync reached by some blocks while others finished")
		}
		if arrived > 0 {
			clear(atSync)
			s.gepoch++
			st.GridSyncs++
		}
		if s.opts.Progress != nil {
			c := st.Counts
			for id, next := range nexts {
				if next != nil {
					c.Add(blocks[id].counts)
				}
			}
			s.progress(c)
		}
	}
	return st, nil
}

// gridSize returns the number of blocks k is launched with, after checking
// the launch against the GPU's limits (see the package comment).
func (s *machine) gridSize(k *kir.Kernel) (int, error) {
	grid := k.Grid.Size(s.opts.ResidentBlocks)
	g := s.gpu
	if g == nil {
		return grid, nil
	}
	if k.Block > g.MaxThreadsPerBlock {
		return 0, fmt.Errorf("kernel %s: launch of %d threads per block, more than the %d of GPU %s", k.Name, k.Block, g.MaxThreadsPerBlock, g.Name)
	}
	if g.CheckShared(k.Name, k.SharedBytes()) != nil {
		return 0, fmt.Errorf("kernel %s: launch with %d B of shared memory per block, more than the %d B of GPU %s", k.Name, k.SharedBytes(), g.SharedPerBlock, g.Name)
	}
	if !k.HasGridSync() && !k.HasCounters() {
		return grid, nil
	}
	fit := g.ResidentBlocks(gpu.Block{Threads: k.Block, SharedBytes: int(k.SharedBytes())})
	if grid > fit && s.capResident {
		grid = max(fit, 1)
	}
	if grid > fit {
		return 0, fmt.Errorf("kernel %s: cooperative launch of %d blocks of %d threads and %d B shared memory, but only %d fit on GPU %s at once (%d SMs)",
			k.Name, grid, k.Block, k.SharedBytes(), fit, g.Name, g.SMs)
	}
	return grid, nil
}

// round rounds v to storage type dt.
func round(dt te.DType, v float64) float64 {
	if dt == te.F32 {
		return float64(float32(v))
	}
	return te.Round(dt, v)
}

// race records a data race found by an access.
func (s *machine) race(r Race) {
	s.res.RaceCount++
	if len(s.res.Races) < s.opts.MaxRaces {
		s.res.Races = append(s.res.Races, r)
	}
}
