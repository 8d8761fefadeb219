package gpurun

import (
	"errors"
	"fmt"
	"slices"
	"sort"

	"tec/generate"
	"tec/te"
)

// Model is one module of a generation: its plan and its code.
type Model struct {
	Plan  *Plan
	Image []byte
}

// GenerateJob is a generation for tec-cuda to run: a prefill model over
// the prompts, then Steps runs of a decode model at most, each fed the
// tokens the run before chose: each model's next (greedy), or tokens drawn
// on the host from its logits as Sampling says.
//
// Prefill takes ids: i32[B, P] (the prompts) and decode ids: i32[B] and
// pos: i32[B]; each has the output next: i32[B]. The inputs that both
// update in place (Buffer.InPlace) are the caches: the same names, dtypes
// and shapes in both, on the device once, zeroed before the prefill and
// never copied. Every other input and param is shared by name between the
// two (one device buffer per name) and fed once.
type GenerateJob struct {
	Prefill, Decode Model
	// Feeds are, by name, the data of the prompts (prefill's ids) and of
	// every input and param of the two models but the caches and decode's
	// ids and pos, as the device stores them (Encode).
	Feeds map[string][]byte
	// Steps is the number of decode steps, at most.
	Steps int
	// Sampling picks each token (generate.Sampling; the zero value is
	// greedy). Unless greedy, each run's logits are copied to the host:
	// B·V values of the logits' dtype (4 bytes each in f32) per run.
	Sampling generate.Sampling
	// Logits names, when sampling, each model's output of logits, [B, V]
	// (the prefill's, the decode step's).
	Logits [2]string
	// EOS are the end-of-sequence tokens: a sequence ends at the first it
	// gives (generate.Loop).
	EOS []int
}

// GenerateResult is what Generate did and produced.
type GenerateResult struct {
	Device Device `json:"device"`
	// PrefillLaunches and DecodeLaunches are each model's launches.
	PrefillLaunches []LaunchInfo `json:"prefill_launches"`
	DecodeLaunches  []LaunchInfo `json:"decode_launches"`
	// Tokens are each sequence's tokens: prefill's, then each step's, up
	// to and with the end-of-sequence token it ended at (Steps+1 at most).
	Tokens [][]int32 `json:"tokens"`
	// Finish says why each sequence ended (generate.Finish).
	Finish []generate.Finish `json:"finish"`
	// PrefillMS and StepMS are the times of the prefill's kernels and of
	// each step's, in milliseconds, measured with events on the stream.
	PrefillMS float64   `json:"prefill_ms"`
	StepMS    []float64 `json:"step_ms"`
}

// generation is a checked GenerateJob's layout: where each of the
// protocol's buffers is in the two plans.
type generation struct {
	batch, prompt int    // B and P
	prompts       int    // prefill's ids
	ids, pos      int    // decode's
	next          [2]int // each model's output index of next
	logits        [2]int // each model's output index of its logits, when sampling
	// shared are the names of the buffers both models (or one) take from
	// one device buffer: the caches and every fed buffer but the three
	// above, each with the buffer that describes it.
	shared map[string]Buffer
	names  []string // shared's names, sorted
}

// Check reports the first way in which j does not follow the protocol
// (generate.Check over the two plans' signatures, worded Terse), or lacks
// or has extra feeds; Generate and ReadGenerateJob check it too.
func (j *GenerateJob) Check() error {
	_, err := j.check()
	return err
}

// check checks j against the protocol and returns its layout.
func (j *GenerateJob) check() (*generation, error) {
	if j.Prefill.Plan == nil || j.Decode.Plan == nil {
		return nil, errors.New("a generation needs a prefill and a decode model")
	}
	pre, dec := j.Prefill.Plan, j.Decode.Plan
	for _, p := range []*Plan{pre, dec} {
		if err := p.Check(); err != nil {
			return nil, fmt.Errorf("model %s: %w", p.Model, err)
		}
	}
	if j.Steps < 0 {
		return nil, fmt.Errorf("%d decode steps: want 0 or more", j.Steps)
	}
	if err := j.Sampling.Check(); err != nil {
		return nil, err
	}
	for _, id := range j.EOS {
		if id < 0 {
			return nil, fmt.Errorf("end-of-sequence token %d: want 0 or more", id)
		}
	}
	ps, pi := signature(pre)
	ds, di := signature(dec)
	l, err := generate.Check(ps, ds, generate.Terse)
	if err != nil {
		return nil, err
	}
	g := &generation{batch: l.B, prompt: l.P, prompts: pi[l.Prompts], ids: di[l.IDs], pos: di[l.Pos], next: l.Next, shared: map[string]Buffer{}}
	fed := map[string]Buffer{} // by name, the prefill's where it has one
	for _, p := range []*Plan{dec, pre} {
		for _, b := range p.Buffers {
			if b.Fed() {
				fed[b.Name] = b
			}
		}
	}
	for _, name := range append(slices.Clone(l.Caches), l.Shared...) {
		g.shared[name] = fed[name]
		g.names = append(g.names, name)
	}
	sort.Strings(g.names)
	if !j.Sampling.Greedy() {
		for m, p := range []*Plan{pre, dec} {
			if g.logits[m], err = logitsOutput(p, j.Logits[m], g.batch); err != nil {
				return nil, err
			}
		}
	}
	return g, g.checkFeeds(j.Feeds, pre.Buffers[g.prompts])
}

// logitsOutput returns the index in p's outputs of its logits name, which
// sampling draws from: floating point, [b, V].
func logitsOutput(p *Plan, name string, b int) (int, error) {
	for i, o := range p.Outputs {
		buf := p.Buffers[o]
		if buf.Name != name {
			continue
		}
		if dt, ok := te.ParseDType(buf.DType); !ok || !dt.IsFloat() || len(buf.Shape) != 2 || buf.Shape[0] != b || buf.Shape[1] < 1 {
			return 0, fmt.Errorf("model %s: the logits to sample from, output %s, are %s, want floating point [%d, V]", p.Model, name, buf.Type(), b)
		}
		return i, nil
	}
	return 0, fmt.Errorf("model %s has no output %q, the logits to sample from", p.Model, name)
}

// signature returns p's signature for the protocol's checks, and the
// buffer index of each of its fed entries.
func signature(p *Plan) (*generate.Signature, []int) {
	s := &generate.Signature{Model: p.Model}
	var index []int
	for i, b := range p.Buffers {
		if b.Fed() {
			s.Fed = append(s.Fed, entry(b))
			index = append(index, i)
		}
	}
	for _, o := range p.Outputs {
		s.Outputs = append(s.Outputs, entry(p.Buffers[o]))
	}
	return s, index
}

// entry describes b for the protocol's checks.
func entry(b Buffer) generate.Entry {
	return generate.Entry{Name: b.Name, Role: b.Role, DType: b.DType, Shape: b.Shape, InPlace: b.InPlace}
}

// checkFeeds checks that feeds holds the prompts and the data of every
// shared buffer but the caches, each of its size, and nothing else.
func (g *generation) checkFeeds(feeds map[string][]byte, prompts Buffer) error {
	for name, data := range feeds {
		b, ok := g.shared[name]
		switch {
		case name == generate.IDs:
			b = prompts
		case !ok:
			return fmt.Errorf("data given for %s, which neither model takes", name)
		case b.InPlace:
			return fmt.Errorf("data given for %s, a cache that the models update in place: caches start as zeros", name)
		}
		if int64(len(data)) != b.Bytes {
			return fmt.Errorf("%s %s %s: %d bytes of data, want %d", b.Role, b.Name, b.Type(), len(data), b.Bytes)
		}
	}
	if _, ok := feeds[generate.IDs]; !ok {
		return fmt.Errorf("no prompts: no data for input %s %s", generate.IDs, prompts.Type())
	}
	for _, name := range g.names {
		if b := g.shared[name]; !b.InPlace && feeds[name] == nil && b.Bytes > 0 {
			return fmt.Errorf("no data for %s %s %s", b.Role, b.Name, b.Type())
		}
	}
	return nil
}

// Generate runs job on the driver's GPU: it loads both models, places the
// shared buffers (params, inputs and the zeroed caches) on the device once,
// runs the prefill on the prompts and then job.Steps decode steps at most,
// copying only each step's ids and pos to the device and its next tokens
// back, and when sampling its logits (B·V values): it steps through
// generate.Loop, with a Runner over the device, drawing the tokens on the
// host. The caches stay on the device, updated in place by both models'
// kernels.
// Each model's workspace is allocated once. An error of a step says which;
// Generate frees the memory it allocates on every path, and closing the
// driver is the caller's.
func Generate(d Driver, job *GenerateJob) (res *GenerateResult, err error) {
	g, err := job.check()
	if err != nil {
		return nil, err
	}
	dev, err := d.Device()
	if err != nil {
		return nil, fmt.Errorf("querying the device: %w", err)
	}
	mem := &memory{d: d}
	defer func() { err = errors.Join(err, mem.free()) }()
	shared, err := g.place(mem, job.Feeds)
	if err != nil {
		return nil, err
	}
	pre := &runner{d: d, p: job.Prefill.Plan, dev: dev, mem: mem}
	dec := &runner{d: d, p: job.Decode.Plan, dev: dev, mem: mem}
	if err := pre.allocate(map[int][]byte{g.prompts: job.Feeds[generate.IDs]}, given(pre.p, shared)); err != nil {
		return nil, fmt.Errorf("prefill: %w", err)
	}
	if err := dec.allocate(nil, given(dec.p, shared)); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	for _, r := range []*runner{pre, dec} {
		image := job.Prefill.Image
		if r == dec {
			image = job.Decode.Image
		}
		if err := r.prepare(image); err != nil {
			return nil, err
		}
		if err := r.clearRecord(); err != nil {
			return nil, err
		}
	}
	gr := &gpuRunner{d: d, pre: pre, dec: dec, g: g, res: &GenerateResult{Device: dev, PrefillLaunches: pre.infos, DecodeLaunches: dec.infos}}
	for i := range gr.events {
		if gr.events[i], err = d.NewEvent(); err != nil {
			return nil, fmt.Errorf("creating an event: %w", err)
		}
	}
	loop := &generate.Loop{Prefill: pre.p.Model, Decode: dec.p.Model, B: g.batch, P: g.prompt, Label: func(step, pos int) string {
		if step < 0 {
			return "prefill"
		}
		return fmt.Sprintf("decode step %d (position %d)", step, pos)
	}, Sampling: job.Sampling, EOS: job.EOS}
	out, err := loop.Run(gr, nil, job.Steps) // the prompts are on the device
	if err != nil {
		return nil, err
	}
	res = gr.res
	res.Finish = out.Finish
	res.Tokens = make([][]int32, g.batch)
	for b, toks := range out.Tokens {
		for _, t := range toks {
			res.Tokens[b] = append(res.Tokens[b], int32(t))
		}
	}
	return res, nil
}

// gpuRunner is the generate.LogitsRunner of Generate: the models' buffers
// are on the device, the caches among them; a decode step copies only its
// ids and pos there, and each run only its next tokens back, and its
// logits when the loop asks for them (sampling).
type gpuRunner struct {
	d        Driver
	pre, dec *runner
	g        *generation
	events   [2]Event
	last     *runner // the runner of the last run
	// res gathers the times of the runs, by CUDA events.
	res *GenerateResult
}

// Run implements generate.Runner: it runs the prefill on the prompts that
// Generate placed on the device, or a decode step on inputs' ids and pos.
func (gr *gpuRunner) Run(model string, inputs map[string]*te.Array) (*te.Array, error) {
	if model != gr.pre.p.Model && model != gr.dec.p.Model {
		return nil, fmt.Errorf("no model %s in the job (%s, %s)", model, gr.pre.p.Model, gr.dec.p.Model)
	}
	r, next := gr.pre, gr.g.next[0]
	if model == gr.dec.p.Model {
		r, next = gr.dec, gr.g.next[1]
		for _, in := range []struct {
			name string
			buf  int
		}{{generate.IDs, gr.g.ids}, {generate.Pos, gr.g.pos}} {
			data, err := Encode(inputs[in.name], r.p.Buffers[in.buf])
			if err != nil {
				return nil, err
			}
			if err := gr.d.CopyToDevice(r.ptrs[in.buf], data); err != nil {
				return nil, fmt.Errorf("copying %s to the device: %w", in.name, err)
			}
		}
	}
	out, ms, err := step(r, gr.events, next)
	if err != nil {
		return nil, err
	}
	gr.last = r
	if r == gr.pre {
		gr.res.PrefillMS = ms
	} else {
		gr.res.StepMS = append(gr.res.StepMS, ms)
	}
	return Decode(out, r.p.Buffers[r.p.Outputs[next]])
}

// Logits implements generate.LogitsRunner: it copies the logits of the
// last run from the device.
func (gr *gpuRunner) Logits() (*te.Array, error) {
	if gr.last == nil {
		return nil, errors.New("no run yet")
	}
	i := gr.g.logits[0]
	if gr.last == gr.dec {
		i = gr.g.logits[1]
	}
	data, err := gr.last.downloadOutput(i)
	if err != nil {
		return nil, err
	}
	return Decode(data, gr.last.p.Buffers[gr.last.p.Outputs[i]])
}

// place allocates each shared buffer once and uploads its data, or zeros
// for a cache; it returns their addresses by name.
func (g *generation) place(mem *memory, feeds map[string][]byte) (map[string]Ptr, error) {
	ptrs := map[string]Ptr{}
	for _, name := range g.names {
		b := g.shared[name]
		data := feeds[name]
		if b.InPlace {
			data = make([]byte, b.Bytes)
		}
		ptr, err := mem.upload(max(b.Bytes, 1), data, b.Role+" "+b.Name)
		if err != nil {
			return nil, err
		}
		ptrs[name] = ptr
	}
	return ptrs, nil
}

// given returns the addresses of p's shared buffers, by buffer index.
func given(p *Plan, shared map[string]Ptr) map[int]Ptr {
	out := map[int]Ptr{}
	for i, b := range p.Buffers {
		if ptr, ok := shared[b.Name]; ok && b.Fed() {
			out[i] = ptr
		}
	}
	return out
}

// step runs r's model once, timed between events, and returns its output
// next (output index next) as the device stores it, and the time.
func step(r *runner, events [2]Event, next int) ([]byte, float64, error) {
	if err := r.d.Record(events[0]); err != nil {
		return nil, 0, fmt.Errorf("recording an event: %w", err)
	}
	if err := r.runOnce(nil); err != nil {
		return nil, 0, err
	}
	if err := r.d.Record(events[1]); err != nil {
		return nil, 0, fmt.Errorf("recording an event: %w", err)
	}
	if err := r.wait(); err != nil {
		return nil, 0, err
	}
	ms, err := r.d.Elapsed(events[0], events[1])
	if err != nil {
		return nil, 0, fmt.Errorf("timing model %s: %w", r.p.Model, err)
	}
	out, err := r.downloadOutput(next)
	if err != nil {
		return nil, 0, err
	}
	return out, ms, nil
}
