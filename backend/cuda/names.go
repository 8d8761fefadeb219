package cuda

import (
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
