package gpurun

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
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

// jobJSON is job.json.
type jobJSON struct {
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
