package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"tec/backend/cuda"
	"tec/backend/kir"
	"tec/backend/llvm"
	"tec/backend/target"
	"tec/examples"
	"tec/lang"
	"tec/pipeline"
	"tec/precision"
)

// toolJob is one compilation of TestBuildToolchain: run returns a note to
// log, or an error.
type toolJob struct {
	name string
	run  func() (string, error)
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
// for example ex at full size, built at -O4 under dir: at --precision f16,
// nvcc for sm_80 and sm_90 with ptxas -v, then the checks of checkHalfSASS;
// at --precision bf16, llc and ptxas for each of targets.
func halfJobs(ex examples.Example, dir, nvcc, cuobjdump string, targets []target.Target) ([]toolJob, error) {
	p, diags := lang.Check(ex.File(), ex.Source(), lang.Config{Model: ex.Model})
	if diags.HasErrors() {
		return nil, fmt.Errorf("%s: %v", ex.Name, diags)
	}
	var jobs []toolJob
	for _, mode := range []precision.Mode{precision.F16, precision.BF16} {
		name := fmt.Sprintf("%s/full/O%d/%s", ex.Name, pipeline.MaxLevel, mode)
		res, err := pipeline.Build(p, pipeline.Options{Level: pipeline.MaxLevel, Precision: mode})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if mode == precision.BF16 {
			for _, tg := range targets {
				mod, err := llvm.Emit(res.Module, tg)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", name, err)
				}
				ll := []byte(mod.String())
				jobs = append(jobs, toolJob{name + " llc+ptxas " + tg.Name, func() (string, error) {
					ptx, err := llvm.PTX(context.Background(), ll, tg)
					if err == nil {
						_, err = llvm.Assemble(context.Background(), ptx, tg)
					}
					return "", err
				}})
			}
			continue
		}
		d := filepath.Join(dir, ex.Name, "full", "f16")
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
		files, err := buildFiles(context.Background(), res.Module, res.Module.Layout(), targets[0], map[string]bool{"cu": true}, nil, func(string, string) {})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		for _, f := range files {
			if err := os.WriteFile(filepath.Join(d, f.Name), f.Data, 0o644); err != nil {
				return nil, err
			}
		}
		cu, m := files[0].Name, res.Module
		jobs = append(jobs, toolJob{name + " nvcc, HMMA and spills", func() (string, error) {
			obj := strings.TrimSuffix(cu, ".cu") + ".o"
			cmd := exec.Command(nvcc, "-c", "-o", obj, cu, "-Xptxas", "-v",
				"-gencode=arch=compute_80,code=sm_80", "-gencode=arch=compute_90,code=sm_90")
			cmd.Dir = d
			log, err := cmd.CombinedOutput()
			if err != nil {
				return "", fmt.Errorf("nvcc: %v\n%s", err, log)
			}
			sass, err := exec.Command(cuobjdump, "-sass", filepath.Join(d, obj)).Output()
			if err != nil {
				return "", fmt.Errorf("cuobjdump -sass: %v", err)
			}
			return checkHalfSASS(ex.Name, m, string(log), string(sass))
		}})
	}
	return jobs, nil
}

// checkHalfSASS checks an f16 build of module m (example ex) against the
// output of ptxas -v (log) and cuobjdump -sass (sass): every kernel that
// issues MMAs has HMMA instructions in its SASS for each architecture, and
// no function spills registers unless knownSpills says why (which it
// returns as a note). It also notes each kernel's HMMA count.
func checkHalfSASS(ex string, m *kir.Module, log, sass string) (string, error) {
	names := cuda.KernelNames(m)
	hmma, calls := sassCount(sass, "HMMA"), sassCount(sass, "CALL")
	var errs, notes []string
	total := 0
	for _, k := range m.Kernels {
		if !issuesMMA(k) {
			continue
		}
		for _, arch := range []string{"sm_80", "sm_90"} {
			n := 0
			for fn, c := range hmma[arch] {
				if isSymbolOf(fn, names[k]) {
					n += c
				}
			}
			total += n
			if n == 0 {
				errs = append(errs, fmt.Sprintf("kernel %s issues MMAs, but its %s SASS has no HMMA", k.Name, arch))
			}
		}
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
		if !known && calls["sm_80"][fn]+calls["sm_90"][fn] > 0 {
			why, known = callSpill, true
		}
		if !known && !kernel && stageFunction.MatchString(fn) {
			why, known = stageSpill, true
		}
		if !known {
			errs = append(errs, fmt.Sprintf("%s spills %d bytes (ptxas -v)", fn, bytes))
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
	sassArch     = regexp.MustCompile(`arch = (sm_\d+)`)
	sassFunction = regexp.MustCompile(`Function : (\S+)`)
	sassInstr    = regexp.MustCompile(`^\s*/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9.]*)`)
	ptxasEntry   = regexp.MustCompile(`Function properties for (\S+)`)
	ptxasSpill   = regexp.MustCompile(`(\d+) bytes spill stores, (\d+) bytes spill loads`)
)

// isSymbolOf reports whether fn is the mangled symbol of the C function
// name (_Z, its length, the name, its parameters).
func isSymbolOf(fn, name string) bool {
	return strings.HasPrefix(fn, fmt.Sprintf("_Z%d%s", len(name), name))
}

// sassCount counts the instructions of each function of a cuobjdump
// -sass listing whose opcode begins with op, by architecture and symbol.
func sassCount(sass, op string) map[string]map[string]int {
	out := map[string]map[string]int{}
	arch, fn := "", ""
	sc := bufio.NewScanner(strings.NewReader(sass))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := sassArch.FindStringSubmatch(line); m != nil {
			arch = m[1]
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
// in the form ptxas -v and cuobjdump -sass print: a kernel with MMAs and
// HMMA for both architectures passes, and so does one that spills around
// calls; one without HMMA for sm_90, or one that spills without a reason,
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
	sass := func(archs ...string) string {
		var b strings.Builder
		for _, a := range archs {
			fmt.Fprintf(&b, "\tarch = %s\n\t\tFunction : %s\n        /*0100*/   HMMA.16816.F32 R4, R8, R12, R4 ;\n", a, sym)
		}
		return b.String()
	}
	clean := fmt.Sprintf("ptxas info    : Compiling entry function '%s' for 'sm_80'\nptxas info    : Function properties for %s\n    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n", sym, sym)
	spilling := strings.Replace(clean, "0 bytes spill stores", "8 bytes spill stores", 1)
	calling := sass("sm_80", "sm_90") + "        /*0200*/   CALL.REL.NOINC 0x300 ;\n"
	stageLog := func(fn string) string { // a device function's 32 bytes of spills
		return fmt.Sprintf("ptxas info    : Function properties for %s\n    32 bytes stack frame, 32 bytes spill stores, 32 bytes spill loads\n", fn)
	}
	for _, tc := range []struct {
		name, log, sass string
		ok              bool
	}{
		{"clean", clean, sass("sm_80", "sm_90"), true},
		{"no sm_90 HMMA", clean, sass("sm_80"), false},
		{"spills", spilling, sass("sm_80", "sm_90"), false},
		{"spills around calls", spilling, calling, true},
		{"a stage function spills", clean + stageLog("_ZN37_INTERNAL_61c6e811_7_lstm_cu_ada8348824s_hcat_lstm_cell_g_19_10EPK6__halfPf"), sass("sm_80", "sm_90"), true},
		{"another function spills", clean + stageLog("_Z6helperPf"), sass("sm_80", "sm_90"), false},
	} {
		note, err := checkHalfSASS("t", m, tc.log, tc.sass)
		if (err == nil) != tc.ok {
			t.Errorf("%s: note %q, error %v; want ok %v", tc.name, note, err, tc.ok)
		}
	}
}
