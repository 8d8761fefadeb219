// Package target describes the GPU architectures the back end emits code
// for: what the emitters and the launch-time checks need to know of each.
package target

import (
	"fmt"
	"strings"
)

// Target is a GPU architecture (a CUDA compute capability).
type Target struct {
	// Name is the architecture as nvcc and llc spell it, e.g. "sm_80".
	Name         string
	Major, Minor int
	// MaxSharedPerBlock is the most shared memory one block may use, in
	// bytes, with the kernel's opt-in (cudaFuncAttributeMaxDynamicSharedMemorySize).
	MaxSharedPerBlock int64
	// PTX is the PTX ISA version llc is asked to emit ("+ptx70").
	PTX string
	// LLC is the llc binary that reaches this architecture: LLVM 14's llc
	// stops at sm_86, so sm_90 needs llc-16 or later.
	LLC []string
}

// StaticSharedLimit is the most shared memory a kernel may declare
// statically; beyond it, shared arrays must be allocated dynamically at
// launch after the kernel opts in to the larger size.
const StaticSharedLimit = 48 << 10

// known returns the supported targets.
func known() []Target {
	return []Target{
		{Name: "sm_80", Major: 8, Minor: 0, MaxSharedPerBlock: 163 << 10, PTX: "+ptx70", LLC: []string{"llc", "llc-16", "llc-17", "llc-18"}},
		{Name: "sm_90", Major: 9, Minor: 0, MaxSharedPerBlock: 227 << 10, PTX: "+ptx78", LLC: []string{"llc-16", "llc-17", "llc-18"}},
	}
}

// Default is the target of "tec build" without --target: the A100's.
const Default = "sm_80"

// Lookup returns the target called name ("sm_80" or "sm_90").
func Lookup(name string) (Target, error) {
	var names []string
	for _, t := range known() {
		if t.Name == name {
			return t, nil
		}
		names = append(names, t.Name)
	}
	return Target{}, fmt.Errorf("unknown target %q (want %s)", name, strings.Join(names, " or "))
}

// Names returns the names of the supported targets.
func Names() []string {
	var names []string
	for _, t := range known() {
		names = append(names, t.Name)
	}
	return names
}
