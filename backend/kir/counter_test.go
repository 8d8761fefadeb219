package kir

import (
	"strings"
	"testing"

	"tec/te"
)

// TestVerifyCounters checks the verifier's rules for counter signals and
// waits on rowSum's module, given a counter temporary and, unless a case
// says otherwise, an all-resident grid.
func TestVerifyCounters(t *testing.T) {
	ctr := func(m *Module) *Buffer { return m.Buffer("ctr") }
	tests := []struct {
		name   string
		mutate func(m *Module)
		want   string // "" for a module Verify accepts
	}{
		{"signal and wait", func(m *Module) {
			k := m.Kernels[0]
			k.Body = append(k.Body, &Signal{Counter: ctr(m), Index: I(1)}, &Wait{Counter: ctr(m), Index: I(1), Target: I(2)})
		}, ""},
		{"wait in a fixed grid", func(m *Module) {
			k := m.Kernels[0]
			k.Grid = Grid{Blocks: 2}
			k.Body = append(k.Body, &Wait{Counter: ctr(m), Index: I(0), Target: I(1)})
		}, "counter wait in a kernel launched with a fixed grid(2), not all-resident"},
		{"index out of bounds", func(m *Module) {
			k := m.Kernels[0]
			k.Body = append(k.Body, &Signal{Counter: ctr(m), Index: I(4)})
		}, "index 4 out of bounds of ctr i32[4]: signal ctr[4]"},
		{"counter not i32", func(m *Module) {
			k := m.Kernels[0]
			k.Body = append(k.Body, &Signal{Counter: m.Buffers[1], Index: I(0)})
		}, "counter signal on y: want a global temporary in the workspace, not global output"},
		{"counter in shared memory", func(m *Module) {
			k := m.Kernels[0]
			k.Body = append(k.Body, &Wait{Counter: k.Shared[0], Index: I(0), Target: I(1)})
		}, "counter wait on red: want a global temporary in the workspace, not shared temp"},
		{"target not i32", func(m *Module) {
			k := m.Kernels[0]
			k.Body = append(k.Body, &Wait{Counter: ctr(m), Index: I(0), Target: F(1)})
		}, "type mismatch: wait target is f32, want i32"},
		{"wait under divergent if", func(m *Module) {
			k := m.Kernels[0]
			k.Body = append(k.Body, &If{Cond: Lt(Tid(), I(4)), Then: []Stmt{&Wait{Counter: ctr(m), Index: I(0), Target: I(1)}}})
		}, "counter wait under thread-divergent control flow or with a thread-dependent operand"},
		{"signal at a thread's index", func(m *Module) {
			k := m.Kernels[0]
			k.Body = append(k.Body, &Signal{Counter: ctr(m), Index: Mod(Tid(), I(4))})
		}, "counter signal under thread-divergent control flow or with a thread-dependent operand"},
		{"undeclared counter", func(m *Module) {
			k := m.Kernels[0]
			k.Params = k.Params[:len(k.Params)-1]
			k.Body = append(k.Body, &Signal{Counter: ctr(m), Index: I(0)})
		}, "buffer ctr is not declared in the kernel: signal ctr[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := rowSum(3, 10, 8)
			c := &Buffer{Name: "ctr", Role: Temp, DType: te.I32, Shape: []int{4}}
			m.Buffers = append(m.Buffers, c)
			k := m.Kernels[0]
			k.Params = append(k.Params, c)
			k.Grid = Grid{Resident: true}
			tt.mutate(m)
			err := Verify(m)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Verify: %v", err)
			case tt.want == "":
				if !k.HasCounters() {
					t.Error("HasCounters is false")
				}
			case err == nil:
				t.Fatalf("Verify accepted the module, want %q", tt.want)
			case strings.Count(err.Error(), tt.want) != 1:
				t.Errorf("Verify: %v\nwant one message containing %q", err, tt.want)
			}
		})
	}
}
