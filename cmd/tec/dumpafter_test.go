package main

import (
	"strings"
	"testing"

	"tec/pipeline"
)

// TestDumpAfterEveryPass checks --dump-after for every pass of the
// pipeline's table, alone and in "all", on the tiny attention example at
// -O4 with a forced flash-decoding split and half precision, so that every
// pass runs, and that the flag's help names every pass.
func TestDumpAfterEveryPass(t *testing.T) {
	args := []string{"build", "../../examples/attention.te", "-D", "S=8", "-D", "D=16", "-D", "NH=2",
		"-O4", "--flash-chunks", "2", "--precision", "bf16", "--emit=", "--dump-after"}
	want := map[string]string{"plan": "kernel 0", "kir": "kernel ", "flash": "/chunk"}
	for _, p := range pipeline.Table() {
		code, out, stderr := runTec(t, append(args, p.Name)...)
		if code != exitOK {
			t.Fatalf("--dump-after %s: status %d, stderr:\n%s", p.Name, code, stderr)
		}
		w, ok := want[p.Name]
		if !ok {
			w = "compute(" // a TE program
		}
		if !strings.HasPrefix(out, "// ---- after "+p.Name+" ----\n") || strings.Count(out, "// ---- after ") != 1 || !strings.Contains(out, w) {
			t.Errorf("--dump-after %s: want its result alone, with %q; got\n%s", p.Name, w, out)
		}
	}
	code, out, stderr := runTec(t, append(args, "all")...)
	if code != exitOK {
		t.Fatalf("--dump-after all: status %d, stderr:\n%s", code, stderr)
	}
	at := 0
	for _, name := range dumpNames() {
		i := strings.Index(out[at:], "// ---- after "+name+" ----\n")
		if i < 0 {
			t.Errorf("--dump-after all: no dump after %s in order", name)
			continue
		}
		at += i
	}
	_, stdout, stderr := runTec(t, "build", "-h")
	if names := strings.Join(dumpNames(), ", "); !strings.Contains(stdout+stderr, names) {
		t.Errorf("tec build -h does not name the passes %s:\n%s%s", names, stdout, stderr)
	}
}
