package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"tec/backend/cuda"
	"tec/backend/kir"
	"tec/backend/llvm"
	"tec/driver"
	"tec/examples"
	"tec/gpu"
	"tec/internal/testkit/tooltest"
	"tec/lang"
	"tec/pipeline"
	"tec/precision"
	"tec/te"
)

// TestBuildToolchain is the back end's check against real toolchains: every
// example at its tiny configuration and at full size, at -O0 and -O4, is
// built, its CUDA C++ compiled with nvcc for sm_80 and sm_90, and its
// LLVM IR compiled with llc and assembled with ptxas for both targets.
// At full size and -O4 it also builds each example at --precision f16 as
// tec build does for its default target, register check included (nvcc's
// probe of the kernels for sm_80, and a re-plan where their registers ask
// for one), compiled by nvcc for both with ptxas -v, whose kernels with MMAs must
// have HMMA in their SASS and whose functions must not spill (halfJobs),
// and at --precision bf16 through llc and ptxas (at the tiny size where the
// full-size IR passes bf16LLCLimit). Only the tiny builds'
// nvcc compiles the host code too (cudafe++ and the host compiler): the
// host code of a full-size build differs from the tiny one's only in its
// constants, and the device compilation's front end already checks every
// host function (docs/testing.md, "The toolchain sweep"). It takes
// minutes, so it runs only in CI (CI=true) or with TEC_TOOLCHAIN=all;
// .ci/run runs it as a step of its own (in the background, beside the
// others) and reports the time, passing TEC_TOOLCHAIN=later to its main
// "go test ./...". TEC_TOOLCHAIN_EXAMPLES
// (comma-separated names, "lstm,llama/prefill") limits it to those
// examples, for trying a change.
func TestBuildToolchain(t *testing.T) {
	switch mode := os.Getenv("TEC_TOOLCHAIN"); {
	case mode == "later":
		t.Skip("TEC_TOOLCHAIN=later: .ci/run runs this test as a step of its own")
	case !tooltest.CI() && mode != "all":
		t.Skip("compiles every example with nvcc, llc and ptxas: set CI=true or TEC_TOOLCHAIN=all to run")
	}
	tools := sweepTools{nvcc: tooltest.NVCC(t), ptxas: tooltest.PTXAS(t), nvdisasm: tooltest.Require(t, "Debian's nvidia-cuda-toolkit", "nvdisasm")}
	for _, name := range gpu.ArchNames() {
		tg, _ := gpu.LookupArch(name)
		tooltest.Require(t, "LLVM ("+strings.Join(tg.LLC, " or ")+")", tg.LLC...)
		tools.targets = append(tools.targets, tg)
	}
	base, err := gpu.LookupArch(sweepArchs[0])
	if err != nil {
		t.Fatal(err)
	}
	tools.base = base
	root := t.TempDir()
	prep := time.Now()
	exs, err := sweepExamples(os.Getenv("TEC_TOOLCHAIN_EXAMPLES"))
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := sweepJobs(exs, root, tools)
	if err != nil {
		t.Fatal(err)
	}
	// The runner links against one model (where the sweep builds it).
	for _, ex := range exs {
		if ex.Name == "softmax" {
			jobs = append(jobs, toolJob{"softmax runner", nvccCost(0, true), func() (string, error) {
				dir := filepath.Join(root, "softmax", "tiny", "0")
				return runTool(dir, tools.nvcc, "-o", "run", "main.cu", "softmax.cu", "-arch=sm_80")
			}})
		}
	}
	t.Logf("%d compilations prepared (front end, emitters) in %.1fs", len(jobs), time.Since(prep).Seconds())
	runJobs(t, jobs)
}

// sweepExamples returns the examples named in list (comma-separated), or
// every example if list is empty.
func sweepExamples(list string) ([]examples.Example, error) {
	if list == "" {
		return examples.All(), nil
	}
	var exs []examples.Example
	for _, name := range strings.Split(list, ",") {
		ex, ok := examples.Lookup(name)
		if !ok {
			return nil, fmt.Errorf("TEC_TOOLCHAIN_EXAMPLES: no example %q", name)
		}
		exs = append(exs, ex)
	}
	return exs, nil
}

// sweepTools are the tools and targets of TestBuildToolchain: base is
// the architecture the examples are built for (sweepArchs[0]), whose
// code every target but sm_75 runs. The SASS is nvdisasm's, not cuobjdump
// -sass's: the same instructions, a twelfth of the time on a full-size
// build's cubin (ResNeXt's f16 for sm_90: 2.8 against 35 s).
type sweepTools struct {
	nvcc, ptxas, nvdisasm string
	targets               []gpu.Arch
	base                  gpu.Arch
}

// disassemble returns the SASS of the cubin at path, nvdisasm's listing.
func (tools sweepTools) disassemble(path string) (string, error) {
	sass, err := exec.Command(tools.nvdisasm, path).Output()
	if err != nil {
		return "", fmt.Errorf("nvdisasm %s: %w", path, err)
	}
	return string(sass), nil
}

// toolJob is one compilation of TestBuildToolchain: run returns a note to
// log, or an error. cost estimates its CPU time in milliseconds, so that
// the longest start first.
type toolJob struct {
	name string
	cost int
	run  func() (string, error)
}

// nvccCost estimates the CPU time in milliseconds of nvcc compiling a .cu
// of n bytes for both architectures, and its host code if host: about
// 2.5 s for the headers and 10 ms per KB of kernels, and 4 s for the host
// side (measured on the examples, docs/testing.md).
func nvccCost(n int, host bool) int {
	c := 2500 + n/100
	if host {
		c += 4000
	}
	return c
}

// llcCost estimates the CPU time in milliseconds of llc and ptxas on n
// bytes of LLVM IR.
func llcCost(n int) int { return 500 + n/200 }

// sweepJobs builds each example in every configuration of the sweep, two
// at a time (one per CPU), writing the CUDA C++ under root, and returns
// their compilations in the examples' order.
func sweepJobs(exs []examples.Example, root string, tools sweepTools) ([]toolJob, error) {
	perExample := make([][]toolJob, len(exs))
	errs := make([]error, len(exs))
	sem := make(chan struct{}, runtime.NumCPU())
	var wg sync.WaitGroup
	for i, ex := range exs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			perExample[i], errs[i] = exampleJobs(ex, root, tools)
			if errs[i] == nil {
				var half, native []toolJob
				half, errs[i] = halfJobs(ex, root, tools)
				if errs[i] == nil {
					native, errs[i] = nativeJobs(ex, root, tools)
				}
				perExample[i] = append(perExample[i], append(half, native...)...)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var jobs []toolJob
	for _, js := range perExample {
		jobs = append(jobs, js...)
	}
	return jobs, nil
}

// sweepArchs are the architectures nvcc, and llc with ptxas, compile
// each build for sm_80 (the default target) for: sm_80, whose code every
// GPU from Ampere on runs, and the newest, on its own llc (llc-16). The
// other architectures get builds of their own, planned for their GPUs
// (nativeJobs).
var sweepArchs = []string{"sm_80", "sm_90"}

// sweepPTX is the virtual architecture whose PTX ptxas compiles for each
// of sweepArchs: cicc, nvcc's front end and the most of its time, runs
// once per build instead of once per architecture. The PTX that cicc
// writes for compute_90 is compute_80's but for the .target line (the CUDA
// C++ does not depend on __CUDA_ARCH__, and the f32 and f16 code takes no
// sm_90 path of the CUDA headers; docs/testing.md).
const sweepPTX = "compute_80"

// gencode returns nvcc's flag compiling sweepPTX's PTX for every one of
// archs.
func gencode(archs []string) string {
	return fmt.Sprintf("-gencode=arch=%s,code=[%s]", sweepPTX, strings.Join(archs, ","))
}

// exampleJobs returns the f32 compilations of ex: tiny and full size, at
// -O0 and -O4, the CUDA C++ by nvcc for both architectures (host code too
// at the tiny size, the device code alone into a fatbinary at full size)
// and the LLVM IR by llc and ptxas for each target.
func exampleJobs(ex examples.Example, root string, tools sweepTools) ([]toolJob, error) {
	var jobs []toolJob
	for _, size := range []string{"tiny", "full"} {
		defines := ex.Tiny
		if size == "full" {
			defines = nil
		}
		for _, level := range []int{0, pipeline.MaxLevel} {
			name := fmt.Sprintf("%s/%s/O%d", ex.Name, size, level)
			p, diags := lang.Check(ex.File(), ex.Source(), lang.Config{Defines: defines, Model: ex.Model})
			if diags.HasErrors() {
				return nil, fmt.Errorf("%s: %v", name, diags)
			}
			res, err := pipeline.Build(p, pipeline.Options{Level: level})
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			dir := filepath.Join(root, ex.Name, size, fmt.Sprint(level))
			files, err := writeBuild(dir, res, tools.base, true)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			cu, n := files[0].Name, len(files[0].Data)
			mode, out := "-c", ".o" // host and device code
			if size == "full" {
				mode, out = "-fatbin", ".fatbin" // device code alone
			}
			jobs = append(jobs, toolJob{name + " nvcc", nvccCost(n, size == "tiny"), func() (string, error) {
				return runTool(dir, tools.nvcc, mode, "-o", strings.TrimSuffix(cu, ".cu")+out, cu, gencode(sweepArchs))
			}})
			for _, tg := range tools.targets {
				if !slices.Contains(sweepArchs, tg.Name) {
					continue
				}
				job, err := llcJob(name, res.Module, tg)
				if err != nil {
					return nil, err
				}
				jobs = append(jobs, job)
			}
		}
	}
	return jobs, nil
}

// nativeArchs are the architectures whose builds nativeJobs makes: those
// not in sweepArchs, each built as tec build --target builds for it.
var nativeArchs = []string{"sm_75", "sm_86", "sm_89"}

// nativeJobs returns the compilations of ex at its tiny size for each of
// nativeArchs: built for the architecture's default GPU (gpu.Resolve: the
// T4's sm_75, m16n8k8 MMAs and no cp.async; the A10's sm_86; the L4's
// sm_89) at -O0 and -O4, in f32 and f16, its LLVM IR by llc and ptxas (but
// the f32 -O4 build's, SIMT code of sm_80's instructions that the sm_80
// sweep compiles), and at -O4 in f16 its CUDA C++ by nvcc for it (the
// device code, ptxas -v):
// its kernels with MMAs must have HMMA in their SASS, and no function may
// spill without a reason (checkHalfSASS). nvcc at -O0 too took 400 s more
// of the sweep's CPU (the f16 builds' unfused kernels, each with its
// tensor-core tiles: EfficientNet's 40 s an architecture), and in f32 90 s
// more, for code paths (SIMT, no architecture's own instructions) that the
// sm_80 sweep already puts through nvcc.
func nativeJobs(ex examples.Example, root string, tools sweepTools) ([]toolJob, error) {
	p, diags := lang.Check(ex.File(), ex.Source(), lang.Config{Defines: ex.Tiny, Model: ex.Model})
	if diags.HasErrors() {
		return nil, fmt.Errorf("%s: %v", ex.Name, diags)
	}
	var jobs []toolJob
	for _, arch := range nativeArchs {
		js, err := archJobs(ex, p, arch, root, tools)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, js...)
	}
	return jobs, nil
}

// archJobs returns nativeJobs's compilations of ex (checked as p) for arch.
func archJobs(ex examples.Example, p *te.Program, arch, root string, tools sweepTools) ([]toolJob, error) {
	g, err := gpu.Resolve("", arch)
	if err != nil {
		return nil, err
	}
	var jobs []toolJob
	for _, mode := range []precision.Mode{precision.F32, precision.F16} {
		for _, level := range []int{0, pipeline.MaxLevel} {
			name := fmt.Sprintf("%s/tiny/O%d/%s/%s", ex.Name, level, mode, arch)
			res, err := pipeline.Build(p, pipeline.Options{Level: level, Precision: mode, GPU: *g})
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			if mode == precision.F16 || level == 0 {
				job, err := llcJob(name, res.Module, g.Arch)
				if err != nil {
					return nil, err
				}
				jobs = append(jobs, job)
			}
			if level != pipeline.MaxLevel || mode != precision.F16 {
				continue // nvcc's CUDA C++ at -O4 in f16 (see nativeJobs)
			}
			dir := filepath.Join(root, ex.Name, "tiny", arch, fmt.Sprintf("%s-O%d", mode, level))
			files, err := writeBuild(dir, res, g.Arch, false)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			cu := files[0].Name
			cubin := strings.TrimSuffix(cu, ".cu") + ".cubin"
			m := res.Module
			jobs = append(jobs, toolJob{name + " nvcc", nvccCost(len(files[0].Data), false) / 2, func() (string, error) {
				cmd := exec.Command(tools.nvcc, "-cubin", "-arch="+arch, "-Xptxas", "-v", "-o", cubin, cu)
				cmd.Dir = dir
				log, err := cmd.CombinedOutput()
				if err != nil {
					return "", fmt.Errorf("nvcc -cubin -arch=%s: %v\n%s", arch, err, log)
				}
				sass, err := tools.disassemble(filepath.Join(dir, cubin))
				if err != nil {
					return "", err
				}
				note, err := checkHalfSASS(ex.Name, m, arch, string(log), sass)
				return cpuNote(cmd) + "; " + note, err
			}})
		}
	}
	return jobs, nil
}

// writeBuild writes res's CUDA C++ (and, with host, its runner) for tg to
// dir and returns the files, the .cu first.
func writeBuild(dir string, res *pipeline.Result, tg gpu.Arch, host bool) ([]cuda.File, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	files, err := driver.Emit(context.Background(), &driver.Compiled{Result: res}, tg, driver.Outputs{CUDA: true, Runner: host})
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.Data, 0o644); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// llcJob emits m as LLVM IR for tg and returns the job compiling it with
// llc and assembling the PTX with ptxas.
func llcJob(name string, m *kir.Module, tg gpu.Arch) (toolJob, error) {
	mod, err := llvm.Emit(m, tg)
	if err != nil {
		return toolJob{}, fmt.Errorf("%s: %w", name, err)
	}
	ll := []byte(mod.String())
	return toolJob{name + " llc+ptxas " + tg.Name, llcCost(len(ll)), func() (string, error) {
		ptx, err := llvm.PTX(context.Background(), ll, tg)
		if err == nil {
			_, err = llvm.Assemble(context.Background(), ptx, tg)
		}
		return "", err
	}}, nil
}

// runJobs runs jobs, the costliest first, one per CPU, and logs each
// one's wall time and note, and the CPU time of them all.
func runJobs(t *testing.T, jobs []toolJob) {
	sort.SliceStable(jobs, func(i, j int) bool { return jobs[i].cost > jobs[j].cost })
	start := time.Now()
	sem := make(chan struct{}, runtime.NumCPU())
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			t0 := time.Now()
			note, err := j.run()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("%s: %v", j.name, err)
				return
			}
			if note != "" {
				note = ", " + note
			}
			t.Logf("%s: %.1fs wall%s", j.name, time.Since(t0).Seconds(), note)
		}()
	}
	wg.Wait()
	var self, children syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	t.Logf("%d compilations in %.1fs on %d CPUs; CPU time (user+sys) of the tools %.0fs, of the test process %.0fs",
		len(jobs), time.Since(start).Seconds(), runtime.NumCPU(), cpuSeconds(children), cpuSeconds(self))
}

// cpuSeconds is the user and system time of u in seconds.
func cpuSeconds(u syscall.Rusage) float64 {
	return time.Duration(u.Utime.Nano() + u.Stime.Nano()).Seconds()
}

// runTool runs tool with args in dir and returns the CPU time (user +
// sys) it took, as a note.
func runTool(dir, tool string, args ...string) (string, error) {
	cmd := exec.Command(tool, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s %s: %v\n%s", filepath.Base(tool), strings.Join(args, " "), err, out)
	}
	return cpuNote(cmd), nil
}

// cpuNote says how much CPU time (user + sys) cmd, which has run, took.
func cpuNote(cmd *exec.Cmd) string {
	return fmt.Sprintf("%.1fs CPU", (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds())
}

// knownSpills explains the kernels (example, CUDA kernel name) that may
// spill registers in the half-precision sweep for another reason than
// calls (see checkHalfSASS), and why. None does now.
var knownSpills = map[[2]string]string{}

// callSpill is why a kernel that makes calls may spill: each call follows
// the ABI, which saves on the stack the registers that are live across it.
// The calls are to outlined stage functions (backend/cuda/outline.go,
// __noinline__) or to the slow path of sinf and cosf for large arguments.
const callSpill = "it makes calls (outlined stage functions, or sinf/cosf's slow path), around which the calling convention saves live registers on the stack"

// stageSpill is why an outlined stage function (a static __device__
// __noinline__ s_NAME the CUDA emitter shares between stages) may spill: it
// is compiled under the calling convention, within the register budget
// that its callers' __launch_bounds__ leave it, with no say in it.
const stageSpill = "an outlined stage function, compiled under the calling convention within the registers its kernels' launch bounds leave"

// stageFunction matches the mangled name of an outlined stage function: a
// length-prefixed identifier s_NAME ending the name (_ZN...<n>s_NAME E...).
var stageFunction = regexp.MustCompile(`\d+s_[A-Za-z0-9_]+E`)

// halfJobs returns the jobs of TestBuildToolchain's half-precision sweep
// for example ex at full size, built at -O4 under root: at --precision
// f16, the build with its register check, then nvcc's PTX for sweepPTX
// (the device code alone), ptxas -v on it for each of sweepArchs, and the
// checks of checkHalfSASS on that architecture's log and SASS (halfBuild,
// its cost estimated by halfCost); at --precision bf16, llc and ptxas for
// each target.
func halfJobs(ex examples.Example, root string, tools sweepTools) ([]toolJob, error) {
	p, diags := lang.Check(ex.File(), ex.Source(), lang.Config{Model: ex.Model})
	if diags.HasErrors() {
		return nil, fmt.Errorf("%s: %v", ex.Name, diags)
	}
	var jobs []toolJob
	for _, mode := range []precision.Mode{precision.F16, precision.BF16} {
		name := fmt.Sprintf("%s/full/O%d/%s", ex.Name, pipeline.MaxLevel, mode)
		opts := pipeline.Options{Level: pipeline.MaxLevel, Precision: mode}
		if mode == precision.BF16 {
			res, err := pipeline.Build(p, opts)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			bf, err := bf16Jobs(ex, name, res.Module, tools)
			if err != nil {
				return nil, err
			}
			jobs = append(jobs, bf...)
			continue
		}
		cost, err := halfCost(p, opts, tools.base)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		jobs = append(jobs, toolJob{name + " register check, nvcc, ptxas, HMMA and spills", cost, func() (string, error) {
			return halfBuild(ex.Name, p, opts, filepath.Join(root, ex.Name, "full", "f16"), tools)
		}})
	}
	return jobs, nil
}

// halfCost estimates the CPU time in milliseconds of an f16 job (halfBuild)
// for p built with opts: about four nvcc runs on the build's CUDA C++ for
// tg as planned before the register check, which compiles it once (nvcc
// -cubin for sm_80) or, where it plans again, up to three times, before
// the job's own nvcc -ptx and its two ptxas runs. The f32 build's size is
// no measure of it: Swin's f16 CUDA C++ is ten times its f32 one (4.3
// against 0.45 MB), and its job the sweep's longest, which must start
// first lest it end the run on one CPU.
func halfCost(p *te.Program, opts pipeline.Options, tg gpu.Arch) (int, error) {
	res, err := pipeline.Build(p, opts)
	if err != nil {
		return 0, err
	}
	files, err := driver.Emit(context.Background(), &driver.Compiled{Result: res}, tg, driver.Outputs{CUDA: true})
	if err != nil {
		return 0, err
	}
	return 4 * nvccCost(len(files[0].Data), false), nil
}

// halfBuild builds p at --precision f16 (opts) as tec build does with
// nvcc on PATH (--ptxas auto) for its default target (gpu.DefaultArch):
// the register check compiles the kernels once and plans again where
// ptxas's registers do not leave the blocks per SM of the plan's estimate.
// It writes the CUDA C++ to dir and compiles and checks it for every arch
// of sweepArchs (halfCompile). The check runs here, in the job, rather
// than while the jobs are prepared, so that its nvcc shares the CPUs with
// the other compilations instead of running before them all.
func halfBuild(ex string, p *te.Program, opts pipeline.Options, dir string, tools sweepTools) (string, error) {
	tg, err := gpu.LookupArch(gpu.DefaultArch())
	if err != nil {
		return "", err
	}
	t0 := time.Now()
	checked, err := driver.CompileChecked(context.Background(), p, opts, tg, driver.NVCC)
	if err != nil {
		return "", err
	}
	if checked.Registers.Tool == driver.NoToolchain {
		return "", fmt.Errorf("the register check did not run: %s", strings.Join(checked.Registers.Warnings, "; "))
	}
	check := fmt.Sprintf("register check (%s) %.1fs wall, planned again: %v", tg.Name, time.Since(t0).Seconds(), checked.Registers.Replanned)
	files, err := writeBuild(dir, checked.Result, tools.base, false)
	if err != nil {
		return "", err
	}
	notes, err := halfCompile(ex, checked.Module, dir, files[0].Name, tools)
	if err != nil {
		return "", err
	}
	return check + "; " + notes, nil
}

// bf16LLCLimit is the most LLVM IR of a full-size bf16 build that the
// sweep gives llc: past it the example's bf16 build is checked at its tiny
// size instead. llc's instruction selection grows faster than a kernel's
// size, and Swin's full-size bf16 kernel (16.8 MB of IR, one kernel of
// 388,000 lines) took 727 s of CPU through llc for the two targets, a
// third of the sweep, where BERT's 10.5 MB take 38 s; its tiny build goes
// through the same emitter paths. With the stages shared as functions
// Swin's IR is 5.8 MB and still the largest (ResNeXt's 3.3, BERT's 1.4),
// and its 67 s of llc and ptxas check one instruction pattern that the
// other full-size builds lack (docs/testing.md), so it stays past the
// limit.
const bf16LLCLimit = 5 << 20

// bf16Jobs returns the llc and ptxas jobs, for each target, of example
// ex's full-size bf16 build m (named name), or of its tiny bf16 build
// where m's LLVM IR passes bf16LLCLimit.
func bf16Jobs(ex examples.Example, name string, m *kir.Module, tools sweepTools) ([]toolJob, error) {
	ir, err := llvm.Emit(m, tools.base)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if n := len(ir.String()); n > bf16LLCLimit {
		p, diags := lang.Check(ex.File(), ex.Source(), lang.Config{Defines: ex.Tiny, Model: ex.Model})
		if diags.HasErrors() {
			return nil, fmt.Errorf("%s: %v", ex.Name, diags)
		}
		res, err := pipeline.Build(p, pipeline.Options{Level: pipeline.MaxLevel, Precision: precision.BF16})
		if err != nil {
			return nil, fmt.Errorf("%s, tiny: %w", name, err)
		}
		m, name = res.Module, fmt.Sprintf("%s/tiny/O%d/bf16 (full size: %d MB of IR, past %d)", ex.Name, pipeline.MaxLevel, n>>20, bf16LLCLimit>>20)
	}
	var jobs []toolJob
	for _, tg := range tools.targets {
		if !slices.Contains(sweepArchs, tg.Name) {
			continue
		}
		job, err := llcJob(name, m, tg)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, job)
	}
	return jobs, nil
}

// halfCompile compiles the f16 build cu of module m (example ex) in dir to
// PTX for sweepPTX with nvcc, then for each of sweepArchs with ptxas -v,
// and checks each architecture's log and SASS (checkHalfSASS). It
// returns the CPU time it took and the checks' notes.
func halfCompile(ex string, m *kir.Module, dir, cu string, tools sweepTools) (string, error) {
	base := strings.TrimSuffix(cu, ".cu")
	cpu, err := runTool(dir, tools.nvcc, "-ptx", "-o", base+".ptx", cu, "-arch="+sweepPTX)
	if err != nil {
		return "", err
	}
	notes := []string{"nvcc " + cpu}
	for _, arch := range sweepArchs {
		cubin := base + "." + arch + ".cubin"
		cmd := exec.Command(tools.ptxas, "-v", "-arch="+arch, "-o", cubin, base+".ptx")
		cmd.Dir = dir
		log, err := cmd.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("ptxas -arch=%s: %v\n%s", arch, err, log)
		}
		sass, err := tools.disassemble(filepath.Join(dir, cubin))
		if err != nil {
			return "", err
		}
		note, err := checkHalfSASS(ex, m, arch, string(log), sass)
		if err != nil {
			return "", err
		}
		notes = append(notes, fmt.Sprintf("%s: ptxas %s; %s", arch, cpuNote(cmd), note))
	}
	return strings.Join(notes, "; "), nil
}

// checkHalfSASS checks an f16 build of module m (example ex) for arch
// against the output of ptxas -v (log) and its SASS (sass, nvdisasm's or
// cuobjdump -sass's listing): every
// kernel that issues MMAs has HMMA instructions in its SASS for arch, and
// no function spills registers unless knownSpills, its calls or its being
// an outlined stage function say why (which it returns as a note). It
// also notes the HMMA count.
func checkHalfSASS(ex string, m *kir.Module, arch, log, sass string) (string, error) {
	names, stageFuncs := cuda.KernelNames(m), cuda.StageFunctionNames(m)
	hmma, calls := sassCount(sass, "HMMA")[arch], sassCount(sass, "CALL")[arch]
	var errs, notes []string
	for _, k := range m.Kernels {
		if !issuesMMA(k) {
			continue
		}
		// The kernel's MMAs are in its SASS or in that of the stage
		// functions it calls.
		n := 0
		for fn, c := range hmma {
			if isSymbolOf(fn, names[k]) || slices.ContainsFunc(stageFuncs[k], func(name string) bool { return isStageFunction(fn, name) }) {
				n += c
			}
		}
		if n == 0 {
			errs = append(errs, fmt.Sprintf("kernel %s issues MMAs, but neither its %s SASS nor its stage functions' has an HMMA", k.Name, arch))
		}
	}
	total := 0
	for _, c := range hmma {
		total += c
	}
	notes = append(notes, fmt.Sprintf("%d HMMA", total))
	for fn, bytes := range spills(log) {
		why, known, kernel := "", false, false
		for _, k := range m.Kernels {
			if isSymbolOf(fn, names[k]) {
				why, known = knownSpills[[2]string{ex, names[k]}]
				kernel = true
			}
		}
		if !known && calls[fn] > 0 {
			why, known = callSpill, true
		}
		if !known && !kernel && stageFunction.MatchString(fn) {
			why, known = stageSpill, true
		}
		if !known {
			errs = append(errs, fmt.Sprintf("%s spills %d bytes for %s (ptxas -v)", fn, bytes, arch))
			continue
		}
		notes = append(notes, fmt.Sprintf("%s spills %d bytes: %s", fn, bytes, why))
	}
	sort.Strings(notes[1:])
	if len(errs) > 0 {
		sort.Strings(errs)
		return "", fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return strings.Join(notes, "; "), nil
}

// issuesMMA reports whether k has an MMA statement.
func issuesMMA(k *kir.Kernel) bool {
	found := false
	kir.WalkStmts(k.Body, func(s kir.Stmt) bool {
		_, ok := s.(*kir.MMA)
		found = found || ok
		return !found
	})
	return found
}

var (
	// sassArch matches the line naming the architecture of the listing
	// that follows: in cuobjdump -sass's, "arch = sm_80" in an object's
	// fatbinary, "code for sm_80" in a cubin's; in nvdisasm's, the
	// cubin's EF_CUDA_SM80 flag (not the virtual architecture's
	// EF_CUDA_VIRTUAL_SM(EF_CUDA_SM80)).
	sassArch = regexp.MustCompile(`(?:arch = |code for |[" ]EF_CUDA_SM)(sm_\d+|\d+\b)`)
	// sassFunction matches the line that begins a function's code:
	// "Function : NAME" in cuobjdump's listing, the label ".text.NAME:"
	// in nvdisasm's.
	sassFunction = regexp.MustCompile(`^(?:\s*Function : |\.text\.)([^\s:]+)`)
	sassInstr    = regexp.MustCompile(`^\s*/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9.]*)`)
	ptxasEntry   = regexp.MustCompile(`Function properties for (\S+)`)
	ptxasSpill   = regexp.MustCompile(`(\d+) bytes spill stores, (\d+) bytes spill loads`)
)

// isStageFunction reports whether fn is the mangled symbol of the static
// device function name, an outlined stage function: its length and name
// end a nested name (_ZN…<n>nameE…).
func isStageFunction(fn, name string) bool {
	return strings.Contains(fn, fmt.Sprintf("%d%sE", len(name), name))
}

// isSymbolOf reports whether fn is the mangled symbol of the C function
// name (_Z, its length, the name, its parameters).
func isSymbolOf(fn, name string) bool {
	return strings.HasPrefix(fn, fmt.Sprintf("_Z%d%s", len(name), name))
}

// sassCount counts the instructions of each function of a SASS listing
// (cuobjdump -sass's or nvdisasm's) whose opcode begins with op, by
// architecture and symbol.
func sassCount(sass, op string) map[string]map[string]int {
	out := map[string]map[string]int{}
	arch, fn := "", ""
	sc := bufio.NewScanner(strings.NewReader(sass))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := sassArch.FindStringSubmatch(line); m != nil {
			arch = m[1]
			if !strings.HasPrefix(arch, "sm_") {
				arch = "sm_" + arch
			}
		}
		if m := sassFunction.FindStringSubmatch(line); m != nil {
			fn = m[1]
		}
		if m := sassInstr.FindStringSubmatch(line); m != nil && strings.HasPrefix(m[1], op) {
			if out[arch] == nil {
				out[arch] = map[string]int{}
			}
			out[arch][fn]++
		}
	}
	return out
}

// spills returns the functions that ptxas -v reports spilling registers,
// by symbol, with the bytes they store and load (the most over the
// architectures).
func spills(log string) map[string]int {
	out := map[string]int{}
	fn := ""
	for _, line := range strings.Split(log, "\n") {
		if m := ptxasEntry.FindStringSubmatch(line); m != nil {
			fn = m[1]
		}
		if m := ptxasSpill.FindStringSubmatch(line); m != nil {
			st, _ := strconv.Atoi(m[1])
			ld, _ := strconv.Atoi(m[2])
			if st+ld > 0 {
				out[fn] = max(out[fn], st+ld)
			}
		}
	}
	return out
}

// TestHalfSASSChecks runs the half-precision sweep's checks on listings
// in the form ptxas -v and nvdisasm (or cuobjdump -sass) print, one
// architecture at a time as the sweep does: a kernel with MMAs and HMMA for both
// architectures passes, and so does one that spills around calls or an
// outlined stage function that spills; one without HMMA for sm_90, one
// checked against another architecture's listing, or one that spills
// without a reason (or with calls only in another architecture's SASS),
// fails.
func TestHalfSASSChecks(t *testing.T) {
	// The first example whose tiny configuration at f16 -O0 has a
	// tensor-core kernel.
	var m *kir.Module
	var mma *kir.Kernel
	for _, ex := range examples.All() {
		p, diags := lang.Check(ex.File(), ex.Source(), lang.Config{Defines: ex.Tiny, Model: ex.Model})
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		res, err := pipeline.Build(p, pipeline.Options{Level: 0, Precision: precision.F16})
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range res.Module.Kernels {
			if mma == nil && issuesMMA(k) {
				m, mma = res.Module, k
			}
		}
	}
	if mma == nil {
		t.Fatal("no tiny example at f16 -O0 has a tensor-core kernel")
	}
	m.Kernels = []*kir.Kernel{mma}
	name := cuda.KernelNames(m)[mma]
	sym := fmt.Sprintf("_Z%d%sPK6__halfPf", len(name), name)
	// listing is the SASS of the kernel in a cubin for arch, with HMMA
	// and a call as asked: nvdisasm's listing, or with cuobjdump
	// cuobjdump -sass's.
	var cuobjdump bool
	listing := func(arch string, hmma, call bool) string {
		var b strings.Builder
		if cuobjdump {
			fmt.Fprintf(&b, "\n\tcode for %s\n\t\tFunction : %s\n", arch, sym)
		} else {
			n := strings.TrimPrefix(arch, "sm_")
			fmt.Fprintf(&b, "\t.headerflags\t@\"EF_CUDA_TEXMODE_UNIFIED EF_CUDA_64BIT_ADDRESS EF_CUDA_SM%s EF_CUDA_VIRTUAL_SM(EF_CUDA_SM80)\"\n", n)
			fmt.Fprintf(&b, "\t.section\t.text.%s,\"ax\",@progbits\n.text.%s:\n", sym, sym)
		}
		if hmma {
			b.WriteString("        /*0100*/   HMMA.16816.F32 R4, R8, R12, R4 ;\n")
		}
		if call {
			b.WriteString("        /*0200*/   CALL.REL.NOINC 0x300 ;\n")
		}
		return b.String()
	}
	// log is ptxas -v's log for arch, with the kernel spilling 8 bytes if
	// spill.
	log := func(arch string, spill bool) string {
		n := 0
		if spill {
			n = 8
		}
		return fmt.Sprintf("ptxas info    : Compiling entry function '%s' for '%s'\nptxas info    : Function properties for %s\n    0 bytes stack frame, %d bytes spill stores, 0 bytes spill loads\n", sym, arch, sym, n)
	}
	stageLog := func(fn string) string { // a device function's 32 bytes of spills
		return fmt.Sprintf("ptxas info    : Function properties for %s\n    32 bytes stack frame, 32 bytes spill stores, 32 bytes spill loads\n", fn)
	}
	const stageFn = "_ZN37_INTERNAL_61c6e811_7_lstm_cu_ada8348824s_hcat_lstm_cell_g_19_10EPK6__halfPf"
	cases := []struct {
		name string
		log  func(arch string) string
		sass func(arch string) string
		ok   bool
	}{
		{"clean", func(a string) string { return log(a, false) }, func(a string) string { return listing(a, true, false) }, true},
		{"no sm_90 HMMA", func(a string) string { return log(a, false) }, func(a string) string { return listing(a, a != "sm_90", false) }, false},
		{"sm_80's listing checked for sm_90", func(a string) string { return log(a, false) }, func(string) string { return listing("sm_80", true, false) }, false},
		{"spills", func(a string) string { return log(a, true) }, func(a string) string { return listing(a, true, false) }, false},
		{"spills around calls", func(a string) string { return log(a, true) }, func(a string) string { return listing(a, true, true) }, true},
		{"spills for sm_90, calls for sm_80 only", func(a string) string { return log(a, a == "sm_90") }, func(a string) string { return listing(a, true, a == "sm_80") }, false},
		{"a stage function spills", func(a string) string { return log(a, false) + stageLog(stageFn) }, func(a string) string { return listing(a, true, false) }, true},
		{"another function spills", func(a string) string { return log(a, false) + stageLog("_Z6helperPf") }, func(a string) string { return listing(a, true, false) }, false},
	}
	for _, cuobjdump = range []bool{false, true} {
		for _, tc := range cases {
			var errs []error
			var notes []string
			for _, arch := range sweepArchs {
				note, err := checkHalfSASS("t", m, arch, tc.log(arch), tc.sass(arch))
				notes, errs = append(notes, note), append(errs, err)
			}
			if err := errors.Join(errs...); (err == nil) != tc.ok {
				t.Errorf("%s (cuobjdump's listing: %v): notes %q, error %v; want ok %v", tc.name, cuobjdump, notes, err, tc.ok)
			}
		}
	}
}

// TestSweepExamples checks TEC_TOOLCHAIN_EXAMPLES's list: empty is every
// example, names give those examples in order, and an unknown name is an
// error that names it.
func TestSweepExamples(t *testing.T) {
	all, err := sweepExamples("")
	if err != nil || len(all) != len(examples.All()) {
		t.Errorf(`sweepExamples(""): %d examples, error %v; want %d`, len(all), err, len(examples.All()))
	}
	some, err := sweepExamples("lstm,llama/prefill")
	if err != nil || len(some) != 2 || some[0].Name != "lstm" || some[1].Name != "llama/prefill" {
		t.Errorf("sweepExamples(lstm,llama/prefill): %v, error %v", some, err)
	}
	if _, err := sweepExamples("lstm,nope"); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("sweepExamples(lstm,nope): error %v, want one naming nope", err)
	}
}
