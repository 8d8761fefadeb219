package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"tec/backend/gpurun"
	"tec/backend/gpurun/fakegpu"
	"tec/backend/llvm"
	"tec/driver"
	"tec/internal/testkit/tooltest"
)

// TestCUDATimeoutFakeGPU is issue 23's hung kernel, on the fake GPU: the
// kernels are launched and Synchronize never returns (until tec-cuda is
// stopped). tec run --device cuda --timeout stops the run, says why, and
// removes the job's directory; a run that ends in time is not disturbed.
func TestCUDATimeoutFakeGPU(t *testing.T) {
	tooltest.Require(t, "LLVM (Debian: llvm)", "llc", "llc-16")
	mod := buildModule(t, "testdata/softmax.te", nil, 4, "f32")
	tests := []struct {
		name    string
		timeout string
		hang    bool
		status  int
		want    string
	}{
		{"hung kernel", "300ms", true, exitUser, "had not finished after 300ms (--timeout), and was stopped"},
		{"in time", "1m", false, exitOK, "gpu: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var jobDir string
			stopped := false
			fake := func(ctx context.Context, _, dir string) ([]byte, error) {
				jobDir = dir
				job, err := gpurun.ReadJob(dir)
				if err != nil {
					t.Fatal(err)
				}
				gpu := fakegpu.New(mod, job.Image, llvm.KernelNames(mod))
				gpu.Fail = func(call string) error {
					if call == "Synchronize" && tt.hang {
						<-ctx.Done() // the kernel ends when its process does
						stopped = true
						return errors.New("killed")
					}
					return nil
				}
				res, err := gpurun.Run(gpu, job.Plan, job.Image, job.Feeds, job.Options)
				if err != nil {
					return []byte("tec-cuda: " + err.Error() + "\n"), exitError(t)
				}
				return nil, gpurun.WriteResult(dir, res)
			}
			start := time.Now()
			code, stdout, stderr := runTecCUDA(t, map[string]string{"TEC_CUDA": os.Args[0]}, fake,
				"run", "--device", "cuda", "--timeout", tt.timeout, "--fill", "random", "testdata/softmax.te")
			if code != tt.status || !strings.Contains(stdout+stderr, tt.want) {
				t.Fatalf("status %d, want %d with %q\nstdout:\n%s\nstderr:\n%s", code, tt.status, tt.want, stdout, stderr)
			}
			if tt.hang {
				if !stopped {
					t.Error("the hung run was not stopped")
				}
				if d := time.Since(start); d > 30*time.Second {
					t.Errorf("tec took %v to give up", d)
				}
			}
			if _, err := os.Stat(filepath.Dir(jobDir)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the job's directory %s is still there (%v)", filepath.Dir(jobDir), err)
			}
		})
	}
}

// TestCUDARunnerSignals runs a real process as tec-cuda, one that never
// finishes, as a hung kernel does: tec stops it at --timeout with SIGTERM,
// passes on SIGINT and SIGTERM that tec itself receives, kills it when it
// ignores them (after driver.RunnerGrace), and in every case waits for it to exit
// and removes the job's directory, with the weights it holds.
func TestCUDARunnerSignals(t *testing.T) {
	tooltest.Require(t, "LLVM (Debian: llvm)", "llc", "llc-16")
	tests := []struct {
		name       string
		send       syscall.Signal // to tec, once tec-cuda runs; 0: none
		ignoreTerm bool           // tec-cuda ignores SIGTERM
		got        string         // the signal tec-cuda got
		want       string
	}{
		{"timeout", 0, false, "TERM", "had not finished after 500ms (--timeout)"},
		{"SIGINT", syscall.SIGINT, false, "INT", "interrupted by SIGINT, passed on to"},
		{"SIGTERM", syscall.SIGTERM, false, "TERM", "interrupted by SIGTERM, passed on to"},
		{"SIGTERM ignored", 0, true, "", "had not finished after 500ms (--timeout)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			mark := filepath.Join(dir, "mark")
			trapTerm := `trap 'echo TERM > "` + mark + `.sig"; exit 143' TERM`
			if tt.ignoreTerm {
				trapTerm = `trap '' TERM`
			}
			script := "#!/bin/sh\n" +
				`echo "$1" > "` + mark + `.dir"` + "\n" +
				`trap 'echo INT > "` + mark + `.sig"; exit 130' INT` + "\n" +
				trapTerm + "\n" +
				`echo started > "` + mark + `.started"` + "\n" +
				"while :; do sleep 0.05; done\n"
			runner := filepath.Join(dir, "tec-cuda")
			if err := os.WriteFile(runner, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			timeout := "500ms"
			if tt.send != 0 {
				timeout = "1m"
			}
			type result struct {
				code           int
				stdout, stderr string
			}
			done := make(chan result, 1)
			start := time.Now()
			go func() {
				code, stdout, stderr := runTecCUDA(t, map[string]string{"TEC_CUDA": runner}, nil,
					"run", "--device", "cuda", "--timeout", timeout, "--fill", "random", "testdata/softmax.te")
				done <- result{code, stdout, stderr}
			}()
			if tt.send != 0 {
				waitFile(t, mark+".started", done)
				if err := syscall.Kill(os.Getpid(), tt.send); err != nil {
					t.Fatal(err)
				}
			}
			var r result
			select {
			case r = <-done:
			case <-time.After(60 * time.Second):
				t.Fatal("tec did not return in 60 s")
			}
			if r.code != exitUser || !strings.Contains(r.stderr, tt.want) {
				t.Fatalf("status %d, want %d with %q\nstdout:\n%s\nstderr:\n%s", r.code, exitUser, tt.want, r.stdout, r.stderr)
			}
			sig, _ := os.ReadFile(mark + ".sig")
			if got := strings.TrimSpace(string(sig)); got != tt.got {
				t.Errorf("tec-cuda got %q, want %q", got, tt.got)
			}
			if tt.ignoreTerm {
				if d := time.Since(start); d < driver.RunnerGrace {
					t.Errorf("tec returned after %v, before the grace of %v", d, driver.RunnerGrace)
				}
			}
			job, err := os.ReadFile(mark + ".dir")
			if err != nil {
				t.Fatal(err)
			}
			tmp := filepath.Dir(strings.TrimSpace(string(job)))
			if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the job's directory %s is still there (%v)", tmp, err)
			}
		})
	}
}

// waitFile waits for the file path to exist, or fails if tec returns first.
func waitFile[T any](t *testing.T, path string, done chan T) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		select {
		case r := <-done:
			t.Fatalf("tec returned before tec-cuda started: %+v", r)
		case <-deadline:
			t.Fatalf("%s did not appear in 60 s", path)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestCUDATimeoutFlag checks --timeout's checks: not negative, and only with
// --device cuda.
func TestCUDATimeoutFlag(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"run", "--device", "cuda", "--timeout", "-1s", "testdata/softmax.te"}, "--timeout -1s: must not be negative"},
		{[]string{"run", "--timeout", "1m", "testdata/softmax.te"}, "--timeout applies only with --device cuda"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
			if code := e.main(tt.args); code != exitUsage || !strings.Contains(errb.String(), tt.want) {
				t.Errorf("status %d, want %d with %q; stderr:\n%s", code, exitUsage, tt.want, errb.String())
			}
		})
	}
}
