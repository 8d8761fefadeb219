package main

import (
	"encoding/json"
	"math"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"tec/internal/tensorio"
	"tec/te"
)

// TestGenerateNaNLogits: logits that hold NaN stop tec generate with an
// error naming the step and the sequence, on the reference and in the
// simulator, where it used to print tokens 0 0 0 0 and exit 0 (issue 23:
// -D EPS=-1, -D THETA=0, a NaN in wte, at llama.te's tiny sizes).
func TestGenerateNaNLogits(t *testing.T) {
	tiny := llamaTiny(t)
	wte := te.NewArray(te.F32, []int{64, 32})
	for i := range wte.Data {
		wte.Data[i] = math.NaN()
	}
	params := filepath.Join(t.TempDir(), "nan.npz")
	if err := tensorio.WriteNPZ(params, map[string]*te.Array{"wte": wte}); err != nil {
		t.Fatal(err)
	}
	const want = "tec generate: prefill (model prefill): sequence 0: the logits it picks its next token from, logits[0, :], are all NaN (64 values)"
	tests := []struct {
		name string
		args []string
	}{
		{"EPS=-1", []string{"-D", "EPS=-1"}},
		{"THETA=0", []string{"-D", "THETA=0"}},
		{"a NaN in wte", []string{"--params", params}},
	}
	for _, tt := range tests {
		for _, device := range [][]string{{"--device", "ref"}, {"--device", "sim", "-O4"}} {
			t.Run(tt.name+" "+device[1], func(t *testing.T) {
				args := append(append(append([]string{"generate", llamaFile, "--fill", "random", "--steps", "3"}, tt.args...), device...), tiny...)
				code, out, stderr := runTec(t, args...)
				// The header comes before the run; no token does.
				if code != exitUser || !strings.HasPrefix(stderr, want) || regexp.MustCompile(`(?m)^sequence \d+:`).MatchString(out) {
					t.Errorf("status %d, want %d; stdout %q; stderr:\n%s\nwant it to start %q", code, exitUser, out, stderr, want)
				}
				code, out, _ = runTec(t, append(args, "--json")...)
				var d struct{ Code, Message string }
				if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &d); err != nil || code != exitUser || d.Code != codeEval || !strings.Contains(d.Message, "are all NaN") {
					t.Errorf("--json: status %d, diagnostic %+v (%v)\n%s", code, d, err, out)
				}
			})
		}
	}
}
