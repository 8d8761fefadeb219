package safetensors

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tec/te"
)

// spec is a tensor to write with build.
type spec struct {
	name  string
	dtype string
	shape []int
	data  []byte
}

// build returns a safetensors file of the tensors, laid out one after the
// other in the order given.
func build(t *testing.T, tensors []spec, metadata map[string]string) []byte {
	t.Helper()
	header := map[string]any{}
	if metadata != nil {
		header["__metadata__"] = metadata
	}
	var data []byte
	for _, s := range tensors {
		header[s.name] = map[string]any{"dtype": s.dtype, "shape": s.shape, "data_offsets": []int{len(data), len(data) + len(s.data)}}
		data = append(data, s.data...)
	}
	h, err := json.Marshal(header)
	if err != nil {
		t.Fatal(err)
	}
	return raw(string(h), data)
}

// raw returns a file of the header text and data, the length first.
func raw(header string, data []byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	return append(append(b, header...), data...)
}

func f32s(v ...float32) []byte {
	var b []byte
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

func u16s(v ...uint16) []byte {
	var b []byte
	for _, x := range v {
		b = binary.LittleEndian.AppendUint16(b, x)
	}
	return b
}

func write(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRead reads a file of F32, F16 and BF16 tensors, a scalar and an
// empty one, with metadata, and checks every value.
func TestRead(t *testing.T) {
	dir := t.TempDir()
	p := write(t, dir, "m.safetensors", build(t, []spec{
		{"a", "F32", []int{2, 2}, f32s(1, -2.5, 3e-8, float32(math.Inf(1)))},
		{"h", "F16", []int{3}, u16s(0x3c00, 0xc000, 0x0001)},                // 1, -2, 2^-24
		{"b", "BF16", []int{2}, u16s(0x3f80, te.Float32ToBFloat16(-0.375))}, // 1, -0.375
		{"s", "F32", []int{}, f32s(7)},
		{"e", "F32", []int{0, 4}, nil},
		{"i", "I64", []int{1}, make([]byte, 8)},
	}, map[string]string{"format": "pt"}))
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Metadata["format"] != "pt" || len(f.Tensors()) != 6 {
		t.Errorf("metadata %v, %d tensors", f.Metadata, len(f.Tensors()))
	}
	for _, c := range []struct {
		name  string
		dtype te.DType
		want  []float64
	}{
		{"a", te.F32, []float64{1, -2.5, float64(float32(3e-8)), math.Inf(1)}},
		{"h", te.F16, []float64{1, -2, math.Ldexp(1, -24)}},
		{"b", te.BF16, []float64{1, -0.375}},
		{"s", te.F32, []float64{7}},
		{"e", te.F32, []float64{}},
	} {
		a, err := f.Lookup(c.name).Read()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if a.DType != c.dtype || len(a.Data) != len(c.want) {
			t.Fatalf("%s: %s %v, want %s %v", c.name, a.DType, a.Data, c.dtype, c.want)
		}
		for i := range c.want {
			if a.Data[i] != c.want[i] {
				t.Errorf("%s[%d] = %v, want %v", c.name, i, a.Data[i], c.want[i])
			}
		}
	}
	if _, err := f.Lookup("i").Read(); err == nil || !strings.Contains(err.Error(), `tensor "i" is I64[1]: tec reads F32, F16 and BF16 tensors`) {
		t.Errorf("reading an I64 tensor: %v", err)
	}
}

// TestHostile opens files whose headers lie or do not parse: each must
// fail with an error that says what is wrong, before anything is read
// through the header.
func TestHostile(t *testing.T) {
	four := f32s(1, 2, 3, 4)
	cases := []struct {
		name string
		file []byte
		want string
	}{
		{"empty", nil, "0 bytes, shorter than the 8-byte header length"},
		{"short", []byte{1, 2, 3}, "3 bytes, shorter than the 8-byte header length"},
		{"length past the file", raw(`{}`, nil)[:9], "the header length 2 runs past the end of the file (1 bytes follow the length)"},
		{"huge length", append(binary.LittleEndian.AppendUint64(nil, 1<<62), "{}"...), "the header length 4611686018427387904 runs past the end of the file"},
		{"zero length", raw(``, nil), "the header length is 0"},
		{"not JSON", raw(`hello world`, nil), `the header is not a JSON object: it starts with "hello world"`},
		{"JSON array", raw(`[1, 2]`, nil), "the header is not a JSON object"},
		{"truncated JSON", raw(`{"a": {"dtype": "F32"`, nil), "the header is not valid"},
		{"not UTF-8", raw("{\"\xff\": 1}", nil), "the header is not UTF-8 text"},
		{"trailing JSON", raw(`{}{}`, nil), "something follows the JSON object"},
		{"duplicate name", raw(`{"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, "a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}`, f32s(1, 2)),
			`"a" is given twice`},
		{"duplicate field", raw(`{"a": {"dtype": "F32", "shape": [1], "shape": [2], "data_offsets": [0, 4]}}`, f32s(1)), `tensor "a": "shape" is given twice`},
		{"unknown field", raw(`{"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4], "stride": [1]}}`, f32s(1)), `tensor "a": unknown field "stride"`},
		{"entry not an object", raw(`{"a": [1]}`, nil), `tensor "a": the entry [1] is not an object`},
		{"no dtype", raw(`{"a": {"shape": [1], "data_offsets": [0, 4]}}`, f32s(1)), `tensor "a": no dtype`},
		{"no shape", raw(`{"a": {"dtype": "F32", "data_offsets": [0, 4]}}`, f32s(1)), `tensor "a": no shape`},
		{"no offsets", raw(`{"a": {"dtype": "F32", "shape": [1]}}`, f32s(1)), `tensor "a": no data_offsets`},
		{"three offsets", raw(`{"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4, 8]}}`, f32s(1)), "data_offsets has 3 numbers"},
		{"offsets not numbers", raw(`{"a": {"dtype": "F32", "shape": [1], "data_offsets": ["0", 4]}}`, f32s(1)), "data_offsets: [\"0\", 4] is not valid"},
		{"unknown dtype", raw(`{"a": {"dtype": "Q4_K", "shape": [1], "data_offsets": [0, 4]}}`, f32s(1)), `dtype "Q4_K" is not one of the safetensors format's`},
		{"negative dimension", raw(`{"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}`, f32s(1)), "shape [-1] has a negative dimension"},
		{"huge shape", raw(`{"a": {"dtype": "F32", "shape": [1000000000, 1000000000, 1000000000], "data_offsets": [0, 4]}}`, f32s(1)), "has more elements than a file can hold"},
		{"shape and range disagree", raw(`{"a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 8]}}`, f32s(1, 2)), `tensor "a": F32[2, 2] holds 16 bytes (4 elements of 4), but data_offsets [0, 8] give 8`},
		{"dtype and range disagree", raw(`{"a": {"dtype": "BF16", "shape": [4], "data_offsets": [0, 16]}}`, four), `BF16[4] holds 8 bytes`},
		{"reversed range", raw(`{"a": {"dtype": "F32", "shape": [0], "data_offsets": [8, 4]}}`, four), "data_offsets [8, 4] is not a byte range"},
		{"negative offset", raw(`{"a": {"dtype": "F32", "shape": [1], "data_offsets": [-4, 0]}}`, four), "data_offsets [-4, 0] is not a byte range"},
		{"past the data", raw(`{"a": {"dtype": "F32", "shape": [4], "data_offsets": [4, 20]}}`, four), "data_offsets [4, 20] run past the data, which holds 16 bytes"},
		{"far past the data", raw(`{"a": {"dtype": "F32", "shape": [1], "data_offsets": [9223372036854775803, 9223372036854775807]}}`, four), "run past the data"},
		{"overlap", raw(`{"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 12]}, "b": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}}`, four),
			`tensor "b"'s bytes [8, 16) overlap tensor "a"'s [0, 12)`},
		{"same range twice", raw(`{"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}, "b": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}`, four),
			`overlap`},
		{"hole at the start", raw(`{"a": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}}`, four), `bytes [0, 8) of the data belong to no tensor: the first, "a", begins at 8`},
		{"hole between", raw(`{"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, "b": {"dtype": "F32", "shape": [1], "data_offsets": [12, 16]}}`, four),
			`bytes [4, 12) of the data belong to no tensor: between "a", which ends at 4, and "b", which begins at 12`},
		{"trailing bytes", raw(`{"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}`, four), "bytes [8, 16) of the data belong to no tensor (the file is 8 bytes longer than its tensors)"},
		{"data but no tensors", raw(`{}`, four), "bytes [0, 16) of the data belong to no tensor"},
		{"metadata not strings", raw(`{"__metadata__": {"n": 1}}`, nil), "the header's __metadata__ is not an object of strings"},
	}
	dir := t.TempDir()
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := write(t, dir, "f"+string(rune('a'+i%26))+".safetensors", c.file)
			f, err := Open(p)
			if err == nil {
				f.Close()
				t.Fatalf("opened; want an error with %q", c.want)
			}
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
				t.Errorf("error %q\nwant it to name %s and say %q", err, p, c.want)
			}
		})
	}
}

// TestHugeHeader refuses a header longer than MaxHeader (in a sparse
// file) before reading it.
func TestHugeHeader(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big.safetensors")
	if err := os.WriteFile(p, binary.LittleEndian.AppendUint64(nil, MaxHeader+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, MaxHeader+64); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(p); err == nil || !strings.Contains(err.Error(), "the most a safetensors header may have") {
		t.Errorf("error %v", err)
	}
}

// TestTruncatedAfterOpen reads a tensor of a file cut short after it was
// mapped: the fault is an error, not a crash.
func TestTruncatedAfterOpen(t *testing.T) {
	dir := t.TempDir()
	data := make([]byte, 1<<16)
	p := write(t, dir, "m.safetensors", build(t, []spec{{"a", "F32", []int{1 << 14}, data}}, nil))
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.Truncate(p, 100); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Lookup("a").Read(); err == nil || !strings.Contains(err.Error(), "was it truncated or changed while tec read it?") {
		t.Errorf("error %v", err)
	}
}

// TestOpenDir reads a sharded checkpoint through its index, and a single
// file, and refuses indexes that name a missing shard, a tensor that its
// shard lacks, or a shard outside the directory.
func TestOpenDir(t *testing.T) {
	shard1 := build(t, []spec{{"a", "F32", []int{1}, f32s(1)}, {"stray", "F32", []int{1}, f32s(9)}}, nil)
	shard2 := build(t, []spec{{"b", "BF16", []int{2}, u16s(0x3f80, 0x4000)}}, nil)
	index := `{"metadata": {"total_size": 8}, "weight_map": {"a": "s1.safetensors", "b": "s2.safetensors"}}`

	dir := t.TempDir()
	write(t, dir, "s1.safetensors", shard1)
	write(t, dir, "s2.safetensors", shard2)
	write(t, dir, IndexFile, []byte(index))
	c, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.Names(), " "); got != "a b" {
		t.Errorf("names %q, want the index's (a stray tensor is not the checkpoint's)", got)
	}
	b, err := c.Lookup("b").Read()
	if err != nil || b.Data[1] != 2 || filepath.Base(c.Lookup("b").File()) != "s2.safetensors" {
		t.Errorf("b: %v %v", b, err)
	}
	c.Close()

	single := t.TempDir()
	write(t, single, SingleFile, shard2)
	if c, err := OpenDir(single); err != nil || c.Lookup("b") == nil {
		t.Errorf("single file: %v", err)
	} else {
		c.Close()
	}

	cases := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"nothing", map[string]string{"config.json": "{}"}, "holds neither model.safetensors nor model.safetensors.index.json"},
		{"missing shard", map[string]string{IndexFile: index, "s1.safetensors": string(shard1)},
			"names the shard s2.safetensors for 1 tensors (b), but " + "DIR/s2.safetensors is missing"},
		{"tensor absent from its shard", map[string]string{IndexFile: `{"weight_map": {"a": "s1.safetensors", "b": "s1.safetensors"}}`, "s1.safetensors": string(shard1)},
			`puts tensor "b" in DIR/s1.safetensors, which does not hold it`},
		{"shard outside", map[string]string{IndexFile: `{"weight_map": {"a": "../s1.safetensors"}}`}, `weight_map puts "a" in "../s1.safetensors", which is not a file name in the checkpoint's directory`},
		{"no weight map", map[string]string{IndexFile: `{"metadata": {}}`}, "has no weight_map"},
		{"duplicate in weight map", map[string]string{IndexFile: `{"weight_map": {"a": "s1.safetensors", "a": "s2.safetensors"}}`}, `"a" is given twice`},
		{"index not JSON", map[string]string{IndexFile: `weights`}, "is not a JSON object"},
		{"bad shard", map[string]string{IndexFile: index, "s1.safetensors": string(shard1), "s2.safetensors": "xx"}, "s2.safetensors: 2 bytes, shorter than"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := t.TempDir()
			for name, data := range c.files {
				write(t, d, name, []byte(data))
			}
			ck, err := OpenDir(d)
			if err == nil {
				ck.Close()
				t.Fatalf("opened; want %q", c.want)
			}
			if want := strings.ReplaceAll(c.want, "DIR", d); !strings.Contains(err.Error(), want) {
				t.Errorf("error %q\nwant %q", err, want)
			}
		})
	}
}
