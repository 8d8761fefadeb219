// Package tooltest finds the external tools (nvcc, llc, ptxas, Graphviz's
// dot) that tests of emitted code need. Where a tool is missing, or is
// present but does not run (a package half installed), a test is skipped
// with a message that says what to install or what the tool answered,
// except in CI (CI=true), where every such test must run and a missing or
// broken tool fails it.
//
// A tool counts as working when a probe succeeds: nvcc must compile an
// empty kernel, dot must print its version (dot -V), and any other tool
// must answer --version. Each path is probed once per test binary.
package tooltest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// CI reports whether the tests run in continuous integration (CI=true).
func CI() bool { return os.Getenv("CI") == "true" }

// probeTimeout bounds one probe: a tool that hangs does not work.
const probeTimeout = 2 * time.Minute

// probes caches the outcome of probing each path: a *probeResult.
var probes sync.Map

type probeResult struct {
	once sync.Once
	err  error
}

// Probe runs the tool at path the way that shows it works (see the package
// documentation) and returns nil, or an error with what it printed. The
// outcome is cached per path.
func Probe(path string) error {
	v, _ := probes.LoadOrStore(path, &probeResult{})
	r := v.(*probeResult)
	r.once.Do(func() { r.err = probe(path) })
	return r.err
}

func probe(path string) error {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	var cmd *exec.Cmd
	switch filepath.Base(path) {
	case "nvcc":
		dir, err := os.MkdirTemp("", "tooltest-nvcc")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		src := filepath.Join(dir, "probe.cu")
		if err := os.WriteFile(src, []byte("__global__ void probe(float *x) { x[threadIdx.x] = 1.0f; }\n"), 0o644); err != nil {
			return err
		}
		cmd = exec.CommandContext(ctx, path, "-c", "-o", filepath.Join(dir, "probe.o"), src)
	case "dot":
		cmd = exec.CommandContext(ctx, path, "-V")
	default:
		cmd = exec.CommandContext(ctx, path, "--version")
	}
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("no answer in %v", probeTimeout)
	}
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if len(msg) > 400 {
			msg = msg[:400] + "..."
		}
		if msg != "" {
			msg = ": " + msg
		}
		return fmt.Errorf("%s does not work (%s: %v)%s", path, strings.Join(cmd.Args[1:], " "), err, msg)
	}
	return nil
}

// find returns the path of the first of names that is in $PATH and works.
// Where none works, it returns "" and the probe's error of the first found,
// or nil if none is in $PATH.
func find(names ...string) (string, error) {
	var broken error
	for _, n := range names {
		p, err := exec.LookPath(n)
		if err != nil {
			continue
		}
		if err := Probe(p); err != nil {
			if broken == nil {
				broken = err
			}
			continue
		}
		return p, nil
	}
	return "", broken
}

// Find returns the path of the first of names that is in $PATH and works
// (Probe), or "".
func Find(names ...string) string {
	p, _ := find(names...)
	return p
}

// Require returns the path of the first of names that is in $PATH and
// works. If none is, it skips t, or fails it in CI, saying that install
// would provide it, or, where a tool is there but does not work, what its
// probe answered.
func Require(t testing.TB, install string, names ...string) string {
	t.Helper()
	p, broken := find(names...)
	if p != "" {
		return p
	}
	if broken != nil {
		if CI() {
			t.Fatalf("%v, and CI=true requires it: reinstall %s (.ci/run installs it)", broken, install)
			return ""
		}
		t.Skipf("%v: reinstall %s to run this test (CI=true makes it required)", broken, install)
		return ""
	}
	if CI() {
		t.Fatalf("%v not found in $PATH, and CI=true requires it: install %s (.ci/run does)", names, install)
		return ""
	}
	t.Skipf("%v not found in $PATH: install %s to run this test (CI=true makes it required)", names, install)
	return ""
}

// NVCC returns the path of nvcc, as Require does.
func NVCC(t testing.TB) string { return Require(t, "Debian's nvidia-cuda-toolkit", "nvcc") }

// PTXAS returns the path of ptxas, as Require does.
func PTXAS(t testing.TB) string { return Require(t, "Debian's nvidia-cuda-toolkit", "ptxas") }

// Dot returns the path of Graphviz's dot, as Require does.
func Dot(t testing.TB) string { return Require(t, "Debian's graphviz", "dot") }
