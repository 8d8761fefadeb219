package driver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// RunnerName is the name of the GPU runner's executable.
const RunnerName = "tec-cuda"

// RunnerGrace is how long tec-cuda has to exit after the signal that stops
// it (SIGTERM at the timeout, or the signal the process received) before
// it is killed.
const RunnerGrace = 5 * time.Second

// hintSep separates an error's message from its hint, as tec prints them.
const hintSep = "\n  hint: "

// TecCUDA runs tec-cuda, the GPU runner, on the jobs of a CUDA device
// (its Call).
type TecCUDA struct {
	// Path is tec-cuda's path.
	Path string
	// Timeout stops tec-cuda after this long; 0 is no limit.
	Timeout time.Duration
	// Exec runs tec-cuda (runner) on a job directory and returns what it
	// printed, as ExecTecCUDA, which nil means, does.
	Exec func(ctx context.Context, runner, dir string) ([]byte, error)
}

// Call runs tec-cuda on the job in jobDir, of model, and explains a
// failure (an *Error of kind ErrDevice). tec-cuda is stopped after
// r.Timeout (0: no limit), when ctx ends, or when the process receives
// SIGINT or SIGTERM, which it passes on to tec-cuda; Call returns once
// tec-cuda has exited, so that the caller may remove the job.
func (r *TecCUDA) Call(ctx context.Context, model, jobDir string) error {
	run := r.Exec
	if run == nil {
		run = ExecTecCUDA
	}
	runner, timeout := r.Path, r.Timeout
	ctx, stop := withInterrupt(ctx)
	defer stop()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, timeout, timedOut{timeout})
		defer cancel()
	}
	out, err := run(ctx, runner, jobDir)
	var t timedOut
	var in interrupted
	switch cause := context.Cause(ctx); {
	case err == nil:
		return nil
	case errors.As(cause, &t):
		return &Error{Kind: ErrDevice, Err: fmt.Errorf("running model %s on the GPU: %s had not finished after %v (--timeout), and was stopped"+
			hintSep+"a kernel that never ends, or a run longer than that: give a longer --timeout, or --timeout 0 for no limit", model, runner, t.after)}
	case errors.As(cause, &in):
		return &Error{Kind: ErrDevice, Err: fmt.Errorf("running model %s on the GPU: interrupted by %s, passed on to %s, which has exited; its job's files are removed", model, signalName(in.sig), runner)}
	}
	return &Error{Kind: ErrDevice, Err: explainTecCUDA(runner, model, out, err)}
}

// timedOut is the cause of the end of a run of tec-cuda that took longer
// than TecCUDA.Timeout.
type timedOut struct{ after time.Duration }

func (t timedOut) Error() string { return fmt.Sprintf("no result after %v", t.after) }

// interrupted is the cause of the end of a context that a signal ended.
type interrupted struct{ sig os.Signal }

func (i interrupted) Error() string { return "interrupted by " + signalName(i.sig) }

// signalName names a signal as kill -l does, with its SIG prefix.
func signalName(sig os.Signal) string {
	switch sig {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return sig.String()
}

// withInterrupt returns a context that SIGINT or SIGTERM ends, with an
// interrupted cause, instead of the signal ending the process before it has
// stopped tec-cuda and removed its files; stop restores the signals' usual
// effect.
func withInterrupt(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-sigs:
			cancel(interrupted{sig})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel(nil)
	}
}

// ExecTecCUDA runs tec-cuda on a job directory and returns what it printed.
// When ctx ends, tec-cuda gets the signal that ended it (interrupted) or
// SIGTERM, and RunnerGrace to exit before it is killed; ExecTecCUDA
// returns once it has exited.
func ExecTecCUDA(ctx context.Context, runner, dir string) ([]byte, error) {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, runner, dir)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Cancel = func() error {
		var sig os.Signal = syscall.SIGTERM
		var in interrupted
		if errors.As(context.Cause(ctx), &in) {
			sig = in.sig
		}
		return cmd.Process.Signal(sig)
	}
	cmd.WaitDelay = RunnerGrace
	err := cmd.Run()
	return out.Bytes(), err
}

// explainTecCUDA turns a failed run of tec-cuda into one line that says
// what went wrong: no GPU or driver (gorgonia.org/cu's init prints
// "Error in initialization ... details on: NoDevice" and exits before
// tec-cuda's main runs), no libcuda, or tec-cuda's own message.
func explainTecCUDA(runner, model string, out []byte, err error) error {
	text := strings.TrimSpace(string(out))
	lines := strings.Split(text, "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	// tec-cuda's own message: its last line that starts with "tec-cuda: ",
	// and the hint lines after it.
	own := ""
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], RunnerName+": ") {
			own = strings.TrimPrefix(strings.Join(lines[i:], "\n"), RunnerName+": ")
			break
		}
	}
	var exit *exec.ExitError
	switch {
	case !errors.As(err, &exit):
		return fmt.Errorf("cannot run %s: %w", runner, err)
	case strings.Contains(text, "Error in initialization"):
		cause := text
		if _, after, ok := strings.Cut(text, "details on: "); ok {
			cause = strings.TrimSpace(after)
		}
		return fmt.Errorf("no usable CUDA GPU: the CUDA driver failed to initialise (cuInit: %s)"+hintSep+
			"check that an NVIDIA GPU is present and its driver loaded (nvidia-smi lists it), and that CUDA_VISIBLE_DEVICES does not hide it", cause)
	case strings.Contains(text, "libcuda.so") && strings.Contains(text, "cannot open shared object"):
		return fmt.Errorf("no CUDA driver: %s cannot load libcuda.so.1"+hintSep+"install the NVIDIA driver (it provides libcuda), or run on a machine that has one", runner)
	case own != "":
		return fmt.Errorf("running model %s on the GPU: %s", model, own)
	}
	if last == "" {
		last = "no output"
	}
	return fmt.Errorf("%s failed (%v): %s", runner, err, last)
}
