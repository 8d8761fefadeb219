package gpurun

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"tec/gpu"

	"tec/backend/kir"
)

// Options controls Run.
type Options struct {
	// Bench is the number of timed runs after the first (0: none).
	Bench int
	// Warmup is the number of untimed runs before the timed ones.
	Warmup int
}

// Result is what Run did and produced.
type Result struct {
	Device Device `json:"device"`
	// Launches are the kernels' launches, in order.
	Launches []LaunchInfo `json:"launches"`
	// Outputs are the bytes of each output of the plan, in order, as the
	// device stores them (see Decode).
	Outputs [][]byte `json:"-"`
	// Bench holds the timings, when Options.Bench was positive.
	Bench *Bench `json:"bench,omitempty"`
}

// LaunchInfo is how a kernel was launched.
type LaunchInfo struct {
	Kernel      string `json:"kernel"`
	Grid        int    `json:"grid"`
	Block       int    `json:"block"`
	Shared      int    `json:"shared"`
	Cooperative bool   `json:"cooperative"`
	// PerSM is the occupancy (blocks per SM) that sized a cooperative
	// launch's grid.
	PerSM int `json:"per_sm,omitempty"`
}

// Bench is the timing of a model's runs, measured with events on the
// stream: every kernel between two events, and the whole run from the
// first to the last.
type Bench struct {
	Runs   int   `json:"runs"`
	Warmup int   `json:"warmup"`
	Total  Stats `json:"total"`
	// Kernels are each kernel's times, in launch order.
	Kernels []Stats `json:"kernels"`
}

// Stats summarises times in milliseconds.
type Stats struct {
	Median float64 `json:"median_ms"`
	Min    float64 `json:"min_ms"`
	Max    float64 `json:"max_ms"`
}

// Summarize returns the median, min and max of ms, which must not be empty.
func Summarize(ms []float64) Stats {
	s := slices.Clone(ms)
	slices.Sort(s)
	n := len(s)
	median := s[n/2]
	if n%2 == 0 {
		median = (s[n/2-1] + s[n/2]) / 2
	}
	return Stats{Median: median, Min: s[0], Max: s[n-1]}
}

// Run runs plan p, whose code is image, on the driver's GPU: once to
// compute the outputs and then, with opts.Bench, opts.Warmup untimed and
// opts.Bench timed times. feeds holds the data of every input and param, by
// buffer index, as the device stores it (Encode). Run frees the memory it
// allocates; closing the driver is the caller's.
func Run(d Driver, p *Plan, image []byte, feeds map[int][]byte, opts Options) (res *Result, err error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	if opts.Bench < 0 || opts.Warmup < 0 {
		return nil, errors.New("the numbers of timed and warm-up runs must not be negative")
	}
	if err := checkFeeds(p, feeds); err != nil {
		return nil, err
	}
	dev, err := d.Device()
	if err != nil {
		return nil, fmt.Errorf("querying the device: %w", err)
	}
	mem := &memory{d: d}
	defer func() { err = errors.Join(err, mem.free()) }()
	r := &runner{d: d, p: p, dev: dev, mem: mem}
	if err := r.allocate(feeds, nil); err != nil {
		return nil, err
	}
	if err := r.prepare(image); err != nil {
		return nil, err
	}
	res = &Result{Device: dev, Launches: r.infos}
	if err := r.clearRecord(); err != nil {
		return nil, err
	}
	if err := r.runOnce(nil); err != nil {
		return nil, err
	}
	if err := r.wait(); err != nil {
		return nil, err
	}
	if res.Outputs, err = r.download(); err != nil {
		return nil, err
	}
	if opts.Bench > 0 {
		if res.Bench, err = r.bench(opts); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// checkFeeds checks that feeds holds exactly the data of p's inputs and
// params, each of its buffer's size.
func checkFeeds(p *Plan, feeds map[int][]byte) error {
	for i, b := range p.Buffers {
		data, ok := feeds[i]
		switch {
		case !b.Fed() && ok:
			return fmt.Errorf("data given for %s %s, which is no input or param", b.Role, b.Name)
		case b.Fed() && !ok:
			return fmt.Errorf("no data for %s %s %s", b.Role, b.Name, b.Type())
		case ok && int64(len(data)) != b.Bytes:
			return fmt.Errorf("%s %s %s: %d bytes of data, want %d", b.Role, b.Name, b.Type(), len(data), b.Bytes)
		}
	}
	for i := range feeds {
		if i < 0 || i >= len(p.Buffers) {
			return fmt.Errorf("data given for buffer %d, which the model does not have", i)
		}
	}
	return nil
}

// memory is the device memory of a run, or of a generation: what it
// allocates, it frees.
type memory struct {
	d     Driver
	owned []Ptr
}

// alloc allocates bytes for what (e.g. "input x").
func (m *memory) alloc(bytes int64, what string) (Ptr, error) {
	ptr, err := m.d.Alloc(bytes)
	if err != nil {
		return 0, fmt.Errorf("allocating %d bytes for %s: %w", bytes, what, err)
	}
	m.owned = append(m.owned, ptr)
	return ptr, nil
}

// upload allocates bytes for what and copies data (when not empty) there.
func (m *memory) upload(bytes int64, data []byte, what string) (Ptr, error) {
	ptr, err := m.alloc(bytes, what)
	if err != nil {
		return 0, err
	}
	if len(data) > 0 {
		if err := m.d.CopyToDevice(ptr, data); err != nil {
			return 0, fmt.Errorf("copying %s to the device: %w", what, err)
		}
	}
	return ptr, nil
}

// free frees everything alloc allocated.
func (m *memory) free() error {
	var errs []error
	for _, p := range m.owned {
		if err := m.d.Free(p); err != nil {
			errs = append(errs, fmt.Errorf("freeing device memory: %w", err))
		}
	}
	m.owned = nil
	return errors.Join(errs...)
}

// runner holds one model's device state: its buffers, its loaded code and
// its launches.
type runner struct {
	d     Driver
	p     *Plan
	dev   Device
	mem   *memory
	ptrs  []Ptr // each buffer's address
	ws    Ptr   // the workspace, 0 when empty
	loads []Launch
	infos []LaunchInfo
}

// allocate places every buffer that is not a temporary (at its address in
// given, by buffer index, or in an allocation of its own, into which its
// data in feeds, if any, is uploaded) and allocates the workspace.
func (r *runner) allocate(feeds map[int][]byte, given map[int]Ptr) error {
	r.ptrs = make([]Ptr, len(r.p.Buffers))
	if r.p.Workspace > 0 {
		ws, err := r.mem.alloc(r.p.Workspace, "the workspace of model "+r.p.Model)
		if err != nil {
			return err
		}
		r.ws = ws
	}
	for i, b := range r.p.Buffers {
		if b.Role == "temp" {
			r.ptrs[i] = r.ws + Ptr(b.Offset)
			continue
		}
		if ptr, ok := given[i]; ok {
			r.ptrs[i] = ptr
			continue
		}
		ptr, err := r.mem.upload(max(b.Bytes, 1), feeds[i], b.Role+" "+b.Name)
		if err != nil {
			return err
		}
		r.ptrs[i] = ptr
	}
	return nil
}

// prepare loads the code, looks up every kernel and works out its launch.
func (r *runner) prepare(image []byte) error {
	mod, err := r.d.LoadModule(image)
	if err != nil {
		err = fmt.Errorf("loading the %s of model %s: %w", r.p.Format, r.p.Model, err)
		if t := r.p.Target; t != "" && t != r.dev.Arch() {
			err = fmt.Errorf("%w"+"\n  hint: it was compiled for %s and %s is %s: compile for it (--target), or use PTX (--codegen ptx), which the driver compiles for the GPU it runs on",
				err, t, r.dev.Name, r.dev.Arch())
		}
		return err
	}
	funcs := map[string]Function{}
	optedIn := map[string]int{}
	for _, k := range r.p.Kernels {
		f, ok := funcs[k.Symbol]
		if !ok {
			if f, err = r.d.Function(mod, k.Symbol); err != nil {
				return fmt.Errorf("kernel %s: looking up %s: %w", k.Name, k.Symbol, err)
			}
			funcs[k.Symbol] = f
		}
		if k.Shared > 0 {
			if lim := r.dev.SharedPerBlockOptin; lim > 0 {
				if err := gpu.CheckShared(k.Name, int64(k.Shared), int64(lim)); err != nil {
					return fmt.Errorf("%w a block may use on %s"+
						"\n  hint: build for this GPU: --gpu with a description of it", err, r.dev.Name)
				}
			}
			if k.Shared > optedIn[k.Symbol] {
				if err := r.d.SetMaxDynamicShared(f, k.Shared); err != nil {
					return fmt.Errorf("kernel %s: opting in to %d B of shared memory: %w", k.Name, k.Shared, err)
				}
				optedIn[k.Symbol] = k.Shared
			}
		}
		l := Launch{Func: f, Grid: k.Blocks, Block: k.Block, Shared: k.Shared, Args: r.args(k)}
		info := LaunchInfo{Kernel: k.Name, Block: k.Block, Shared: k.Shared}
		if k.Resident {
			perSM, err := r.d.Occupancy(f, k.Block, k.Shared)
			if err != nil {
				return fmt.Errorf("kernel %s: occupancy: %w", k.Name, err)
			}
			if l.Grid, err = ResidentGrid(k, r.dev, perSM); err != nil {
				return err
			}
			l.Cooperative, info.Cooperative, info.PerSM = true, true, perSM
		}
		info.Grid = l.Grid
		r.loads = append(r.loads, l)
		r.infos = append(r.infos, info)
	}
	return nil
}

// ResidentGrid returns the number of blocks of a cooperative launch of k
// on dev, where perSM of its blocks fit on one SM: all that fit at once,
// at most k.Blocks when that is set. It fails, with the numbers and what
// to do, when the device cannot launch k cooperatively.
func ResidentGrid(k Kernel, dev Device, perSM int) (int, error) {
	if !dev.Cooperative {
		return 0, fmt.Errorf("kernel %s synchronises its whole grid, but %s does not support cooperative launches"+
			"\n  hint: compile at -O2, whose kernels do not synchronise their grids, or use a GPU that supports them (compute capability 6.0 or later, not under MPS)",
			k.Name, dev.Name)
	}
	fit := perSM * dev.SMs
	if fit < 1 {
		return 0, fmt.Errorf("kernel %s synchronises its whole grid, so all its blocks must be resident at once, but %d SMs × %d blocks of %d threads with %d B of dynamic shared memory per SM = %d blocks fit on %s"+
			"\n  hint: use fewer threads or less shared memory per block (describe this GPU to the compiler with --gpu FILE.json), or compile at -O2, whose kernels do not synchronise their grids",
			k.Name, dev.SMs, perSM, k.Block, k.Shared, fit, dev.Name)
	}
	if k.Blocks > 0 && k.Blocks < fit {
		return k.Blocks, nil
	}
	return fit, nil
}

// args returns k's arguments: the address of each buffer, or the
// workspace.
func (r *runner) args(k Kernel) []Ptr {
	args := make([]Ptr, len(k.Args))
	for i, a := range k.Args {
		if a == WorkspaceArg {
			args[i] = r.ws
		} else {
			args[i] = r.ptrs[a]
		}
	}
	return args
}

// runOnce queues every launch; with events (one more than launches), it
// records events[i] before launch i and the last after them all.
func (r *runner) runOnce(events []Event) error {
	for i, l := range r.loads {
		if events != nil {
			if err := r.d.Record(events[i]); err != nil {
				return fmt.Errorf("recording an event: %w", err)
			}
		}
		if err := r.d.Launch(l); err != nil {
			return fmt.Errorf("launching kernel %s (%d blocks of %d threads, %d B dynamic shared memory%s): %w",
				r.p.Kernels[i].Name, l.Grid, l.Block, l.Shared, coopNote(l.Cooperative), err)
		}
	}
	if events != nil {
		if err := r.d.Record(events[len(r.loads)]); err != nil {
			return fmt.Errorf("recording an event: %w", err)
		}
	}
	return nil
}

func coopNote(coop bool) string {
	if coop {
		return ", cooperative"
	}
	return ""
}

// wait waits for the queued launches and returns the error of a kernel
// that failed, or the index out of range that the error record reports
// ("gather index ids[3] = ...").
func (r *runner) wait() error {
	if err := r.d.Synchronize(); err != nil {
		return fmt.Errorf("running model %s: %w", r.p.Model, err)
	}
	return r.checkRecord()
}

// clearRecord zeroes the error record, if the model has one.
func (r *runner) clearRecord() error {
	if r.p.ErrorRecord == 0 {
		return nil
	}
	if err := r.d.CopyToDevice(r.ptrs[r.p.ErrorRecord-1], make([]byte, 4*kir.ErrorRecordWords)); err != nil {
		return fmt.Errorf("clearing the error record: %w", err)
	}
	return nil
}

// checkRecord reads the error record, if the model has one, and returns
// the gather index out of range that it reports.
func (r *runner) checkRecord() error {
	if r.p.ErrorRecord == 0 {
		return nil
	}
	data := make([]byte, 4*kir.ErrorRecordWords)
	if err := r.d.CopyFromDevice(data, r.ptrs[r.p.ErrorRecord-1]); err != nil {
		return fmt.Errorf("reading the error record: %w", err)
	}
	words := make([]int32, kir.ErrorRecordWords)
	for i := range words {
		words[i] = int32(binary.LittleEndian.Uint32(data[4*i:]))
	}
	return kir.RecordError(words, r.p.Gathers)
}

// download copies every output to the host.
func (r *runner) download() ([][]byte, error) {
	outs := make([][]byte, len(r.p.Outputs))
	for i := range r.p.Outputs {
		var err error
		if outs[i], err = r.downloadOutput(i); err != nil {
			return nil, err
		}
	}
	return outs, nil
}

// downloadOutput copies output i to the host.
func (r *runner) downloadOutput(i int) ([]byte, error) {
	o := r.p.Outputs[i]
	b := r.p.Buffers[o]
	out := make([]byte, b.Bytes)
	if b.Bytes == 0 {
		return out, nil
	}
	if err := r.d.CopyFromDevice(out, r.ptrs[o]); err != nil {
		return nil, fmt.Errorf("copying output %s from the device: %w", b.Name, err)
	}
	return out, nil
}

// bench runs the model opts.Warmup times, then times opts.Bench runs.
func (r *runner) bench(opts Options) (*Bench, error) {
	for range opts.Warmup {
		if err := r.runOnce(nil); err != nil {
			return nil, err
		}
	}
	events := make([]Event, len(r.loads)+1)
	for i := range events {
		ev, err := r.d.NewEvent()
		if err != nil {
			return nil, fmt.Errorf("creating an event: %w", err)
		}
		events[i] = ev
	}
	total := make([]float64, opts.Bench)
	kernels := make([][]float64, len(r.loads))
	for run := range opts.Bench {
		if err := r.runOnce(events); err != nil {
			return nil, err
		}
		if err := r.d.Synchronize(); err != nil {
			return nil, fmt.Errorf("running model %s: %w", r.p.Model, err)
		}
		for i := range r.loads {
			ms, err := r.d.Elapsed(events[i], events[i+1])
			if err != nil {
				return nil, fmt.Errorf("timing kernel %s: %w", r.p.Kernels[i].Name, err)
			}
			kernels[i] = append(kernels[i], ms)
		}
		ms, err := r.d.Elapsed(events[0], events[len(r.loads)])
		if err != nil {
			return nil, fmt.Errorf("timing model %s: %w", r.p.Model, err)
		}
		total[run] = ms
	}
	b := &Bench{Runs: opts.Bench, Warmup: opts.Warmup, Total: Summarize(total)}
	for _, ms := range kernels {
		b.Kernels = append(b.Kernels, Summarize(ms))
	}
	return b, nil
}
