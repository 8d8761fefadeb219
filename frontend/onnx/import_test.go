package onnx

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"tec/frontend/onnx/onnxpb"
	"tec/internal/testkit/golden"
	"tec/lang"
	"tec/lang/syntax"
	"tec/te"
)

// graph builds an ONNX graph for a test.
type graph struct{ g *onnxpb.GraphProto }

func newGraph() *graph { return &graph{&onnxpb.GraphProto{Name: proto.String("g")}} }

func (b *graph) input(name string, et onnxpb.TensorProto_DataType, dims ...int64) *graph {
	s := &onnxpb.TensorShapeProto{}
	for _, d := range dims {
		s.Dim = append(s.Dim, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: d}})
	}
	b.g.Input = append(b.g.Input, &onnxpb.ValueInfoProto{Name: proto.String(name), Type: &onnxpb.TypeProto{
		Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(int32(et)), Shape: s}}}})
	return b
}

func (b *graph) output(names ...string) *graph {
	for _, n := range names {
		b.g.Output = append(b.g.Output, &onnxpb.ValueInfoProto{Name: proto.String(n)})
	}
	return b
}

func (b *graph) floats(name string, dims []int64, vals ...float32) *graph {
	b.g.Initializer = append(b.g.Initializer, &onnxpb.TensorProto{Name: proto.String(name), Dims: dims,
		DataType: proto.Int32(int32(onnxpb.TensorProto_FLOAT)), FloatData: vals})
	return b
}

func (b *graph) ints(name string, dims []int64, vals ...int64) *graph {
	b.g.Initializer = append(b.g.Initializer, &onnxpb.TensorProto{Name: proto.String(name), Dims: dims,
		DataType: proto.Int32(int32(onnxpb.TensorProto_INT64)), Int64Data: vals})
	return b
}

func (b *graph) node(op string, ins, outs []string, attrs ...*onnxpb.AttributeProto) *graph {
	b.g.Node = append(b.g.Node, &onnxpb.NodeProto{OpType: proto.String(op), Name: proto.String("/" + op),
		Input: ins, Output: outs, Attribute: attrs})
	return b
}

func (b *graph) model(opset int64) *onnxpb.ModelProto {
	return &onnxpb.ModelProto{IrVersion: proto.Int64(8), Graph: b.g,
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(opset)}}}
}

func aInt(name string, v int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(v)}
}

func aInts(name string, v ...int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INTS.Enum(), Ints: v}
}

func aFloat(name string, v float32) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_FLOAT.Enum(), F: proto.Float32(v)}
}

func aStr(name, v string) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_STRING.Enum(), S: []byte(v)}
}

func aTensor(name string, t *onnxpb.TensorProto) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_TENSOR.Enum(), T: t}
}

// iota returns 0, 1, ..., n-1 scaled by s and shifted by o.
func iota(n int, s, o float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(i)*s + o
	}
	return out
}

const f32 = onnxpb.TensorProto_FLOAT

// TestImport imports small hand-built models, compares the programs with
// the golden files in testdata (go test -update rewrites them), checks that
// they are laid out as tec fmt would, and evaluates each with the reference evaluator against values worked out
// by hand.
func TestImport(t *testing.T) {
	x6 := iota(6, 1, -2) // -2 .. 3
	tests := []struct {
		name   string
		model  *onnxpb.ModelProto
		inputs map[string]*te.Array
		want   map[string][]float64
	}{
		{
			name: "add_broadcast",
			model: newGraph().input("x", f32, 2, 3).floats("b", []int64{3}, 1, 2, 3).
				node("Add", []string{"x", "b"}, []string{"y"}).output("y").model(17),
			inputs: map[string]*te.Array{"x": {DType: te.F32, Shape: []int{2, 3}, Data: x6}},
			want:   map[string][]float64{"y": {-1, 1, 3, 2, 4, 6}},
		},
		{
			// y = 0.5 * x · Wᵀ + c, W as torch.nn.Linear lays it out
			name: "gemm",
			model: newGraph().input("x", f32, 2, 3).floats("W", []int64{2, 3}, 1, 0, 0, 1, 1, 1).floats("c", []int64{2}, 10, 20).
				node("Gemm", []string{"x", "W", "c"}, []string{"y"}, aInt("transB", 1), aFloat("alpha", 0.5)).output("y").model(13),
			inputs: map[string]*te.Array{"x": {DType: te.F32, Shape: []int{2, 3}, Data: x6}},
			want:   map[string][]float64{"y": {9, 18.5, 10.5, 23}},
		},
		{
			// Shape, Gather, Unsqueeze and Concat fold into Reshape's [2, -1]
			name: "fold_shape",
			model: newGraph().input("x", f32, 2, 3).ints("zero", []int64{}, 0).ints("axes", []int64{1}, 0).ints("rest", []int64{1}, -1).
				node("Shape", []string{"x"}, []string{"s"}).
				node("Gather", []string{"s", "zero"}, []string{"n"}).
				node("Unsqueeze", []string{"n", "axes"}, []string{"n1"}).
				node("Concat", []string{"n1", "rest"}, []string{"shape"}, aInt("axis", 0)).
				node("Reshape", []string{"x", "shape"}, []string{"r"}).
				node("Transpose", []string{"r"}, []string{"y"}).output("y").model(13),
			inputs: map[string]*te.Array{"x": {DType: te.F32, Shape: []int{2, 3}, Data: x6}},
			want:   map[string][]float64{"y": {-2, 1, -1, 2, 0, 3}},
		},
		{
			// x[::-2], the ends being INT64_MIN as PyTorch's flip writes it
			name: "slice_reverse",
			model: newGraph().input("x", f32, 6).ints("starts", []int64{1}, -1).ints("ends", []int64{1}, math.MinInt64).ints("steps", []int64{1}, -2).ints("axes", []int64{1}, 0).
				node("Slice", []string{"x", "starts", "ends", "axes", "steps"}, []string{"y"}).output("y").model(13),
			inputs: map[string]*te.Array{"x": {DType: te.F32, Shape: []int{6}, Data: x6}},
			want:   map[string][]float64{"y": {3, 1, -1}},
		},
		{
			// a 3×3 box filter with stride 2 down and padding on the top
			// and the right only
			name: "conv_asymmetric",
			model: newGraph().input("x", f32, 1, 1, 4, 4).floats("w", []int64{1, 1, 3, 3}, 1, 1, 1, 1, 1, 1, 1, 1, 1).
				node("Conv", []string{"x", "w"}, []string{"y"}, aInts("strides", 2, 1), aInts("pads", 1, 0, 0, 1)).output("y").model(13),
			inputs: map[string]*te.Array{"x": {DType: te.F32, Shape: []int{1, 1, 4, 4}, Data: iota(16, 1, 0)}},
			// rows -1..1 and 1..3; columns c..c+2 of 0..3 then padding
			want: map[string][]float64{"y": {18, 24, 18, 81, 90, 63}},
		},
		{
			// 2×2 windows, stride 2 over 5×5, ceil mode: the last row and
			// column of windows are partial
			name: "maxpool_ceil",
			model: newGraph().input("x", f32, 1, 1, 5, 5).
				node("MaxPool", []string{"x"}, []string{"y"}, aInts("kernel_shape", 2, 2), aInts("strides", 2, 2), aInt("ceil_mode", 1)).output("y").model(13),
			inputs: map[string]*te.Array{"x": {DType: te.F32, Shape: []int{1, 1, 5, 5}, Data: iota(25, -1, 0)}},
			want:   map[string][]float64{"y": {0, -2, -4, -10, -12, -14, -20, -22, -24}},
		},
		{
			name: "softmax_axis0",
			model: newGraph().input("x", f32, 2, 2).
				node("Softmax", []string{"x"}, []string{"y"}, aInt("axis", 0)).output("y").model(13),
			inputs: map[string]*te.Array{"x": {DType: te.F32, Shape: []int{2, 2}, Data: []float64{0, 1, 0, 3}}},
			want:   map[string][]float64{"y": {0.5, 1 / (1 + math.Exp(2)), 0.5, 1 / (1 + math.Exp(-2))}},
		},
		{
			// fixed indices that are no progression: a select of columns
			name: "gather_fixed",
			model: newGraph().input("x", f32, 2, 3).ints("idx", []int64{3}, 2, 0, -1).
				node("Gather", []string{"x", "idx"}, []string{"y"}, aInt("axis", 1)).output("y").model(13),
			inputs: map[string]*te.Array{"x": {DType: te.F32, Shape: []int{2, 3}, Data: x6}},
			want:   map[string][]float64{"y": {0, -2, 0, 3, 1, 3}},
		},
		{
			// an embedding lookup: token ids are an int64 input, and a
			// negative one counts from the end
			name: "gather_ids",
			model: newGraph().input("ids", onnxpb.TensorProto_INT64, 3).floats("table", []int64{4, 2}, 0, 1, 10, 11, 20, 21, 30, 31).
				node("Gather", []string{"table", "ids"}, []string{"y"}).output("y").model(13),
			inputs: map[string]*te.Array{"ids": {DType: te.I32, Shape: []int{3}, Data: []float64{3, -4, 1}}},
			want:   map[string][]float64{"y": {30, 31, 0, 1, 10, 11}},
		},
		{
			// reflect and edge padding on both axes, on one side or two
			name: "pad_reflect",
			model: newGraph().input("x", f32, 2, 3).ints("p", []int64{4}, 1, 2, 0, 1).ints("q", []int64{4}, 0, 1, 1, 2).
				node("Pad", []string{"x", "p"}, []string{"y"}, aStr("mode", "reflect")).
				node("Pad", []string{"x", "q"}, []string{"z"}, aStr("mode", "edge")).output("y", "z").model(13),
			inputs: map[string]*te.Array{"x": {DType: te.F32, Shape: []int{2, 3}, Data: x6}},
			want: map[string][]float64{
				"y": {3, 2, 1, 2, 3, 2, 0, -1, -2, -1, 0, -1, 3, 2, 1, 2, 3, 2},
				"z": {-2, -2, -1, 0, 0, 0, 1, 1, 2, 3, 3, 3, 1, 1, 2, 3, 3, 3},
			},
		},
		{
			// nearest, by scales (PyTorch's upsampling: asymmetric, floor),
			// and by sizes, down one axis and up the other
			name: "resize_nearest",
			model: newGraph().input("x", f32, 1, 1, 2, 3).floats("s", []int64{4}, 1, 1, 2, 2).ints("n", []int64{4}, 1, 1, 3, 2).
				node("Resize", []string{"x", "", "s"}, []string{"y"}, aStr("coordinate_transformation_mode", "asymmetric"), aStr("nearest_mode", "floor")).
				node("Resize", []string{"x", "", "", "n"}, []string{"z"}, aStr("coordinate_transformation_mode", "asymmetric"), aStr("nearest_mode", "floor")).output("y", "z").model(13),
			inputs: map[string]*te.Array{"x": {DType: te.F32, Shape: []int{1, 1, 2, 3}, Data: x6}},
			// torch.nn.functional.interpolate(x, scale_factor=2) and size=(3, 2)
			want: map[string][]float64{
				"y": {-2, -2, -1, -1, 0, 0, -2, -2, -1, -1, 0, 0, 1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3},
				"z": {-2, -1, -2, -1, 1, 2},
			},
		},
		{
			// bilinear, half_pixel by scales and align_corners by sizes
			name: "resize_linear",
			model: newGraph().input("x", f32, 1, 1, 2, 3).floats("s", []int64{4}, 1, 1, 2, 2).ints("n", []int64{4}, 1, 1, 3, 5).
				node("Resize", []string{"x", "", "s"}, []string{"y"}, aStr("mode", "linear")).
				node("Resize", []string{"x", "", "", "n"}, []string{"z"}, aStr("mode", "linear"), aStr("coordinate_transformation_mode", "align_corners")).
				// columns 3 to 5: the upper neighbours 0 1 2 2 2 are no
				// quasi-affine function of the index, so a gather of them
				ints("n5", []int64{4}, 1, 1, 2, 5).
				node("Resize", []string{"x", "", "", "n5"}, []string{"u"}, aStr("mode", "linear")).output("y", "z", "u").model(13),
			inputs: map[string]*te.Array{"x": {DType: te.F32, Shape: []int{1, 1, 2, 3}, Data: x6}},
			// torch.nn.functional.interpolate(x, mode="bilinear", ...)
			want: map[string][]float64{
				"y": {-2.0, -1.75, -1.25, -0.75, -0.25, 0.0, -1.25, -1.0, -0.5, 0.0, 0.5, 0.75, 0.25, 0.5, 1.0, 1.5, 2.0, 2.25, 1.0, 1.25, 1.75, 2.25, 2.75, 3.0},
				"z": {-2.0, -1.5, -1.0, -0.5, 0.0, -0.5, 0.0, 0.5, 1.0, 1.5, 1.0, 1.5, 2.0, 2.5, 3.0},
				"u": {-2, -1.6, -1, -0.4, 0, 1, 1.4, 2, 2.6, 3},
			},
		},
		{
			name: "isinf",
			model: newGraph().input("x", f32, 4).
				node("IsInf", []string{"x"}, []string{"y"}).
				node("IsInf", []string{"x"}, []string{"z"}, aInt("detect_negative", 0)).output("y", "z").model(13),
			inputs: map[string]*te.Array{"x": {DType: te.F32, Shape: []int{4}, Data: []float64{math.Inf(1), 1, -2, math.Inf(-1)}}},
			want:   map[string][]float64{"y": {1, 0, 0, 1}, "z": {1, 0, 0, 0}},
		},
		{
			// PyTorch's x.flatten(): the shape sliced to nothing, then
			// -1 appended
			name: "flatten_empty",
			model: newGraph().input("x", f32, 2, 3).ints("zero", []int64{1}, 0).ints("rest", []int64{1}, -1).
				node("Shape", []string{"x"}, []string{"s"}).
				node("Slice", []string{"s", "zero", "zero", "zero"}, []string{"none"}).
				node("Concat", []string{"none", "rest"}, []string{"shape"}, aInt("axis", 0)).
				node("Reshape", []string{"x", "shape"}, []string{"y"}).output("y").model(13),
			inputs: map[string]*te.Array{"x": {DType: te.F32, Shape: []int{2, 3}, Data: x6}},
			want:   map[string][]float64{"y": x6},
		},
		{
			// an f16 weight widened by a Cast stays an f16 param; the
			// result is cast back to f16
			name: "half_weight",
			model: func() *onnxpb.ModelProto {
				g := newGraph().input("x", f32, 1, 2)
				g.g.Initializer = append(g.g.Initializer, &onnxpb.TensorProto{Name: proto.String("w"), Dims: []int64{2, 2},
					DataType: proto.Int32(int32(onnxpb.TensorProto_FLOAT16)), Int32Data: []int32{0x3C00, 0x4000, 0x3800, 0xBC00}}) // 1 2 0.5 -1
				return g.node("Cast", []string{"w"}, []string{"wf"}, aInt("to", int64(f32))).
					node("MatMul", []string{"x", "wf"}, []string{"m"}).
					node("Cast", []string{"m"}, []string{"y"}, aInt("to", int64(onnxpb.TensorProto_FLOAT16))).output("y").model(13)
			}(),
			inputs: map[string]*te.Array{"x": {DType: te.F32, Shape: []int{1, 2}, Data: []float64{2, 4}}},
			want:   map[string][]float64{"y": {4, 0}},
		},
		{
			// f16 tensors: a matmul of two is the generic standard
			// library's, but a transpose is stored f32 (the language's
			// rule), so its product with an f16 tensor is written out,
			// and its softmax is the f32 one
			name: "half_layout",
			model: func() *onnxpb.ModelProto {
				g := newGraph().input("x", onnxpb.TensorProto_FLOAT16, 2, 2)
				g.g.Initializer = append(g.g.Initializer, &onnxpb.TensorProto{Name: proto.String("w"), Dims: []int64{2, 2},
					DataType: proto.Int32(int32(onnxpb.TensorProto_FLOAT16)), Int32Data: []int32{0x3C00, 0x4000, 0x3800, 0xBC00}}) // 1 2 0.5 -1
				return g.node("Transpose", []string{"x"}, []string{"t"}).
					node("MatMul", []string{"t", "w"}, []string{"a"}).
					node("MatMul", []string{"x", "w"}, []string{"b"}).
					node("Softmax", []string{"t"}, []string{"c"}).output("a", "b", "c").model(13)
			}(),
			inputs: map[string]*te.Array{"x": {DType: te.F16, Shape: []int{2, 2}, Data: []float64{1, 2, 0.5, -1}}},
			want: map[string][]float64{"a": {1.25, 1.5, 1.5, 5}, "b": {2, 0, 0, 2},
				"c": {1 / (1 + math.Exp(-0.5)), 1 / (1 + math.Exp(0.5)), 1 / (1 + math.Exp(-3)), 1 / (1 + math.Exp(3))}},
		},
		{
			// an f16 convolution and max pool: the standard library's,
			// generic over the dtype, stored f16
			name: "half_conv",
			model: func() *onnxpb.ModelProto {
				g := newGraph().input("x", onnxpb.TensorProto_FLOAT16, 1, 1, 2, 2)
				g.g.Initializer = append(g.g.Initializer, &onnxpb.TensorProto{Name: proto.String("w"), Dims: []int64{1, 1, 1, 1},
					DataType: proto.Int32(int32(onnxpb.TensorProto_FLOAT16)), Int32Data: []int32{0x4000}}) // 2
				return g.node("Conv", []string{"x", "w"}, []string{"c"}).
					node("MaxPool", []string{"c"}, []string{"y"}, aInts("kernel_shape", 2, 2)).output("c", "y").model(13)
			}(),
			inputs: map[string]*te.Array{"x": {DType: te.F16, Shape: []int{1, 1, 2, 2}, Data: []float64{1, -2, 0.5, 3}}},
			want:   map[string][]float64{"c": {2, -4, 1, 6}, "y": {6}},
		},
		{
			// torch.nn.Linear: Gemm with transB is linear_t
			name: "gemm_linear_t",
			model: newGraph().input("x", f32, 2, 3).floats("W", []int64{2, 3}, 1, 0, 0, 1, 1, 1).floats("c", []int64{2}, 10, 20).
				node("Gemm", []string{"x", "W", "c"}, []string{"y"}, aInt("transB", 1)).output("y").model(13),
			inputs: map[string]*te.Array{"x": {DType: te.F32, Shape: []int{2, 3}, Data: x6}},
			want:   map[string][]float64{"y": {8, 17, 11, 26}},
		},
		{
			// ArgMax along the rows, kept, and ArgMin down the columns,
			// dropped: ties give the first position
			name: "argmax",
			model: newGraph().input("x", f32, 2, 3).
				node("ArgMax", []string{"x"}, []string{"a"}, aInt("axis", 1)).
				node("ArgMin", []string{"x"}, []string{"b"}, aInt("axis", 0), aInt("keepdims", 0)).output("a", "b").model(13),
			inputs: map[string]*te.Array{"x": {DType: te.F32, Shape: []int{2, 3}, Data: []float64{1, 5, 5, 2, 0, 7}}},
			want:   map[string][]float64{"a": {1, 2}, "b": {0, 1, 0}},
		},
		{
			// sin² + cos² = 1, and a cube by a constant int64 exponent
			name: "trig_pow",
			model: newGraph().input("x", f32, 6).ints("two", []int64{}, 2).floats("three", []int64{1}, 3).
				node("Sin", []string{"x"}, []string{"s"}).
				node("Cos", []string{"x"}, []string{"c"}).
				node("Pow", []string{"s", "two"}, []string{"s2"}).
				node("Pow", []string{"c", "two"}, []string{"c2"}).
				node("Add", []string{"s2", "c2"}, []string{"y"}).
				node("Neg", []string{"x"}, []string{"nx"}).
				node("Pow", []string{"nx", "three"}, []string{"z"}).output("y", "z").model(13),
			inputs: map[string]*te.Array{"x": {DType: te.F32, Shape: []int{6}, Data: x6}},
			want:   map[string][]float64{"y": {1, 1, 1, 1, 1, 1}, "z": {8, 1, 0, -1, -8, -27}},
		},
		{
			// where, a comparison, a cast to int64 and back, and a
			// constant of the node's own
			name: "where_cast",
			model: newGraph().input("x", f32, 6).
				node("Constant", nil, []string{"neg"}, aTensor("value", &onnxpb.TensorProto{DataType: proto.Int32(int32(f32)), FloatData: []float32{-1.5}})).
				node("Greater", []string{"x", "neg"}, []string{"c"}).
				node("Where", []string{"c", "x", "neg"}, []string{"w"}).
				node("Cast", []string{"w"}, []string{"i"}, aInt("to", int64(onnxpb.TensorProto_INT64))).
				node("Cast", []string{"i"}, []string{"y"}, aInt("to", int64(f32))).output("y").model(13),
			inputs: map[string]*te.Array{"x": {DType: te.F32, Shape: []int{6}, Data: iota(6, 0.75, -2)}},
			want:   map[string][]float64{"y": {-1, -1, 0, 0, 1, 1}},
		},
		{
			// variadic Sum and Mean, broadcast
			name: "sum_mean",
			model: newGraph().input("x", f32, 2, 3).floats("b", []int64{3}, 1, 2, 3).floats("c", []int64{2, 1}, 10, 20).
				node("Sum", []string{"x", "b", "c"}, []string{"s"}).
				node("Mean", []string{"s", "b"}, []string{"y"}).output("y").model(13),
			inputs: map[string]*te.Array{"x": {DType: te.F32, Shape: []int{2, 3}, Data: x6}},
			// s = [[9, 11, 13], [22, 24, 26]]
			want: map[string][]float64{"y": {5, 6.5, 8, 11.5, 13, 14.5}},
		},
		{
			// a 2-step LSTM of hidden size 1 whose weights are all zero
			// but the input's to the cell gate: c = σ(0)·tanh(x) summed,
			// h = σ(0)·tanh(c)
			name: "lstm_tiny",
			model: newGraph().input("x", f32, 2, 1, 1).
				floats("W", []int64{1, 4, 1}, 0, 0, 0, 1).floats("R", []int64{1, 4, 1}, 0, 0, 0, 0).
				node("LSTM", []string{"x", "W", "R"}, []string{"Y", "Y_h"}, aInt("hidden_size", 1)).output("Y_h").model(14),
			inputs: map[string]*te.Array{"x": {DType: te.F32, Shape: []int{2, 1, 1}, Data: []float64{1, 2}}},
			want: map[string][]float64{"Y_h": {func() float64 {
				c := 0.5 * math.Tanh(1)
				c = 0.5*c + 0.5*math.Tanh(2)
				return 0.5 * math.Tanh(c)
			}()}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Import(tt.model, Options{Model: tt.name, Source: tt.name + ".onnx"})
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join("testdata", tt.name+".te")
			golden.Check(t, file, res.Program)
			if f, err := syntax.Parse(file, res.Program); err != nil {
				t.Errorf("the program does not parse: %v", err)
			} else if out, err := syntax.Format(f, res.Program); err != nil || string(out) != string(res.Program) {
				t.Errorf("tec fmt would change the program (%v):\n%s", err, out)
			}
			prog, diags := lang.Check(file, res.Program, lang.Config{})
			if diags.HasErrors() {
				t.Fatalf("the program does not check:\n%v", diags)
			}
			feeds := map[string]*te.Array{}
			for k, v := range tt.inputs {
				feeds[k] = v
			}
			for k, v := range res.Params {
				feeds[k] = v
			}
			outs, err := te.Evaluate(prog, feeds, te.EvalOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for name, w := range tt.want {
				got := outs[name]
				if got == nil || len(got.Data) != len(w) {
					t.Fatalf("output %s: %v, want %v", name, got, w)
				}
				for i := range w {
					if math.Abs(got.Data[i]-w[i]) > 1e-6 {
						t.Errorf("output %s = %v, want %v", name, got.Data, w)
						break
					}
				}
			}
		})
	}
}

// TestFoldedNodeLeavesNoStatement checks that a folded node prints nothing:
// the shape arithmetic of fold_shape leaves a Reshape and a Transpose.
func TestFoldedNodeLeavesNoStatement(t *testing.T) {
	src, err := os.ReadFile("testdata/fold_shape.te")
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []string{"Shape", "Gather", "Unsqueeze", "Concat"} {
		if strings.Contains(string(src), op) {
			t.Errorf("fold_shape.te mentions the folded %s:\n%s", op, src)
		}
	}
}

func TestImportErrors(t *testing.T) {
	tests := []struct {
		name  string
		model *onnxpb.ModelProto
		node  int    // the NodeError's index, -1 for an error of the model
		op    string // and op type
		want  string
	}{
		{"unsupported op", newGraph().input("x", f32, 2).node("Relu", []string{"x"}, []string{"r"}).
			node("NonMaxSuppression", []string{"r"}, []string{"y"}).output("y").model(13), 1, "NonMaxSuppression", "operator NonMaxSuppression is not supported"},
		{"unknown attribute", newGraph().input("x", f32, 2).node("Relu", []string{"x"}, []string{"y"}, aFloat("alpha", 1)).output("y").model(13),
			0, "Relu", "attribute alpha is not supported"},
		{"wrap padding", newGraph().input("x", f32, 2).ints("p", []int64{2}, 1, 1).
			node("Pad", []string{"x", "p"}, []string{"y"}, aStr("mode", "wrap")).output("y").model(13), 0, "Pad", `Pad mode "wrap" is not supported`},
		{"max pool indices", newGraph().input("x", f32, 1, 1, 4, 4).
			node("MaxPool", []string{"x"}, []string{"y", "i"}, aInts("kernel_shape", 2, 2)).output("y").model(13), 0, "MaxPool", "Indices output"},
		{"lstm clip", newGraph().input("x", f32, 2, 1, 1).floats("W", []int64{1, 4, 1}, 0, 0, 0, 1).floats("R", []int64{1, 4, 1}, 0, 0, 0, 0).
			node("LSTM", []string{"x", "W", "R"}, []string{"Y"}, aInt("hidden_size", 1), aFloat("clip", 3)).output("Y").model(14), 0, "LSTM", "clip is not supported"},
		{"shape at run time", newGraph().input("x", f32, 6).input("s", onnxpb.TensorProto_INT64, 2).
			node("Reshape", []string{"x", "s"}, []string{"y"}).output("y").model(13), 0, "Reshape", "must be known at import"},
		{"other domain", newGraph().input("x", f32, 2).node("Relu", []string{"x"}, []string{"y"}).output("y").model(13), -1, "", ""},
		{"old opset", newGraph().input("x", f32, 2).node("Relu", []string{"x"}, []string{"y"}).output("y").model(11), -1, "", "opset 11"},
		{"unnamed dynamic axis", func() *onnxpb.ModelProto {
			m := newGraph().input("x", f32, 2).node("Relu", []string{"x"}, []string{"y"}).output("y").model(13)
			m.Graph.Input[0].Type.GetTensorType().Shape.Dim[0].Value = nil
			return m
		}(), -1, "", `no size in dimension 0, not even a name`},
		{"resize crop", newGraph().input("x", f32, 1, 1, 2, 2).floats("s", []int64{4}, 1, 1, 2, 2).
			node("Resize", []string{"x", "", "s"}, []string{"y"}, aStr("coordinate_transformation_mode", "tf_crop_and_resize")).output("y").model(13),
			0, "Resize", `coordinate_transformation_mode "tf_crop_and_resize" is not supported`},
		{"resize without sizes", newGraph().input("x", f32, 1, 1, 2, 2).
			node("Resize", []string{"x"}, []string{"y"}).output("y").model(13), 0, "Resize", "Resize needs scales or sizes"},
		{"resize scales at run time", newGraph().input("x", f32, 1, 1, 2, 2).input("s", f32, 4).
			node("Resize", []string{"x", "", "s"}, []string{"y"}).output("y").model(13), 0, "Resize", "must be known at import"},
		{"resize crop", newGraph().input("x", f32, 1, 1, 2, 2).floats("s", []int64{4}, 1, 1, 2, 2).
			node("Resize", []string{"x", "", "s"}, []string{"y"}, aStr("coordinate_transformation_mode", "tf_crop_and_resize")).output("y").model(13), 0, "Resize",
			`coordinate_transformation_mode "tf_crop_and_resize" is not supported`},
		{"reflect past the edge", newGraph().input("x", f32, 2).ints("p", []int64{2}, 2, 0).
			node("Pad", []string{"x", "p"}, []string{"y"}, aStr("mode", "reflect")).output("y").model(13), 0, "Pad", "reach past its size 2"},
		{"argmax last index", newGraph().input("x", f32, 2, 3).node("ArgMax", []string{"x"}, []string{"y"}, aInt("select_last_index", 1)).output("y").model(13),
			0, "ArgMax", "select_last_index 1"},
	}
	tests[6].model.Graph.Node[0].Domain = proto.String("com.microsoft")
	tests[6].node, tests[6].op, tests[6].want = 0, "Relu", `operator domain "com.microsoft"`
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Import(tt.model, Options{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one with %q", err, tt.want)
			}
			var ne *NodeError
			isNode := errors.As(err, &ne)
			if isNode != (tt.node >= 0) || isNode && (ne.Index != tt.node || ne.OpType != tt.op) {
				t.Errorf("error %#v, want node %d (%s)", err, tt.node, tt.op)
			}
		})
	}
}

func TestDecode(t *testing.T) {
	m := newGraph().input("x", f32, 2).node("Relu", []string{"x"}, []string{"y"}).output("y").model(13)
	data, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(data)
	if err != nil || got.GetGraph().GetNode()[0].GetOpType() != "Relu" {
		t.Errorf("Decode: %v, %v", got, err)
	}
	for _, bad := range [][]byte{[]byte("\xff\xff\xff"), {}} {
		if _, err := Decode(bad); err == nil || !strings.Contains(err.Error(), "not an ONNX model") {
			t.Errorf("Decode(%q): %v, want not an ONNX model", bad, err)
		}
	}
}

func TestSanitize(t *testing.T) {
	tests := []struct{ in, want string }{
		{"x", "x"},
		{"/layer1/layer1.0/conv1/Conv_output_0", "layer1_layer1_0_conv1_Conv"},
		{"layer1.0.conv1.weight", "layer1_0_conv1_weight"},
		{"onnx::Conv_193", "onnx_Conv_193"},
		{"/lstm/LSTM_output_1", "lstm_LSTM_output_1"},
		{"input.4", "input_4"},
		{"123", "v_123"},
		{"i0", "v_i0"},
		{"k", "v_k"},
		{"::", "v"},
	}
	for _, tt := range tests {
		if got := sanitize(tt.in); got != tt.want {
			t.Errorf("sanitize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	// names that would clash with the language get a prefix, and names
	// taken a suffix
	im := &importer{taken: reservedNames()}
	for _, tt := range []struct{ in, want string }{{"relu", "v_relu"}, {"output", "v_output"}, {"y", "y"}, {"y", "v_y"}, {"y", "y_2"}} {
		if got := im.uniqueName(tt.in); got != tt.want {
			t.Errorf("uniqueName(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestOpsDocumented checks that docs/import.md's table lists every
// operator the importer translates, and no other.
func TestOpsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/import.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	row := regexp.MustCompile(`(?m)^\| ([A-Z][A-Za-z, ]+) \| `)
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		for _, op := range strings.Split(m[1], ",") {
			documented[strings.TrimSpace(op)] = true
		}
	}
	for op := range ops {
		if !documented[op] {
			t.Errorf("docs/import.md does not list %s", op)
		}
	}
	for op := range documented {
		if _, ok := ops[op]; !ok {
			t.Errorf("docs/import.md lists %s, which the importer does not translate", op)
		}
	}
}
