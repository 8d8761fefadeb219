package driver

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"tec/backend/cuda"
	"tec/examples"
	"tec/gpu"
	"tec/lang"
	"tec/lang/diag"
	"tec/pipeline"
)

// compileExample compiles the example name at level.
func compileExample(t *testing.T, name string, level int) *Compiled {
	t.Helper()
	ex, ok := examples.Lookup(name)
	if !ok {
		t.Fatalf("no example %s", name)
	}
	c, err := CompileSource(ex.File(), ex.Source(), lang.Config{Model: ex.Model}, pipeline.Options{Level: level})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestEmit(t *testing.T) {
	c := compileExample(t, "softmax", pipeline.MaxLevel)
	tg, err := gpu.LookupArch(gpu.DefaultArch())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		out   Outputs
		files []string
		dumps []string
	}{
		{"nothing", Outputs{}, nil, nil},
		{"cu", Outputs{CUDA: true}, []string{"softmax.cu", "softmax.h"}, nil},
		{"host", Outputs{Runner: true}, []string{"main.cu"}, nil},
		{"ll", Outputs{LLVM: true}, []string{"softmax.ll"}, nil},
		{"cu host ll", Outputs{CUDA: true, Runner: true, LLVM: true}, []string{"softmax.cu", "softmax.h", "main.cu", "softmax.ll"}, nil},
		{"dumps only", Outputs{DumpCUDA: true, DumpLLVM: true}, nil, []string{"cu", "ll"}},
		{"ll, dump cu", Outputs{LLVM: true, DumpCUDA: true}, []string{"softmax.ll"}, []string{"cu"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var dumped []string
			tt.out.Dump = func(pass, text string) {
				if text == "" {
					t.Errorf("empty dump of %s", pass)
				}
				dumped = append(dumped, pass)
			}
			files, err := Emit(context.Background(), c, tg, tt.out)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, f := range files {
				names = append(names, f.Name)
			}
			if !slices.Equal(names, tt.files) {
				t.Errorf("files %v, want %v", names, tt.files)
			}
			if !slices.Equal(dumped, tt.dumps) {
				t.Errorf("dumped %v, want %v", dumped, tt.dumps)
			}
		})
	}
}

// TestEmitMatchesEmitters checks that Emit's files are those of the
// emitters run on their own (which lay out and verify the module again).
func TestEmitMatchesEmitters(t *testing.T) {
	c := compileExample(t, "layernorm", 2)
	tg, err := gpu.LookupArch(gpu.DefaultArch())
	if err != nil {
		t.Fatal(err)
	}
	files, err := Emit(context.Background(), c, tg, Outputs{CUDA: true, Runner: true})
	if err != nil {
		t.Fatal(err)
	}
	want, err := cuda.Emit(c.Module, tg)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range []cuda.File{want.Source, want.Header, want.Runner} {
		if files[i].Name != w.Name || string(files[i].Data) != string(w.Data) {
			t.Errorf("file %d: %s differs from the emitter's %s", i, files[i].Name, w.Name)
		}
	}
	if c.Layout() != c.Layout() {
		t.Error("Layout is computed again")
	}
}

func TestCheckError(t *testing.T) {
	_, err := Check("bad.te", []byte("model m {\n  input x: f32[4]\n  y[i] = exq(x[i])\n  output y\n}\n"), lang.Config{})
	var ds diag.List
	if !errors.As(err, &ds) || !strings.HasPrefix(err.Error(), "check: ") || !strings.Contains(err.Error(), "exq") {
		t.Fatalf("Check: %v, want the diagnostics of undefined exq", err)
	}
}
