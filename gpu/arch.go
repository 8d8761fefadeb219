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

// arches returns the supported architectures, oldest first.
func arches() []Arch {
	return []Arch{
		{Name: "sm_80", Major: 8, Minor: 0, PTX: "+ptx70", LLC: []string{"llc", "llc-16", "llc-17", "llc-18"}},
		{Name: "sm_90", Major: 9, Minor: 0, PTX: "+ptx78", LLC: []string{"llc-16", "llc-17", "llc-18"}},
	}
}

// LookupArch returns the architecture called name ("sm_80" or "sm_90").
func LookupArch(name string) (Arch, error) {
	for _, a := range arches() {
		if a.Name == name {
			return a, nil
		}
	}
	return Arch{}, fmt.Errorf("unknown target %q (want %s)", name, strings.Join(ArchNames(), " or "))
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
