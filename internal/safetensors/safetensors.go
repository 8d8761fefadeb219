// Package safetensors reads the safetensors format of Hugging Face
// checkpoints: an 8-byte little-endian header length N, a JSON header of
// N bytes, {"NAME": {"dtype": ..., "shape": [...], "data_offsets":
// [BEGIN, END]}, ..., "__metadata__": {...}}, then the data, each
// tensor's bytes at [BEGIN, END) of what follows the header, row-major,
// little-endian.
//
// Open maps the file into memory (a copy is read where the system has no
// mmap) and checks the whole header before anything is read through it:
// the header length against the file's size, the header as JSON (an object
// of objects, no name twice, no field twice, no field the format does not
// define), each dtype, each shape's size against its byte range, and the
// byte ranges against each other and the data: sorted by offset they must
// start at 0, follow one another without a gap or an overlap, and end at
// the end of the file. So a tensor's bytes are read only from where its
// header says, and every byte of the file belongs to one tensor. A tensor
// of any dtype the format defines may be in a file; Read decodes F32, F16
// and BF16, and refuses the others by name.
//
// OpenDir opens a checkpoint directory: model.safetensors, or the shards
// that model.safetensors.index.json's weight_map names.
package safetensors

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"tec/internal/jsonobject"
	"tec/te"
)

// MaxHeader is the longest header Open reads: 100 MiB, the limit of the
// format's reference implementation.
const MaxHeader = 100 << 20

// metadataKey is the header's entry that holds the file's metadata, not a
// tensor.
const metadataKey = "__metadata__"

// dtypeSizes gives the bytes an element of each dtype the format defines
// (whole bytes) takes. The sub-byte dtypes (F4, F6) are not listed: a file
// with them is refused when opened.
var dtypeSizes = map[string]int{
	"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "F8_E8M0": 1,
	"I16": 2, "U16": 2, "F16": 2, "BF16": 2,
	"I32": 4, "U32": 4, "F32": 4,
	"I64": 8, "U64": 8, "F64": 8,
	"C64": 8,
}

// readable maps the dtypes Read decodes to the te dtype of its arrays.
var readable = map[string]te.DType{"F32": te.F32, "F16": te.F16, "BF16": te.BF16}

// Tensor is one tensor of a file, as its header describes it.
type Tensor struct {
	Name string
	// DType is the file's name of the dtype: "F32", "BF16", "I64", ...
	DType string
	Shape []int
	// Begin and End delimit its bytes within the data, after the header.
	Begin, End int64
	file       *File
}

// Type formats the tensor's dtype and shape, e.g. "BF16[64, 32]".
func (t *Tensor) Type() string {
	parts := make([]string, len(t.Shape))
	for i, d := range t.Shape {
		parts[i] = strconv.Itoa(d)
	}
	return t.DType + "[" + strings.Join(parts, ", ") + "]"
}

// File returns the path of the file the tensor is in.
func (t *Tensor) File() string { return t.file.Path }

// Readable reports whether Read decodes the tensor's dtype, and returns the
// te dtype of the array it gives.
func (t *Tensor) Readable() (te.DType, bool) {
	dt, ok := readable[t.DType]
	return dt, ok
}

// File is an open safetensors file.
type File struct {
	Path string
	// Metadata is the header's __metadata__, if any.
	Metadata map[string]string
	tensors  []*Tensor // by offset
	byName   map[string]*Tensor
	data     []byte // the data section of mapped
	mapped   []byte
	unmap    func([]byte) error
}

// Tensors returns the file's tensors in the order of their data.
func (f *File) Tensors() []*Tensor { return f.tensors }

// Lookup returns the tensor name, or nil.
func (f *File) Lookup(name string) *Tensor { return f.byName[name] }

// Close releases the file's mapping; its tensors may not be read after.
func (f *File) Close() error {
	if f.mapped == nil {
		return nil
	}
	m := f.mapped
	f.mapped, f.data = nil, nil
	return f.unmap(m)
}

// Open opens the safetensors file at path and checks its header (see the
// package documentation). Errors name the file.
func Open(path string) (*File, error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fd.Close()
	st, err := fd.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	size := st.Size()
	if size < 8 {
		return nil, fmt.Errorf("%s: %d bytes, shorter than the 8-byte header length that starts a safetensors file", path, size)
	}
	var lenBuf [8]byte
	if _, err := fd.ReadAt(lenBuf[:], 0); err != nil {
		return nil, fmt.Errorf("%s: reading the header length: %w", path, err)
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	switch {
	case n > uint64(size-8):
		return nil, fmt.Errorf("%s: the header length %d runs past the end of the file (%d bytes follow the length): the file is truncated or not safetensors", path, n, size-8)
	case n > MaxHeader:
		return nil, fmt.Errorf("%s: the header length %d is over %d bytes, the most a safetensors header may have", path, n, MaxHeader)
	case n < 2:
		return nil, fmt.Errorf("%s: the header length is %d: the header is not a JSON object", path, n)
	}
	if size > math.MaxInt {
		return nil, fmt.Errorf("%s: %d bytes, more than this machine can map", path, size)
	}
	mapped, unmap, err := mapFile(fd, int(size))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f := &File{Path: path, mapped: mapped, unmap: unmap, data: mapped[8+n:]}
	header := make([]byte, n) // a copy: the checks below read it once, from memory that cannot change
	if err := f.fault(func() { copy(header, mapped[8:8+n]) }); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.parse(header); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// entry is a tensor's entry in the header.
type entry struct {
	DType   *string  `json:"dtype"`
	Shape   *[]int64 `json:"shape"`
	Offsets *[]int64 `json:"data_offsets"`
}

// parse reads the header and checks it against the data.
func (f *File) parse(header []byte) error {
	if !utf8.Valid(header) {
		return errors.New("the header is not UTF-8 text")
	}
	if header[0] != '{' {
		return fmt.Errorf("the header is not a JSON object: it starts with %q", clip(string(header), 20))
	}
	fields, err := jsonobject.Fields(header)
	if err != nil {
		return fmt.Errorf("the header is not valid: %w", err)
	}
	f.byName = map[string]*Tensor{}
	for _, fl := range fields {
		if fl.Key == metadataKey {
			if err := json.Unmarshal(fl.Value, &f.Metadata); err != nil {
				return fmt.Errorf("the header's %s is not an object of strings: %w", metadataKey, err)
			}
			continue
		}
		t, err := f.tensor(fl.Key, fl.Value)
		if err != nil {
			return fmt.Errorf("tensor %q: %w", fl.Key, err)
		}
		f.byName[t.Name] = t
		f.tensors = append(f.tensors, t)
	}
	return f.checkLayout()
}

// tensor reads and checks one tensor's entry: its dtype, shape and byte
// range, and the shape's size against the range.
func (f *File) tensor(name string, raw json.RawMessage) (*Tensor, error) {
	if len(raw) == 0 || raw[0] != '{' {
		return nil, fmt.Errorf("the entry %s is not an object", clip(string(raw), 40))
	}
	keys, err := jsonobject.Fields(raw)
	if err != nil {
		return nil, err
	}
	var e entry
	for _, k := range keys {
		var dst any
		switch k.Key {
		case "dtype":
			dst = &e.DType
		case "shape":
			dst = &e.Shape
		case "data_offsets":
			dst = &e.Offsets
		default:
			return nil, fmt.Errorf("unknown field %q (a tensor has dtype, shape and data_offsets)", k.Key)
		}
		if err := json.Unmarshal(k.Value, dst); err != nil {
			return nil, fmt.Errorf("%s: %s is not valid: %w", k.Key, clip(string(k.Value), 40), err)
		}
	}
	switch {
	case e.DType == nil:
		return nil, errors.New("no dtype")
	case e.Shape == nil:
		return nil, errors.New("no shape")
	case e.Offsets == nil:
		return nil, errors.New("no data_offsets")
	case len(*e.Offsets) != 2:
		return nil, fmt.Errorf("data_offsets has %d numbers, want 2 (begin and end)", len(*e.Offsets))
	}
	t := &Tensor{Name: name, DType: *e.DType, file: f, Begin: (*e.Offsets)[0], End: (*e.Offsets)[1]}
	size, ok := dtypeSizes[t.DType]
	if !ok {
		return nil, fmt.Errorf("dtype %q is not one of the safetensors format's whole-byte dtypes", t.DType)
	}
	elems := int64(1)
	for _, d := range *e.Shape {
		if d < 0 {
			return nil, fmt.Errorf("shape %v has a negative dimension", *e.Shape)
		}
		if d > math.MaxInt32 || (d > 0 && elems > math.MaxInt64/8/d) {
			return nil, fmt.Errorf("shape %v has more elements than a file can hold", *e.Shape)
		}
		elems *= d
		t.Shape = append(t.Shape, int(d))
	}
	if t.Begin < 0 || t.End < t.Begin {
		return nil, fmt.Errorf("data_offsets [%d, %d] is not a byte range", t.Begin, t.End)
	}
	if t.End > int64(len(f.data)) {
		return nil, fmt.Errorf("data_offsets [%d, %d] run past the data, which holds %d bytes", t.Begin, t.End, len(f.data))
	}
	if want := elems * int64(size); t.End-t.Begin != want {
		return nil, fmt.Errorf("%s holds %d bytes (%d elements of %d), but data_offsets [%d, %d] give %d",
			t.Type(), want, elems, size, t.Begin, t.End, t.End-t.Begin)
	}
	return t, nil
}

// checkLayout checks that the tensors' byte ranges, sorted, tile the data:
// no overlap, no gap, nothing after the last.
func (f *File) checkLayout() error {
	slices.SortStableFunc(f.tensors, func(a, b *Tensor) int {
		if a.Begin != b.Begin {
			return int(min(max(a.Begin-b.Begin, -1), 1))
		}
		return int(min(max(a.End-b.End, -1), 1))
	})
	var at int64
	for i, t := range f.tensors {
		switch {
		case t.Begin > at && i == 0:
			return fmt.Errorf("bytes [0, %d) of the data belong to no tensor: the first, %q, begins at %d", t.Begin, t.Name, t.Begin)
		case t.Begin > at:
			return fmt.Errorf("bytes [%d, %d) of the data belong to no tensor: between %q, which ends at %d, and %q, which begins at %d",
				at, t.Begin, f.tensors[i-1].Name, at, t.Name, t.Begin)
		case t.Begin < at:
			prev := f.tensors[i-1]
			return fmt.Errorf("tensor %q's bytes [%d, %d) overlap tensor %q's [%d, %d)", t.Name, t.Begin, t.End, prev.Name, prev.Begin, prev.End)
		}
		at = t.End
	}
	if at != int64(len(f.data)) {
		return fmt.Errorf("bytes [%d, %d) of the data belong to no tensor (the file is %d bytes longer than its tensors)", at, len(f.data), int64(len(f.data))-at)
	}
	return nil
}

// Read decodes the tensor into an array of its dtype (te.F32, te.F16 or
// te.BF16). Any other dtype is an error naming it.
func (t *Tensor) Read() (*te.Array, error) {
	dt, ok := readable[t.DType]
	if !ok {
		return nil, fmt.Errorf("%s: tensor %q is %s: tec reads F32, F16 and BF16 tensors", t.file.Path, t.Name, t.Type())
	}
	n, err := te.CheckShape(t.Shape)
	if err != nil {
		return nil, fmt.Errorf("%s: tensor %q: %w", t.file.Path, t.Name, err)
	}
	if t.file.mapped == nil {
		return nil, fmt.Errorf("%s: tensor %q: the file is closed", t.file.Path, t.Name)
	}
	a := &te.Array{DType: dt, Shape: slices.Clone(t.Shape), Data: make([]float64, n)}
	b := t.file.data[t.Begin:t.End]
	le := binary.LittleEndian
	err = t.file.fault(func() {
		switch t.DType {
		case "F32":
			for i := range a.Data {
				a.Data[i] = float64(math.Float32frombits(le.Uint32(b[4*i:])))
			}
		case "F16":
			for i := range a.Data {
				a.Data[i] = float64(te.Float16ToFloat32(le.Uint16(b[2*i:])))
			}
		case "BF16":
			for i := range a.Data {
				a.Data[i] = float64(te.BFloat16ToFloat32(le.Uint16(b[2*i:])))
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
	}
	return a, nil
}

// fault runs read, which reads the mapping, and turns a fault on the way
// (the file truncated since it was mapped: SIGBUS) into an error.
func (f *File) fault(read func()) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			// a fault that SetPanicOnFault turned into a panic has the
			// faulting address
			re, ok := r.(interface {
				runtime.Error
				Addr() uintptr
			})
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("%s: reading the file failed (a fault at address %#x): was it truncated or changed while tec read it?", f.Path, re.Addr())
		}
	}()
	read()
	return nil
}

// clip shortens s to n runes for a message.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "..."
}
