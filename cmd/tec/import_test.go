package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"tec/frontend/onnx/onnxpb"
	"tec/internal/tensorio"
)

// pythonWithTorch is the interpreter that exports the models: Debian's,
// where python3-torch, python3-torchvision and python3-onnx install.
const pythonWithTorch = "/usr/bin/python3"

// TestImportPyTorch exports PyTorch models with python/onnx_models.py,
// imports each with tec import and checks tec run on the reference and on
// the simulator at -O4 against PyTorch's outputs (docs/import.md).
func TestImportPyTorch(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: exporting and running the PyTorch models takes a minute")
	}
	if out, err := exec.Command(pythonWithTorch, "-c", "import torch, torchvision, onnx").CombinedOutput(); err != nil {
		msg := pythonWithTorch + " cannot import torch, torchvision and onnx (Debian's python3-torch, python3-torchvision and python3-onnx; .ci/run installs them): " + strings.TrimSpace(string(out))
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	dir := t.TempDir()
	export := exec.Command(pythonWithTorch, "../../python/onnx_models.py", dir)
	if out, err := export.CombinedOutput(); err != nil {
		t.Fatalf("python/onnx_models.py: %v\n%s", err, out)
	}
	models := []struct {
		name       string
		rtol, atol string
		simFlags   []string
	}{
		{"lstm", "1e-4", "1e-5", nil},
		{"transformer", "1e-4", "1e-5", nil},
		{"gpt2", "1e-4", "1e-5", nil},
		{"conv_ops", "1e-4", "1e-5", nil},
		{"misc_ops", "1e-4", "1e-5", nil},
		{"resize_ops", "1e-4", "1e-5", nil},
		{"image_ops", "1e-4", "1e-5", nil},
		{"einsum_ops", "1e-4", "1e-5", nil},
		{"decoder_ops", "1e-4", "1e-5", nil},
		{"scatter_ops", "1e-4", "1e-5", nil},
		{"swin_small", "1e-4", "1e-5", nil},
		// f16 storage on both sides; PyTorch rounds every f16 operation's
		// result, tec only where the program casts (docs/import.md)
		{"half_ops", "1e-3", "5e-4", nil},
		{"efficientnet_b0", "1e-3", "1e-4", nil},
		{"mobilenet_v2", "1e-3", "1e-4", nil},
		// The race detector's shadow memory (48 bytes an element) for 11 M
		// weights would take the test process past the suite's memory
		// budget (docs/testing.md).
		{"resnet18", "1e-3", "1e-4", []string{"--race=false"}},
	}
	for _, m := range models {
		t.Run(m.name, func(t *testing.T) {
			base := filepath.Join(dir, m.name)
			prog, params := base+".te", base+".npz"
			if code, out, errs := runTec(t, "import", base+".onnx", "-o", prog, "--params", params); code != exitOK {
				t.Fatalf("tec import: status %d\n%s%s", code, out, errs)
			}
			if code, out, _ := runTec(t, "fmt", "-l", prog); code != exitOK || out != "" {
				t.Errorf("tec fmt -l: status %d, %q: the import is not laid out as tec fmt would", code, out)
			}
			run := []string{"run", prog, "--params", params, "--inputs", base + ".inputs.npz",
				"--expected", base + ".expected.npz", "--rtol", m.rtol, "--atol", m.atol, "--max-time", "0"}
			for _, device := range [][]string{{"--device", "ref"}, append([]string{"--device", "sim", "-O4"}, m.simFlags...)} {
				code, out, errs := runTec(t, append(run, device...)...)
				if code != exitOK || !strings.Contains(out, "match the expected values") {
					t.Errorf("tec run %s: status %d\n%s%s", strings.Join(device, " "), code, out, errs)
				}
			}
		})
	}
	// match runs prog at the sizes defines give against PyTorch's outputs
	// there (NAME.TAG.inputs.npz, NAME.TAG.expected.npz), on the reference
	// and the simulator at -O4.
	match := func(t *testing.T, prog, params, base, tag string, defines ...string) {
		t.Helper()
		run := append([]string{"run", prog, "--params", params, "--inputs", base + "." + tag + ".inputs.npz",
			"--expected", base + "." + tag + ".expected.npz", "--rtol", "1e-4", "--atol", "1e-5", "--max-time", "0"}, defines...)
		for _, device := range [][]string{{"--device", "ref"}, {"--device", "sim", "-O4"}} {
			if code, out, errs := runTec(t, append(run, device...)...); code != exitOK || !strings.Contains(out, "match the expected values") {
				t.Errorf("%s, tec run %s: status %d\n%s%s", tag, strings.Join(device, " "), code, out, errs)
			}
		}
	}
	t.Run("dynamic batch", func(t *testing.T) {
		// exported with dynamic_axes {"x": {0: "batch"}}: imported once,
		// its const batch chosen with -D, against PyTorch's outputs at
		// batch 1 and 5
		base := filepath.Join(dir, "dynamic_batch")
		prog, params := base+".te", base+".npz"
		code, out, errs := runTec(t, "import", base+".onnx", "-o", prog, "--params", params)
		if code != exitOK || !strings.Contains(errs, `warning: symbolic dimension "batch" has no size given; the program's const batch is 1 (choose another with -D batch=SIZE`) {
			t.Fatalf("tec import: status %d\n%s%s", code, out, errs)
		}
		for _, b := range []int{1, 5} {
			match(t, prog, params, base, fmt.Sprintf("batch%d", b), "-D", fmt.Sprintf("batch=%d", b))
		}
	})
	t.Run("dynamic gpt2", func(t *testing.T) {
		// GPT-2's block exported with a dynamic batch and sequence: the
		// reshapes' targets follow batch (-D batch=1, 3), while seq, of
		// which the folded positions and causal mask depend, stays fixed
		// at the size --dim gives, with a warning
		base := filepath.Join(dir, "dynamic_gpt2")
		prog, params := base+".te", base+".npz"
		code, out, errs := runTec(t, "import", base+".onnx", "--dim", "seq=8", "-o", prog, "--params", params)
		if code != exitOK || !strings.Contains(errs, "the program's sizes are fixed at seq = 8") || !strings.Contains(errs, "depend on seq") {
			t.Fatalf("tec import: status %d\n%s%s", code, out, errs)
		}
		for _, b := range []int{1, 3} {
			match(t, prog, params, base, fmt.Sprintf("batch%d_seq8", b), "-D", fmt.Sprintf("batch=%d", b))
		}
		prog, params = base+".s5.te", base+".s5.npz"
		if code, out, errs := runTec(t, "import", base+".onnx", "--dim", "seq=5", "--dim", "batch=3", "-o", prog, "--params", params); code != exitOK {
			t.Fatalf("tec import --dim seq=5: status %d\n%s%s", code, out, errs)
		}
		match(t, prog, params, base, "batch3_seq5")
	})
	t.Run("gpt2 negative ids", func(t *testing.T) {
		// ONNX's Gather counts a negative index from the end: token ids
		// less the vocabulary's size give PyTorch's outputs
		base := filepath.Join(dir, "gpt2")
		in, err := tensorio.ReadNPZ(base + ".inputs.npz")
		if err != nil {
			t.Fatal(err)
		}
		for i := range in["ids"].Data[:4] {
			in["ids"].Data[i] -= 50
		}
		neg := filepath.Join(dir, "gpt2.negative.npz")
		if err := tensorio.WriteNPZ(neg, in); err != nil {
			t.Fatal(err)
		}
		for _, device := range [][]string{{"--device", "ref"}, {"--device", "sim", "-O4"}} {
			code, out, errs := runTec(t, append([]string{"run", base + ".te", "--params", base + ".npz", "--inputs", neg,
				"--expected", base + ".expected.npz", "--rtol", "1e-4", "--atol", "1e-5", "--max-time", "0"}, device...)...)
			if code != exitOK || !strings.Contains(out, "match the expected values") {
				t.Errorf("tec run %s: status %d\n%s%s", strings.Join(device, " "), code, out, errs)
			}
		}
	})
}

// writeONNX writes a model of one node to dir/name.onnx: op on the input
// x of shape f32[2, 3], giving y.
func writeONNX(t *testing.T, dir, name, op string) string {
	t.Helper()
	f32 := int32(onnxpb.TensorProto_FLOAT)
	dims := func(ds ...int64) *onnxpb.TensorShapeProto {
		s := &onnxpb.TensorShapeProto{}
		for _, d := range ds {
			s.Dim = append(s.Dim, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: d}})
		}
		return s
	}
	info := func(name string) *onnxpb.ValueInfoProto {
		return &onnxpb.ValueInfoProto{Name: proto.String(name), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
			TensorType: &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(f32), Shape: dims(2, 3)}}}}
	}
	m := &onnxpb.ModelProto{
		IrVersion:   proto.Int64(8),
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(17)}},
		Graph: &onnxpb.GraphProto{
			Name:   proto.String("g"),
			Node:   []*onnxpb.NodeProto{{OpType: proto.String(op), Name: proto.String("/act/" + op), Input: []string{"x"}, Output: []string{"y"}}},
			Input:  []*onnxpb.ValueInfoProto{info("x")},
			Output: []*onnxpb.ValueInfoProto{info("y")},
		},
	}
	data, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".onnx")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestImportCommand(t *testing.T) {
	dir := t.TempDir()
	model := writeONNX(t, dir, "act", "Tanh")
	code, out, errs := runTec(t, "import", model)
	if code != exitOK {
		t.Fatalf("status %d\n%s%s", code, out, errs)
	}
	// the defaults: act.te and act.npz beside the model, model act
	src, err := os.ReadFile(filepath.Join(dir, "act.te"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"model act {", "input x: f32[2, 3]", `# node 0: Tanh "/act/Tanh"`, "y = tanh(x)", "output y"} {
		if !strings.Contains(string(src), want) {
			t.Errorf("act.te lacks %q:\n%s", want, src)
		}
	}
	params, err := tensorio.ReadNPZ(filepath.Join(dir, "act.npz"))
	if err != nil || len(params) != 0 {
		t.Errorf("act.npz: %v, %d arrays, want none", err, len(params))
	}
	if code, out, errs := runTec(t, "run", filepath.Join(dir, "act.te"), "--fill", "random"); code != exitOK {
		t.Errorf("tec run of the import: status %d\n%s%s", code, out, errs)
	}
}

func TestImportErrors(t *testing.T) {
	dir := t.TempDir()
	unsupported := writeONNX(t, dir, "nms", "NonMaxSuppression")
	notONNX := filepath.Join(dir, "junk.onnx")
	if err := os.WriteFile(notONNX, []byte("\xff\xff\xff not a protobuf"), 0o644); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge.onnx") // sparse: no disk taken
	if f, err := os.Create(huge); err != nil {
		t.Fatal(err)
	} else if err := f.Truncate(3 << 30); err != nil {
		t.Fatal(err)
	} else {
		f.Close()
	}
	tests := []struct {
		name   string
		args   []string
		status int
		code   string
		want   string
	}{
		{"too large", []string{"import", huge}, exitUser, codeIO, "larger than 2 GiB"},
		{"endless device", []string{"import", "/dev/zero"}, exitUser, codeIO, "/dev/zero: the file is larger than 64 MiB"},
		{"unsupported op", []string{"import", unsupported}, exitUser, codeImport, `node 0 (NonMaxSuppression "/act/NonMaxSuppression"): operator NonMaxSuppression is not supported`},
		{"not ONNX", []string{"import", notONNX}, exitUser, codeImport, "not an ONNX model"},
		{"missing file", []string{"import", filepath.Join(dir, "none.onnx")}, exitUser, codeIO, "none.onnx"},
		{"two files", []string{"import", unsupported, notONNX}, exitUsage, codeUsage, "want one MODEL.onnx or DIR, got 2 arguments"},
		{"dim without a size", []string{"import", "--dim", "batch", unsupported}, exitUsage, codeUsage, `want NAME=SIZE, e.g. batch=8, not "batch"`},
		{"dim twice", []string{"import", "--dim", "batch=2", "--dim", "batch=3", unsupported}, exitUsage, codeUsage, "batch is given twice"},
		{"dim the model lacks", []string{"import", "--dim", "seq=4", unsupported}, exitUser, codeImport, "--dim seq: the model's inputs have no dimension of that name (they have: none)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errs := runTec(t, tt.args...)
			if code != tt.status || !strings.Contains(errs, tt.want) {
				t.Errorf("status %d, stderr %q; want %d and %q", code, errs, tt.status, tt.want)
			}
			code, out, _ := runTec(t, append(tt.args, "--diagnostics", "json")...)
			var d struct{ Code, Message string }
			if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &d); err != nil || code != tt.status || d.Code != tt.code || !strings.Contains(d.Message, tt.want) {
				t.Errorf("--diagnostics json: status %d, %q (%v); want code %q with %q", code, out, err, tt.code, tt.want)
			}
		})
	}
}
