// Package jsonobject reads a JSON object as its fields in order, strictly:
// a key given twice, or anything after the object, is an error. Files that
// tec reads from outside (safetensors headers, checkpoint indexes,
// config.json) go through it, so that a duplicated key cannot pass as
// the last one given.
package jsonobject

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Field is a key of a JSON object and its value.
type Field struct {
	Key   string
	Value json.RawMessage
}

// Fields returns the fields of the JSON object data in order; data that
// is not an object, a key given twice, or anything after the object but
// white space, is an error.
func Fields(data []byte) ([]Field, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("%v is not a JSON object", tok)
	}
	var fields []Field
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("%v is not a key", tok)
		}
		if seen[key] {
			return nil, fmt.Errorf("%q is given twice", key)
		}
		seen[key] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("%q: %w", key, err)
		}
		fields = append(fields, Field{key, v})
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("something follows the JSON object")
	}
	return fields, nil
}
