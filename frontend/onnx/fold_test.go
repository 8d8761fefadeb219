package onnx

import (
	"math"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"tec/frontend/onnx/onnxpb"
	"tec/lang"
	"tec/te"
)

// foldInput is an input of a node under test: its type and values, and
// whether it must be known at import (a shape, axes, pads).
type foldInput struct {
	name   string
	dt     onnxpb.TensorProto_DataType
	dims   []int64
	vals   []float64
	static bool
}

// foldModel builds a graph of one node whose inputs are initializers
// (constant) or, for those not static, graph inputs.
func foldModel(op string, ins []foldInput, outs []string, opset int64, constant bool, attrs ...*onnxpb.AttributeProto) *onnxpb.ModelProto {
	b := newGraph()
	var names []string
	for _, in := range ins {
		names = append(names, in.name)
		if in.name == "" {
			continue
		}
		if !constant && !in.static {
			b.input(in.name, in.dt, in.dims...)
			continue
		}
		t := &onnxpb.TensorProto{Name: proto.String(in.name), Dims: in.dims, DataType: proto.Int32(int32(in.dt))}
		for _, v := range in.vals {
			switch in.dt {
			case onnxpb.TensorProto_INT64:
				t.Int64Data = append(t.Int64Data, int64(v))
			case onnxpb.TensorProto_BOOL:
				t.Int32Data = append(t.Int32Data, int32(v))
			default:
				t.FloatData = append(t.FloatData, float32(v))
			}
		}
		b.g.Initializer = append(b.g.Initializer, t)
	}
	return b.node(op, names, outs, attrs...).output(outs...).model(opset)
}

// run imports m, checks the program and evaluates it, with the graph
// inputs taken from ins.
func run(t *testing.T, m *onnxpb.ModelProto, ins []foldInput) (string, map[string]*te.Array) {
	t.Helper()
	res, err := Import(m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	prog, diags := lang.Check("fold.te", res.Program, lang.Config{})
	if diags.HasErrors() {
		t.Fatalf("the program does not check:\n%v\n%s", diags.Error(), res.Program)
	}
	feeds := map[string]*te.Array{}
	for k, v := range res.Params {
		feeds[k] = v
	}
	for _, in := range ins {
		if prog.Lookup(in.name) != nil && feeds[in.name] == nil {
			shape := make([]int, len(in.dims))
			for i, d := range in.dims {
				shape[i] = int(d)
			}
			dt, err := dtypeOf(in.dt)
			if err != nil {
				t.Fatal(err)
			}
			feeds[in.name] = &te.Array{DType: dt, Shape: shape, Data: in.vals}
		}
	}
	outs, err := te.Evaluate(prog, feeds, te.EvalOptions{})
	if err != nil {
		t.Fatalf("%v\n%s", err, res.Program)
	}
	return string(res.Program), outs
}

// TestFoldEveryOperator: a node whose inputs are all known at import is
// folded, whatever its operator — those the importer evaluates itself and
// those whose statements call the standard library or a cell function,
// which the reference evaluator runs — and gives what the node gives
// computed at run time (the same node on graph inputs).
func TestFoldEveryOperator(t *testing.T) {
	const i64 = onnxpb.TensorProto_INT64
	x := foldInput{name: "x", dt: f32, dims: []int64{2, 3}, vals: []float64{-1.5, 0.25, 2, 3.5, -0.75, 1}}
	img := foldInput{name: "x", dt: f32, dims: []int64{1, 1, 4, 4}, vals: iota(16, 0.5, -3)}
	ix := foldInput{name: "a", dt: i64, dims: []int64{6}, vals: []float64{-7, -1, 0, 1, 7, 8}}
	stat := func(name string, dt onnxpb.TensorProto_DataType, dims []int64, vals ...float64) foldInput {
		return foldInput{name: name, dt: dt, dims: dims, vals: vals, static: true}
	}
	dyn := func(name string, dt onnxpb.TensorProto_DataType, dims []int64, vals ...float64) foldInput {
		return foldInput{name: name, dt: dt, dims: dims, vals: vals}
	}
	tests := []struct {
		op    string
		ins   []foldInput
		outs  []string
		opset int64
		attrs []*onnxpb.AttributeProto
	}{
		{"Relu", []foldInput{x}, []string{"y"}, 13, nil},
		{"Softmax", []foldInput{x}, []string{"y"}, 13, []*onnxpb.AttributeProto{aInt("axis", 1)}},
		{"LogSoftmax", []foldInput{x}, []string{"y"}, 13, []*onnxpb.AttributeProto{aInt("axis", 0)}},
		{"MatMul", []foldInput{x, dyn("w", f32, []int64{3, 2}, 1, 2, 3, 4, 5, 6)}, []string{"y"}, 13, nil},
		{"Gemm", []foldInput{x, dyn("w", f32, []int64{2, 3}, 1, 2, 3, 4, 5, 6), dyn("c", f32, []int64{2}, 0.5, -1)}, []string{"y"}, 13,
			[]*onnxpb.AttributeProto{aInt("transB", 1)}},
		{"Conv", []foldInput{img, dyn("w", f32, []int64{1, 1, 2, 2}, 1, -1, 2, 0.5)}, []string{"y"}, 13, nil},
		{"MaxPool", []foldInput{img}, []string{"y"}, 13, []*onnxpb.AttributeProto{aInts("kernel_shape", 2, 2)}},
		{"AveragePool", []foldInput{img}, []string{"y"}, 13, []*onnxpb.AttributeProto{aInts("kernel_shape", 2, 2), aInts("strides", 2, 2)}},
		{"GlobalAveragePool", []foldInput{img}, []string{"y"}, 13, nil},
		{"LayerNormalization", []foldInput{x, dyn("g", f32, []int64{3}, 1, 2, 3), dyn("b", f32, []int64{3}, 0, 1, 0)}, []string{"y"}, 17, nil},
		{"BatchNormalization", []foldInput{img, dyn("sc", f32, []int64{1}, 2), dyn("b", f32, []int64{1}, 1), dyn("m", f32, []int64{1}, 0.5), dyn("v", f32, []int64{1}, 4)},
			[]string{"y"}, 13, nil},
		{"ReduceMean", []foldInput{x}, []string{"y"}, 13, []*onnxpb.AttributeProto{aInts("axes", 1)}},
		{"ArgMax", []foldInput{x}, []string{"y"}, 13, []*onnxpb.AttributeProto{aInt("axis", 1)}},
		{"Transpose", []foldInput{x}, []string{"y"}, 13, nil},
		{"Gather", []foldInput{x, stat("i", i64, []int64{2}, 2, 0)}, []string{"y"}, 13, []*onnxpb.AttributeProto{aInt("axis", 1)}},
		{"Pad", []foldInput{x, stat("p", i64, []int64{4}, 0, 1, 1, 0)}, []string{"y"}, 13, []*onnxpb.AttributeProto{aStr("mode", "reflect")}},
		{"Tile", []foldInput{x, stat("r", i64, []int64{2}, 2, 1)}, []string{"y"}, 13, nil},
		{"DepthToSpace", []foldInput{dyn("x", f32, []int64{1, 4, 1, 2}, iota(8, 1, 0)...)}, []string{"y"}, 13, []*onnxpb.AttributeProto{aInt("blocksize", 2)}},
		{"SpaceToDepth", []foldInput{img}, []string{"y"}, 13, []*onnxpb.AttributeProto{aInt("blocksize", 2)}},
		{"InstanceNormalization", []foldInput{img, dyn("sc", f32, []int64{1}, 2), dyn("b", f32, []int64{1}, 1)}, []string{"y"}, 13, nil},
		{"Split", []foldInput{x}, []string{"y", "z"}, 13, []*onnxpb.AttributeProto{aInt("axis", 0)}},
		{"Clip", []foldInput{x, stat("lo", f32, []int64{}, -1), stat("hi", f32, []int64{}, 1)}, []string{"y"}, 13, nil},
		{"Where", []foldInput{dyn("c", onnxpb.TensorProto_BOOL, []int64{3}, 1, 0, 1), x, dyn("e", f32, []int64{1}, 9)}, []string{"y"}, 13, nil},
		{"Cast", []foldInput{x}, []string{"y"}, 13, []*onnxpb.AttributeProto{aInt("to", int64(i64))}},
		{"Gelu", []foldInput{x}, []string{"y"}, 17, nil},
		{"Mod", []foldInput{ix, dyn("b", i64, []int64{6}, 3, 3, -3, -3, -3, 5)}, []string{"y"}, 13, nil},
		{"Mod", []foldInput{ix, dyn("b", i64, []int64{6}, 3, 3, -3, -3, -3, 5)}, []string{"y"}, 13, []*onnxpb.AttributeProto{aInt("fmod", 1)}},
		{"Mod", []foldInput{ix, dyn("b", i64, []int64{1}, 3)}, []string{"y"}, 13, nil},
		{"LSTM", []foldInput{dyn("x", f32, []int64{2, 1, 1}, 1, 2), stat("W", f32, []int64{1, 4, 1}, 0.5, -1, 0.25, 1), stat("R", f32, []int64{1, 4, 1}, 0.1, 0.2, 0.3, 0.4)},
			[]string{"Y", "Y_h"}, 14, []*onnxpb.AttributeProto{aInt("hidden_size", 1)}},
		{"GRU", []foldInput{dyn("x", f32, []int64{2, 1, 1}, 1, 2), stat("W", f32, []int64{1, 3, 1}, 0.5, -1, 0.25), stat("R", f32, []int64{1, 3, 1}, 0.1, 0.2, 0.3)},
			[]string{"Y"}, 14, []*onnxpb.AttributeProto{aInt("hidden_size", 1), aInt("linear_before_reset", 1)}},
	}
	for _, tt := range tests {
		name := tt.op
		for _, a := range tt.attrs {
			if a.GetName() == "fmod" {
				name += " fmod"
			}
		}
		if tt.op == "Mod" && len(tt.ins[1].dims) == 1 && tt.ins[1].dims[0] == 1 {
			name += " by a constant"
		}
		t.Run(name, func(t *testing.T) {
			folded, got := run(t, foldModel(tt.op, tt.ins, tt.outs, tt.opset, true, tt.attrs...), tt.ins)
			if strings.Contains(folded, "# node 0") {
				t.Errorf("the node was not folded:\n%s", folded)
			}
			computed, want := run(t, foldModel(tt.op, tt.ins, tt.outs, tt.opset, false, tt.attrs...), tt.ins)
			if !strings.Contains(computed, "# node 0") {
				t.Errorf("on graph inputs the node was folded:\n%s", computed)
			}
			for _, o := range tt.outs {
				g, w := got[o], want[o]
				if g == nil || w == nil || !te.SameShape(g.Shape, w.Shape) {
					t.Fatalf("output %s: folded %v, computed %v", o, g, w)
				}
				for i := range w.Data {
					if d := math.Abs(g.Data[i] - w.Data[i]); d > 1e-6*math.Max(1, math.Abs(w.Data[i])) {
						t.Errorf("output %s: folded %v, computed %v", o, g.Data, w.Data)
						break
					}
				}
			}
		})
	}
}

// TestMod checks Mod's values against ONNX's definition: on integers,
// fmod 0 takes the divisor's sign (Python's %), fmod 1 the dividend's (C's
// %); on floats fmod 1 is C's fmod, folded at import, and an error where
// an input is known only at run time.
func TestMod(t *testing.T) {
	const i64 = onnxpb.TensorProto_INT64
	a := []float64{-7, -7, -1, 0, 1, 7, 7, 8, -8}
	b := []float64{3, -3, 3, -3, -3, 3, -3, 5, 5}
	tests := []struct {
		name     string
		dt       onnxpb.TensorProto_DataType
		a, b     []float64
		fmod     int64
		constant bool // a known at import
		want     []float64
		err      string
	}{
		{"python", i64, a, b, 0, false, []float64{2, -1, 2, 0, -2, 1, -2, 3, 2}, ""},
		{"c", i64, a, b, 1, false, []float64{-1, -1, -1, 0, 1, 1, 1, 3, -3}, ""},
		{"python by 4", i64, a, []float64{4}, 0, false, []float64{1, 1, 3, 0, 1, 3, 3, 0, 0}, ""},
		{"c by 4", i64, a, []float64{4}, 1, false, []float64{-3, -3, -1, 0, 1, 3, 3, 0, 0}, ""},
		{"python folded", i64, a, b, 0, true, []float64{2, -1, 2, 0, -2, 1, -2, 3, 2}, ""},
		{"c folded", i64, a, b, 1, true, []float64{-1, -1, -1, 0, 1, 1, 1, 3, -3}, ""},
		{"floats folded", f32, []float64{-7.5, 7.5, 7.5}, []float64{2, 2, -2}, 1, true, []float64{-1.5, 1.5, 1.5}, ""},
		{"floats at run time", f32, []float64{-7.5, 7.5, 7.5}, []float64{2}, 1, false, nil,
			"Mod of f32 tensors computed at run time is not supported"},
		{"floats without fmod", f32, []float64{-7.5}, []float64{2}, 0, true, nil, "Mod of f32 inputs needs fmod 1"},
		{"fmod 2", i64, []float64{1}, []float64{2}, 2, true, nil, "fmod 2 is not 0 or 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ins := []foldInput{
				{name: "a", dt: tt.dt, dims: []int64{int64(len(tt.a))}, vals: tt.a},
				{name: "b", dt: tt.dt, dims: []int64{int64(len(tt.b))}, vals: tt.b, static: true},
			}
			var attrs []*onnxpb.AttributeProto
			if tt.fmod != 0 {
				attrs = append(attrs, aInt("fmod", tt.fmod))
			}
			m := foldModel("Mod", ins, []string{"y"}, 13, tt.constant, attrs...)
			if tt.err != "" {
				if _, err := Import(m, Options{}); err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one with %q", err, tt.err)
				}
				return
			}
			_, got := run(t, m, ins)
			if y := got["y"]; y == nil || len(y.Data) != len(tt.want) || !slices.Equal(y.Data, tt.want) {
				t.Errorf("y = %v, want %v", y, tt.want)
			}
		})
	}
}
