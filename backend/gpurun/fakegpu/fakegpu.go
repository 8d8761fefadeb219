// Package fakegpu implements gpurun.Driver on the CPU, for tests without a
// GPU. It runs no GPU code, but it checks every call as the CUDA driver
// would, and more: that allocations are freed and copies stay inside them,
// that every launch is the module's next kernel with its grid, block,
// shared memory and cooperative flag, and that its arguments point at the
// buffers of kir.Module.KernelArgs, in order (the same address for a
// buffer in every launch, temporaries at their workspace offsets). Once the
// launches of a whole run are queued, it executes the module with the
// kernel-IR simulator on the inputs and params in its memory and stores the
// outputs there, so that what the host reads back is what the kernels
// compute. Events read a clock that each launch advances by KernelTime.
//
// A fake GPU may run several modules (NewModules), as a generation runs a
// prefill and a decode model: each LoadModule is one of them, told apart by
// its code, and each module's launches are checked against its own kernels.
// Buffers of different modules may share an address (a param or a cache
// that both models use), which the fake reads and updates in place.
package fakegpu

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"tec/backend/gpurun"
	"tec/backend/kir"
	"tec/backend/sim"
	"tec/gpu"
	"tec/te"
)

// Code is a module for a fake GPU to run: its kernel IR, its code and each
// kernel's function symbol in the code.
type Code struct {
	Module  *kir.Module
	Image   []byte
	Symbols map[*kir.Kernel]string
}

// GPU is a fake GPU that runs kir.Modules.
type GPU struct {
	// Dev is what Device reports.
	Dev gpurun.Device
	// PerSM is what Occupancy reports: blocks per SM.
	PerSM int
	// KernelTime returns the milliseconds a launch of the named kernel
	// takes, the nth (from 0) of the GPU's launches of it; nil: 1 ms.
	KernelTime func(kernel string, n int) float64
	// Fail, when not nil, is asked before each call (by its method name);
	// an error it returns is the call's.
	Fail func(call string) error
	// Calls records the calls, one line each.
	Calls []string

	mods  []*module
	funcs []function // by handle
	optIn map[gpurun.Function]int

	next   gpurun.Ptr
	allocs map[gpurun.Ptr][]byte // by base address

	launches map[string]int // by module and kernel
	clock    float64
	events   []float64 // each event's time; NaN until recorded
	closed   bool
}

// module is a module the fake runs, and the state of its current run.
type module struct {
	m       *kir.Module
	layout  *kir.Layout
	image   []byte
	kernels map[string][]*kir.Kernel // by symbol
	loaded  bool
	queued  int // launches of the current run
	bound   map[*kir.Buffer]gpurun.Ptr
}

// function is a function handle's module (an index of GPU.mods) and symbol.
type function struct {
	mod    int
	symbol string
}

// New returns a fake GPU that runs module m from code image, whose
// functions are named by symbols. A nil image matches any code.
func New(m *kir.Module, image []byte, symbols map[*kir.Kernel]string) *GPU {
	return NewModules(Code{Module: m, Image: image, Symbols: symbols})
}

// NewModules returns a fake GPU that runs the modules of codes, each loaded
// from its own code (LoadModule tells them apart by it).
func NewModules(codes ...Code) *GPU {
	g := &GPU{
		Dev:      gpurun.Device{Name: "fake GPU", Major: 8, Minor: 0, SMs: 2, Cooperative: true, SharedPerBlockOptin: 163 << 10, Driver: "fake"},
		PerSM:    1,
		optIn:    map[gpurun.Function]int{},
		next:     0x7f0000000000,
		allocs:   map[gpurun.Ptr][]byte{},
		launches: map[string]int{},
	}
	for _, c := range codes {
		mod := &module{m: c.Module, layout: c.Module.Layout(), image: c.Image, kernels: map[string][]*kir.Kernel{}, bound: map[*kir.Buffer]gpurun.Ptr{}}
		for _, k := range c.Module.Kernels {
			mod.kernels[c.Symbols[k]] = append(mod.kernels[c.Symbols[k]], k)
		}
		g.mods = append(g.mods, mod)
	}
	return g
}

func (g *GPU) call(name, format string, args ...any) error {
	g.Calls = append(g.Calls, name+"("+fmt.Sprintf(format, args...)+")")
	if g.closed {
		return fmt.Errorf("fakegpu: %s after Close", name)
	}
	if g.Fail != nil {
		return g.Fail(name)
	}
	return nil
}

// Device implements gpurun.Driver.
func (g *GPU) Device() (gpurun.Device, error) {
	if err := g.call("Device", ""); err != nil {
		return gpurun.Device{}, err
	}
	return g.Dev, nil
}

// Alloc implements gpurun.Driver.
func (g *GPU) Alloc(bytes int64) (gpurun.Ptr, error) {
	if err := g.call("Alloc", "%d", bytes); err != nil {
		return 0, err
	}
	if bytes <= 0 {
		return 0, fmt.Errorf("fakegpu: Alloc(%d): CUDA_ERROR_INVALID_VALUE", bytes)
	}
	p := g.next
	g.allocs[p] = make([]byte, bytes)
	g.next += gpurun.Ptr((bytes + 511) &^ 255) // 256-aligned, with a gap
	return p, nil
}

// Free implements gpurun.Driver.
func (g *GPU) Free(p gpurun.Ptr) error {
	if err := g.call("Free", "%#x", p); err != nil {
		return err
	}
	if _, ok := g.allocs[p]; !ok {
		return fmt.Errorf("fakegpu: Free(%#x): not an allocation", p)
	}
	delete(g.allocs, p)
	return nil
}

// find returns the allocation that holds [p, p+n) and p's offset in it.
func (g *GPU) find(p gpurun.Ptr, n int64) ([]byte, int64, error) {
	for base, mem := range g.allocs {
		if p >= base && p < base+gpurun.Ptr(len(mem)) {
			off := int64(p - base)
			if off+n > int64(len(mem)) {
				return nil, 0, fmt.Errorf("fakegpu: %d bytes at %#x overrun the %d-byte allocation at %#x", n, p, len(mem), base)
			}
			return mem, off, nil
		}
	}
	return nil, 0, fmt.Errorf("fakegpu: %#x is in no allocation", p)
}

// CopyToDevice implements gpurun.Driver.
func (g *GPU) CopyToDevice(dst gpurun.Ptr, src []byte) error {
	if err := g.call("CopyToDevice", "%#x, %d", dst, len(src)); err != nil {
		return err
	}
	mem, off, err := g.find(dst, int64(len(src)))
	if err != nil {
		return err
	}
	copy(mem[off:], src)
	return nil
}

// CopyFromDevice implements gpurun.Driver.
func (g *GPU) CopyFromDevice(dst []byte, src gpurun.Ptr) error {
	if err := g.call("CopyFromDevice", "%#x, %d", src, len(dst)); err != nil {
		return err
	}
	if err := g.idle("a copy from the device"); err != nil {
		return err
	}
	mem, off, err := g.find(src, int64(len(dst)))
	if err != nil {
		return err
	}
	copy(dst, mem[off:])
	return nil
}

// idle fails when some module has launches of a run queued: what must
// wait for the stream's work (a copy from the device) would see a run
// half done.
func (g *GPU) idle(what string) error {
	for _, mod := range g.mods {
		if mod.queued != 0 {
			return fmt.Errorf("fakegpu: %s with %d of %d launches of a run of %s queued", what, mod.queued, len(mod.m.Kernels), mod.m.Name)
		}
	}
	return nil
}

// LoadModule implements gpurun.Driver: the module is the one whose code
// image is (a module of nil code matches any, when it is the only one).
// Module handles are the modules' indexes plus one.
func (g *GPU) LoadModule(image []byte) (gpurun.Module, error) {
	if err := g.call("LoadModule", "%d bytes", len(image)); err != nil {
		return 0, err
	}
	for i, mod := range g.mods {
		if slices.Equal(image, mod.image) || mod.image == nil && len(g.mods) == 1 {
			mod.loaded = true
			return gpurun.Module(i + 1), nil
		}
	}
	return 0, fmt.Errorf("fakegpu: LoadModule: not the code of any module")
}

// Function implements gpurun.Driver.
func (g *GPU) Function(m gpurun.Module, name string) (gpurun.Function, error) {
	if err := g.call("Function", "%s", name); err != nil {
		return 0, err
	}
	i := int(m) - 1
	if i < 0 || i >= len(g.mods) || !g.mods[i].loaded {
		return 0, fmt.Errorf("fakegpu: Function(%d, %s): no such module", m, name)
	}
	if _, ok := g.mods[i].kernels[name]; !ok {
		return 0, fmt.Errorf("fakegpu: Function(%s): CUDA_ERROR_NOT_FOUND", name)
	}
	g.funcs = append(g.funcs, function{mod: i, symbol: name})
	return gpurun.Function(len(g.funcs) - 1), nil
}

func (g *GPU) function(f gpurun.Function) (function, error) {
	if f < 0 || int(f) >= len(g.funcs) {
		return function{}, fmt.Errorf("fakegpu: function handle %d: CUDA_ERROR_INVALID_HANDLE", f)
	}
	return g.funcs[f], nil
}

// SetMaxDynamicShared implements gpurun.Driver.
func (g *GPU) SetMaxDynamicShared(f gpurun.Function, bytes int) error {
	fn, err := g.function(f)
	if err != nil {
		return err
	}
	if err := g.call("SetMaxDynamicShared", "%s, %d", fn.symbol, bytes); err != nil {
		return err
	}
	if gpu.CheckShared(fn.symbol, int64(bytes), int64(g.Dev.SharedPerBlockOptin)) != nil {
		return fmt.Errorf("fakegpu: %d B of dynamic shared memory: CUDA_ERROR_INVALID_VALUE", bytes)
	}
	g.optIn[f] = bytes
	return nil
}

// Occupancy implements gpurun.Driver.
func (g *GPU) Occupancy(f gpurun.Function, block, shared int) (int, error) {
	fn, err := g.function(f)
	if err != nil {
		return 0, err
	}
	if err := g.call("Occupancy", "%s, %d, %d", fn.symbol, block, shared); err != nil {
		return 0, err
	}
	return g.PerSM, nil
}

// Launch implements gpurun.Driver: it checks the launch against the next
// kernel of the function's module and, after a whole run's launches,
// executes the module.
func (g *GPU) Launch(l gpurun.Launch) error {
	fn, err := g.function(l.Func)
	if err != nil {
		return err
	}
	coop := ""
	if l.Cooperative {
		coop = ", cooperative"
	}
	if err := g.call("Launch", "%s, grid %d, block %d, shared %d%s", fn.symbol, l.Grid, l.Block, l.Shared, coop); err != nil {
		return err
	}
	mod := g.mods[fn.mod]
	for _, o := range g.mods {
		if o != mod && o.queued != 0 {
			return fmt.Errorf("fakegpu: a launch of module %s with %d launches of a run of %s queued", mod.m.Name, o.queued, o.m.Name)
		}
	}
	k := mod.m.Kernels[mod.queued] // a loaded function is a kernel's
	if err := g.check(mod, k, fn.symbol, l); err != nil {
		return fmt.Errorf("fakegpu: launch %d (kernel %s): %w", mod.queued, k.Name, err)
	}
	g.clock += g.kernelTime(mod.m.Name + "/" + k.Name)
	mod.queued++
	if mod.queued < len(mod.m.Kernels) {
		return nil
	}
	mod.queued = 0
	return g.execute(mod)
}

// kernelTime returns the time of a launch of the kernel key (module/kernel).
func (g *GPU) kernelTime(key string) float64 {
	n := g.launches[key]
	g.launches[key]++
	if g.KernelTime == nil {
		return 1
	}
	_, kernel, _ := strings.Cut(key, "/")
	return g.KernelTime(kernel, n)
}

// check checks launch l of function sym as the launch of mod's kernel k.
func (g *GPU) check(mod *module, k *kir.Kernel, sym string, l gpurun.Launch) error {
	if !slices.Contains(mod.kernels[sym], k) {
		return fmt.Errorf("function %s is not the kernel's", sym)
	}
	want := k.Grid.Blocks
	if k.Grid.Resident {
		want = k.Grid.Size(g.Dev.SMs * g.PerSM)
	}
	if l.Grid != want || l.Block != k.Block {
		return fmt.Errorf("grid %d of %d threads, want %d of %d", l.Grid, l.Block, want, k.Block)
	}
	if l.Cooperative != k.Grid.Resident {
		return fmt.Errorf("cooperative %t, want %t", l.Cooperative, k.Grid.Resident)
	}
	shared := 0
	if gpu.DynamicShared(k.SharedBytes()) {
		shared = int(gpurun.DynamicShared(k))
	}
	if l.Shared != shared {
		return fmt.Errorf("%d B of dynamic shared memory, want %d", l.Shared, shared)
	}
	if gpu.DynamicShared(int64(l.Shared)) && g.optIn[l.Func] < l.Shared {
		return fmt.Errorf("%d B of dynamic shared memory without opting in: CUDA_ERROR_INVALID_VALUE", l.Shared)
	}
	return g.checkArgs(mod, k, l.Args)
}

// checkArgs checks that args point at k's buffers, in the order of the
// emitted kernel's parameters.
func (g *GPU) checkArgs(mod *module, k *kir.Kernel, args []gpurun.Ptr) error {
	bufs, ws := mod.m.KernelArgs(k)
	want := len(bufs)
	if ws {
		want++
	}
	if len(args) != want {
		return fmt.Errorf("%d arguments, want %d", len(args), want)
	}
	if ws {
		wsp := args[len(args)-1]
		if _, off, err := g.find(wsp, mod.layout.Bytes); err != nil || off != 0 {
			return fmt.Errorf("the workspace argument %#x is not the start of a %d-byte allocation", wsp, mod.layout.Bytes)
		}
		for _, b := range k.Params {
			if b.Role == kir.Temp {
				if err := mod.bind(b, wsp+gpurun.Ptr(mod.layout.Offsets[b])); err != nil {
					return err
				}
			}
		}
	}
	for i, b := range bufs {
		p := args[i]
		if b.Role == kir.Temp {
			mem, off, err := g.find(p, b.Bytes())
			if err != nil {
				return fmt.Errorf("argument %d (%s): %w", i, b.Name, err)
			}
			if off != mod.layout.Offsets[b] || int64(len(mem)) < mod.layout.Bytes {
				return fmt.Errorf("argument %d (temporary %s) is at byte %d of a %d-byte allocation, want byte %d of the %d-byte workspace",
					i, b.Name, off, len(mem), mod.layout.Offsets[b], mod.layout.Bytes)
			}
		} else {
			mem, ok := g.allocs[p]
			if !ok || int64(len(mem)) != max(b.Bytes(), 1) {
				return fmt.Errorf("argument %d (%s %s, %d bytes) is %#x, not an allocation of its size", i, b.Role, b.Name, b.Bytes(), p)
			}
		}
		if err := mod.bind(b, p); err != nil {
			return fmt.Errorf("argument %d: %w", i, err)
		}
	}
	return nil
}

// bind records that buffer b is at p, which it must be in every launch,
// and which no other buffer of the module but a temporary sharing
// workspace may be.
func (mod *module) bind(b *kir.Buffer, p gpurun.Ptr) error {
	if q, ok := mod.bound[b]; ok && q != p {
		return fmt.Errorf("%s %s is at %#x, but was at %#x", b.Role, b.Name, p, q)
	}
	for o, q := range mod.bound {
		if q == p && o != b && (o.Role != kir.Temp || b.Role != kir.Temp) && o.Bytes() > 0 && b.Bytes() > 0 {
			return fmt.Errorf("%s %s and %s %s are both at %#x", o.Role, o.Name, b.Role, b.Name, p)
		}
	}
	mod.bound[b] = p
	return nil
}

// execute runs mod with the simulator on the inputs and params in memory
// and stores its outputs there.
func (g *GPU) execute(mod *module) error {
	feeds := map[string]*te.Array{}
	for _, b := range mod.m.Buffers {
		if !b.Role.ReadOnly() {
			continue
		}
		a, err := g.read(mod, b)
		if err != nil {
			return err
		}
		feeds[b.Name] = a
	}
	res, err := sim.Run(mod.m, feeds, sim.Options{ResidentBlocks: g.Dev.SMs * g.PerSM, Race: true, DeviceGathers: true})
	if err != nil {
		return fmt.Errorf("fakegpu: %w", err)
	}
	if res.RaceCount > 0 {
		return fmt.Errorf("fakegpu: %d races, the first: %s", res.RaceCount, res.Races[0])
	}
	if err := g.writeRecord(mod, res.ErrorRecord); err != nil {
		return err
	}
	for _, b := range mod.m.Outputs {
		if b.Role != kir.Output && !b.InPlace {
			continue // an input or param given back as it is
		}
		p, ok := mod.bound[b]
		if !ok {
			return fmt.Errorf("fakegpu: output %s was passed to no kernel", b.Name)
		}
		data, err := gpurun.Encode(res.Outputs[b.Name], planBuffer(b))
		if err != nil {
			return err
		}
		mem, off, err := g.find(p, int64(len(data)))
		if err != nil {
			return err
		}
		copy(mem[off:], data)
	}
	return nil
}

// writeRecord stores the module's error record, as the run left it, where
// the launches put it.
func (g *GPU) writeRecord(mod *module, words []int32) error {
	r := mod.m.ErrorRecord
	if r == nil {
		return nil
	}
	p, ok := mod.bound[r]
	if !ok {
		return nil // no kernel reports to it
	}
	mem, off, err := g.find(p, r.Bytes())
	if err != nil {
		return err
	}
	for i, w := range words {
		binary.LittleEndian.PutUint32(mem[off+int64(4*i):], uint32(w))
	}
	return nil
}

// read returns the data of buffer b from memory, from where the launches
// put it.
func (g *GPU) read(mod *module, b *kir.Buffer) (*te.Array, error) {
	p, ok := mod.bound[b]
	if !ok {
		return te.NewArray(b.DType, b.Shape), nil // read by no kernel
	}
	mem, off, err := g.find(p, b.Bytes())
	if err != nil {
		return nil, err
	}
	return gpurun.Decode(mem[off:off+b.Bytes()], planBuffer(b))
}

func planBuffer(b *kir.Buffer) gpurun.Buffer {
	return gpurun.Buffer{Name: b.Name, Role: b.Role.String(), DType: b.DType.String(), Shape: b.Shape, Bytes: b.Bytes()}
}

// NewEvent implements gpurun.Driver.
func (g *GPU) NewEvent() (gpurun.Event, error) {
	if err := g.call("NewEvent", ""); err != nil {
		return 0, err
	}
	g.events = append(g.events, -1)
	return gpurun.Event(len(g.events) - 1), nil
}

// Record implements gpurun.Driver.
func (g *GPU) Record(e gpurun.Event) error {
	if err := g.call("Record", "%d", e); err != nil {
		return err
	}
	if e < 0 || int(e) >= len(g.events) {
		return fmt.Errorf("fakegpu: event %d: CUDA_ERROR_INVALID_HANDLE", e)
	}
	g.events[e] = g.clock
	return nil
}

// Elapsed implements gpurun.Driver.
func (g *GPU) Elapsed(start, end gpurun.Event) (float64, error) {
	if err := g.call("Elapsed", "%d, %d", start, end); err != nil {
		return 0, err
	}
	for _, e := range []gpurun.Event{start, end} {
		if e < 0 || int(e) >= len(g.events) || g.events[e] < 0 {
			return 0, fmt.Errorf("fakegpu: event %d not recorded: CUDA_ERROR_INVALID_HANDLE", e)
		}
	}
	return g.events[end] - g.events[start], nil
}

// Synchronize implements gpurun.Driver.
func (g *GPU) Synchronize() error {
	if err := g.call("Synchronize", ""); err != nil {
		return err
	}
	return g.idle("Synchronize")
}

// Close implements gpurun.Driver; it fails if memory was not freed.
func (g *GPU) Close() error {
	if err := g.call("Close", ""); err != nil {
		return err
	}
	g.closed = true
	if n := len(g.allocs); n > 0 {
		return fmt.Errorf("fakegpu: %d allocations not freed", n)
	}
	return nil
}

// Launches returns the recorded Launch calls.
func (g *GPU) Launches() []string {
	var out []string
	for _, c := range g.Calls {
		if strings.HasPrefix(c, "Launch(") {
			out = append(out, c)
		}
	}
	return out
}
