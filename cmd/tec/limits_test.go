package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

func TestRlimitMemory(t *testing.T) {
	const gib = 1 << 30
	status := "Name:\ttec\nVmPeak:\t 1048576 kB\nVmSize:\t 1048576 kB\nVmData:\t  524288 kB\n"
	tests := []struct {
		name   string
		as     uint64 // soft RLIMIT_AS; 0: unlimited
		data   uint64 // soft RLIMIT_DATA; 0: unlimited
		status string
		want   int64
		ok     bool
		source string
	}{
		{"no limits", 0, 0, status, 0, false, ""},
		{"address space", 4 * gib, 0, status, 2 * gib, true, "RLIMIT_AS"},
		{"data", 0, 6*gib + gib/2, status, 4 * gib, true, "RLIMIT_DATA"},
		{"data below address space", 8 * gib, 3*gib + gib/2, status, 2 * gib, true, "RLIMIT_DATA"},
		{"address space below data", 4 * gib, 8 * gib, status, 2 * gib, true, "RLIMIT_AS"},
		{"limit below use", gib / 2, 0, status, 0, true, "RLIMIT_AS"},
		{"no status", 5 * gib, 0, "", 2 * gib, true, "RLIMIT_AS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			read := func(path string) ([]byte, error) {
				if path == "/proc/self/status" && tt.status != "" {
					return []byte(tt.status), nil
				}
				return nil, os.ErrNotExist
			}
			getrlimit := func(resource int, lim *syscall.Rlimit) error {
				v := map[int]uint64{syscall.RLIMIT_AS: tt.as, syscall.RLIMIT_DATA: tt.data}[resource]
				if v == 0 {
					v = ^uint64(0) // RLIM_INFINITY
				}
				lim.Cur, lim.Max = v, ^uint64(0)
				return nil
			}
			got, source, ok := rlimitMemory(read, getrlimit)
			if got != tt.want || ok != tt.ok || !strings.Contains(source, tt.source) {
				t.Errorf("rlimitMemory = %d, %q, %v; want %d, %q, %v", got, source, ok, tt.want, tt.source, tt.ok)
			}
		})
	}
	failing := func(int, *syscall.Rlimit) error { return errors.New("no getrlimit") }
	if _, _, ok := rlimitMemory(os.ReadFile, failing); ok {
		t.Error("rlimitMemory reports a limit where getrlimit fails")
	}
}

// TestRunUnderResourceLimit runs the tec binary under prlimit's address-space
// and data limits: a model that needs more than a limit leaves is refused
// with the limit named (before, --max-memory auto ignored the limits and the
// Go runtime died with "fatal error: out of memory"), and a small one runs.
func TestRunUnderResourceLimit(t *testing.T) {
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("prlimit is not installed (util-linux): cannot set RLIMIT_AS for a child")
	}
	dir := t.TempDir()
	tec := filepath.Join(dir, "tec")
	if out, err := exec.Command("go", "build", "-o", tec, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	big := filepath.Join(dir, "big.te")
	// 3.2 GB of input and as much of output: over the 4 GiB limits once
	// the runtime has taken its share, far under the memory of the machine.
	src := "model m {\n  input x: f32[20000, 20000]\n  y[i, j] = x[i, j] + 1.0 where i in 0..20000, j in 0..20000\n  output y\n}\n"
	if err := os.WriteFile(big, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	const limit = "4294967296" // 4 GiB
	tests := []struct {
		name  string
		limit string
		model string
		code  int
		want  string
	}{
		{"address space, too big", "--as=" + limit, big, exitUser, "more than the"},
		{"address space, named", "--as=" + limit, big, exitUser, "RLIMIT_AS"},
		{"data, too big", "--data=" + limit, big, exitUser, "RLIMIT_DATA"},
		{"address space, fits", "--as=" + limit, "testdata/softmax.te", exitOK, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(prlimit, tt.limit, tec, "run", tt.model, "--fill", "random", "--max-time", "0")
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatalf("%s: %v", prlimit, err)
			}
			if code != tt.code || !strings.Contains(stderr.String(), tt.want) || strings.Contains(stderr.String(), "fatal error") {
				t.Errorf("exit status %d, stderr:\n%s\nwant status %d and %q", code, stderr.String(), tt.code, tt.want)
			}
		})
	}
}

// TestRefusalHints checks that a run refused by --max-time or --max-memory
// is offered -D only where its file has constants to set: an imported
// model has none, and is offered the limit that would admit it instead.
func TestRefusalHints(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) string {
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return file
	}
	slow := write("slow.te", "model m {\n  input x: f32[4000, 4000]\n  y[i, j] = exp(x[i, j]) where i in 0..4000, j in 0..4000\n  output y\n}\n")
	large := write("large.te", "model m {\n  input x: f32[30000, 30000]\n  y[i, j] = x[i, j] + 1.0 where i in 0..30000, j in 0..30000\n  output y\n}\n")
	big := []string{"run", "testdata/softmax.te", "-D", "N=30000", "-D", "D=30000", "--fill", "zeros"}
	tests := []struct {
		name string
		args []string
		want string
		not  string
	}{
		{"time, constants", slices.Concat(big, []string{"--max-memory", "0"}),
			"hint: use smaller sizes (-D NAME=VALUE), or allow it more time with --max-time 4m (0: no limit)", ""},
		{"time, no constants", []string{"run", slow, "--fill", "zeros", "--max-time", "100ms"},
			"hint: the file has no constants to make the model smaller: allow it more time with --max-time 1m (0: no limit)", "-D"},
		{"memory, constants", slices.Concat(big, []string{"--max-memory", "1GB"}),
			"hint: use smaller sizes (-D NAME=VALUE), or set the limit with --max-memory SIZE (0: no limit)", ""},
		{"memory, no constants", []string{"run", large, "--fill", "zeros", "--max-memory", "1GB"},
			"hint: the file has no constants to make the model smaller: set the limit with --max-memory SIZE (0: no limit)", "-D"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runTec(t, tt.args...)
			if code != exitUser || !strings.Contains(stderr, tt.want) || (tt.not != "" && strings.Contains(stderr, tt.not)) {
				t.Errorf("status %d, stderr:\n%s\nwant status %d, %q and no %q", code, stderr, exitUser, tt.want, tt.not)
			}
		})
	}
}
