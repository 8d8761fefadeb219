package hf

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"tec/internal/tensorio"
	"tec/te"
)

// tensorFile is a tensor to write with writeSafetensors: values, stored
// as dtype (F32 or BF16, rounded), or raw bytes for other dtypes.
type tensorFile struct {
	name   string
	dtype  string
	shape  []int
	values []float64
	raw    []byte
}

// writeSafetensors writes the tensors to path in the safetensors format.
func writeSafetensors(t *testing.T, path string, tensors []tensorFile) {
	t.Helper()
	header := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	var data []byte
	for _, tf := range tensors {
		b := tf.raw
		for _, v := range tf.values {
			switch tf.dtype {
			case "F32":
				b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(v)))
			case "BF16":
				b = binary.LittleEndian.AppendUint16(b, te.Float32ToBFloat16(float32(v)))
			default:
				t.Fatalf("dtype %s", tf.dtype)
			}
		}
		shape := tf.shape
		if shape == nil {
			shape = []int{}
		}
		header[tf.name] = map[string]any{"dtype": tf.dtype, "shape": shape, "data_offsets": []int{len(data), len(data) + len(b)}}
		data = append(data, b...)
	}
	h, err := json.Marshal(header)
	if err != nil {
		t.Fatal(err)
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	out = append(append(out, h...), data...)
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// checkpoint writes a checkpoint of c in dir, its tensors in two shards
// with an index, each tensor's values i/1000 + k (k its place in Params),
// stored as BF16; extra tensors go into the first shard.
func checkpoint(t *testing.T, dir string, c *Config, extra ...tensorFile) []Param {
	t.Helper()
	params := Params(c)
	var shards [2][]tensorFile
	weightMap := map[string]string{}
	for k, p := range params {
		n := 1
		for _, d := range p.Shape {
			n *= d
		}
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(k) + float64(i%7)/8
		}
		s := k % 2
		shards[s] = append(shards[s], tensorFile{name: p.Tensor, dtype: "BF16", shape: p.Shape, values: v})
		weightMap[p.Tensor] = []string{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}[s]
	}
	shards[0] = append(shards[0], extra...)
	for _, e := range extra {
		weightMap[e.name] = "model-00001-of-00002.safetensors"
	}
	writeSafetensors(t, filepath.Join(dir, "model-00001-of-00002.safetensors"), shards[0])
	writeSafetensors(t, filepath.Join(dir, "model-00002-of-00002.safetensors"), shards[1])
	index, _ := json.Marshal(map[string]any{"metadata": map[string]int{"total_size": 0}, "weight_map": weightMap})
	if err := os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), index, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ConfigFile), []byte(tinyFamilies["qwen2"]), 0o644); err != nil {
		t.Fatal(err)
	}
	return params
}

func specsOf(params []Param) map[string]tensorio.Spec {
	specs := map[string]tensorio.Spec{"ids": {DType: te.I32, Shape: []int{1, 4}}}
	for _, p := range params {
		specs[p.Name] = tensorio.Spec{DType: te.F32, Shape: p.Shape}
	}
	return specs
}

// TestReadParams reads a sharded checkpoint's params through the mapping,
// leaves the names it does not map to the caller, and reports the tensors
// that no param reads.
func TestReadParams(t *testing.T) {
	c, _ := ParseConfig([]byte(tinyFamilies["qwen2"]))
	dir := t.TempDir()
	params := checkpoint(t, dir, c, tensorFile{name: "model.rotary_emb.inv_freq", dtype: "F32", shape: []int{4}, values: []float64{1, 2, 3, 4}})
	arrays, others, err := ReadParams(dir, specsOf(params))
	if err != nil {
		t.Fatal(err)
	}
	if len(arrays) != len(params) || arrays["ids"] != nil {
		t.Fatalf("%d arrays for %d params", len(arrays), len(params))
	}
	for k, p := range params {
		a := arrays[p.Name]
		if a == nil || a.DType != te.BF16 || !slices.Equal(a.Shape, p.Shape) || a.Data[0] != float64(k) || a.Data[len(a.Data)-1] != float64(k)+float64((len(a.Data)-1)%7)/8 {
			t.Fatalf("param %s: %v", p.Name, a)
		}
	}
	if !slices.Equal(others, []string{"model.rotary_emb.inv_freq"}) {
		t.Errorf("others %v", others)
	}
}

// TestReadParamsErrors checks the errors of a checkpoint that does not fit
// the program: each names the tensor, the param and the file.
func TestReadParamsErrors(t *testing.T) {
	c, _ := ParseConfig([]byte(tinyFamilies["qwen2"]))
	cases := []struct {
		name  string
		edit  func(specs map[string]tensorio.Spec, dir string)
		extra []tensorFile
		want  string
	}{
		{"shape", func(specs map[string]tensorio.Spec, dir string) {
			specs["wq.1"] = tensorio.Spec{DType: te.F32, Shape: []int{16, 32}}
		}, nil, `model-00001-of-00002.safetensors: tensor "model.layers.1.self_attn.q_proj.weight" is BF16[32, 32], but param wq.1 is f32[16, 32]: the shapes differ`},
		{"missing", func(specs map[string]tensorio.Spec, dir string) {
			specs["wq.2"] = tensorio.Spec{DType: te.F32, Shape: []int{32, 32}}
		}, nil, `has no tensor "model.layers.2.self_attn.q_proj.weight" for param wq.2: f32[32, 32]`},
		{"integer param", func(specs map[string]tensorio.Spec, dir string) {
			specs["norm"] = tensorio.Spec{DType: te.I32, Shape: []int{32}}
		}, nil, `tensor "model.norm.weight" is BF16[32], but param norm is i32[32]: a float tensor binds float params only`},
		{"no config", func(specs map[string]tensorio.Spec, dir string) {
			os.Remove(filepath.Join(dir, ConfigFile))
		}, nil, "is a directory without config.json"},
		{"missing shard", func(specs map[string]tensorio.Spec, dir string) {
			os.Remove(filepath.Join(dir, "model-00002-of-00002.safetensors"))
		}, nil, "names the shard model-00002-of-00002.safetensors for"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			specs := specsOf(checkpoint(t, dir, c, tc.extra...))
			tc.edit(specs, dir)
			_, _, err := ReadParams(dir, specs)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v\nwant %q", err, tc.want)
			}
		})
	}
	t.Run("integer tensor", func(t *testing.T) {
		dir := t.TempDir()
		writeSafetensors(t, filepath.Join(dir, "model.safetensors"), []tensorFile{{name: "model.norm.weight", dtype: "I64", shape: []int{2}, raw: make([]byte, 16)}})
		os.WriteFile(filepath.Join(dir, ConfigFile), []byte("{}"), 0o644)
		_, _, err := ReadParams(dir, map[string]tensorio.Spec{"norm": {DType: te.F32, Shape: []int{2}}})
		if want := `model.safetensors: tensor "model.norm.weight" is I64[2], but param norm is f32[2]: tec reads F32, F16 and BF16 tensors`; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v\nwant %q", err, want)
		}
	})
}

// TestCheckCheckpoint checks a checkpoint's headers against the config
// that import reads: what fits passes, a tensor of another shape than
// config.json gives fails naming both.
func TestCheckCheckpoint(t *testing.T) {
	c, _ := ParseConfig([]byte(tinyFamilies["qwen2"]))
	dir := t.TempDir()
	checkpoint(t, dir, c)
	if err := CheckCheckpoint(dir, c); err != nil {
		t.Fatal(err)
	}
	other, _ := ParseConfig([]byte(tinyConfig("qwen2", map[string]string{"intermediate_size": "48"})))
	want := `model-00001-of-00002.safetensors: tensor "model.layers.0.mlp.gate_proj.weight" is BF16[64, 32], but param w_gate.0 is f32[48, 32]: the shapes differ`
	if err := CheckCheckpoint(dir, other); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v\nwant %q", err, want)
	}
}
