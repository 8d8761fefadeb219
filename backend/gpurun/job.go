package gpurun

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"

	"tec/generate"
)

// Job is a run for tec-cuda to do: a plan, its code, its feeds and how
// often to run it. WriteJob puts it in a directory, whose path is all
// tec-cuda is given; tec-cuda writes the Result into the same directory.
type Job struct {
	Plan    *Plan
	Options Options
	Image   []byte
	// Feeds are the data of every input and param, by buffer index, as
	// the device stores them (Encode).
	Feeds map[int][]byte
}

// The files of a job's directory.
const (
	jobFile    = "job.json"
	resultFile = "result.json"
)

// The kinds of job (job.json's "kind").
const (
	KindRun      = "run"      // a Job: run a model (the default)
	KindGenerate = "generate" // a GenerateJob
)

// jobJSON is job.json.
type jobJSON struct {
	Kind   string         `json:"kind,omitempty"` // KindRun or ""
	Plan   *Plan          `json:"plan"`
	Bench  int            `json:"bench"`
	Warmup int            `json:"warmup"`
	Code   string         `json:"code"`  // the file of the module's code
	Feeds  map[int]string `json:"feeds"` // the file of each buffer's data
}

// WriteJob writes j into dir, which exists.
func WriteJob(dir string, j *Job) error {
	js := jobJSON{Plan: j.Plan, Bench: j.Options.Bench, Warmup: j.Options.Warmup, Code: "module." + j.Plan.Format, Feeds: map[int]string{}}
	if err := os.WriteFile(filepath.Join(dir, js.Code), j.Image, 0o644); err != nil {
		return err
	}
	for i, data := range j.Feeds {
		name := "feed-" + strconv.Itoa(i) + ".bin"
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
		js.Feeds[i] = name
	}
	return writeJSON(filepath.Join(dir, jobFile), js)
}

// ReadJob reads the job that WriteJob wrote into dir.
func ReadJob(dir string) (*Job, error) {
	if kind, err := JobKind(dir); err != nil {
		return nil, err
	} else if kind != KindRun {
		return nil, fmt.Errorf("%s: a %s job, not a run", filepath.Join(dir, jobFile), kind)
	}
	var js jobJSON
	if err := readJSON(filepath.Join(dir, jobFile), &js); err != nil {
		return nil, err
	}
	if js.Plan == nil {
		return nil, fmt.Errorf("%s: no plan", filepath.Join(dir, jobFile))
	}
	if err := js.Plan.Check(); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, jobFile), err)
	}
	j := &Job{Plan: js.Plan, Options: Options{Bench: js.Bench, Warmup: js.Warmup}, Feeds: map[int][]byte{}}
	var err error
	if j.Image, err = readLocal(dir, js.Code); err != nil {
		return nil, err
	}
	for i, name := range js.Feeds {
		if j.Feeds[i], err = readLocal(dir, name); err != nil {
			return nil, err
		}
	}
	return j, nil
}

// readLocal reads the file name of dir, which must be a plain name in it.
func readLocal(dir, name string) ([]byte, error) {
	if name == "" || name != filepath.Base(name) {
		return nil, fmt.Errorf("%s: bad file name %q", filepath.Join(dir, jobFile), name)
	}
	return os.ReadFile(filepath.Join(dir, name))
}

// WriteResult writes r into dir: result.json and one file per output.
func WriteResult(dir string, r *Result) error {
	for i, data := range r.Outputs {
		if err := os.WriteFile(filepath.Join(dir, outputFile(i)), data, 0o644); err != nil {
			return err
		}
	}
	return writeJSON(filepath.Join(dir, resultFile), r)
}

// ReadResult reads the result of p's run that WriteResult wrote into dir.
func ReadResult(dir string, p *Plan) (*Result, error) {
	var r Result
	if err := readJSON(filepath.Join(dir, resultFile), &r); err != nil {
		return nil, err
	}
	for i, o := range p.Outputs {
		data, err := os.ReadFile(filepath.Join(dir, outputFile(i)))
		if err != nil {
			return nil, err
		}
		if b := p.Buffers[o]; int64(len(data)) != b.Bytes {
			return nil, fmt.Errorf("%s: %d bytes for output %s %s, want %d", outputFile(i), len(data), b.Name, b.Type(), b.Bytes)
		}
		r.Outputs = append(r.Outputs, data)
	}
	if r.Bench != nil && len(r.Bench.Kernels) != len(p.Kernels) {
		return nil, fmt.Errorf("%s: timings of %d kernels, want %d", resultFile, len(r.Bench.Kernels), len(p.Kernels))
	}
	return &r, nil
}

func outputFile(i int) string { return "output-" + strconv.Itoa(i) + ".bin" }

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// JobKind returns the kind of the job in dir: KindRun or KindGenerate.
func JobKind(dir string) (string, error) {
	var js struct {
		Kind string `json:"kind"`
	}
	if err := readJSON(filepath.Join(dir, jobFile), &js); err != nil {
		return "", err
	}
	switch js.Kind {
	case "", KindRun:
		return KindRun, nil
	case KindGenerate:
		return KindGenerate, nil
	}
	return "", fmt.Errorf("%s: unknown kind of job %q (want %s or %s)", filepath.Join(dir, jobFile), js.Kind, KindRun, KindGenerate)
}

// generateJSON is job.json of a generation.
type generateJSON struct {
	Kind    string            `json:"kind"` // KindGenerate
	Prefill modelJSON         `json:"prefill"`
	Decode  modelJSON         `json:"decode"`
	Steps   int               `json:"steps"`
	Feeds   map[string]string `json:"feeds"` // the file of each feed, by name
	// Sampling and Logits are the job's when it samples, EOS its
	// end-of-sequence tokens.
	Sampling *generate.Sampling `json:"sampling,omitempty"`
	Logits   []string           `json:"logits,omitempty"`
	EOS      []int              `json:"eos,omitempty"`
}

// modelJSON is a model of a generation: its plan and the file of its code.
type modelJSON struct {
	Plan *Plan  `json:"plan"`
	Code string `json:"code"`
}

// WriteGenerateJob writes j into dir, which exists: job.json, each
// model's code (prefill.ptx, decode.cubin, ...) and one file per feed.
func WriteGenerateJob(dir string, j *GenerateJob) error {
	js := generateJSON{Kind: KindGenerate, Steps: j.Steps, Feeds: map[string]string{}, EOS: j.EOS}
	if !j.Sampling.Greedy() {
		js.Sampling, js.Logits = &j.Sampling, j.Logits[:]
	}
	for _, m := range []struct {
		name  string
		model Model
		out   *modelJSON
	}{{"prefill", j.Prefill, &js.Prefill}, {"decode", j.Decode, &js.Decode}} {
		if m.model.Plan == nil {
			return fmt.Errorf("no %s model", m.name)
		}
		*m.out = modelJSON{Plan: m.model.Plan, Code: m.name + "." + m.model.Plan.Format}
		if err := os.WriteFile(filepath.Join(dir, m.out.Code), m.model.Image, 0o644); err != nil {
			return err
		}
	}
	names := make([]string, 0, len(j.Feeds))
	for name := range j.Feeds {
		names = append(names, name)
	}
	sort.Strings(names)
	for i, name := range names {
		file := "feed-" + strconv.Itoa(i) + ".bin"
		if err := os.WriteFile(filepath.Join(dir, file), j.Feeds[name], 0o644); err != nil {
			return err
		}
		js.Feeds[name] = file
	}
	return writeJSON(filepath.Join(dir, jobFile), js)
}

// ReadGenerateJob reads the generation that WriteGenerateJob wrote into
// dir and checks it as Generate does.
func ReadGenerateJob(dir string) (*GenerateJob, error) {
	path := filepath.Join(dir, jobFile)
	var js generateJSON
	if err := readJSON(path, &js); err != nil {
		return nil, err
	}
	if js.Kind != KindGenerate {
		return nil, fmt.Errorf("%s: not a %s job", path, KindGenerate)
	}
	j := &GenerateJob{Steps: js.Steps, Feeds: map[string][]byte{}, EOS: js.EOS}
	if js.Sampling != nil {
		if len(js.Logits) != 2 {
			return nil, fmt.Errorf("%s: sampling without the logits of both models", path)
		}
		j.Sampling, j.Logits = *js.Sampling, [2]string(js.Logits)
	}
	for _, m := range []struct {
		name string
		in   modelJSON
		out  *Model
	}{{"prefill", js.Prefill, &j.Prefill}, {"decode", js.Decode, &j.Decode}} {
		if m.in.Plan == nil {
			return nil, fmt.Errorf("%s: no %s plan", path, m.name)
		}
		image, err := readLocal(dir, m.in.Code)
		if err != nil {
			return nil, err
		}
		*m.out = Model{Plan: m.in.Plan, Image: image}
	}
	for name, file := range js.Feeds {
		data, err := readLocal(dir, file)
		if err != nil {
			return nil, err
		}
		j.Feeds[name] = data
	}
	if _, err := j.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return j, nil
}

// WriteGenerateResult writes r into dir as result.json.
func WriteGenerateResult(dir string, r *GenerateResult) error {
	return writeJSON(filepath.Join(dir, resultFile), r)
}

// ReadGenerateResult reads the result of j that WriteGenerateResult wrote
// into dir, and checks it: each sequence's tokens, Steps+1 of them unless
// it ended at an end-of-sequence token (its first, and its last), and why
// it ended; the time of each step that ran, until the last sequence
// ended.
func ReadGenerateResult(dir string, j *GenerateJob) (*GenerateResult, error) {
	var r GenerateResult
	path := filepath.Join(dir, resultFile)
	if err := readJSON(path, &r); err != nil {
		return nil, err
	}
	g, err := j.check()
	if err != nil {
		return nil, err
	}
	if len(r.Tokens) != g.batch || len(r.Finish) != g.batch {
		return nil, fmt.Errorf("%s: tokens of %d sequences and the finish of %d, want %d", path, len(r.Tokens), len(r.Finish), g.batch)
	}
	longest := 0
	for b, ts := range r.Tokens {
		end := slices.IndexFunc(ts, func(t int32) bool { return slices.Contains(j.EOS, int(t)) })
		switch {
		case end >= 0 && end != len(ts)-1:
			return nil, fmt.Errorf("%s: sequence %d goes on past its end-of-sequence token %d at %d", path, b, ts[end], end)
		case end < 0 && len(ts) != j.Steps+1:
			return nil, fmt.Errorf("%s: %d tokens of sequence %d, want %d", path, len(ts), b, j.Steps+1)
		case len(ts) == 0 || len(ts) > j.Steps+1:
			return nil, fmt.Errorf("%s: %d tokens of sequence %d, want 1 to %d", path, len(ts), b, j.Steps+1)
		}
		want := generate.FinishSteps
		if end >= 0 {
			want = generate.FinishEOS
		}
		if r.Finish[b] != want {
			return nil, fmt.Errorf("%s: sequence %d finished %q, want %q", path, b, r.Finish[b], want)
		}
		longest = max(longest, len(ts))
	}
	if len(r.StepMS) != longest-1 {
		return nil, fmt.Errorf("%s: times of %d steps, want %d", path, len(r.StepMS), longest-1)
	}
	return &r, nil
}
