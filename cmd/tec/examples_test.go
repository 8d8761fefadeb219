package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"tec/examples"
)

// TestExamplesRunOnRef runs every example at its tiny configuration through
// "tec run --device ref --fill random" exactly as a user would, and checks that
// every output is finite.
func TestExamplesRunOnRef(t *testing.T) {
	for _, ex := range examples.All() {
		t.Run(ex.Name, func(t *testing.T) {
			args := []string{"run", filepath.Join("..", "..", "examples", ex.File()), "--device", "ref", "--fill", "random", "--json"}
			args = append(args, ex.TinyFlags()...)
			code, stdout, stderr := runTec(t, args...)
			if code != exitOK {
				t.Fatalf("tec %v: status %d\n%s", args, code, stderr)
			}
			var s struct {
				Outputs []struct {
					Name string `json:"name"`
					NaNs int    `json:"nan"`
					Infs int    `json:"inf"`
				} `json:"outputs"`
			}
			if err := json.Unmarshal([]byte(stdout), &s); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, stdout)
			}
			if len(s.Outputs) == 0 {
				t.Fatal("no outputs")
			}
			for _, o := range s.Outputs {
				if o.NaNs+o.Infs > 0 {
					t.Errorf("output %s has %d NaN and %d Inf values on random weights", o.Name, o.NaNs, o.Infs)
				}
			}
		})
	}
}
