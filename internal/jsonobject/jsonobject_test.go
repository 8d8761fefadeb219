package jsonobject

import (
	"strings"
	"testing"
)

func TestFields(t *testing.T) {
	for _, tt := range []struct {
		data, keys, err string
	}{
		{`{"b": 1, "a": [2]}`, "b,a", ""},
		{`{}`, "", ""},
		{`[1]`, "", "[ is not a JSON object"},
		{`{"a": 1, "a": 2}`, "", `"a" is given twice`},
		{`{"a": 1} {}`, "", "something follows the JSON object"},
		{`{"a": }`, "", `"a": invalid character`},
	} {
		fs, err := Fields([]byte(tt.data))
		var keys []string
		for _, f := range fs {
			keys = append(keys, f.Key)
		}
		if tt.err == "" && (err != nil || strings.Join(keys, ",") != tt.keys) || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("Fields(%s) = %v, %v; want keys %q, error %q", tt.data, keys, err, tt.keys, tt.err)
		}
	}
}
