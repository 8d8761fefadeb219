//go:build cuda

// Command tec-cuda runs a model that tec compiled on an NVIDIA GPU, through
// the CUDA driver API (gorgonia.org/cu). tec run --device cuda and tec
// bench write a job (the module's launches, its PTX or cubin, the inputs
// and params) into a directory and execute
//
//	tec-cuda [--ordinal N] DIR
//
// which runs it on GPU N (default 0) and writes the outputs and timings
// into DIR (package gpurun describes the files). On failure it prints one
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
	job, err := gpurun.ReadJob(dir)
	if err != nil {
		return err
	}
	d, err := newDriver(*ordinal)
	if err != nil {
		return err
	}
	res, err := gpurun.Run(d, job.Plan, job.Image, job.Feeds, job.Options)
	if cerr := d.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("releasing the context: %w", cerr)
	}
	if err != nil {
		return err
	}
	return gpurun.WriteResult(dir, res)
}
