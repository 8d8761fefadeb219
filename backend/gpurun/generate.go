package gpurun

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"

	"tec/generate"
)

// Model is one module of a generation: its plan and its code.
type Model struct {
	Plan  *Plan
	Image []byte
}

// GenerateJob is a greedy generation for tec-cuda to run: a prefill model
// over the prompts, then Steps runs of a decode model, each fed the tokens
// the run before chose.
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
	// Steps is the number of decode steps.
	Steps int
}

// GenerateResult is what Generate did and produced.
type GenerateResult struct {
	Device Device `json:"device"`
	// PrefillLaunches and DecodeLaunches are each model's launches.
	PrefillLaunches []LaunchInfo `json:"prefill_launches"`
	DecodeLaunches  []LaunchInfo `json:"decode_launches"`
	// Tokens are each sequence's Steps+1 tokens: prefill's next, then each
	// step's.
	Tokens [][]int32 `json:"tokens"`
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
	// shared are the names of the buffers both models (or one) take from
	// one device buffer: the caches and every fed buffer but the three
	// above, each with the buffer that describes it.
	shared map[string]Buffer
	names  []string // shared's names, sorted
}

// Check reports the first way in which j does not follow the protocol, or
// lacks or has extra feeds; Generate and ReadGenerateJob check it too.
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
	g := &generation{shared: map[string]Buffer{}}
	var err error
	if g.prompts, err = findInput(pre, generate.IDs, 2); err != nil {
		return nil, err
	}
	g.batch, g.prompt = pre.Buffers[g.prompts].Shape[0], pre.Buffers[g.prompts].Shape[1]
	if g.ids, err = findInput(dec, generate.IDs, 1, g.batch); err != nil {
		return nil, err
	}
	if g.pos, err = findInput(dec, generate.Pos, 1, g.batch); err != nil {
		return nil, err
	}
	if slices.ContainsFunc(pre.Buffers, func(b Buffer) bool { return b.Name == generate.Pos && b.Fed() }) {
		return nil, fmt.Errorf("prefill model %s has an input %s: only the decode model takes positions (the prompt is at 0..P-1)", pre.Model, generate.Pos)
	}
	for m, p := range []*Plan{pre, dec} {
		if g.next[m], err = findNext(p, g.batch); err != nil {
			return nil, err
		}
	}
	if err := g.share(pre, dec); err != nil {
		return nil, err
	}
	return g, g.checkFeeds(j.Feeds, pre.Buffers[g.prompts])
}

// findInput returns the index of p's input name: i32 of the given rank and,
// when given, leading dimension.
func findInput(p *Plan, name string, rank int, batch ...int) (int, error) {
	i := slices.IndexFunc(p.Buffers, func(b Buffer) bool { return b.Name == name && b.Role == "input" })
	if i < 0 {
		return 0, fmt.Errorf("model %s has no input %s", p.Model, name)
	}
	b := p.Buffers[i]
	if b.DType != "i32" || len(b.Shape) != rank || len(batch) > 0 && b.Shape[0] != batch[0] || b.InPlace {
		want := generate.TokenType
		if rank == 2 {
			want = generate.PromptType
		}
		if len(batch) > 0 {
			want += fmt.Sprintf(" with B = %d", batch[0])
		}
		return 0, fmt.Errorf("model %s: input %s is %s, want %s", p.Model, name, b.Type(), want)
	}
	return i, nil
}

// findNext returns the output index of p's output next: i32[batch].
func findNext(p *Plan, batch int) (int, error) {
	i := slices.IndexFunc(p.Outputs, func(o int) bool { return p.Buffers[o].Name == generate.Next })
	if i < 0 {
		return 0, fmt.Errorf("model %s has no output %s", p.Model, generate.Next)
	}
	if b := p.Buffers[p.Outputs[i]]; b.DType != "i32" || len(b.Shape) != 1 || b.Shape[0] != batch || b.Role != "output" {
		return 0, fmt.Errorf("model %s: output %s is %s %s, want an output i32[%d]", p.Model, generate.Next, b.Role, b.Type(), batch)
	}
	return i, nil
}

// share finds the buffers taken by name: every fed buffer of the two but
// prefill's ids and decode's ids and pos. One that both take must have
// the same role, type and in-place flag in both.
func (g *generation) share(pre, dec *Plan) error {
	for m, p := range []*Plan{pre, dec} {
		for i, b := range p.Buffers {
			if !b.Fed() || m == 0 && i == g.prompts || m == 1 && (i == g.ids || i == g.pos) {
				continue
			}
			o, ok := g.shared[b.Name]
			if !ok {
				g.shared[b.Name] = b
				continue
			}
			if o.Role != b.Role || o.Type() != b.Type() || o.InPlace != b.InPlace {
				return fmt.Errorf("%s %s is %s in model %s and %s in model %s: the two models share it, so it must be the same in both",
					b.Role, b.Name, describe(o), pre.Model, describe(b), dec.Model)
			}
		}
	}
	for name, b := range g.shared {
		if b.InPlace && (!updates(pre, name) || !updates(dec, name)) {
			return fmt.Errorf("input %s is updated in place by only one of models %s and %s: a cache is updated by both", name, pre.Model, dec.Model)
		}
		g.names = append(g.names, name)
	}
	sort.Strings(g.names)
	return nil
}

func describe(b Buffer) string {
	s := b.Role + " " + b.Type()
	if b.InPlace {
		s += " updated in place"
	}
	return s
}

// updates reports whether p updates its input name in place.
func updates(p *Plan, name string) bool {
	return slices.ContainsFunc(p.Buffers, func(b Buffer) bool { return b.Name == name && b.InPlace })
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
// runs the prefill on the prompts and then job.Steps decode steps, copying
// only each step's ids and pos to the device and its next tokens back. The
// caches stay on the device, updated in place by both models' kernels.
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
	res = &GenerateResult{Device: dev, PrefillLaunches: pre.infos, DecodeLaunches: dec.infos, Tokens: make([][]int32, g.batch)}
	var events [2]Event
	for i := range events {
		if events[i], err = d.NewEvent(); err != nil {
			return nil, fmt.Errorf("creating an event: %w", err)
		}
	}
	next, ms, err := step(pre, events, g.next[0])
	if err != nil {
		return nil, fmt.Errorf("prefill: %w", err)
	}
	res.PrefillMS = ms
	g.appendTokens(res, next)
	pos := make([]byte, 4*g.batch)
	for i := range job.Steps {
		at := g.prompt + i
		for b := range g.batch {
			binary.LittleEndian.PutUint32(pos[4*b:], uint32(int32(at)))
		}
		if err := d.CopyToDevice(dec.ptrs[g.ids], next); err != nil {
			return nil, fmt.Errorf("decode step %d (position %d): copying ids to the device: %w", i, at, err)
		}
		if err := d.CopyToDevice(dec.ptrs[g.pos], pos); err != nil {
			return nil, fmt.Errorf("decode step %d (position %d): copying pos to the device: %w", i, at, err)
		}
		if next, ms, err = step(dec, events, g.next[1]); err != nil {
			return nil, fmt.Errorf("decode step %d (position %d): %w", i, at, err)
		}
		res.StepMS = append(res.StepMS, ms)
		g.appendTokens(res, next)
	}
	return res, nil
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

// appendTokens appends each sequence's token in next (i32[B] as the device
// stores it) to res.Tokens.
func (g *generation) appendTokens(res *GenerateResult, next []byte) {
	for b := range g.batch {
		res.Tokens[b] = append(res.Tokens[b], int32(binary.LittleEndian.Uint32(next[4*b:])))
	}
}
