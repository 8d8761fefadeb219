package main

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"tec/te"
)

// npyBytes returns a .npy file with the given header dictionary and data.
func npyBytes(dict string, data []byte) []byte {
	hlen := len(dict) + 1
	pad := 64 - (10+hlen)%64
	b := append([]byte("\x93NUMPY\x01\x00"), 0, 0)
	binary.LittleEndian.PutUint16(b[8:], uint16(hlen+pad))
	b = append(b, dict...)
	b = append(b, bytes.Repeat([]byte{' '}, pad)...)
	b = append(b, '\n')
	return append(b, data...)
}

// writeRawNPZ writes an .npz whose entries hold the given .npy bytes, for
// dtypes tensorio does not write (int64, float64).
func writeRawNPZ(t *testing.T, path string, entries map[string][]byte) {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, data := range entries {
		w, err := zw.Create(name + ".npy")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o666); err != nil {
		t.Fatal(err)
	}
}

// writeBomb writes an .npz whose entries (one per name) declare (16384,
// 16384) f32 and hold 8 MB of zeros, deflated: R3 of issue 17.
func writeBomb(t *testing.T, path string, names ...string) {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	entry := npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (16384, 16384), }", make([]byte, 8<<20))
	for _, name := range names {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name + ".npy", Method: zip.Deflate})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(entry); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o666); err != nil {
		t.Fatal(err)
	}
}

// TestHostileInputs runs the hostile inputs of issue 17 (R1-R3, R9): each
// is a clear error with the right status, never a panic or an
// out-of-memory death.
func TestHostileInputs(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o666); err != nil {
			t.Fatal(err)
		}
		return p
	}
	huge := write("huge.te", "model m {\n  input x: f32[100000, 100000, 100000]\n  y = x * 2.0\n  output y\n}\n")
	wraps := write("wraps.te", "model m {\n  input x: f32[4611686018427387904, 4611686018427387904]\n  y = x * 2.0\n  output y\n}\n")
	sum12 := write("sum12.te", "model m {\n  input x: f32[1000000]\n  s = sum[a, b](x[a] + x[b])\n  output s\n}\n")
	bomb := filepath.Join(dir, "bomb.npz")
	writeBomb(t, bomb, "x", "scale", "y")
	xs := filepath.Join(dir, "x.npz")
	writeNPZ(t, xs, map[string]*te.Array{"x": f32([]int{3}, 1, 2, 3)})
	x1 := filepath.Join(dir, "x1.npy")
	x2 := filepath.Join(dir, "x2.npy")
	for _, p := range []string{x1, x2} {
		if err := os.WriteFile(p, npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", make([]byte, 12)), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	gpu := func(name, from, to string) string {
		return write(name, strings.Replace(g96, from, to, 1))
	}
	const tooLarge = "is too large: a tensor may have at most 2^30 (1073741824) elements"
	const bombed = "the header declares float32[16384, 16384], want f32[3] (nothing was read)"

	tests := []struct {
		name string
		args []string
		code int
		want string // in stderr
	}{
		{"R1 check", []string{"check", huge}, exitUser, huge + ":2:16: error[shape]: the shape [100000, 100000, 100000] " + tooLarge},
		{"R1 run ref", []string{"run", huge, "--fill", "zeros"}, exitUser, tooLarge},
		{"R1 run sim", []string{"run", huge, "--fill", "zeros", "--device", "sim"}, exitUser, tooLarge},
		{"R2 check", []string{"check", wraps}, exitUser, "[4611686018427387904, 4611686018427387904] " + tooLarge},
		{"R2 run", []string{"run", wraps, "--fill", "zeros"}, exitUser, tooLarge},
		{"R2 build", []string{"build", wraps, "-o", filepath.Join(dir, "out")}, exitUser, tooLarge},
		{"R3 inputs", []string{"run", "testdata/scale.te", "--inputs", bomb, "--fill", "zeros"}, exitUser, "x.npy: " + bombed},
		{"R3 params", []string{"run", "testdata/scale.te", "--params", bomb, "--fill", "zeros"}, exitUser, "x.npy: " + bombed},
		{"R3 expected", []string{"run", "testdata/scale.te", "--fill", "zeros", "--expected", bomb}, exitUser, "y.npy: " + bombed},
		{"R4 check", []string{"check", "/dev/zero"}, exitUser, "tec: /dev/zero: the file is larger than 16 MiB, the most it may be"},
		{"R4 fmt", []string{"fmt", "/dev/zero"}, exitUser, "tec fmt: /dev/zero: the file is larger than 16 MiB"},
		{"R4 run", []string{"run", "/dev/zero"}, exitUser, "the file is larger than 16 MiB"},
		{"R8 ref", []string{"run", sum12, "--fill", "ones"}, exitUser, "model m takes about 4e+12 operations, some 11 hours on ref; refusing a run estimated over 1m0s"},
		{"R8 sim", []string{"run", sum12, "--fill", "ones", "--device", "sim"}, exitUser, "some 4 days on sim; refusing a run estimated over 1m0s"},
		{"R8 hint", []string{"run", sum12, "--fill", "ones", "--max-time", "1h"}, exitUser, "hint: the file has no constants to make the model smaller: allow it more time with --max-time 17h (0: no limit)"},
		{"R8 negative limit", []string{"run", sum12, "--max-time", "-1s"}, exitUsage, "--max-time must not be negative"},
		{"R9 threshold NaN", []string{"explain", "testdata/scale.te", "--threshold", "NaN"}, exitUsage, "-threshold must be a positive finite number, not NaN"},
		{"R9 threshold Inf", []string{"explain", "testdata/scale.te", "--threshold", "Inf"}, exitUsage, "-threshold must be a positive finite number, not +Inf"},
		{"R9 threshold negative", []string{"explain", "testdata/scale.te", "--threshold", "-1"}, exitUsage, "-threshold must be a positive finite number, not -1"},
		{"R9 atol Inf", []string{"run", "testdata/scale.te", "--fill", "ones", "--atol", "Inf"}, exitUsage, "--rtol and --atol must be non-negative finite numbers"},
		{"R9 rtol NaN", []string{"run", "testdata/scale.te", "--fill", "ones", "--rtol", "NaN"}, exitUsage, "--rtol and --atol must be non-negative finite numbers"},
		{"R9 GPU cc", []string{"build", "testdata/scale.te", "--gpu", gpu("cc.json", `"cc": "8.0"`, `"cc": "abc"`), "-o", filepath.Join(dir, "b")}, exitUsage, `field cc: want a compute capability MAJOR.MINOR such as "8.0", got "abc"`},
		{"R9 GPU l2", []string{"build", "testdata/scale.te", "--gpu", gpu("l2.json", `"l2_bytes": 1048576`, `"l2_bytes": -1`), "-o", filepath.Join(dir, "b")}, exitUsage, "field l2_bytes: want an integer from 0 to 1099511627776, got -1"},
		{"R9 GPU type", []string{"build", "testdata/scale.te", "--gpu", gpu("type.json", `"sms": 4`, `"sms": "4"`), "-o", filepath.Join(dir, "b")}, exitUsage, "field sms: want an integer, got string"},
		{"R9 input twice", []string{"run", "testdata/scale.te", "--input", "x=@" + x1, "--input", "x=@" + x2}, exitUsage,
			"x is given twice (@" + x1 + " and @" + x2 + ")"},
		{"R9 input and archive", []string{"run", "testdata/scale.te", "--inputs", xs, "--input", "x=@" + x1, "--fill", "zeros"}, exitUser,
			`input "x" is given twice, by ` + xs + " and by " + x1},
		{"R9 define twice", []string{"check", "testdata/scale.te", "-D", "N=3", "-D", "N=4"}, exitUsage, "N is defined twice (3 and 4)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runTec(t, tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.want) {
				t.Errorf("status %d (want %d), stderr:\n%s\nwant it to contain %q", code, tt.code, stderr, tt.want)
			}
		})
	}
}

// g96 is a valid GPU description with 96 threads per block.
const g96 = `{"name": "odd96", "cc": "8.0", "sms": 4, "shared_per_sm": 49152, "shared_per_block": 49152, "regs_per_sm": 65536, "max_regs_per_thread": 255, "max_threads_per_sm": 2048, "max_blocks_per_sm": 32, "max_threads_per_block": 96, "l2_bytes": 1048576, "dram_bandwidth": 100000000000.0, "fp32_peak": 1000000000000.0, "fp16_peak": 4000000000000.0, "launch_cost": 2e-06, "grid_sync_cost": 1e-06}`

// TestOutputsToAFullDevice is R5: an output path that is a symbolic link
// to /dev/full fails with the device's error, and the link stays.
func TestOutputsToAFullDevice(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	tests := []struct {
		name string
		link string // relative to the test's directory
		args func(dir string) []string
	}{
		{"run --outputs", "out.npz", func(dir string) []string {
			return []string{"run", "testdata/scale.te", "--fill", "ones", "--outputs", filepath.Join(dir, "out.npz")}
		}},
		{"run --save-feeds", "x.npy", func(dir string) []string {
			return []string{"run", "testdata/scale.te", "--fill", "ones", "--save-feeds", dir}
		}},
		{"build", "scale.cu", func(dir string) []string {
			return []string{"build", "testdata/scale.te", "-o", dir}
		}},
		{"build --report", "report.json", func(dir string) []string {
			return []string{"build", "testdata/scale.te", "-o", dir, "--report", filepath.Join(dir, "report.json")}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			link := filepath.Join(dir, tt.link)
			if err := os.Symlink("/dev/full", link); err != nil {
				t.Fatal(err)
			}
			code, _, stderr := runTec(t, tt.args(dir)...)
			if code != exitUser || !strings.Contains(stderr, "no space left on device") {
				t.Errorf("status %d, stderr:\n%s\nwant status 1 and the device's error", code, stderr)
			}
			if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Errorf("the link %s is gone: %v, %v", link, fi, err)
			}
		})
	}
}

// TestHostileNewSyntax runs tec check and tec build on truncated and
// garbled variants of the programs of the newest syntax (update, run-time
// positions, **, sin and cos, argmax, gathers, params declared in a loop;
// lang/testdata/hostile): each is a clear error — status 1, a diagnostic
// with the file, line and column — never a panic. (lang's
// TestHostileNewSyntax checks thousands of variants against the checker
// and the pipeline; this one checks the commands' answers.)
func TestHostileNewSyntax(t *testing.T) {
	garbles := [][2]string{
		{"update kc[l, b, pos[b], e]", "update kc[l, b, pos[b], e, e]"},
		{"update kc[l, b, pos[b], e]", "update knew[l, b, pos[b], e]"},
		{"update kc[l, b, pos[b], e]", "update kc[l, b, knew[b, e], e]"},
		{"kc[b, pos[b], e]", "kc[b, pos, e]"},
		{"f32(pos[b] + 1)", "f32(pos[b] + 1"},
		{"select(t <= pos[b]", "select(t <= pos[b] <= t"},
		{"10000.0 ** (", "10000.0 ** ** ("},
		{"q[s, d] ** 2.0", "q[s, d] ** q"},
		{"cos(th[s, d])", "cos(th[s, d], 1.0)"},
		{"argmax[c](logits[s, c])", "argmax[](logits[s, c])"},
		{"argmax[c](logits[s, c])", "argmax[c](logits[s, c]) + 0.5"},
		{"wte[ids[s] + 1, d]", "wte[ids[s] + 1.0, d]"},
		{"wtt[seg[s], d]", "wtt[seg[s, s], d]"},
		{"param w: f32[width(s), c, 3, 3]", "param w: f32[width(s), c, 3, 3]\n    param w: f32[1]"},
		{"for s in 0..STAGES {", "for s in 0..STAGES {{"},
	}
	files, err := filepath.Glob("../../lang/testdata/hostile/*.te")
	if err != nil || len(files) == 0 {
		t.Fatalf("no programs in lang/testdata/hostile: %v", err)
	}
	dir := t.TempDir()
	var variants []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src := string(b)
		// truncated inside the model, at a third and at two thirds
		variants = append(variants, src[:len(src)/3], src[:2*len(src)/3])
		for _, g := range garbles {
			if strings.Contains(src, g[0]) {
				variants = append(variants, strings.Replace(src, g[0], g[1], 1))
			}
		}
	}
	if len(variants) < 2*len(files)+len(garbles) {
		t.Fatalf("%d variants: some garbles match no program", len(variants))
	}
	position := regexp.MustCompile(`\.te:[0-9]+:[0-9]+: error\[`)
	for i, v := range variants {
		path := filepath.Join(dir, fmt.Sprintf("v%02d.te", i))
		if err := os.WriteFile(path, []byte(v), 0o666); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"check", path}, {"build", "-o", filepath.Join(dir, "out"), path}} {
			code, _, stderr := runTec(t, args...)
			if code != exitUser || !position.MatchString(stderr) || strings.Contains(stderr, "panic") || strings.Contains(stderr, "internal") {
				t.Errorf("tec %s on\n%s\nstatus %d (want %d), stderr:\n%s", args[0], v, code, exitUser, stderr)
			}
		}
	}
}
