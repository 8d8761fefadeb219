// Package gpurun runs the kernels that the back end emits for a kernel-IR
// module on a GPU: it allocates the module's buffers and workspace, uploads
// the inputs and params, loads the module's code (PTX, which the driver
// compiles, or a cubin), launches the kernels in order with their arguments,
// downloads the outputs and, when asked, times the kernels with events.
//
// All of that is host logic written against Driver, a small interface over
// the CUDA driver API, so that it is tested without a GPU (package fakegpu
// implements Driver on the CPU with the kernel-IR simulator). The driver on
// the GPU, gorgonia.org/cu with a cgo wrapper for cooperative launches,
// lives in the cgo binary cmd/tec-cuda (build tag cuda), never in tec
// itself: gorgonia.org/cu's package init calls cuInit and exits the process
// when there is no GPU.
//
// A Plan describes a module's launches in terms a driver understands
// (buffers by index, kernels by their function's symbol, grids, shared
// memory); tec writes a Job (plan, code and feeds) to a directory, tec-cuda
// runs it and writes the Result beside it.
//
// Arguments are packed as the emitted host code (backend/cuda) packs them:
// each kernel takes the device pointers of kir.Module.KernelArgs in order
// and, for a module with its temporaries in the workspace, the workspace
// pointer last; temporaries passed on their own point into the workspace at
// their kir.Module.WorkspaceLayout offsets. A kernel with an all-resident
// grid is launched cooperatively with as many blocks as fit on the device
// at once (blocks per SM by occupancy × SMs, at most its grid's Blocks),
// after checking that the device supports cooperative launches and that at
// least one block fits. A kernel whose shared arrays exceed the static limit
// gets them as dynamic shared memory, for which it opts in first.
package gpurun

import "fmt"

// Ptr is a device address.
type Ptr uint64

// Module, Function and Event are a driver's handles of a loaded module, a
// kernel function in one, and an event.
type (
	Module   int
	Function int
	Event    int
)

// Device is what the runtime needs to know of the GPU.
type Device struct {
	Name string `json:"name"`
	// Major and Minor are the compute capability.
	Major int `json:"major"`
	Minor int `json:"minor"`
	// SMs is the number of streaming multiprocessors.
	SMs int `json:"sms"`
	// Cooperative reports support for cooperative launches.
	Cooperative bool `json:"cooperative"`
	// SharedPerBlockOptin is the most shared memory a block may use after
	// opting in, in bytes.
	SharedPerBlockOptin int `json:"shared_per_block_optin"`
	// Driver is the driver's version, as the driver reports it.
	Driver string `json:"driver"`
}

// Arch returns the device's architecture as nvcc spells it, e.g. "sm_80".
func (d Device) Arch() string { return fmt.Sprintf("sm_%d%d", d.Major, d.Minor) }

// Launch is one kernel launch on the driver's stream.
type Launch struct {
	Func Function
	// Grid and Block are the numbers of blocks and of threads per block
	// (one-dimensional).
	Grid, Block int
	// Shared is the dynamic shared memory per block, in bytes.
	Shared int
	// Args are the kernel's arguments, each a device pointer.
	Args []Ptr
	// Cooperative asks for a cooperative launch (cuLaunchCooperativeKernel),
	// which guarantees that all blocks are resident at once.
	Cooperative bool
}

// Driver is the part of the CUDA driver API that the runtime uses, on one
// device, one context and one stream. Copies are synchronous; launches and
// event records are queued on the stream in order.
type Driver interface {
	// Device describes the GPU.
	Device() (Device, error)
	// Alloc allocates device memory, 256-byte aligned as cuMemAlloc's is.
	Alloc(bytes int64) (Ptr, error)
	// Free frees memory from Alloc.
	Free(p Ptr) error
	// CopyToDevice copies len(src) bytes from the host to dst.
	CopyToDevice(dst Ptr, src []byte) error
	// CopyFromDevice copies len(dst) bytes from src to the host, after the
	// stream's work is done.
	CopyFromDevice(dst []byte, src Ptr) error
	// LoadModule loads PTX (which the driver compiles) or a cubin.
	LoadModule(image []byte) (Module, error)
	// Function looks up a kernel of a loaded module by its symbol.
	Function(m Module, name string) (Function, error)
	// SetMaxDynamicShared lets f use up to bytes of dynamic shared memory
	// per block (beyond the 48 KiB a launch may ask for without it).
	SetMaxDynamicShared(f Function, bytes int) error
	// Occupancy returns how many blocks of f, with block threads and
	// shared bytes of dynamic shared memory each, fit on one SM at once.
	Occupancy(f Function, block, shared int) (int, error)
	// Launch queues a kernel launch.
	Launch(l Launch) error
	// NewEvent creates an event that records time.
	NewEvent() (Event, error)
	// Record queues a record of e.
	Record(e Event) error
	// Elapsed returns the milliseconds between two recorded events, after
	// waiting for end.
	Elapsed(start, end Event) (float64, error)
	// Synchronize waits for the stream's work, returning the error of a
	// kernel that failed.
	Synchronize() error
	// Close releases every module, event and the context.
	Close() error
}
