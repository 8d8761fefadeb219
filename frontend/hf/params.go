package hf

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"tec/internal/safefile"
	"tec/internal/safetensors"
	"tec/internal/tensorio"
	"tec/te"
)

// ConfigFile is the file that makes a directory a checkpoint.
const ConfigFile = "config.json"

// maxConfig is the largest config.json read.
const maxConfig = 1 << 20

// ReadConfig reads and parses dir's config.json.
func ReadConfig(dir string) (*Config, error) {
	path := filepath.Join(dir, ConfigFile)
	data, err := safefile.ReadFile(path, maxConfig)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s has no %s: tec import reads a directory as a Hugging Face checkpoint, with its config.json and safetensors", dir, ConfigFile)
	}
	if err != nil {
		return nil, err
	}
	c, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	return c, nil
}

// ReadParams reads, from the checkpoint in dir (its config.json and
// safetensors, one file or the shards of an index), the arrays of the
// params that specs names, each from the tensor that TensorName gives,
// as the file's dtype (F32, F16 or BF16: the caller converts to the
// param's). It returns them by param name, and the names of the
// checkpoint's tensors that no param of specs reads. A name of specs
// that the mapping does not know (an input, a param of another program)
// is left to the caller. A tensor missing from the checkpoint, or whose
// dtype or shape does not fit its param, is an error naming the tensor,
// the param, both types and the file.
func ReadParams(dir string, specs map[string]tensorio.Spec) (arrays map[string]*te.Array, others []string, err error) {
	ck, err := openCheckpoint(dir)
	if err != nil {
		return nil, nil, err
	}
	defer ck.Close()
	arrays = map[string]*te.Array{}
	read := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(specs)) {
		tensor, ok := TensorName(name)
		if !ok {
			continue
		}
		t, err := find(ck, tensor, name, specs[name])
		if err != nil {
			return nil, nil, err
		}
		a, err := t.Read()
		if err != nil {
			return nil, nil, err
		}
		arrays[name], read[tensor] = a, true
	}
	for _, n := range ck.Names() {
		if !read[n] {
			others = append(others, n)
		}
	}
	return arrays, others, nil
}

// CheckCheckpoint checks that the checkpoint in dir holds a tensor of a
// dtype tec reads and of the right shape for every param of c's program,
// reading the safetensors headers only: what tec import checks, so that
// a checkpoint that does not fit its config.json fails there.
func CheckCheckpoint(dir string, c *Config) error {
	ck, err := openCheckpoint(dir)
	if err != nil {
		return err
	}
	defer ck.Close()
	for _, p := range Params(c) {
		if _, err := find(ck, p.Tensor, p.Name, tensorio.Spec{DType: te.F32, Shape: p.Shape}); err != nil {
			return err
		}
	}
	return nil
}

// openCheckpoint opens the safetensors of the checkpoint in dir, which
// must hold a config.json.
func openCheckpoint(dir string) (*safetensors.Checkpoint, error) {
	if _, err := os.Stat(filepath.Join(dir, ConfigFile)); err != nil {
		return nil, fmt.Errorf("%s is a directory without %s: tec reads a directory as a Hugging Face checkpoint, with its config.json and safetensors", dir, ConfigFile)
	}
	return safetensors.OpenDir(dir)
}

// find returns the checkpoint's tensor for param name (spec), checked
// against it: there, of a dtype tec reads, of the param's shape.
func find(ck *safetensors.Checkpoint, tensor, name string, spec tensorio.Spec) (*safetensors.Tensor, error) {
	t := ck.Lookup(tensor)
	if t == nil {
		return nil, fmt.Errorf("%s has no tensor %q for param %s: %s (the checkpoint's tensors: %s)", ck.Dir, tensor, name, spec, listNames(ck.Names(), 4))
	}
	_, ok := t.Readable()
	if ok && spec.DType.IsFloat() && te.SameShape(t.Shape, spec.Shape) {
		return t, nil
	}
	why := "the shapes differ"
	switch {
	case !ok:
		why = "tec reads F32, F16 and BF16 tensors"
	case !spec.DType.IsFloat():
		why = "a float tensor binds float params only"
	}
	return nil, fmt.Errorf("%s: tensor %q is %s, but param %s is %s: %s", t.File(), tensor, t.Type(), name, spec, why)
}

// listNames lists the first n names, and how many more.
func listNames(names []string, n int) string {
	switch {
	case len(names) == 0:
		return "none"
	case len(names) <= n:
		return fmt.Sprint(names)
	}
	return fmt.Sprintf("%v and %d more", names[:n], len(names)-n)
}

// GenerationConfigFile is the checkpoint's file of generation defaults,
// whose end-of-sequence ids may be more than config.json's (an instruct
// model's end-of-turn token).
const GenerationConfigFile = "generation_config.json"

// ReadGenerationEOS returns the end-of-sequence token ids of dir's
// generation_config.json (eos_token_id, one id or a list), nil where the
// file or the field is absent.
func ReadGenerationEOS(dir string) ([]int, error) {
	path := filepath.Join(dir, GenerationConfigFile)
	data, err := safefile.ReadFile(path, maxConfig)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var v struct {
		EOS json.RawMessage `json:"eos_token_id"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(v.EOS) == 0 {
		return nil, nil
	}
	var c Config
	if err := readEOS(&c, v.EOS); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c.EOS, nil
}
