package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"tec/backend/gpurun"
	"tec/driver"
	"tec/gpu"
	"tec/te"
)

// codeCUDA is the code of a failure to run on a GPU: tec-cuda missing, no
// GPU or driver, or an error of the run.
const codeCUDA = "cuda"

// cudaFlags are the flags of tec run that only --device cuda uses.
type cudaFlags struct {
	codegen string
	target  string
	bench   int
	warmup  int
	timeout time.Duration // 0: no limit
}

// defaultCUDATimeout is how long tec run waits for tec-cuda by default:
// far longer than any run tec's cost model prices (the largest examples
// take seconds with --bench), short enough that a kernel that never ends
// does not hold the GPU and the terminal for good.
const defaultCUDATimeout = 10 * time.Minute

func (cf *cudaFlags) registerCUDA(fs *flag.FlagSet) {
	fs.StringVar(&cf.codegen, "codegen", "ptx", "with --device cuda, the code to run: ptx (the LLVM path's PTX, compiled by the driver) or cu (the CUDA C++, compiled by nvcc)")
	fs.StringVar(&cf.target, "target", gpu.DefaultArch(), "with --device cuda, the GPU architecture to compile for: "+strings.Join(gpu.ArchNames(), " or "))
	fs.IntVar(&cf.bench, "bench", 0, "with --device cuda, time this many runs with CUDA events and print each kernel's and the total's median, min and max")
	fs.IntVar(&cf.warmup, "warmup", 3, "with --device cuda and --bench, untimed runs before the timed ones")
	fs.DurationVar(&cf.timeout, "timeout", defaultCUDATimeout, "with --device cuda, stop tec-cuda if it has not finished after this long (a kernel that never ends); 0 for no limit")
}

// cudaFlagNames are the flags that only --device cuda uses.
func cudaFlagNames() []string { return []string{"codegen", "target", "bench", "warmup", "timeout"} }

// checkCUDAFlags reports a misuse of the flags of --device cuda: given with
// another device, or out of range.
func checkCUDAFlags(fs *flag.FlagSet, device string, cf *cudaFlags) error {
	if device != "cuda" {
		var given []string
		for _, name := range cudaFlagNames() {
			if isSet(fs, name) {
				given = append(given, "--"+name)
			}
		}
		if len(given) > 0 {
			return fmt.Errorf("%s %s only with --device cuda; --device %s would ignore %s"+hintSep+"add --device cuda to run the model on a GPU, or leave %s out",
				joinAnd(given), plural(len(given), "applies", "apply"), device, plural(len(given), "it", "them"), plural(len(given), "it", "them"))
		}
		return nil
	}
	if isSet(fs, "race") {
		return errors.New("--race checks the kernels in the simulator, which only --device sim runs; --device cuda runs them on the GPU" +
			hintSep + "leave --race out, or run the kernels under compute-sanitizer")
	}
	if cf.codegen != "ptx" && cf.codegen != "cu" {
		return fmt.Errorf("--codegen %s: want ptx or cu", cf.codegen)
	}
	if _, err := gpu.LookupArch(cf.target); err != nil {
		return fmt.Errorf("--target: %w", err)
	}
	if cf.bench < 0 || cf.warmup < 0 {
		return errors.New("--bench and --warmup must not be negative")
	}
	if cf.timeout < 0 {
		return fmt.Errorf("--timeout %v: must not be negative (0 for no limit)", cf.timeout)
	}
	return nil
}

// cudaSummary is the "cuda" object of tec run --json with --device cuda.
type cudaSummary struct {
	Runner   string              `json:"runner"` // the tec-cuda that ran it
	Codegen  string              `json:"codegen"`
	Target   string              `json:"target"`
	Device   gpurun.Device       `json:"device"`
	Launches []gpurun.LaunchInfo `json:"launches"`
	Bench    *benchSummary       `json:"bench,omitempty"`
}

// benchSummary is the timing of --bench: the whole run's and each
// kernel's, in milliseconds.
type benchSummary struct {
	Runs    int            `json:"runs"`
	Warmup  int            `json:"warmup"`
	Total   gpurun.Stats   `json:"total"`
	Kernels []kernelTiming `json:"kernels"`
}

type kernelTiming struct {
	Kernel string `json:"kernel"`
	gpurun.Stats
}

// findTecCUDA returns the path of tec-cuda: $TEC_CUDA, else the one next
// to the tec executable, else the first on $PATH.
func (e *env) findTecCUDA() (string, error) {
	if p := e.getenv("TEC_CUDA"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", &failure{code: codeCUDA, err: fmt.Errorf("TEC_CUDA=%s: %w"+hintSep+"set TEC_CUDA to the path of tec-cuda, or unset it to look next to tec and on PATH", p, err)}
		}
		return p, nil
	}
	var looked []string
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), driver.RunnerName)
		if isExecutable(p) {
			return p, nil
		}
		looked = append(looked, filepath.Dir(exe))
	}
	for _, dir := range filepath.SplitList(e.getenv("PATH")) {
		if dir == "" {
			dir = "."
		}
		if p := filepath.Join(dir, driver.RunnerName); isExecutable(p) {
			return p, nil
		}
	}
	looked = append(looked, "$PATH")
	return "", &failure{code: codeCUDA, err: fmt.Errorf("--device cuda needs tec-cuda, the GPU runner, which is not installed (looked in %s)"+
		hintSep+"build it where the CUDA driver is installed: go install -tags cuda ./cmd/tec-cuda (in tec's source), and put it on PATH or next to tec, or set TEC_CUDA to its path",
		strings.Join(looked, " and "))}
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// runCUDA runs c, the kernels of prog, on the GPU through tec-cuda with
// feeds, and returns the outputs by name. tec-cuda is stopped after
// cf.timeout, or when tec receives SIGINT or SIGTERM, and the directory of
// its job (the weights among the feeds) is removed in every case.
func (e *env) runCUDA(prog *te.Program, c *driver.Compiled, feeds map[string]*te.Array, cf *cudaFlags) (map[string]*te.Array, *cudaSummary, error) {
	dev, err := e.cudaDevice(prog.Name, cf)
	if err != nil {
		return nil, nil, err
	}
	dev.Bench, dev.Warmup = cf.bench, cf.warmup
	res, err := dev.Run(context.Background(), prog, c, feeds)
	if err != nil {
		return nil, nil, runFailure(err)
	}
	run := res.GPU
	sum := &cudaSummary{Runner: dev.Runner, Codegen: cf.codegen, Target: dev.Target.Name, Device: run.Device, Launches: run.Launches}
	if b := run.Bench; b != nil {
		sum.Bench = &benchSummary{Runs: b.Runs, Warmup: b.Warmup, Total: b.Total}
		for i, k := range b.Kernels {
			sum.Bench.Kernels = append(sum.Bench.Kernels, kernelTiming{Kernel: run.Plan.Kernels[i].Name, Stats: k})
		}
	}
	return res.Outputs, sum, nil
}

// cudaDevice returns the device of --device cuda as cf configures it, with
// tec-cuda found as findTecCUDA finds it; model names what runs, for
// messages.
func (e *env) cudaDevice(model string, cf *cudaFlags) (*driver.CUDA, error) {
	runner, err := e.findTecCUDA()
	if err != nil {
		return nil, err
	}
	tg, err := gpu.LookupArch(cf.target)
	if err != nil {
		return nil, fail(codeUsage, err)
	}
	r := &driver.TecCUDA{Path: runner, Timeout: cf.timeout, Exec: e.execTecCUDA}
	call := func(ctx context.Context, jobDir string) error { return r.Call(ctx, model, jobDir) }
	return &driver.CUDA{Runner: runner, Codegen: cf.codegen, Target: tg, Call: call}, nil
}

// runFailure wraps an error of a device's run as a failure with its code:
// races found by the simulator, or a kind of driver.Error.
func runFailure(err error) error {
	var races *driver.RaceError
	var de *driver.Error
	switch {
	case errors.As(err, &races):
		return fail(codeRace, err)
	case errors.As(err, &de):
		return fail(runCode(de.Kind), err)
	}
	return fail(codeInternal, err)
}

// runCode returns the failure code of a kind of driver.Error.
func runCode(k driver.ErrorKind) string {
	switch k {
	case driver.ErrEval:
		return codeEval
	case driver.ErrIO:
		return codeIO
	case driver.ErrBuild:
		return codeBuild
	case driver.ErrDevice:
		return codeCUDA
	}
	return codeInternal
}

// printCUDA prints the GPU, the launches' grids and, with --bench, the
// timings.
func printCUDA(w io.Writer, s *cudaSummary) {
	d := s.Device
	fmt.Fprintf(w, "gpu: %s (%s, %d SMs), %s code for %s, %d kernel launches\n", d.Name, d.Arch(), d.SMs, s.Codegen, s.Target, len(s.Launches))
	b := s.Bench
	if b == nil {
		return
	}
	fmt.Fprintf(w, "bench: %d runs after %d warm-up: median %.4f ms, min %.4f ms, max %.4f ms\n",
		b.Runs, b.Warmup, b.Total.Median, b.Total.Min, b.Total.Max)
	width := len("kernel")
	for _, k := range b.Kernels {
		width = max(width, len(k.Kernel))
	}
	fmt.Fprintf(w, "  %-*s  %7s  %5s  %7s  %10s  %10s  %10s\n", width, "kernel", "grid", "block", "shared", "median ms", "min ms", "max ms")
	for i, k := range b.Kernels {
		l := s.Launches[i]
		grid := fmt.Sprint(l.Grid)
		if l.Cooperative {
			grid += "*"
		}
		fmt.Fprintf(w, "  %-*s  %7s  %5d  %7d  %10.4f  %10.4f  %10.4f\n", width, k.Kernel, grid, l.Block, l.Shared, k.Median, k.Min, k.Max)
	}
	fmt.Fprintln(w, "  (* cooperative launch: every block resident at once)")
}
