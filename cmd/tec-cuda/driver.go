//go:build cuda

package main

import (
	"errors"
	"fmt"
	"unsafe"

	"gorgonia.org/cu"

	"tec/backend/gpurun"
)

// driver is gpurun.Driver on gorgonia.org/cu: one context on one device,
// current on the calling OS thread (main locks it), and one stream.
type driver struct {
	dev     cu.Device
	ctx     cu.CUContext
	stream  cu.Stream
	modules []cu.Module
	funcs   []cu.Function
	events  []cu.Event
}

// newDriver creates a context on device ordinal and a stream in it.
func newDriver(ordinal int) (*driver, error) {
	dev, err := cu.GetDevice(ordinal)
	if err != nil {
		return nil, fmt.Errorf("device %d: %w", ordinal, err)
	}
	ctx, err := dev.MakeContext(cu.SchedAuto)
	if err != nil {
		return nil, fmt.Errorf("creating a context on device %d: %w", ordinal, err)
	}
	d := &driver{dev: dev, ctx: ctx}
	if d.stream, err = cu.MakeStream(cu.DefaultStream); err != nil {
		return nil, errors.Join(fmt.Errorf("creating a stream: %w", err), ctx.Destroy())
	}
	return d, nil
}

func (d *driver) Device() (gpurun.Device, error) { return deviceInfo(d.dev) }

func (d *driver) Alloc(bytes int64) (gpurun.Ptr, error) {
	p, err := cu.MemAlloc(bytes)
	return gpurun.Ptr(p), err
}

func (d *driver) Free(p gpurun.Ptr) error { return cu.MemFree(cu.DevicePtr(p)) }

func (d *driver) CopyToDevice(dst gpurun.Ptr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	return cu.MemcpyHtoD(cu.DevicePtr(dst), unsafe.Pointer(&src[0]), int64(len(src)))
}

func (d *driver) CopyFromDevice(dst []byte, src gpurun.Ptr) error {
	if len(dst) == 0 {
		return nil
	}
	if err := d.stream.Synchronize(); err != nil {
		return err
	}
	return cu.MemcpyDtoH(unsafe.Pointer(&dst[0]), cu.DevicePtr(src), int64(len(dst)))
}

func (d *driver) LoadModule(image []byte) (gpurun.Module, error) {
	m, err := cu.LoadData(string(image))
	if err != nil {
		return 0, err
	}
	d.modules = append(d.modules, m)
	return gpurun.Module(len(d.modules) - 1), nil
}

func (d *driver) Function(m gpurun.Module, name string) (gpurun.Function, error) {
	f, err := d.modules[m].Function(name)
	if err != nil {
		return 0, err
	}
	d.funcs = append(d.funcs, f)
	return gpurun.Function(len(d.funcs) - 1), nil
}

func (d *driver) SetMaxDynamicShared(f gpurun.Function, bytes int) error {
	return setMaxDynamicShared(d.funcs[f], bytes)
}

func (d *driver) Occupancy(f gpurun.Function, block, shared int) (int, error) {
	return d.funcs[f].MaxActiveBlocksPerMultiProcessor(block, int64(shared))
}

func (d *driver) Launch(l gpurun.Launch) error {
	args := make([]uint64, len(l.Args))
	for i, a := range l.Args {
		args[i] = uint64(a)
	}
	if l.Cooperative {
		return launchCooperative(d.funcs[l.Func], l.Grid, l.Block, l.Shared, d.stream, args)
	}
	// Launch reads each argument as 8 bytes through its pointer.
	params := make([]unsafe.Pointer, len(args))
	for i := range args {
		params[i] = unsafe.Pointer(&args[i])
	}
	return d.funcs[l.Func].Launch(l.Grid, 1, 1, l.Block, 1, 1, l.Shared, d.stream, params)
}

func (d *driver) NewEvent() (gpurun.Event, error) {
	ev, err := cu.MakeEvent(cu.DefaultEvent)
	if err != nil {
		return 0, err
	}
	d.events = append(d.events, ev)
	return gpurun.Event(len(d.events) - 1), nil
}

func (d *driver) Record(e gpurun.Event) error { return d.events[e].Record(d.stream) }

func (d *driver) Elapsed(start, end gpurun.Event) (float64, error) {
	if err := d.events[end].Synchronize(); err != nil {
		return 0, err
	}
	return d.events[start].Elapsed(d.events[end])
}

func (d *driver) Synchronize() error { return d.stream.Synchronize() }

func (d *driver) Close() error {
	var errs []error
	for i := range d.events {
		errs = append(errs, cu.DestroyEvent(&d.events[i]))
	}
	for _, m := range d.modules {
		errs = append(errs, m.Unload())
	}
	errs = append(errs, d.stream.Destroy(), d.ctx.Destroy())
	return errors.Join(errs...)
}
