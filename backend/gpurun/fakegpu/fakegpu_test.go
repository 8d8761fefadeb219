package fakegpu

import (
	"strings"
	"testing"

	"tec/backend/gpurun"
	"tec/backend/internal/kirtest"
	"tec/backend/kir"
)

// TestChecks: the fake refuses what the CUDA driver would, and what the
// runtime must never do, so that tests that pass on it mean something.
func TestChecks(t *testing.T) {
	m, _ := kirtest.WorkspaceTemp()
	sym := map[*kir.Kernel]string{m.Kernels[0]: "k_k"}
	for _, tc := range []struct {
		name string
		do   func(g *GPU) error
		want string
	}{
		{"zero alloc", func(g *GPU) error { _, err := g.Alloc(0); return err }, "CUDA_ERROR_INVALID_VALUE"},
		{"overrun", func(g *GPU) error {
			p, _ := g.Alloc(16)
			return g.CopyToDevice(p+8, make([]byte, 9))
		}, "overrun the 16-byte allocation"},
		{"stray pointer", func(g *GPU) error { return g.CopyFromDevice(make([]byte, 4), 0x10) }, "in no allocation"},
		{"double free", func(g *GPU) error {
			p, _ := g.Alloc(16)
			_ = g.Free(p)
			return g.Free(p)
		}, "not an allocation"},
		{"leak", func(g *GPU) error { _, _ = g.Alloc(16); return g.Close() }, "1 allocations not freed"},
		{"wrong code", func(g *GPU) error { _, err := g.LoadModule([]byte("other")); return err }, "not the code of any module"},
		{"unknown function", func(g *GPU) error {
			mod, _ := g.LoadModule([]byte("ptx"))
			_, err := g.Function(mod, "k_other")
			return err
		}, "CUDA_ERROR_NOT_FOUND"},
		{"not cooperative", func(g *GPU) error {
			mod, _ := g.LoadModule([]byte("ptx"))
			f, _ := g.Function(mod, "k_k")
			ws, _ := g.Alloc(256)
			y, _ := g.Alloc(256)
			return g.Launch(gpurun.Launch{Func: f, Grid: 2, Block: 32, Args: []gpurun.Ptr{y, ws}})
		}, "cooperative false, want true"},
		{"grid too large", func(g *GPU) error {
			mod, _ := g.LoadModule([]byte("ptx"))
			f, _ := g.Function(mod, "k_k")
			return g.Launch(gpurun.Launch{Func: f, Grid: 3, Block: 32, Cooperative: true})
		}, "grid 3 of 32 threads, want 2 of 32"},
		{"elapsed unrecorded", func(g *GPU) error {
			a, _ := g.NewEvent()
			b, _ := g.NewEvent()
			_ = g.Record(a)
			_, err := g.Elapsed(a, b)
			return err
		}, "event 1 not recorded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.do(New(m, []byte("ptx"), sym))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// TestModules: a fake GPU of several modules loads each from its own code
// and refuses a launch of one while a run of another is half queued.
func TestModules(t *testing.T) {
	a, _ := kirtest.WorkspaceTemp()
	b, _ := kirtest.WorkspaceTemp()
	b.Name = "other"
	sym := func(m *kir.Module) map[*kir.Kernel]string { return map[*kir.Kernel]string{m.Kernels[0]: "k_k"} }
	g := NewModules(Code{Module: a, Image: []byte("a"), Symbols: sym(a)}, Code{Module: b, Image: []byte("b"), Symbols: sym(b)})
	if _, err := g.LoadModule([]byte("c")); err == nil || !strings.Contains(err.Error(), "not the code of any module") {
		t.Errorf("unknown code: %v", err)
	}
	ma, _ := g.LoadModule([]byte("a"))
	mb, _ := g.LoadModule([]byte("b"))
	if ma == mb {
		t.Fatalf("both modules are handle %d", ma)
	}
	if _, err := g.Function(mb, "k_k"); err != nil {
		t.Fatal(err)
	}
	if got := len(a.Kernels) + len(b.Kernels); got != 2 {
		t.Fatalf("%d kernels, want one each", got)
	}
	// One module's launches are checked against its own kernels: b's
	// kernel with a's grid and arguments is b's.
	mod := g.mods[1]
	mod.queued = 1 // as if a launch of a longer run of b were queued
	fa, _ := g.Function(ma, "k_k")
	err := g.Launch(gpurun.Launch{Func: fa, Grid: 2, Block: 32, Cooperative: true})
	if err == nil || !strings.Contains(err.Error(), "a launch of module ws with 1 launches of a run of other queued") {
		t.Errorf("interleaved launch: %v", err)
	}
	if err := g.CopyFromDevice(nil, 0); err == nil || !strings.Contains(err.Error(), "a copy from the device with 1 of 1 launches of a run of other queued") {
		t.Errorf("copy during a run: %v", err)
	}
}
