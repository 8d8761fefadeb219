package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEmptyFileFlags checks that a file flag given an empty name is a usage
// error: tec run with an empty --outputs or --save-feeds used to exit 0
// writing nothing (an unset shell variable reads as that).
func TestEmptyFileFlags(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"outputs", []string{"run", "testdata/softmax.te", "--fill", "ones", "--outputs", ""}, "--outputs '': an empty file name"},
		{"save-feeds", []string{"run", "testdata/softmax.te", "--fill", "ones", "--save-feeds="}, "--save-feeds '': an empty file name"},
		{"expected", []string{"run", "testdata/softmax.te", "--fill", "ones", "--expected", ""}, "--expected '': an empty file name"},
		{"report", []string{"build", "testdata/softmax.te", "-o", dir, "--report", ""}, "--report '': an empty file name"},
		{"build -o", []string{"build", "testdata/softmax.te", "-o", ""}, "-o '': an empty file name"},
		{"graph -o", []string{"graph", "testdata/softmax.te", "-o", ""}, "-o '': an empty file name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runTec(t, tt.args...)
			if code != exitUsage || !strings.Contains(stderr, tt.want) || !strings.Contains(stderr, "hint: give") {
				t.Errorf("status %d, stderr:\n%s\nwant status %d and %q", code, stderr, exitUsage, tt.want)
			}
		})
	}
}

// TestReadOnlyOutputs checks that an output that is read-only is refused,
// as cp refuses it, and left as it was (the rename used to replace it).
func TestReadOnlyOutputs(t *testing.T) {
	tests := []struct {
		name string
		file string // the read-only file, under the test's directory
		args func(dir string) []string
	}{
		{"run --outputs", "out.npz", func(dir string) []string {
			return []string{"run", "testdata/softmax.te", "--fill", "ones", "--outputs", filepath.Join(dir, "out.npz")}
		}},
		{"build --report", "report.json", func(dir string) []string {
			return []string{"build", "testdata/softmax.te", "--emit", "", "--report", filepath.Join(dir, "report.json")}
		}},
		{"build -o", "softmax.cu", func(dir string) []string {
			return []string{"build", "testdata/softmax.te", "--emit", "cu", "-o", dir}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, tt.file)
			if err := os.WriteFile(file, []byte("keep"), 0o444); err != nil {
				t.Fatal(err)
			}
			code, _, stderr := runTec(t, tt.args(dir)...)
			if code != exitUser || !strings.Contains(stderr, "the file is read-only") {
				t.Errorf("status %d, stderr:\n%s\nwant status %d and %q", code, stderr, exitUser, "the file is read-only")
			}
			if data, err := os.ReadFile(file); err != nil || string(data) != "keep" {
				t.Errorf("%s holds %q (%v), want it kept", file, data, err)
			}
		})
	}
}

// TestOutputsCreateParents checks that --outputs creates the directories
// missing on the way to its file, as --report does.
func TestOutputsCreateParents(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"run", "testdata/softmax.te", "--fill", "ones", "--outputs", filepath.Join(dir, "a", "b", "out.npz")},
		{"build", "testdata/softmax.te", "--emit", "", "--report", filepath.Join(dir, "c", "d", "report.json")},
	} {
		code, _, stderr := runTec(t, args...)
		if code != exitOK {
			t.Fatalf("tec %s: status %d, stderr:\n%s", strings.Join(args, " "), code, stderr)
		}
		if _, err := os.Stat(args[len(args)-1]); err != nil {
			t.Error(err)
		}
	}
}

// TestTargetNewerThanGPU checks that a --target whose code the GPU model
// cannot run is refused (--target sm_90 --gpu a100 was silently planned
// for an A100), that an older target is allowed, that a build without
// --target compiles for --gpu's own architecture, and that the targets
// tec does not support are refused with the reason.
func TestTargetNewerThanGPU(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"sm_90 on an A100", []string{"build", "testdata/softmax.te", "--target", "sm_90", "--gpu", "a100", "-o", dir, "--emit", "cu"}, exitUsage,
			"--target sm_90 emits code for compute capability 9.0, which the GPU model A100-SXM4-40GB (compute capability 8.0) cannot run"},
		{"sm_90 on an A100, hint", []string{"build", "testdata/softmax.te", "--target", "sm_90", "--gpu", "a100", "-o", dir, "--emit", "cu"}, exitUsage,
			"or emit --target sm_80 for the GPU"},
		{"sm_90 on the small GPU with --device cuda", []string{"run", "testdata/softmax.te", "--device", "cuda", "--target", "sm_90", "--gpu", "small", "--fill", "ones"}, exitUsage,
			"cannot run"},
		{"sm_80 on an H100", []string{"build", "testdata/softmax.te", "--target", "sm_80", "--gpu", "h100", "-o", dir, "--emit", "cu"}, exitOK, "wrote"},
		{"sm_90 on its default GPU", []string{"build", "testdata/softmax.te", "--target", "sm_90", "-o", dir, "--emit", "cu"}, exitOK, "for sm_90"},
		{"an L4's own target", []string{"build", "testdata/softmax.te", "--gpu", "l4", "-o", dir, "--emit", "cu"}, exitOK, "for sm_89"},
		{"an A10's own target", []string{"build", "testdata/softmax.te", "--gpu", "A10", "-o", dir, "--emit", "cu"}, exitOK, "for sm_86"},
		{"an H100's own target", []string{"build", "testdata/softmax.te", "--gpu", "h100", "-o", dir, "--emit", "cu"}, exitOK, "for sm_90"},
		{"sm_86 on its default GPU", []string{"explain", "--plan", "testdata/softmax.te", "--gpu", "a10"}, exitOK, "on A10-24GB"},
		{"sm_80 on an L4", []string{"build", "testdata/softmax.te", "--gpu", "l4", "--target", "sm_80", "-o", dir, "--emit", "cu"}, exitOK, "for sm_80"},
		{"sm_90 on an L4", []string{"build", "testdata/softmax.te", "--gpu", "l4", "--target", "sm_90", "-o", dir, "--emit", "cu"}, exitUsage,
			"which the GPU model L4-24GB (compute capability 8.9) cannot run"},
		{"sm_75 on its default GPU", []string{"build", "testdata/softmax.te", "--target", "sm_75", "-o", dir, "--emit", "cu"}, exitOK, "for sm_75"},
		{"a T4's own target", []string{"explain", "--plan", "testdata/softmax.te", "--gpu", "t4"}, exitOK, "on T4-16GB"},
		{"sm_80 on a T4", []string{"build", "testdata/softmax.te", "--gpu", "t4", "--target", "sm_80", "-o", dir, "--emit", "cu"}, exitUsage,
			"which the GPU model T4-16GB (compute capability 7.5) cannot run"},
		{"bf16 on sm_75", []string{"build", "testdata/softmax.te", "--gpu", "t4", "--precision", "bf16", "-o", dir, "--emit", "cu"}, exitUsage,
			"--precision bf16: sm_75 (compute capability 7.5, the T4-16GB) has no bf16 arithmetic or tensor cores, which need sm_80 or later; use --precision f16"},
		{"sm_70", []string{"build", "testdata/softmax.te", "--target", "sm_70", "-o", dir, "--emit", "cu"}, exitUsage,
			`unsupported target "sm_70": Volta`},
		{"sm_100", []string{"build", "testdata/softmax.te", "--target", "sm_100", "-o", dir, "--emit", "cu"}, exitUsage,
			"cannot compile for Blackwell"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runTec(t, tt.args...)
			if code != tt.code || !strings.Contains(stdout+stderr, tt.want) {
				t.Errorf("status %d, output:\n%s%s\nwant status %d and %q", code, stdout, stderr, tt.code, tt.want)
			}
		})
	}
}

// TestBuildDoesNotDependOnThePath checks that the files tec build writes
// are the same whichever path names the source: the .cu's comments cited
// the path as typed (bert.te and /tmp/x/bert.te differed in 86 lines).
func TestBuildDoesNotDependOnThePath(t *testing.T) {
	src, err := os.ReadFile("testdata/softmax.te")
	if err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs("testdata/softmax.te")
	if err != nil {
		t.Fatal(err)
	}
	elsewhere := filepath.Join(t.TempDir(), "x", "softmax.te")
	if err := os.MkdirAll(filepath.Dir(elsewhere), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(elsewhere, src, 0o644); err != nil {
		t.Fatal(err)
	}
	var first map[string][]byte
	for _, file := range []string{"testdata/softmax.te", abs, elsewhere, "./testdata/../testdata/softmax.te"} {
		out := t.TempDir()
		if code, _, stderr := runTec(t, "build", file, "-O4", "-o", out, "--emit", "cu,ll,host"); code != exitOK {
			t.Fatalf("tec build %s: status %d, stderr:\n%s", file, code, stderr)
		}
		files := map[string][]byte{}
		for _, name := range []string{"softmax.cu", "softmax.h", "main.cu", "softmax.ll"} {
			data, err := os.ReadFile(filepath.Join(out, name))
			if err != nil {
				t.Fatal(err)
			}
			files[name] = data
		}
		if !bytes.Contains(files["softmax.cu"], []byte("defined at softmax.te:")) {
			t.Errorf("tec build %s: softmax.cu does not cite softmax.te by its base name", file)
		}
		if first == nil {
			first = files
			continue
		}
		for name, data := range files {
			if !bytes.Equal(data, first[name]) {
				t.Errorf("tec build %s: %s differs from the build of testdata/softmax.te", file, name)
			}
		}
	}
}
