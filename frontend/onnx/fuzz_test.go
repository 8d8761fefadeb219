package onnx

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"tec/frontend/onnx/onnxpb"
	"tec/lang"
)

// FuzzImport checks that no serialized model makes the importer fail
// other than with an error, and that every program it writes checks.
func FuzzImport(f *testing.F) {
	seeds := []*onnxpb.ModelProto{
		newGraph().input("x", f32, 2, 3).floats("b", []int64{3}, 1, 2, 3).
			node("Add", []string{"x", "b"}, []string{"y"}).output("y").model(17),
		newGraph().input("x", f32, 1, 1, 4, 4).floats("w", []int64{1, 1, 3, 3}, 1, 1, 1, 1, 1, 1, 1, 1, 1).
			node("Conv", []string{"x", "w"}, []string{"c"}, aInts("strides", 2, 1), aInts("pads", 1, 0, 0, 1)).
			node("MaxPool", []string{"c"}, []string{"y"}, aInts("kernel_shape", 2, 2), aInt("ceil_mode", 1)).output("y").model(13),
		newGraph().input("x", f32, 2, 3).ints("shape", []int64{2}, 3, -1).ints("starts", []int64{1}, -1).ints("ends", []int64{1}, -9).ints("steps", []int64{1}, -1).
			node("Reshape", []string{"x", "shape"}, []string{"r"}).
			node("Slice", []string{"r", "starts", "ends", "starts", "steps"}, []string{"s"}).
			node("Softmax", []string{"s"}, []string{"y"}, aInt("axis", 0)).output("y").model(13),
		newGraph().input("x", f32, 2, 1, 1).floats("W", []int64{1, 3, 1}, 0, 0, 1).floats("R", []int64{1, 3, 1}, 0, 0, 0).
			node("GRU", []string{"x", "W", "R"}, []string{"Y"}, aInt("hidden_size", 1), aInt("linear_before_reset", 1)).output("Y").model(14),
		newGraph().input("x", f32, 1, 1, 2, 3).floats("s", []int64{4}, 1, 1, 2, 2).ints("n", []int64{4}, 1, 1, 3, 5).ints("p", []int64{8}, 0, 0, 1, 2, 0, 0, 0, 1).
			node("Resize", []string{"x", "", "s"}, []string{"a"}, aStr("mode", "linear")).
			node("Resize", []string{"x", "", "", "n"}, []string{"b"}, aStr("coordinate_transformation_mode", "asymmetric"), aStr("nearest_mode", "floor")).
			node("Pad", []string{"x", "p"}, []string{"c"}, aStr("mode", "reflect")).
			node("ArgMax", []string{"c"}, []string{"y"}, aInt("axis", 3)).output("a", "b", "y").model(13),
		// Mod on integers, and an LSTM of constant inputs folded by the
		// reference evaluator
		newGraph().input("a", onnxpb.TensorProto_INT64, 6).ints("b", []int64{6}, 3, -3, 3, -3, 5, 2).
			node("Mod", []string{"a", "b"}, []string{"y"}, aInt("fmod", 1)).output("y").model(13),
		newGraph().input("z", f32, 2, 1, 1).floats("x", []int64{2, 1, 1}, 1, 2).floats("W", []int64{1, 4, 1}, 0, 0, 0, 1).floats("R", []int64{1, 4, 1}, 0, 0, 0, 0).
			node("LSTM", []string{"x", "W", "R"}, []string{"Y"}, aInt("hidden_size", 1)).
			node("Add", []string{"Y", "z"}, []string{"y"}).output("y").model(14),
	}
	for _, m := range seeds {
		data, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Decode(data)
		if err != nil {
			return
		}
		res, err := Import(m, Options{Model: "m"})
		if err != nil {
			if strings.Contains(err.Error(), "internal error") {
				t.Fatal(err)
			}
			return
		}
		if _, diags := lang.Check("m.te", res.Program, lang.Config{}); diags.HasErrors() {
			t.Fatalf("the program does not check:\n%v\n%s", diags, res.Program)
		}
	})
}
