package safetensors

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"tec/internal/jsonobject"
	"tec/internal/safefile"
)

// The files of a checkpoint directory: one file, or shards listed by an
// index.
const (
	SingleFile = "model.safetensors"
	IndexFile  = "model.safetensors.index.json"
)

// maxIndex is the largest index file OpenDir reads.
const maxIndex = 64 << 20

// Checkpoint is a checkpoint directory's tensors, from one file or from
// the shards of an index.
type Checkpoint struct {
	Dir string
	// Files are the files opened, in the order of their names.
	Files  []*File
	byName map[string]*Tensor
	names  []string
}

// Lookup returns the tensor name, or nil.
func (c *Checkpoint) Lookup(name string) *Tensor { return c.byName[name] }

// Names returns the names of the checkpoint's tensors, sorted.
func (c *Checkpoint) Names() []string { return c.names }

// Close closes every file.
func (c *Checkpoint) Close() error {
	var errs []error
	for _, f := range c.Files {
		errs = append(errs, f.Close())
	}
	return errors.Join(errs...)
}

// OpenDir opens the checkpoint in dir: model.safetensors.index.json's
// shards where the index is there, else model.safetensors. Every shard the
// index names must be there, a file name alone (no directory), and hold
// each tensor the index puts in it; a tensor a shard holds but the index
// puts elsewhere or does not list is not the checkpoint's (the index is
// what Hugging Face's loader follows).
func OpenDir(dir string) (*Checkpoint, error) {
	c := &Checkpoint{Dir: dir, byName: map[string]*Tensor{}}
	index := filepath.Join(dir, IndexFile)
	data, err := safefile.ReadFile(index, maxIndex)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		single := filepath.Join(dir, SingleFile)
		f, err := Open(single)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s holds neither %s nor %s, the weights of a Hugging Face checkpoint", dir, SingleFile, IndexFile)
		}
		if err != nil {
			return nil, err
		}
		c.Files = []*File{f}
		for _, t := range f.Tensors() {
			c.byName[t.Name] = t
		}
	case err != nil:
		return nil, err
	default:
		if err := c.openShards(index, data); err != nil {
			c.Close()
			return nil, err
		}
	}
	for name := range c.byName {
		c.names = append(c.names, name)
	}
	slices.Sort(c.names)
	return c, nil
}

// openShards opens the shards that the index (its path and contents)
// names and finds each tensor in its shard.
func (c *Checkpoint) openShards(index string, data []byte) error {
	fields, err := jsonobject.Fields(data)
	if err != nil {
		return fmt.Errorf("%s is not a JSON object: %w", index, err)
	}
	var weightMap []jsonobject.Field
	for _, fl := range fields {
		if fl.Key != "weight_map" {
			continue // metadata (the total size): nothing tec needs
		}
		if weightMap, err = jsonobject.Fields(fl.Value); err != nil {
			return fmt.Errorf("%s: weight_map is not a JSON object: %w", index, err)
		}
	}
	if weightMap == nil {
		return fmt.Errorf("%s has no weight_map, or an empty one", index)
	}
	shardOf := map[string]string{}
	byShard := map[string][]string{}
	for _, fl := range weightMap {
		var shard string
		if err := json.Unmarshal(fl.Value, &shard); err != nil {
			return fmt.Errorf("%s: weight_map's %q is %s, not a file name", index, fl.Key, clip(string(fl.Value), 40))
		}
		if shard == "" || shard == "." || shard == ".." || strings.ContainsAny(shard, `/\`) || filepath.Base(shard) != shard {
			return fmt.Errorf("%s: weight_map puts %q in %q, which is not a file name in the checkpoint's directory", index, fl.Key, shard)
		}
		shardOf[fl.Key] = shard
		byShard[shard] = append(byShard[shard], fl.Key)
	}
	shards := make([]string, 0, len(byShard))
	for s := range byShard {
		shards = append(shards, s)
	}
	slices.Sort(shards)
	files := map[string]*File{}
	for _, s := range shards {
		path := filepath.Join(c.Dir, s)
		f, err := Open(path)
		if errors.Is(err, fs.ErrNotExist) {
			held := byShard[s]
			slices.Sort(held)
			return fmt.Errorf("%s names the shard %s for %d tensors (%s), but %s is missing", index, s, len(held), listSome(held, 3), path)
		}
		if err != nil {
			return err
		}
		c.Files = append(c.Files, f)
		files[s] = f
	}
	names := make([]string, 0, len(shardOf))
	for n := range shardOf {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		f := files[shardOf[name]]
		t := f.Lookup(name)
		if t == nil {
			return fmt.Errorf("%s puts tensor %q in %s, which does not hold it", index, name, f.Path)
		}
		c.byName[name] = t
	}
	return nil
}

// listSome lists the first n names, and how many more.
func listSome(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}
