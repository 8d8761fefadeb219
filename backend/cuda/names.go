package cuda

import (
	"slices"

	"tec/backend/internal/dedup"
	"tec/backend/kir"
)

// KernelNames returns the name of the C++ function that Emit writes for each
// kernel of m (kernels that are the same code share one), the name by
// which a driver finds the kernel in a cubin that nvcc compiled, once
// mangled (see gpurun.CubinSymbols).
func KernelNames(m *kir.Module) map[*kir.Kernel]string {
	n := newNames(m, m.Layout())
	groups := dedup.GroupsLaidOut(m, n.offsets)
	out := map[*kir.Kernel]string{}
	for _, k := range m.Kernels {
		out[k] = n.kernel[groups[k]]
	}
	return out
}

// StageFunctionNames returns, for each kernel of m, the names of the C++
// device functions that Emit writes for the stages that several share
// (dedup.Stages) and that the kernel calls, in the order of its calls:
// the SASS of a kernel's outlined stages is in those functions, not the
// kernel.
func StageFunctionNames(m *kir.Module) map[*kir.Kernel][]string {
	n := newNames(m, m.Layout())
	groups := dedup.GroupsLaidOut(m, n.offsets)
	o := outline(m, groups, n)
	out := map[*kir.Kernel][]string{}
	for _, k := range m.Kernels {
		for _, st := range groups[k].Body {
			if s, ok := st.(*kir.Stage); ok {
				if f := o.call(s); f != nil && !slices.Contains(out[k], f.name) {
					out[k] = append(out[k], f.name)
				}
			}
		}
	}
	return out
}
