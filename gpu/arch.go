package gpu

import (
	"fmt"
	"strings"
)

// Arch is a GPU architecture that code is compiled for (a CUDA compute
// capability): what the emitters and the tools that assemble their output
// need to know of it.
type Arch struct {
	// Name is the architecture as nvcc and llc spell it, e.g. "sm_80".
	Name         string
	Major, Minor int
	// PTX is the PTX ISA version llc is asked to emit ("+ptx70").
	PTX string
	// LLC is the llc binary that reaches this architecture: LLVM 14's llc
	// stops at sm_86, so sm_90 needs llc-16 or later.
	LLC []string
}

// StaticSharedLimit is the most shared memory a kernel may declare
// statically, on every architecture; beyond it, shared arrays must be
// allocated dynamically at launch after the kernel opts in to the larger
// size.
const StaticSharedLimit = 48 << 10

// DynamicShared reports whether a kernel with bytes of shared memory per
// block must allocate it dynamically (more than StaticSharedLimit).
func DynamicShared(bytes int64) bool { return bytes > StaticSharedLimit }

// arches returns the supported architectures, oldest first. sm_75
// (Turing) has ldmatrix and the f16 MMA of shape m16n8k8 but not
// cp.async, the m16n8k16 shape, bf16 or tf32 (PTX ISA, "Warp Level
// Matrix Multiply-Accumulate Instructions" and "cp.async": sm_80); sm_86
// and sm_89 (GA10x, AD10x) have sm_80's instructions (cp.async, the f16,
// bf16 and tf32 MMAs) with their own limits, which the GPU descriptions
// carry; PTX 7.1 introduced sm_86 and PTX 7.8 sm_89 and sm_90 (PTX ISA,
// "Release Notes"), and LLVM 14's llc stops at sm_86.
func arches() []Arch {
	return []Arch{
		{Name: "sm_75", Major: 7, Minor: 5, PTX: "+ptx70", LLC: []string{"llc", "llc-16", "llc-17", "llc-18"}},
		{Name: "sm_80", Major: 8, Minor: 0, PTX: "+ptx70", LLC: []string{"llc", "llc-16", "llc-17", "llc-18"}},
		{Name: "sm_86", Major: 8, Minor: 6, PTX: "+ptx71", LLC: []string{"llc", "llc-16", "llc-17", "llc-18"}},
		{Name: "sm_89", Major: 8, Minor: 9, PTX: "+ptx78", LLC: []string{"llc-16", "llc-17", "llc-18"}},
		{Name: "sm_90", Major: 9, Minor: 0, PTX: "+ptx78", LLC: []string{"llc-16", "llc-17", "llc-18"}},
	}
}

// unsupported says why tec cannot compile for the architecture called
// name, one a user may ask for that it does not support, or "".
func unsupported(name string) string {
	switch name {
	case "sm_70", "sm_72":
		return "Volta's tensor cores lack the m16n8 MMA shapes and cp.async that tec's kernels use"
	case "sm_90a":
		return "tec does not emit wgmma or the other sm_90a-only instructions; sm_90 code runs on the same GPUs"
	case "sm_100", "sm_100a", "sm_101", "sm_120":
		return "the CUDA 11.8 toolchain tec is tested with (nvcc, and llc-16's PTX 7.8) cannot compile for Blackwell"
	}
	return ""
}

// LookupArch returns the architecture called name ("sm_75", "sm_80",
// "sm_86", "sm_89" or "sm_90").
func LookupArch(name string) (Arch, error) {
	for _, a := range arches() {
		if a.Name == name {
			return a, nil
		}
	}
	want := strings.Join(ArchNames(), ", ")
	if why := unsupported(name); why != "" {
		return Arch{}, fmt.Errorf("unsupported target %q: %s (want one of %s)", name, why, want)
	}
	return Arch{}, fmt.Errorf("unknown target %q (want one of %s)", name, want)
}

// ArchNames returns the names of the supported architectures, oldest
// first.
func ArchNames() []string {
	var names []string
	for _, a := range arches() {
		names = append(names, a.Name)
	}
	return names
}

// The instructions that not every supported architecture has. A zero
// Arch (none chosen yet) has sm_80's.

// AsyncCopy reports whether a has cp.async, the asynchronous copy from
// global to shared memory (sm_80 and later).
func (a Arch) AsyncCopy() bool { return a.Major == 0 || a.Major >= 8 }

// MMAK16 reports whether a has the f16 tensor-core MMA of shape m16n8k16
// (sm_80 and later); sm_75 has m16n8k8, half its k.
func (a Arch) MMAK16() bool { return a.Major == 0 || a.Major >= 8 }

// BF16 reports whether a has bf16 arithmetic: conversions to bf16 and
// its tensor-core MMA (sm_80 and later).
func (a Arch) BF16() bool { return a.Major == 0 || a.Major >= 8 }

// TF32 reports whether a has the tf32 tensor-core MMA and the conversion
// to tf32 (sm_80 and later).
func (a Arch) TF32() bool { return a.Major == 0 || a.Major >= 8 }

// runsOn reports whether code for a runs on a GPU of compute capability
// major.minor: a is not newer.
func (a Arch) runsOn(major, minor int) bool {
	return a.Major < major || a.Major == major && a.Minor <= minor
}

// NativeArch returns the newest supported architecture whose code g runs,
// by g's compute capability, and false if g gives none or is older than
// every supported architecture.
func (g Model) NativeArch() (Arch, bool) {
	major, minor, ok := g.capability()
	if !ok {
		return Arch{}, false
	}
	var native Arch
	found := false
	for _, a := range arches() {
		if a.runsOn(major, minor) {
			native, found = a, true
		}
	}
	return native, found
}

// capability returns g's compute capability as numbers, and false if g
// gives none.
func (g Model) capability() (major, minor int, ok bool) {
	if g.CC == "" {
		return 0, 0, false
	}
	if _, err := fmt.Sscanf(g.CC, "%d.%d", &major, &minor); err != nil {
		return 0, 0, false
	}
	return major, minor, true
}
