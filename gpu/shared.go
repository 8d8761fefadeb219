package gpu

import "fmt"

// SharedError is the error of a kernel whose blocks need more shared
// memory than one block may use. Its message ends with the limit, so that
// the caller can say whose it is: "… more than the 167936 B" + " of
// A100-SXM4-40GB".
type SharedError struct {
	Kernel string
	Need   int64 // bytes of shared memory per block
	Limit  int64 // the most one block may use
}

func (e *SharedError) Error() string {
	return fmt.Sprintf("kernel %s needs %d B of shared memory per block, more than the %d B", e.Kernel, e.Need, e.Limit)
}

// CheckShared is the one check of a kernel's shared memory per block
// against a limit: it returns a *SharedError if a block of kernel needs
// more than limit bytes, and nil if it fits.
func CheckShared(kernel string, need, limit int64) error {
	if need > limit {
		return &SharedError{Kernel: kernel, Need: need, Limit: limit}
	}
	return nil
}

// CheckShared checks kernel's blocks, of need bytes of shared memory,
// against g's shared memory per block (see the function CheckShared).
func (g Model) CheckShared(kernel string, need int64) error {
	return CheckShared(kernel, need, int64(g.SharedPerBlock))
}
