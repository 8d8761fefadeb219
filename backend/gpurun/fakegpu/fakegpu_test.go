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
		{"wrong code", func(g *GPU) error { _, err := g.LoadModule([]byte("other")); return err }, "not the module's code"},
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
