package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tec/backend/kir"
)

// hugeModel returns a model of n tensors of 2^30 elements each, all live
// until the last statement adds them up: some 8n GiB as the reference
// evaluator holds them, more than any machine has for n = 200.
func hugeModel(n int) string {
	var b strings.Builder
	b.WriteString("const N = 1024\nmodel huge {\n  input x: f32[N, N, N]\n")
	sum := make([]string, n)
	for i := range n {
		fmt.Fprintf(&b, "  a%d = x * %d.0\n", i, i+1)
		sum[i] = fmt.Sprintf("a%d", i)
	}
	fmt.Fprintf(&b, "  y = %s\n  output y\n}\n", strings.Join(sum, " + "))
	return b.String()
}

// TestRunMemory checks that a run needing more memory than it may have is
// refused before anything is allocated, naming the largest tensors and
// the bytes, with the default limit (the memory available) as with an
// explicit one; and that the simulator's needs (its race detector's shadow
// memory) are counted apart from the reference's.
func TestRunMemory(t *testing.T) {
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge.te")
	if err := os.WriteFile(huge, []byte(hugeModel(200)), 0o666); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"huge on ref, default limit", []string{"run", huge, "--fill", "zeros"}, exitUser,
			[]string{"model huge needs about 1.74 TB of memory on ref (1,735,166,787,584 bytes), more than the", "its largest tensors: x f32[1024, 1024, 1024] 8.59 GB, a0 f32[1024, 1024, 1024] 8.59 GB, a1 f32[1024, 1024, 1024] 8.59 GB", "hint: use smaller sizes (-D NAME=VALUE), or set the limit with --max-memory SIZE"}},
		{"huge on sim", []string{"run", huge, "--fill", "zeros", "--device", "sim", "-O0"}, exitUser,
			[]string{"of memory on sim", "more than the"}},
		{"small sizes fit", []string{"run", huge, "-D", "N=2", "--fill", "ones", "--max-memory", "1MiB"}, exitOK, []string{"y f32[2, 2, 2]"}},
		{"ref within the limit", []string{"run", "testdata/scale.te", "-D", "N=1000000", "--fill", "zeros", "--max-memory", "100MB"}, exitOK, []string{"y f32[1000000]"}},
		{"sim with race over it", []string{"run", "testdata/scale.te", "-D", "N=1000000", "--fill", "zeros", "--max-memory", "100MB", "--device", "sim"}, exitUser,
			[]string{"model scale needs about 192 MB of memory on sim (192,098,304 bytes), more than the 100 MB that --max-memory 100MB allows; its largest tensors: x f32[1000000] 56 MB, scale f32[1000000] 56 MB, y f32[1000000] 56 MB"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runTec(t, tt.args...)
			if code != tt.code {
				t.Errorf("status %d, want %d; stderr:\n%s", code, tt.code, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stdout+stderr, w) {
					t.Errorf("output lacks %q:\n%s%s", w, stdout, stderr)
				}
			}
			if strings.Contains(stderr, "goroutine") || strings.Contains(stderr, "out of memory") {
				t.Errorf("a crash:\n%s", stderr)
			}
		})
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		err  string
	}{
		{"0", 0, ""},
		{"1024", 1024, ""},
		{"10B", 10, ""},
		{"2kB", 2000, ""},
		{"1.5GB", 1_500_000_000, ""},
		{"512MiB", 512 << 20, ""},
		{"8GiB", 8 << 30, ""},
		{"1TiB", 1 << 40, ""},
		{"lots", 0, "want a size"},
		{"-1GB", 0, "want a size"},
		{"3XB", 0, `unknown unit "XB"`},
		{"1e30TB", 0, "too large"},
	}
	for _, tt := range tests {
		got, err := parseSize(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("parseSize(%q) = %d, %v; want an error with %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
}

func TestAvailableMemory(t *testing.T) {
	meminfo := "MemTotal:       24000000 kB\nMemFree:         1000000 kB\nMemAvailable:   20000000 kB\n"
	files := func(m map[string]string) func(string) ([]byte, error) {
		return func(path string) ([]byte, error) {
			if s, ok := m[path]; ok {
				return []byte(s), nil
			}
			return nil, os.ErrNotExist
		}
	}
	tests := []struct {
		name   string
		files  map[string]string
		want   int64
		source string
	}{
		{"meminfo", map[string]string{"/proc/meminfo": meminfo}, 20000000 * 1024, "MemAvailable"},
		{"cgroup without limit", map[string]string{"/proc/meminfo": meminfo, "/sys/fs/cgroup/memory.max": "max\n", "/sys/fs/cgroup/memory.current": "100\n"}, 20000000 * 1024, "MemAvailable"},
		{"cgroup limit lower", map[string]string{"/proc/meminfo": meminfo, "/sys/fs/cgroup/memory.max": "4294967296\n", "/sys/fs/cgroup/memory.current": "1073741824\n"}, 3 << 30, "cgroup"},
		{"cgroup limit higher", map[string]string{"/proc/meminfo": meminfo, "/sys/fs/cgroup/memory.max": "99999999999999\n", "/sys/fs/cgroup/memory.current": "0\n"}, 20000000 * 1024, "MemAvailable"},
		{"no meminfo", map[string]string{}, fallbackMemory, "cannot be read"},
		{"no MemAvailable", map[string]string{"/proc/meminfo": "MemTotal: 1 kB\n"}, fallbackMemory, "no MemAvailable"},
	}
	for _, tt := range tests {
		got, source := availableMemory(files(tt.files))
		if got != tt.want || !strings.Contains(source, tt.source) {
			t.Errorf("%s: %d (%s), want %d (%s)", tt.name, got, source, tt.want, tt.source)
		}
	}
}

// TestRunLongEstimate checks that a run estimated over the threshold states
// its estimate before it starts, and that a simulation shows a progress bar
// on a terminal only: not when standard error is piped, nor with --json.
func TestRunLongEstimate(t *testing.T) {
	args := []string{"run", "testdata/softmax.te", "--fill", "random", "--device", "sim"}
	tests := []struct {
		name     string
		terminal bool
		json     bool
		estimate bool
		bar      bool
	}{
		{"terminal", true, false, true, true},
		{"piped", false, false, true, false},
		{"json on a terminal", true, true, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(string) string { return "" },
				isTerminal: func(io.Writer) bool { return tt.terminal }, longRun: time.Nanosecond}
			a := args
			if tt.json {
				a = append(a, "--json")
			}
			if code := e.main(a); code != exitOK {
				t.Fatalf("status %d:\n%s", code, errb.String())
			}
			stderr := errb.String()
			if got := strings.Contains(stderr, "tec run: model softmax on sim: about 4.6e+02 operations, estimated 0 seconds"); got != tt.estimate {
				t.Errorf("estimate stated = %v, want %v; stderr:\n%q", got, tt.estimate, stderr)
			}
			if got := strings.Contains(stderr, "\rtec run: simulating [------------------------------]   0%  0:00 elapsed\x1b[K"); got != tt.bar {
				t.Errorf("progress bar drawn = %v, want %v; stderr:\n%q", got, tt.bar, stderr)
			}
			if tt.bar && !strings.HasSuffix(stderr, "\r\x1b[K") {
				t.Errorf("the bar's line is not cleared at the end: %q", stderr)
			}
		})
	}
	// Short runs say nothing.
	if code, _, stderr := runTec(t, args...); code != exitOK || stderr != "" {
		t.Errorf("short run: status %d, stderr %q", code, stderr)
	}
}

// TestProgressBar drives a bar with a fake clock.
func TestProgressBar(t *testing.T) {
	var w bytes.Buffer
	clock := time.Unix(0, 0)
	now := func() time.Time { return clock }
	total := kir.Counts{FLOPs: 1000}
	p := newProgressBar(&w, "sim", total, now)
	clock = clock.Add(50 * time.Millisecond)
	p.update(kir.Counts{FLOPs: 100}) // too soon: not drawn
	if strings.Contains(w.String(), " 10%") {
		t.Errorf("redrawn within %v: %q", progressInterval, w.String())
	}
	clock = clock.Add(10 * time.Second)
	p.update(kir.Counts{FLOPs: 500})
	if want := "\rsim [###############---------------]  50%  0:10 elapsed, about 0:10 left\x1b[K"; !strings.HasSuffix(w.String(), want) {
		t.Errorf("bar at half way: %q, want it to end with %q", w.String(), want)
	}
	clock = clock.Add(10 * time.Second)
	p.update(kir.Counts{FLOPs: 5000}) // more than the static count: held below full
	if !strings.Contains(w.String(), " 99%") {
		t.Errorf("bar past the static count: %q, want 99%%", w.String())
	}
	p.finish()
	if !strings.HasSuffix(w.String(), "\r\x1b[K") {
		t.Errorf("finish does not clear the line: %q", w.String())
	}
}

// TestRunHelpNamesNoTarget checks that the help of the commands without
// --target does not mention it, and that those with it say that it picks
// the default GPU.
func TestRunHelpNamesNoTarget(t *testing.T) {
	for _, cmd := range []string{"explain"} {
		_, help, _ := runTec(t, cmd, "-h")
		if strings.Contains(help, "target") {
			t.Errorf("tec %s -h mentions --target, which it does not take:\n%s", cmd, help)
		}
	}
	for _, cmd := range []string{"build", "run"} {
		if _, help, _ := runTec(t, cmd, "-h"); !strings.Contains(help, "h100 for --target sm_90") {
			t.Errorf("tec %s -h does not say that --target sm_90 picks h100:\n%s", cmd, help)
		}
	}
}

// TestCheckEveryModel checks that tec check without --model checks every
// model of a file, and with --model only that one.
func TestCheckEveryModel(t *testing.T) {
	dir := t.TempDir()
	two := filepath.Join(dir, "two.te")
	src := "model a {\n  input x: f32[2]\n  output x\n}\nmodel b {\n  input x: f32[4]\n  y[i] = x[i] * 2.0\n  output y\n}\n"
	if err := os.WriteFile(two, []byte(src), 0o666); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runTec(t, "check", two)
	if code != exitOK || !strings.Contains(out, "model a: 1 inputs") || !strings.Contains(out, "model b: 1 inputs, 0 params, 1 computed tensors") {
		t.Errorf("check of two models: status %d\n%s%s", code, out, stderr)
	}
	if code, out, _ := runTec(t, "check", two, "--model", "b"); code != exitOK || strings.Contains(out, "model a") {
		t.Errorf("check --model b: status %d\n%s", code, out)
	}
	bad := filepath.Join(dir, "bad.te")
	if err := os.WriteFile(bad, []byte(strings.Replace(src, "x[i] * 2.0", "x[i + 1] * 2.0", 1)), 0o666); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runTec(t, "check", bad); code != exitUser || !strings.Contains(stderr, "bad.te:7:") {
		t.Errorf("check of a file whose second model has an error: status %d\n%s", code, stderr)
	}
	if code, _, _ := runTec(t, "check", "-q", "--model", "a", bad); code != exitOK {
		t.Errorf("check --model a of that file: status %d, want 0", code)
	}
}
