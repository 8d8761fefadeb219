package sim

import (
	"strings"
	"testing"

	"tec/backend/kir"
	"tec/te"
)

// TestRunRejectsHugeBuffers: a module is not trusted with its sizes; a
// buffer or block too large for te.MaxElements is an error naming it, not a
// panic in make (or a wrapped-around element count).
func TestRunRejectsHugeBuffers(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(m *kir.Module)
		want   string
	}{
		{"input", func(m *kir.Module) { m.Buffers[0].Shape = []int{100000, 100000, 100000} }, "buffer x"},
		{"overflow", func(m *kir.Module) { m.Buffers[0].Shape = []int{1 << 62, 1 << 62} }, "buffer x"},
		{"shared", func(m *kir.Module) { m.Kernels[0].Shared[0].Shape = []int{1 << 62} }, "shared buffer red"},
		{"local", func(m *kir.Module) { // 2^29 elements per thread, 4 threads
			m.Kernels[0].Locals = []*kir.Buffer{{Name: "l", Space: kir.Local, DType: te.F32, Shape: []int{1 << 29}}}
		}, "local buffer l"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := rowSum(2, 8, 4, true)
			tt.mutate(m)
			feeds := map[string]*te.Array{"x": te.NewArray(te.F32, []int{2, 8})}
			_, err := Run(m, feeds, Options{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}
