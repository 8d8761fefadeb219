//go:build cuda

package main

// The CUDA driver calls that gorgonia.org/cu lacks: cooperative launches,
// the dynamic shared memory opt-in, device attributes it has no constant
// for, and error names.

/*
#cgo LDFLAGS: -lcuda
#include <stdlib.h>
#include <cuda.h>

// tec_launch_cooperative launches f cooperatively with the n 8-byte
// arguments args (each a device pointer).
static CUresult tec_launch_cooperative(CUfunction f, unsigned grid, unsigned block, unsigned shared,
                                       CUstream stream, unsigned long long *args, int n) {
	void *params[n > 0 ? n : 1];
	for (int i = 0; i < n; i++) params[i] = &args[i];
	return cuLaunchCooperativeKernel(f, grid, 1, 1, block, 1, 1, shared, stream, params);
}

static CUresult tec_set_max_dynamic_shared(CUfunction f, int bytes) {
	return cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes);
}

static const char *tec_error_name(CUresult r) {
	const char *name = NULL;
	if (cuGetErrorName(r, &name) != CUDA_SUCCESS || name == NULL) return "CUDA_ERROR_UNKNOWN";
	return name;
}

static const char *tec_error_string(CUresult r) {
	const char *s = NULL;
	if (cuGetErrorString(r, &s) != CUDA_SUCCESS || s == NULL) return "unknown error";
	return s;
}
*/
import "C"

import (
	"fmt"
	"unsafe"

	"gorgonia.org/cu"

	"tec/backend/gpurun"
)

// cuFunction returns f's CUfunction. cu.Function is a struct of that one
// handle, which the package does not export.
func cuFunction(f cu.Function) C.CUfunction {
	return *(*C.CUfunction)(unsafe.Pointer(&f))
}

// cuStream returns s's CUstream, as cuFunction does for functions.
func cuStream(s cu.Stream) C.CUstream {
	return *(*C.CUstream)(unsafe.Pointer(&s))
}

// The handles are one pointer each: what cuFunction and cuStream assume.
var (
	_ [unsafe.Sizeof(cu.Function{}) - unsafe.Sizeof(C.CUfunction(nil))]struct{}
	_ [unsafe.Sizeof(C.CUfunction(nil)) - unsafe.Sizeof(cu.Function{})]struct{}
	_ [unsafe.Sizeof(cu.Stream{}) - unsafe.Sizeof(C.CUstream(nil))]struct{}
	_ [unsafe.Sizeof(C.CUstream(nil)) - unsafe.Sizeof(cu.Stream{})]struct{}
)

// check returns nil for CUDA_SUCCESS, else an error with the result's name
// and description.
func check(r C.CUresult) error {
	if r == C.CUDA_SUCCESS {
		return nil
	}
	return fmt.Errorf("%s (%s)", C.GoString(C.tec_error_name(r)), C.GoString(C.tec_error_string(r)))
}

// launchCooperative launches f cooperatively on stream.
func launchCooperative(f cu.Function, grid, block, shared int, stream cu.Stream, args []uint64) error {
	// The arguments go in C memory: cgo forbids handing C a Go pointer
	// that C keeps (the params array points into it).
	cargs := unsafe.Slice((*C.ulonglong)(C.malloc(C.size_t(max(len(args), 1))*8)), max(len(args), 1))
	defer C.free(unsafe.Pointer(&cargs[0]))
	for i, a := range args {
		cargs[i] = C.ulonglong(a)
	}
	return check(C.tec_launch_cooperative(cuFunction(f), C.uint(grid), C.uint(block), C.uint(shared),
		cuStream(stream), &cargs[0], C.int(len(args))))
}

// setMaxDynamicShared lets f use bytes of dynamic shared memory per block.
func setMaxDynamicShared(f cu.Function, bytes int) error {
	return check(C.tec_set_max_dynamic_shared(cuFunction(f), C.int(bytes)))
}

// deviceAttribute returns an attribute of device d by its CUdevice_attribute.
func deviceAttribute(d cu.Device, attr C.CUdevice_attribute) (int, error) {
	var v C.int
	if err := check(C.cuDeviceGetAttribute(&v, attr, C.CUdevice(d))); err != nil {
		return 0, err
	}
	return int(v), nil
}

// deviceInfo describes device d.
func deviceInfo(d cu.Device) (gpurun.Device, error) {
	name, err := d.Name()
	if err != nil {
		return gpurun.Device{}, err
	}
	info := gpurun.Device{Name: name, Driver: fmt.Sprint(cu.Version())}
	coop := 0
	for _, a := range []struct {
		attr C.CUdevice_attribute
		v    *int
	}{
		{C.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &info.Major},
		{C.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &info.Minor},
		{C.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &info.SMs},
		{C.CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, &coop},
		{C.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, &info.SharedPerBlockOptin},
	} {
		if *a.v, err = deviceAttribute(d, a.attr); err != nil {
			return gpurun.Device{}, fmt.Errorf("device attribute %d: %w", a.attr, err)
		}
	}
	info.Cooperative = coop != 0
	return info, nil
}
