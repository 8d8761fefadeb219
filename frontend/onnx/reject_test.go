package onnx

import (
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"tec/frontend/onnx/onnxpb"
)

// TestImportRejects: models that the importer used to misread, or to fail
// on with an internal error, are errors about the model that name the
// node, and for attributes the attribute with the expected and actual
// types (issue 23).
func TestImportRejects(t *testing.T) {
	conv := func(attrs ...*onnxpb.AttributeProto) *onnxpb.ModelProto {
		return newGraph().input("x", f32, 1, 1, 4, 4).floats("w", []int64{1, 1, 2, 2}, 1, 1, 1, 1).
			node("Conv", []string{"x", "w"}, []string{"y"}, attrs...).output("y").model(13)
	}
	untyped := &onnxpb.AttributeProto{Name: proto.String("axis"), S: []byte("abc")}
	tests := []struct {
		name  string
		model *onnxpb.ModelProto
		node  int    // the NodeError's index, -1 for an error of the model
		op    string // and op type
		want  string
	}{
		{"a string axis", newGraph().input("x", f32, 2, 3).node("Softmax", []string{"x"}, []string{"y"}, aStr("axis", "abc")).output("y").model(13),
			0, "Softmax", `attribute axis is a string ("abc"), but Softmax takes an int`},
		{"an untyped string axis", newGraph().input("x", f32, 2, 3).node("Softmax", []string{"x"}, []string{"y"}, untyped).output("y").model(13),
			0, "Softmax", `attribute axis is of no type, but Softmax takes an int`},
		{"float strides", conv(&onnxpb.AttributeProto{Name: proto.String("strides"), Type: onnxpb.AttributeProto_FLOATS.Enum(), Floats: []float32{2, 2}}),
			0, "Conv", "attribute strides is a list of floats ([2 2]), but Conv takes a list of ints"},
		{"an int approximation", newGraph().input("x", f32, 2).node("Gelu", []string{"x"}, []string{"y"}, aInt("approximate", 1)).output("y").model(17),
			0, "Gelu", "attribute approximate is an int (1), but Gelu takes a string"},
		{"a float alpha as int", newGraph().input("x", f32, 2).node("LeakyRelu", []string{"x"}, []string{"y"}, aInt("alpha", 2)).output("y").model(13),
			0, "LeakyRelu", "attribute alpha is an int (2), but LeakyRelu takes a float"},
		{"a constant's ints as an int", newGraph().input("x", f32, 2).
			node("Constant", nil, []string{"c"}, &onnxpb.AttributeProto{Name: proto.String("value_ints"), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(3)}).
			node("Add", []string{"x", "c"}, []string{"y"}).output("y").model(13),
			0, "Constant", "attribute value_ints is an int (3), but Constant takes a list of ints"},
		{"two nodes write one output", newGraph().input("x", f32, 2).
			node("Relu", []string{"x"}, []string{"y"}).node("Neg", []string{"x"}, []string{"y"}).output("y").model(13),
			1, "Neg", `output "y" is already the output of node 0 (Relu "/Relu")`},
		{"a node writes an initializer", newGraph().input("x", f32, 2).floats("b", []int64{2}, 1, 2).
			node("Relu", []string{"x"}, []string{"b"}).output("b").model(13),
			0, "Relu", `output "b" is already an initializer`},
		{"a node writes an input", newGraph().input("x", f32, 2).
			node("Relu", []string{"x"}, []string{"x"}).output("x").model(13),
			0, "Relu", `output "x" is already an input of the graph`},
		{"one output twice", newGraph().input("x", f32, 2, 4).ints("s", []int64{2}, 2, 2).
			node("Split", []string{"x", "s"}, []string{"a", "a"}, aInt("axis", 1)).output("a").model(13),
			0, "Split", `output "a" is listed twice`},
		{"an input without a shape", func() *onnxpb.ModelProto {
			m := newGraph().input("x", f32).node("Relu", []string{"x"}, []string{"y"}).output("y").model(13)
			m.Graph.Input[0].Type.GetTensorType().Shape = nil
			return m
		}(), -1, "", `input "x" has no shape`},
		{"an input too large", newGraph().input("x", f32, 1<<16, 1<<16).node("Relu", []string{"x"}, []string{"y"}).output("y").model(13),
			-1, "", `input "x": shape [65536, 65536] has more than 1073741824 elements (2^30), the most a tensor may have`},
		{"an initializer without its data", newGraph().input("x", f32, 2).floats("w", []int64{1 << 30}).
			node("Add", []string{"x", "w"}, []string{"y"}).output("y").model(13),
			-1, "", `initializer "w": it holds 0 values for shape f32[1073741824], which has 1073741824`},
		{"raw data of a partial element", func() *onnxpb.ModelProto {
			m := newGraph().input("x", f32, 2).node("Relu", []string{"x"}, []string{"y"}).output("y").model(13)
			m.Graph.Initializer = append(m.Graph.Initializer, &onnxpb.TensorProto{Name: proto.String("w"), Dims: []int64{1},
				DataType: proto.Int32(int32(f32)), RawData: []byte{1, 2, 3, 4, 5}})
			return m
		}(), -1, "", `initializer "w": its raw data of 5 bytes is not a whole number of 4-byte elements`},
		{"an initializer too large", newGraph().input("x", f32, 2).floats("w", []int64{1 << 16, 1 << 16}).
			node("Add", []string{"x", "w"}, []string{"y"}).output("y").model(13),
			-1, "", `initializer "w": shape [65536, 65536] has more than 1073741824 elements (2^30)`},
		{"a repeated unsqueeze axis", newGraph().input("x", f32, 2).ints("a", []int64{2}, 0, 0).
			node("Unsqueeze", []string{"x", "a"}, []string{"y"}).output("y").model(13),
			0, "Unsqueeze", "axis 0 is repeated in axes [0 0]"},
		{"a repeated unsqueeze axis, negative", newGraph().input("x", f32, 2).ints("a", []int64{2}, 0, -3).
			node("Unsqueeze", []string{"x", "a"}, []string{"y"}).output("y").model(13),
			0, "Unsqueeze", "axis -3 is repeated in axes [0 -3]"},
		{"a NaN minimum", newGraph().input("x", f32, 2).floats("lo", []int64{}, float32(math.NaN())).
			node("Clip", []string{"x", "lo"}, []string{"y"}).output("y").model(13),
			0, "Clip", `input 1 ("lo") is NaN`},
		{"a huge stride", conv(aInts("strides", 1<<62, 1<<62)), 0, "Conv", "strides [4611686018427387904 4611686018427387904]: each must be 1 to 1073741824"},
		{"a huge dilation", conv(aInts("dilations", math.MaxInt64, 1)), 0, "Conv", "dilations [9223372036854775807 1]: each must be 1 to 1073741824"},
		{"a huge padding", conv(aInts("pads", 0, 0, math.MaxInt64, 0)), 0, "Conv", "pads [0 0 9223372036854775807 0]: each must be 0 to 1073741824"},
		{"a negative padding", conv(aInts("pads", 0, -1, 0, 0)), 0, "Conv", "pads [0 -1 0 0]: each must be 0 to 1073741824"},
		{"a huge pool stride", newGraph().input("x", f32, 1, 1, 4, 4).
			node("MaxPool", []string{"x"}, []string{"y"}, aInts("kernel_shape", 2, 2), aInts("strides", 1<<62, 1)).output("y").model(13),
			0, "MaxPool", "strides [4611686018427387904 1]: each must be 1 to 1073741824"},
		{"a result too large", newGraph().input("x", f32, 1).ints("s", []int64{2}, 1<<16, 1<<16).
			node("Expand", []string{"x", "s"}, []string{"y"}).output("y").model(13),
			0, "Expand", "the result's shape [65536, 65536] has more than 1073741824 elements (2^30)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := Import(tt.model, Options{})
			runtime.ReadMemStats(&after)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one with %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "internal error") {
				t.Errorf("an internal error: %v", err)
			}
			var ne *NodeError
			isNode := errors.As(err, &ne)
			if isNode != (tt.node >= 0) || isNode && (ne.Index != tt.node || ne.OpType != tt.op) {
				t.Errorf("error %#v, want node %d (%s)", err, tt.node, tt.op)
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
				t.Errorf("the import allocated %d MiB", grew>>20)
			}
		})
	}
}
