//go:build cuda

// Command tec-cuda runs a model that tec compiled on an NVIDIA GPU, through
// the CUDA driver API (gorgonia.org/cu). tec run --device cuda and tec
// bench write a job (the module's launches, its PTX or cubin, the inputs
// and params) into a directory and execute
//
//	tec-cuda [--ordinal N] DIR
//
// which runs it on GPU N (default 0) and writes the outputs and timings
// into DIR (package gpurun describes the files). tec generate --device
// cuda writes a generation job instead (two models, prefill and decode,
// their shared params and the number of steps), which tec-cuda runs with
// gpurun.Generate, the caches kept on the GPU between steps, writing the
// tokens and each step's time into DIR. On failure it prints one
// line, "tec-cuda: ...", on standard error and exits with status 1.
//
// tec-cuda is a cgo program that links libcuda, built apart from tec with
//
//	go install -tags cuda ./cmd/tec-cuda
//
// because gorgonia.org/cu initialises the driver when the program starts
// and exits if that fails: without a GPU, before main runs, it prints
// "Error in initialization ... NoDevice" on standard output, which tec
// reports as a missing GPU.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"

	"tec/backend/gpurun"
)

func main() {
	// The driver's context is current on one OS thread.
	runtime.LockOSThread()
	if err := run(os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "tec-cuda: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("tec-cuda", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ordinal := fs.Int("ordinal", 0, "the GPU to run on, as the driver numbers them")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: tec-cuda [--ordinal N] DIR\n\nRuns the job that tec wrote into DIR on a GPU.\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errors.New("want one job directory")
	}
	dir := fs.Arg(0)
	kind, err := gpurun.JobKind(dir)
	if err != nil {
		return err
	}
	if kind == gpurun.KindGenerate {
		return generate(dir, *ordinal)
	}
	job, err := gpurun.ReadJob(dir)
	if err != nil {
		return err
	}
	var res *gpurun.Result
	err = withDriver(*ordinal, func(d *driver) (err error) {
		res, err = gpurun.Run(d, job.Plan, job.Image, job.Feeds, job.Options)
		return err
	})
	if err != nil {
		return err
	}
	return gpurun.WriteResult(dir, res)
}

// generate runs the generation job in dir (tec generate --device cuda)
// and writes its tokens and timings there.
func generate(dir string, ordinal int) error {
	job, err := gpurun.ReadGenerateJob(dir)
	if err != nil {
		return err
	}
	var res *gpurun.GenerateResult
	err = withDriver(ordinal, func(d *driver) (err error) {
		res, err = gpurun.Generate(d, job)
		return err
	})
	if err != nil {
		return err
	}
	return gpurun.WriteGenerateResult(dir, res)
}

// withDriver calls f with a driver on GPU ordinal, which it closes after.
func withDriver(ordinal int, f func(d *driver) error) error {
	d, err := newDriver(ordinal)
	if err != nil {
		return err
	}
	err = f(d)
	if cerr := d.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("releasing the context: %w", cerr)
	}
	return err
}
