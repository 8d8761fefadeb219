package driver

import (
	"context"
	"errors"
	"os"
	"testing"

	"tec/backend/gpurun"
	"tec/backend/gpurun/fakegpu"
	"tec/backend/llvm"
	"tec/gpu"
	"tec/internal/numeric"
	"tec/internal/testkit/tooltest"
	"tec/te"
)

// TestCUDARun runs softmax on the CUDA device with tec-cuda's work done on
// a fake GPU, which computes with the simulator: the outputs must be the
// simulator's, the job's directory removed, and an error of Call the
// run's as it is.
func TestCUDARun(t *testing.T) {
	tooltest.Require(t, "LLVM (Debian: llvm)", "llc", "llc-16")
	p, c := compileSoftmax(t, 4)
	feeds := map[string]*te.Array{"x": numeric.NewFilled(p.Lookup("x"), numeric.Random, 2)}
	arch, err := gpu.LookupArch(gpu.DefaultArch())
	if err != nil {
		t.Fatal(err)
	}
	var jobDir string
	dev := &CUDA{Runner: "tec-cuda", Codegen: CodegenPTX, Target: arch, TempDir: t.TempDir(),
		Call: func(_ context.Context, dir string) error {
			jobDir = dir
			job, err := gpurun.ReadJob(dir)
			if err != nil {
				return err
			}
			g := fakegpu.New(c.Module, job.Image, llvm.KernelNames(c.Module))
			res, err := gpurun.Run(g, job.Plan, job.Image, job.Feeds, job.Options)
			if err != nil {
				return err
			}
			return errors.Join(g.Close(), gpurun.WriteResult(dir, res))
		}}
	got, err := dev.Run(context.Background(), p, c, feeds)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Simulator{}.Run(context.Background(), p, c, feeds)
	if err != nil {
		t.Fatal(err)
	}
	if mm, err := numeric.Compare(got.Outputs["y"], want.Outputs["y"], numeric.Tolerance{}); err != nil || mm != nil {
		t.Errorf("y differs from the simulator's: %v %v", mm, err)
	}
	if got.GPU == nil || len(got.GPU.Launches) != len(c.Module.Kernels) || got.GPU.Plan.Target != arch.Name {
		t.Errorf("GPU run %+v, want %d launches for %s", got.GPU, len(c.Module.Kernels), arch.Name)
	}
	if _, err := os.Stat(jobDir); !os.IsNotExist(err) {
		t.Errorf("the job's directory %s is left: %v", jobDir, err)
	}

	failed := errors.New("tec-cuda failed")
	dev.Call = func(context.Context, string) error { return failed }
	if _, err := dev.Run(context.Background(), p, c, feeds); err != failed {
		t.Errorf("a failed call: %v, want %v as it is", err, failed)
	}
}
