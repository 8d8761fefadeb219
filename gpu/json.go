package gpu

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"unicode"
)

// Parse decodes a Model from one JSON object and validates it. The
// reader is strict, so that no mistake silently leaves a zero or another
// value than the file's: a field's name must be exactly one of Model's JSON
// names (encoding/json alone would take "Sms" for sms, and an unknown
// name is an error), each field may be given once (encoding/json keeps the
// last), none may be null, and every field without a default
// (docs/gpu.md; those whose JSON tag has no omitempty) must be given.
// Errors name the field, with the line and column where the file says
// where, in the words of the file, not of Go.
func Parse(data []byte) (Model, error) {
	var g Model
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&g); err != nil {
		return Model{}, jsonError(data, err)
	}
	if dec.More() {
		line, col := position(data, int(dec.InputOffset()))
		return Model{}, fmt.Errorf("%d:%d: data after the GPU's object", line, col)
	}
	if err := checkFields(data); err != nil {
		return Model{}, err
	}
	if err := g.Validate(); err != nil {
		return Model{}, err
	}
	g.Arch, _ = g.NativeArch()
	return g, nil
}

// checkFields reports, for the object in data that encoding/json has
// decoded into a Model, every key that is not a field's exact JSON name, is
// given twice or is null, and every required field that is missing (see
// Parse).
func checkFields(data []byte) error {
	want := map[string]reflect.StructField{}
	for _, f := range fileFields() {
		want[jsonName(f)] = f
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // the object's {, which Decode read
		return jsonError(data, err)
	}
	var errs []error
	seen := map[string]string{} // field -> where it was first given
	for dec.More() {
		// The key starts at its quote, after the comma and spaces that
		// follow the previous value.
		off := int(dec.InputOffset())
		for off < len(data) && data[off] != '"' {
			off++
		}
		line, col := position(data, off)
		tok, err := dec.Token()
		if err != nil {
			return jsonError(data, err)
		}
		key, _ := tok.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return jsonError(data, err)
		}
		f, exact := want[key]
		if !exact {
			for name := range want {
				if strings.EqualFold(name, key) {
					errs = append(errs, fmt.Errorf("%d:%d: unknown field %q: field names are lower case, as in %q", line, col, key, name))
					break
				}
			}
			continue
		}
		if at, twice := seen[key]; twice {
			errs = append(errs, fmt.Errorf("%d:%d: field %s is given twice (first at %s)", line, col, key, at))
			continue
		}
		seen[key] = fmt.Sprintf("%d:%d", line, col)
		if string(bytes.TrimSpace(value)) == "null" {
			errs = append(errs, fmt.Errorf("%d:%d: field %s: want %s, got null", line, col, key, kindName(f.Type.Kind())))
		}
	}
	for _, name := range jsonFields() {
		if _, given := seen[name]; !given && !strings.Contains(want[name].Tag.Get("json"), ",omitempty") {
			errs = append(errs, fmt.Errorf("field %s is missing: every field without a default is required (docs/gpu.md)", name))
		}
	}
	return errors.Join(errs...)
}

// kindName names a Model field's JSON type for people: "a string", "an
// integer" or "a number".
func kindName(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "a string"
	case reflect.Int:
		return "an integer"
	}
	return "a number"
}

// jsonError translates an error of encoding/json into the file's terms.
func jsonError(data []byte, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		line, col := position(data, int(syn.Offset)-1) // the offending character
		return fmt.Errorf("%d:%d: %s", line, col, strings.TrimPrefix(syn.Error(), "json: "))
	case errors.As(err, &typ):
		line, col := position(data, int(typ.Offset)-1) // the value's last character
		if typ.Field == "" {
			return fmt.Errorf("%d:%d: want a JSON object describing a GPU, got %s", line, col, typ.Value)
		}
		want := kindName(typ.Type.Kind())
		got := typ.Value
		if strings.HasPrefix(got, "number ") {
			got = "the number " + strings.TrimPrefix(got, "number ") // a fraction or an out-of-range integer
		}
		return fmt.Errorf("%d:%d: field %s: want %s, got %s", line, col, typ.Field, want, got)
	case errors.Is(err, io.EOF):
		return errors.New("empty file: want a JSON object describing a GPU")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("unexpected end of file")
	}
	if field, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fmt.Errorf("unknown field %s (the fields are %s)", field, strings.Join(jsonFields(), ", "))
	}
	return err
}

// position returns the 1-based line and column of byte offset off of data.
func position(data []byte, off int) (line, col int) {
	off = min(max(off, 0), len(data))
	line = 1 + bytes.Count(data[:off], []byte("\n"))
	return line, off - bytes.LastIndexByte(data[:off], '\n')
}

// fileFields returns the fields of Model that a GPU file gives, in order:
// all but those whose JSON tag is "-".
func fileFields() []reflect.StructField {
	var fields []reflect.StructField
	for _, f := range reflect.VisibleFields(reflect.TypeFor[Model]()) {
		if jsonName(f) != "-" {
			fields = append(fields, f)
		}
	}
	return fields
}

// jsonName returns the JSON name of a field of Model.
func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

// jsonFields returns the JSON names of the fields a GPU file gives.
func jsonFields() []string {
	var names []string
	for _, f := range fileFields() {
		names = append(names, jsonName(f))
	}
	return names
}

// The ranges Validate accepts. They hold every GPU NVIDIA has made with
// room to spare, and keep the products the partitioner forms (SMs × blocks
// per SM × threads, shared bytes × blocks) far from overflowing an int.
const (
	maxSMs         = 4096
	maxSharedPerSM = 16 << 20
	// minShared is the least shared memory per SM and per block: every
	// CUDA GPU has had at least 16 KiB (compute capability 1.x), and the
	// kernels' smallest tiles with their reduction scratch need a few KiB
	// at the largest blocks, so a smaller description is not a GPU the
	// schedules are made for.
	minShared       = 16 << 10
	maxRegsPerSM    = 1 << 20
	maxRegsPerThr   = 255 // the ISA's limit
	maxThreadsPerSM = 1 << 16
	maxBlocksPerSM  = 1024
	maxThreadsBlock = 1024 // CUDA's limit, which kernel IR verifies
	maxL2Bytes      = 1 << 40
	maxParamBytes   = 1 << 20
	maxRate         = 1e18 // bytes or FLOP per second
	maxCost         = 1.0  // seconds
)

// Validate reports every field of g that is missing or out of range, each
// with the field's JSON name, its value and the range it must lie in:
//
//	name                   1 to 100 printable characters
//	cc                     empty, or MAJOR.MINOR such as "8.0"
//	sms                    1 to 4096
//	shared_per_sm          16 KiB to 16 MiB
//	shared_per_block       16 KiB to shared_per_sm
//	regs_per_sm            1 to 2^20
//	max_regs_per_thread    1 to 255
//	max_threads_per_sm     1 to 65536
//	max_blocks_per_sm      1 to 1024
//	max_threads_per_block  1 to 1024, and at most max_threads_per_sm
//	l2_bytes               0 to 2^40
//	max_param_bytes        0 (4096), or 64 to 1 MiB
//	dram_bandwidth, fp32_peak              above 0, at most 1e18
//	l2_bandwidth, fp16_peak, clock         0 to 1e18
//	launch_cost, grid_sync_cost (seconds)  0 to 1
func (g Model) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("GPU %q: field %s: %s", g.Name, field, fmt.Sprintf(format, args...)))
	}
	if g.Name == "" || len(g.Name) > 100 || strings.IndexFunc(g.Name, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		bad("name", "want 1 to 100 printable characters, got %q", g.Name)
	}
	if g.CC != "" && !validCC(g.CC) {
		bad("cc", `want a compute capability MAJOR.MINOR such as "8.0", got %q`, g.CC)
	}
	for _, f := range []struct {
		field     string
		v, lo, hi int
	}{
		{"sms", g.SMs, 1, maxSMs},
		{"shared_per_sm", g.SharedPerSM, minShared, maxSharedPerSM},
		{"shared_per_block", g.SharedPerBlock, minShared, max(minShared, min(g.SharedPerSM, maxSharedPerSM))},
		{"regs_per_sm", g.RegsPerSM, 1, maxRegsPerSM},
		{"max_regs_per_thread", g.MaxRegsPerThread, 1, maxRegsPerThr},
		{"max_threads_per_sm", g.MaxThreadsPerSM, 1, maxThreadsPerSM},
		{"max_blocks_per_sm", g.MaxBlocksPerSM, 1, maxBlocksPerSM},
		{"max_threads_per_block", g.MaxThreadsPerBlock, 1, max(1, min(g.MaxThreadsPerSM, maxThreadsBlock))},
		{"l2_bytes", g.L2Bytes, 0, maxL2Bytes},
	} {
		if f.v < f.lo || f.v > f.hi {
			bad(f.field, "want an integer from %d to %d, got %d", f.lo, f.hi, f.v)
		}
	}
	if g.MaxParamBytes != 0 && (g.MaxParamBytes < 64 || g.MaxParamBytes > maxParamBytes) {
		bad("max_param_bytes", "want 0 (4096) or an integer from 64 to %d, got %d", maxParamBytes, g.MaxParamBytes)
	}
	for _, f := range []struct {
		field     string
		v, lo, hi float64
		positive  bool
	}{
		{"dram_bandwidth", g.DRAMBandwidth, 0, maxRate, true},
		{"fp32_peak", g.FP32Peak, 0, maxRate, true},
		{"l2_bandwidth", g.L2Bandwidth, 0, maxRate, false},
		{"fp16_peak", g.FP16Peak, 0, maxRate, false},
		{"tf32_peak", g.TF32Peak, 0, maxRate, false},
		{"clock", g.Clock, 0, maxRate, false},
		{"launch_cost", g.LaunchCost, 0, maxCost, false},
		{"grid_sync_cost", g.GridSyncCost, 0, maxCost, false},
		{"dram_latency", g.DRAMLatency, 0, maxCost, false},
		{"l2_latency", g.L2Latency, 0, maxCost, false},
	} {
		switch {
		case f.positive && !(f.v > f.lo && f.v <= f.hi):
			bad(f.field, "want a number above %g and at most %g, got %g", f.lo, f.hi, f.v)
		case !f.positive && !(f.v >= f.lo && f.v <= f.hi):
			bad(f.field, "want a number from %g to %g, got %g", f.lo, f.hi, f.v)
		}
	}
	return errors.Join(errs...)
}

// validCC reports whether cc is a compute capability such as "8.0" or "10.3".
func validCC(cc string) bool {
	major, minor, ok := strings.Cut(cc, ".")
	digits := func(s string, n int) bool {
		return len(s) >= 1 && len(s) <= n && strings.Trim(s, "0123456789") == "" && (len(s) == 1 || s[0] != '0')
	}
	return ok && digits(major, 2) && major != "0" && digits(minor, 1)
}
