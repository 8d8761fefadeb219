package onnxpb

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestGeneratedCodeIsCurrent regenerates onnx.pb.go as go generate does,
// into a temporary directory, and compares it with the committed file. It
// needs protoc (Debian's protobuf-compiler), and is skipped without it.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	protoc, err := exec.LookPath("protoc")
	if err != nil {
		t.Skip("protoc is not installed (Debian's protobuf-compiler); onnx.pb.go is committed, so only regenerating it needs protoc")
	}
	if testing.Short() {
		t.Skip("-short: builds protoc-gen-go")
	}
	dir := t.TempDir()
	plugin := filepath.Join(dir, "protoc-gen-go")
	if out, err := exec.Command("go", "build", "-o", plugin, "google.golang.org/protobuf/cmd/protoc-gen-go").CombinedOutput(); err != nil {
		t.Fatalf("building protoc-gen-go: %v\n%s", err, out)
	}
	cmd := exec.Command(protoc, "--plugin=protoc-gen-go="+plugin, "--go_out="+dir, "--go_opt=paths=source_relative",
		"--go_opt=Monnx.proto=tec/frontend/onnx/onnxpb", "onnx.proto")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("protoc: %v\n%s", err, out)
	}
	got, err := os.ReadFile(filepath.Join(dir, "onnx.pb.go"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("onnx.pb.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		out, _ := exec.Command(protoc, "--version").Output()
		t.Errorf("onnx.pb.go differs from what %s and the pinned protoc-gen-go generate; run go generate ./frontend/onnx/onnxpb (the committed file was made with protoc 3.21.12)", bytes.TrimSpace(out))
	}
}
