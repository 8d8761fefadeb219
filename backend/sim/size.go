package sim

import (
	"fmt"

	"tec/backend/kir"
	"tec/te"
)

// checkSizes reports a buffer of m whose element count, or a kernel whose
// per-block memory, exceeds te.MaxElements, before the simulator allocates
// any of it: a module does not have to come from the front end, which
// rejects such shapes, so the simulator does not trust it.
func checkSizes(m *kir.Module) error {
	for _, b := range m.Buffers {
		if _, err := te.CheckShape(b.Shape); err != nil {
			return fmt.Errorf("buffer %s: %w", b.Name, err)
		}
	}
	for _, k := range m.Kernels {
		if k.Block < 0 || k.Block > te.MaxElements {
			return fmt.Errorf("kernel %s: %d threads per block", k.Name, k.Block)
		}
		for _, b := range k.Shared {
			if _, err := te.CheckShape(b.Shape); err != nil {
				return fmt.Errorf("kernel %s: shared buffer %s: %w", k.Name, b.Name, err)
			}
		}
		for _, b := range k.Locals {
			if _, err := te.CheckShape(append([]int{k.Block}, b.Shape...)); err != nil {
				return fmt.Errorf("kernel %s: local buffer %s (one per thread): %w", k.Name, b.Name, err)
			}
		}
	}
	return nil
}
