package e2e

import (
	"fmt"
	"strings"
	"testing"

	"tec/backend/cuda"
	"tec/backend/llvm"
	"tec/gpu"
	"tec/internal/numeric"
	"tec/lang"
	"tec/pipeline"
	"tec/te"
)

// TestIndexWidths checks index arithmetic whose values pass 2^31 on the
// way to an index in bounds (kir's "Index widths"): at every level the
// simulator, which evaluates i32 arithmetic at the emitters' width and
// stops where it would wrap, gives the reference's answer, and the
// emitted CUDA C++ and LLVM IR compute those products in 64 bits.
func TestIndexWidths(t *testing.T) {
	tests := []struct {
		name, src string
		cuda      string // in the emitted kernel
	}{
		{"issue 23", `
model m {
  input x: f32[3]
  y[i] = x[(i * 1500000001) % 3] + 10.0 * x[(i * 3000000001) % 3] where i in 0..3
  output y
}`, "(long long)"},
		// A large stride times a large index, as the flat offsets of big
		// tensors are, brought back into a small tensor by a modulo.
		{"strides", `
model m {
  input x: f32[64, 16]
  param w: f32[16, 16]
  y[i, j] = sum[k](x[(i * 67108864 + k * 2097152 + j) % 61, k] * w[k, j]) where i in 0..64, j in 0..16
  output y
}`, "(long long)"},
		// Element arithmetic on i32 data with a constant past 2^31: the
		// reference computes exact integers and saturates where it stores
		// to an i32 tensor; the kernels compute in i64 and saturate there.
		{"i32 data", `
model m {
  input ids: i32[3]
  y[i] = ids[i] * 3000000001 where i in 0..3
  z[i] = f32(ids[i] * 3000000001) + f32(ids[i] + 2147483647) where i in 0..3
  output y, z
}`, "tec_narrow("},
	}
	g, _ := gpu.Builtin("a100")
	tg, err := gpu.LookupArch("sm_80")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, diags := lang.Check("m.te", []byte(tt.src), lang.Config{})
			if diags.HasErrors() {
				t.Fatal(diags.Error())
			}
			in := numeric.SeededFeeds(p, 7)
			want, err := te.Evaluate(p, in, te.EvalOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for level := 0; level <= pipeline.MaxLevel; level++ {
				t.Run(fmt.Sprintf("O%d", level), func(t *testing.T) {
					res, _ := buildAndCompare(t, p, pipeline.Options{Level: level, GPU: g}, in, want, tolModel)
					files, err := cuda.Emit(res.Module, tg)
					if err != nil {
						t.Fatal(err)
					}
					if !strings.Contains(string(files.Source.Data), tt.cuda) {
						t.Errorf("the CUDA C++ has no %q: the products are not 64-bit", tt.cuda)
					}
					ir, err := llvm.Emit(res.Module, tg)
					if err != nil {
						t.Fatal(err)
					}
					if !strings.Contains(ir.String(), "mul i64") {
						t.Error("the LLVM IR has no mul i64: the products are not 64-bit")
					}
				})
			}
		})
	}
}
