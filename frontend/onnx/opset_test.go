package onnx

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"tec/frontend/onnx/onnxpb"
	"tec/lang"
	"tec/te"
)

// TestOpsets18To21 imports what opsets 18 to 21 changed of the operators
// tec reads — the Reduce operators' axes as an input, Split's
// num_outputs (the last part smaller where the axis does not divide),
// Pad's axes input, Resize's antialias and keep_aspect_ratio_policy at
// their defaults, Cast's saturate — and checks each against the same
// computation written as opset 13 writes it; and that what tec does not
// support of them is refused with the reason.
func TestOpsets18To21(t *testing.T) {
	const i64 = onnxpb.TensorProto_INT64
	x := foldInput{name: "x", dt: f32, dims: []int64{2, 5}, vals: iota(10, 0.75, -4)}
	img := foldInput{name: "x", dt: f32, dims: []int64{1, 1, 3, 4}, vals: iota(12, 0.5, -2)}
	ints := func(name string, vals ...float64) foldInput {
		return foldInput{name: name, dt: i64, dims: []int64{int64(len(vals))}, vals: vals, static: true}
	}
	scales := foldInput{name: "s", dt: f32, dims: []int64{4}, vals: []float64{1, 1, 2, 1.5}, static: true}
	roi := foldInput{name: ""}
	type form struct {
		op    string
		ins   []foldInput
		opset int64
		attrs []*onnxpb.AttributeProto
	}
	tests := []struct {
		name     string
		outs     []string
		new, old form
	}{
		{"ReduceMean axes input", []string{"y"},
			form{"ReduceMean", []foldInput{x, ints("a", 1)}, 18, nil},
			form{"ReduceMean", []foldInput{x}, 13, []*onnxpb.AttributeProto{aInts("axes", 1)}}},
		{"ReduceMax axes input, keepdims 0", []string{"y"},
			form{"ReduceMax", []foldInput{x, ints("a", -2)}, 21, []*onnxpb.AttributeProto{aInt("keepdims", 0)}},
			form{"ReduceMax", []foldInput{x}, 17, []*onnxpb.AttributeProto{aInts("axes", 0), aInt("keepdims", 0)}}},
		{"Split num_outputs, uneven", []string{"y", "z"},
			form{"Split", []foldInput{x}, 18, []*onnxpb.AttributeProto{aInt("axis", 1), aInt("num_outputs", 2)}},
			form{"Split", []foldInput{x, ints("p", 3, 2)}, 13, []*onnxpb.AttributeProto{aInt("axis", 1)}}},
		{"Split num_outputs, even", []string{"y", "z"},
			form{"Split", []foldInput{x}, 18, []*onnxpb.AttributeProto{aInt("num_outputs", 2)}},
			form{"Split", []foldInput{x}, 13, nil}},
		{"Pad axes input", []string{"y"},
			form{"Pad", []foldInput{x, ints("p", 1, 2), {name: ""}, ints("a", -1)}, 18, []*onnxpb.AttributeProto{aStr("mode", "edge")}},
			form{"Pad", []foldInput{x, ints("p", 0, 1, 0, 2)}, 13, []*onnxpb.AttributeProto{aStr("mode", "edge")}}},
		{"Resize antialias 0", []string{"y"},
			form{"Resize", []foldInput{img, roi, scales}, 18, []*onnxpb.AttributeProto{aStr("mode", "linear"), aInt("antialias", 0), aStr("keep_aspect_ratio_policy", "stretch")}},
			form{"Resize", []foldInput{img, roi, scales}, 13, []*onnxpb.AttributeProto{aStr("mode", "linear")}}},
		{"Cast saturate", []string{"y"},
			form{"Cast", []foldInput{x}, 19, []*onnxpb.AttributeProto{aInt("to", int64(onnxpb.TensorProto_FLOAT16)), aInt("saturate", 1)}},
			form{"Cast", []foldInput{x}, 13, []*onnxpb.AttributeProto{aInt("to", int64(onnxpb.TensorProto_FLOAT16))}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, got := run(t, foldModel(tt.new.op, tt.new.ins, tt.outs, tt.new.opset, false, tt.new.attrs...), tt.new.ins)
			_, want := run(t, foldModel(tt.old.op, tt.old.ins, tt.outs, tt.old.opset, false, tt.old.attrs...), tt.old.ins)
			for _, o := range tt.outs {
				g, w := got[o], want[o]
				if g == nil || w == nil || !te.SameShape(g.Shape, w.Shape) {
					t.Fatalf("output %s: opset %d gives %v, opset %d %v", o, tt.new.opset, g, tt.old.opset, w)
				}
				for i := range w.Data {
					if math.Abs(g.Data[i]-w.Data[i]) > 1e-6 {
						t.Fatalf("output %s: opset %d gives %v, opset %d %v", o, tt.new.opset, g.Data, tt.old.opset, w.Data)
					}
				}
			}
		})
	}

	refused := []struct {
		name string
		m    *onnxpb.ModelProto
		err  string
	}{
		{"opset 22", foldModel("Relu", []foldInput{x}, []string{"y"}, 22, false), "tec imports opsets 13 to 21"},
		{"Resize antialias 1", foldModel("Resize", []foldInput{img, roi, scales}, []string{"y"}, 18, false, aStr("mode", "linear"), aInt("antialias", 1)),
			"antialias 1 is not supported"},
		{"Resize keep_aspect_ratio_policy", foldModel("Resize", []foldInput{img, roi, scales}, []string{"y"}, 18, false, aStr("keep_aspect_ratio_policy", "not_larger")),
			`keep_aspect_ratio_policy "not_larger" is not supported`},
		{"Resize axes", foldModel("Resize", []foldInput{img, roi, ints("s", 2, 2)}, []string{"y"}, 18, false, aInts("axes", 2, 3)),
			"the axes attribute is not supported"},
		{"Split num_outputs against the outputs", foldModel("Split", []foldInput{x}, []string{"y", "z"}, 18, false, aInt("num_outputs", 3)),
			"num_outputs 3 for 2 outputs"},
		{"Pad wrap (opset 19)", foldModel("Pad", []foldInput{x, ints("p", 0, 1, 0, 1)}, []string{"y"}, 19, false, aStr("mode", "wrap")),
			`Pad mode "wrap" is not supported`},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Import(tt.m, Options{}); err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Import: %v, want an error containing %q", err, tt.err)
			}
		})
	}
}

// reshapeTranspose returns x (row-major, of shape in) reshaped to mid,
// transposed by perm and flattened: the ONNX specification's definition
// of DepthToSpace and SpaceToDepth.
func reshapeTranspose(x []float64, mid []int, perm []int) []float64 {
	strides := make([]int, len(mid))
	s := 1
	for d := len(mid) - 1; d >= 0; d-- {
		strides[d], s = s, s*mid[d]
	}
	shape := make([]int, len(perm))
	for i, p := range perm {
		shape[i] = mid[p]
	}
	out := make([]float64, 0, len(x))
	idx := make([]int, len(shape))
	for range x {
		at := 0
		for i, p := range perm {
			at += idx[i] * strides[p]
		}
		out = append(out, x[at])
		for d := len(idx) - 1; d >= 0; d-- {
			if idx[d]++; idx[d] < shape[d] {
				break
			}
			idx[d] = 0
		}
	}
	return out
}

// TestSpaceAndDepth checks DepthToSpace (DCR and CRD) and SpaceToDepth
// against the ONNX specification's definitions by reshape and transpose,
// and InstanceNormalization against its formula.
func TestSpaceAndDepth(t *testing.T) {
	const n, c, h, w, b = 2, 8, 3, 2, 2
	x := foldInput{name: "x", dt: f32, dims: []int64{n, c, h, w}, vals: iota(n*c*h*w, 1, 0)}
	tests := []struct {
		op    string
		attrs []*onnxpb.AttributeProto
		in    foldInput
		want  []float64
	}{
		{"DepthToSpace", []*onnxpb.AttributeProto{aInt("blocksize", b)}, x,
			reshapeTranspose(x.vals, []int{n, b, b, c / (b * b), h, w}, []int{0, 3, 4, 1, 5, 2})},
		{"DepthToSpace", []*onnxpb.AttributeProto{aInt("blocksize", b), aStr("mode", "CRD")}, x,
			reshapeTranspose(x.vals, []int{n, c / (b * b), b, b, h, w}, []int{0, 1, 4, 2, 5, 3})},
		{"SpaceToDepth", []*onnxpb.AttributeProto{aInt("blocksize", b)},
			foldInput{name: "x", dt: f32, dims: []int64{n, 2, 4, 6}, vals: iota(n*2*4*6, 1, 0)},
			reshapeTranspose(iota(n*2*4*6, 1, 0), []int{n, 2, 4 / b, b, 6 / b, b}, []int{0, 3, 5, 1, 2, 4})},
	}
	for _, tt := range tests {
		t.Run(tt.op+" "+tt.attrs[len(tt.attrs)-1].GetName(), func(t *testing.T) {
			_, got := run(t, foldModel(tt.op, []foldInput{tt.in}, []string{"y"}, 21, false, tt.attrs...), []foldInput{tt.in})
			if y := got["y"]; y == nil || len(y.Data) != len(tt.want) {
				t.Fatalf("y = %v, want %v", y, tt.want)
			}
			for i, v := range tt.want {
				if got["y"].Data[i] != v {
					t.Fatalf("y = %v, want %v", got["y"].Data, tt.want)
				}
			}
		})
	}

	t.Run("InstanceNormalization", func(t *testing.T) {
		scale := foldInput{name: "s", dt: f32, dims: []int64{c}, vals: iota(c, 0.5, 1), static: true}
		bias := foldInput{name: "b", dt: f32, dims: []int64{c}, vals: iota(c, -0.25, 0.5), static: true}
		xs := foldInput{name: "x", dt: f32, dims: []int64{n, c, h, w}, vals: iota(n*c*h*w, 0.37, -5)}
		for i := range xs.vals {
			xs.vals[i] = math.Sin(xs.vals[i]) * 3
		}
		_, got := run(t, foldModel("InstanceNormalization", []foldInput{xs, scale, bias}, []string{"y"}, 13, false, aFloat("epsilon", 1e-3)), []foldInput{xs})
		y := got["y"]
		for e := range n * c {
			row := xs.vals[e*h*w : (e+1)*h*w]
			mean, sq := 0.0, 0.0
			for _, v := range row {
				mean += v / float64(len(row))
			}
			for _, v := range row {
				sq += (v - mean) * (v - mean) / float64(len(row))
			}
			ch := e % c
			for i, v := range row {
				want := (v-mean)/math.Sqrt(sq+1e-3)*scale.vals[ch] + bias.vals[ch]
				if g := y.Data[e*h*w+i]; math.Abs(g-want) > 1e-9*math.Max(1, math.Abs(want)) {
					t.Fatalf("y[%d] = %v, want %v", e*h*w+i, g, want)
				}
			}
		}
	})
}

// TestEinsum checks Einsum against the operators that compute the same
// (MatMul, Transpose, ReduceSum, Mul) and against hand-computed values for
// diagonals and traces, and that equations it does not take are refused
// with the reason.
func TestEinsum(t *testing.T) {
	a := foldInput{name: "a", dt: f32, dims: []int64{3, 4}, vals: iota(12, 0.5, -2)}
	b := foldInput{name: "b", dt: f32, dims: []int64{4, 2}, vals: iota(8, -0.25, 1)}
	x3 := foldInput{name: "a", dt: f32, dims: []int64{2, 3, 4}, vals: iota(24, 0.1, -1)}
	sq := foldInput{name: "a", dt: f32, dims: []int64{3, 3}, vals: iota(9, 1, 1)}
	v := foldInput{name: "b", dt: f32, dims: []int64{4}, vals: []float64{1, -2, 3, 0.5}}
	type form struct {
		op    string
		ins   []foldInput
		attrs []*onnxpb.AttributeProto
	}
	eq := func(e string) []*onnxpb.AttributeProto { return []*onnxpb.AttributeProto{aStr("equation", e)} }
	same := []struct {
		name      string
		einsum    form
		reference form
	}{
		{"matmul", form{"Einsum", []foldInput{a, b}, eq("ij,jk->ik")}, form{"MatMul", []foldInput{a, b}, nil}},
		{"matmul, implicit", form{"Einsum", []foldInput{a, b}, eq("ij,jk")}, form{"MatMul", []foldInput{a, b}, nil}},
		{"permutation", form{"Einsum", []foldInput{x3}, eq("bij->bji")}, form{"Transpose", []foldInput{x3}, []*onnxpb.AttributeProto{aInts("perm", 0, 2, 1)}}},
		{"sum over an axis", form{"Einsum", []foldInput{x3}, eq("bij->bi")}, form{"ReduceSum", []foldInput{x3, {name: "k", dt: onnxpb.TensorProto_INT64, dims: []int64{1}, vals: []float64{2}, static: true}}, []*onnxpb.AttributeProto{aInt("keepdims", 0)}}},
		{"broadcast product", form{"Einsum", []foldInput{a, v}, eq("ij,j->ij")}, form{"Mul", []foldInput{a, v}, nil}},
	}
	for _, tt := range same {
		t.Run(tt.name, func(t *testing.T) {
			_, got := run(t, foldModel(tt.einsum.op, tt.einsum.ins, []string{"y"}, 13, false, tt.einsum.attrs...), tt.einsum.ins)
			_, want := run(t, foldModel(tt.reference.op, tt.reference.ins, []string{"y"}, 13, false, tt.reference.attrs...), tt.reference.ins)
			g, w := got["y"], want["y"]
			if g == nil || w == nil || !te.SameShape(g.Shape, w.Shape) {
				t.Fatalf("Einsum gives %v, %s %v", g, tt.reference.op, w)
			}
			for i := range w.Data {
				if math.Abs(g.Data[i]-w.Data[i]) > 1e-9 {
					t.Fatalf("Einsum gives %v, %s %v", g.Data, tt.reference.op, w.Data)
				}
			}
		})
	}
	values := []struct {
		name  string
		ins   []foldInput
		eq    string
		shape []int
		want  []float64
	}{
		{"diagonal", []foldInput{sq}, "ii->i", []int{3}, []float64{1, 5, 9}},
		{"trace, implicit", []foldInput{sq}, "ii", []int{}, []float64{15}},
		{"outer product, implicit", []foldInput{{name: "a", dt: f32, dims: []int64{2}, vals: []float64{1, 2}}, {name: "b", dt: f32, dims: []int64{3}, vals: []float64{1, 10, 100}}},
			"j,i", []int{3, 2}, []float64{1, 2, 10, 20, 100, 200}},
	}
	for _, tt := range values {
		t.Run(tt.name, func(t *testing.T) {
			_, got := run(t, foldModel("Einsum", tt.ins, []string{"y"}, 13, false, eq(tt.eq)...), tt.ins)
			y := got["y"]
			if y == nil || !te.SameShape(y.Shape, tt.shape) || !slices.Equal(y.Data, tt.want) {
				t.Fatalf("y = %v, want shape %v, %v", y, tt.shape, tt.want)
			}
		})
	}
	refused := []struct {
		name, eq string
		ins      []foldInput
		err      string
	}{
		{"ellipsis", "...j,jk->...k", []foldInput{a, b}, "an ellipsis (...) is not supported"},
		{"sizes", "ij,ik->jk", []foldInput{a, b}, "axis i has sizes 3 and 4"},
		{"rank", "ijk,jk->ik", []foldInput{a, b}, `operand 0 ("ijk") has rank 2`},
		{"output axis", "ij,jk->iz", []foldInput{a, b}, "output axis z is in no operand"},
		{"operands", "ij->ij", []foldInput{a, b}, "1 operands in its equation and 2 inputs"},
		{"no equation", "", []foldInput{a}, "Einsum without an equation"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Import(foldModel("Einsum", tt.ins, []string{"y"}, 13, false, eq(tt.eq)...), Options{}); err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Import: %v, want an error containing %q", err, tt.err)
			}
		})
	}
}

// TestCumSum checks CumSum's four modes against sums written out, on an
// inner and a negative axis, and on integers.
func TestCumSum(t *testing.T) {
	x := foldInput{name: "x", dt: f32, dims: []int64{2, 3}, vals: []float64{1, 2, 3, 10, 20, 30}}
	axis := func(a float64) foldInput {
		return foldInput{name: "a", dt: onnxpb.TensorProto_INT64, dims: []int64{}, vals: []float64{a}, static: true}
	}
	tests := []struct {
		name    string
		in      foldInput
		axis    float64
		exc, rv int64
		want    []float64
	}{
		{"inclusive", x, 1, 0, 0, []float64{1, 3, 6, 10, 30, 60}},
		{"exclusive", x, -1, 1, 0, []float64{0, 1, 3, 0, 10, 30}},
		{"reverse", x, 1, 0, 1, []float64{6, 5, 3, 60, 50, 30}},
		{"reverse exclusive", x, 1, 1, 1, []float64{5, 3, 0, 50, 30, 0}},
		{"outer axis", x, 0, 0, 0, []float64{1, 2, 3, 11, 22, 33}},
		{"integers", foldInput{name: "x", dt: onnxpb.TensorProto_INT64, dims: []int64{4}, vals: []float64{5, -1, 7, 2}}, 0, 0, 0, []float64{5, 4, 11, 13}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ins := []foldInput{tt.in, axis(tt.axis)}
			m := foldModel("CumSum", ins, []string{"y"}, 14, false, aInt("exclusive", tt.exc), aInt("reverse", tt.rv))
			_, got := run(t, m, ins)
			if y := got["y"]; y == nil || !slices.Equal(y.Data, tt.want) {
				t.Errorf("y = %v, want %v", y, tt.want)
			}
		})
	}
	ins := []foldInput{x, {name: "a", dt: onnxpb.TensorProto_INT64, dims: []int64{1}, vals: []float64{1}}}
	if _, err := Import(foldModel("CumSum", ins, []string{"y"}, 14, false), Options{}); err == nil || !strings.Contains(err.Error(), "must be known at import") {
		t.Errorf("CumSum along an axis known at run time: %v", err)
	}
}

// convTransposeRef is ConvTranspose by its definition, in one spatial
// axis: each input element scattered through the kernel, the output
// cropped by the start padding to size out.
func convTransposeRef(x, w []float64, c, o, in, k, s, d, pb, out int) []float64 {
	y := make([]float64, o*out)
	for ci := range c {
		for i := range in {
			for oi := range o {
				for kk := range k {
					if p := i*s + kk*d - pb; p >= 0 && p < out {
						y[oi*out+p] += x[ci*in+i] * w[(ci*o+oi)*k+kk]
					}
				}
			}
		}
	}
	return y
}

// TestConvTranspose checks one-dimensional ConvTranspose against its
// definition with explicit pads, an output_padding, output_shape and
// auto_pad SAME_UPPER and SAME_LOWER (which split the total padding the
// other way round), and refuses an output_padding not below the stride.
func TestConvTranspose(t *testing.T) {
	const c, o, in, k = 2, 3, 5, 4
	x := foldInput{name: "x", dt: f32, dims: []int64{1, c, in}, vals: iota(c*in, 0.5, -2)}
	w := foldInput{name: "w", dt: f32, dims: []int64{c, o, k}, vals: iota(c*o*k, -0.25, 1.5), static: true}
	tests := []struct {
		name        string
		attrs       []*onnxpb.AttributeProto
		s, d, pb, n int
	}{
		{"pads", []*onnxpb.AttributeProto{aInts("strides", 2), aInts("pads", 1, 2)}, 2, 1, 1, 2*4 + 4 - 3},
		{"output_padding", []*onnxpb.AttributeProto{aInts("strides", 3), aInts("pads", 0, 1), aInts("output_padding", 2)}, 3, 1, 0, 3*4 + 2 + 4 - 1},
		{"dilation", []*onnxpb.AttributeProto{aInts("dilations", 2), aInts("pads", 2, 1)}, 1, 2, 2, 4 + 7 - 3},
		{"output_shape", []*onnxpb.AttributeProto{aInts("strides", 2), aInts("output_shape", 9)}, 2, 1, 2, 9},      // total 3: 2 at the start
		{"SAME_UPPER", []*onnxpb.AttributeProto{aInts("strides", 2), aStr("auto_pad", "SAME_UPPER")}, 2, 1, 1, 10}, // total 2
		{"SAME_LOWER", []*onnxpb.AttributeProto{aInts("strides", 3), aStr("auto_pad", "SAME_LOWER")}, 3, 1, 1, 15}, // total 1: at the start
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ins := []foldInput{x, w}
			_, got := run(t, foldModel("ConvTranspose", ins, []string{"y"}, 17, false, tt.attrs...), ins)
			want := convTransposeRef(x.vals, w.vals, c, o, in, k, tt.s, tt.d, tt.pb, tt.n)
			y := got["y"]
			if y == nil || !te.SameShape(y.Shape, []int{1, o, tt.n}) {
				t.Fatalf("y = %v, want shape [1 %d %d]", y, o, tt.n)
			}
			for i := range want {
				if math.Abs(y.Data[i]-want[i]) > 1e-9 {
					t.Fatalf("y = %v, want %v", y.Data, want)
				}
			}
		})
	}
	ins := []foldInput{x, w}
	if _, err := Import(foldModel("ConvTranspose", ins, []string{"y"}, 17, false, aInts("strides", 2), aInts("output_padding", 2)), Options{}); err == nil ||
		!strings.Contains(err.Error(), "less than its axis's stride or dilation") {
		t.Errorf("an output_padding of the stride: %v", err)
	}
}

// TestGroupNormalization checks GroupNormalization against its formula,
// with a scale and bias per group (opset 18) and per channel (21), and
// refuses a channel count num_groups does not divide and a scale of the
// other opset's shape.
func TestGroupNormalization(t *testing.T) {
	const n, c, h, w, g = 2, 6, 2, 3, 3
	xs := foldInput{name: "x", dt: f32, dims: []int64{n, c, h, w}, vals: iota(n*c*h*w, 0.41, -3)}
	for i := range xs.vals {
		xs.vals[i] = math.Cos(xs.vals[i]*1.7) * 2
	}
	for _, tt := range []struct {
		opset int64
		per   int // the scale's and bias's length
	}{{18, g}, {21, c}} {
		t.Run(fmt.Sprint("opset ", tt.opset), func(t *testing.T) {
			scale := foldInput{name: "s", dt: f32, dims: []int64{int64(tt.per)}, vals: iota(tt.per, 0.5, 1), static: true}
			bias := foldInput{name: "b", dt: f32, dims: []int64{int64(tt.per)}, vals: iota(tt.per, -0.25, 0.5), static: true}
			ins := []foldInput{xs, scale, bias}
			_, got := run(t, foldModel("GroupNormalization", ins, []string{"y"}, tt.opset, false, aInt("num_groups", g), aFloat("epsilon", 1e-3)), ins)
			y := got["y"]
			size := c / g * h * w // a group's elements in one entry
			for e := range n * g {
				grp := xs.vals[e*size : (e+1)*size]
				mean, sq := 0.0, 0.0
				for _, v := range grp {
					mean += v / float64(size)
				}
				for _, v := range grp {
					sq += (v - mean) * (v - mean) / float64(size)
				}
				for i, v := range grp {
					at := e % g
					if tt.per == c {
						at = (e%g)*(c/g) + i/(h*w)
					}
					want := (v-mean)/math.Sqrt(sq+1e-3)*scale.vals[at] + bias.vals[at]
					if d := math.Abs(y.Data[e*size+i] - want); d > 1e-9 {
						t.Fatalf("y[%d] = %v, want %v", e*size+i, y.Data[e*size+i], want)
					}
				}
			}
		})
	}
	ones := func(k int) foldInput {
		return foldInput{name: fmt.Sprint("s", k), dt: f32, dims: []int64{int64(k)}, vals: iota(k, 0, 1), static: true}
	}
	for _, tt := range []struct {
		name   string
		groups int64
		opset  int64
		per    int
		err    string
	}{
		{"groups", 4, 21, c, "with C a multiple of num_groups"},
		{"per group at 21", g, 21, g, "must have shape [6] at opset 21"},
		{"per channel at 18", g, 18, c, "must have shape [3] at opset 18"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ins := []foldInput{xs, ones(tt.per), ones(tt.per)}
			ins[2].name = "b"
			if _, err := Import(foldModel("GroupNormalization", ins, []string{"y"}, tt.opset, false, aInt("num_groups", tt.groups)), Options{}); err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Import: %v, want an error containing %q", err, tt.err)
			}
		})
	}
}

// TestScatterNDAndDropout checks ScatterND with indices known at import
// and read at run time (whole rows and single elements, a negative index,
// a repeated one whose last update wins, the reductions add, mul, max and
// min over repeated indices) against values written out, Dropout's mask
// output and its training mode with a ratio of 0 (torchvision's Swin),
// and the refusals.
func TestScatterNDAndDropout(t *testing.T) {
	const i64 = onnxpb.TensorProto_INT64
	data := foldInput{name: "x", dt: f32, dims: []int64{3, 2}, vals: []float64{1, 2, 3, 4, 5, 6}}
	ints := func(name string, dims []int64, vals ...float64) foldInput {
		return foldInput{name: name, dt: i64, dims: dims, vals: vals, static: true}
	}
	upd := func(dims []int64, vals ...float64) foldInput {
		return foldInput{name: "u", dt: f32, dims: dims, vals: vals}
	}
	tests := []struct {
		name      string
		ins       []foldInput
		reduction string
		want      []float64
	}{
		{"rows", []foldInput{data, ints("idx", []int64{2, 1}, 2, 0), upd([]int64{2, 2}, 10, 20, 30, 40)}, "none", []float64{30, 40, 3, 4, 10, 20}},
		{"elements", []foldInput{data, ints("idx", []int64{2, 2}, 1, 1, -1, 0), upd([]int64{2}, 7, 8)}, "none", []float64{1, 2, 3, 7, 8, 6}},
		{"the last wins", []foldInput{data, ints("idx", []int64{2, 2}, 0, 1, 0, 1), upd([]int64{2}, 7, 8)}, "none", []float64{1, 8, 3, 4, 5, 6}},
		{"add", []foldInput{data, ints("idx", []int64{3, 1}, 1, 1, 0), upd([]int64{3, 2}, 10, 20, 30, 40, 50, 60)}, "add", []float64{51, 62, 43, 64, 5, 6}},
		{"mul", []foldInput{data, ints("idx", []int64{2, 2}, 2, 1, 2, 1), upd([]int64{2}, 2, 3)}, "mul", []float64{1, 2, 3, 4, 5, 36}},
		{"max", []foldInput{data, ints("idx", []int64{3, 2}, 0, 0, 0, 0, 2, 0), upd([]int64{3}, 7, -2, 4)}, "max", []float64{7, 2, 3, 4, 5, 6}},
		{"min", []foldInput{data, ints("idx", []int64{3, 2}, 0, 0, 0, 0, 2, 0), upd([]int64{3}, 7, -2, 4)}, "min", []float64{-2, 2, 3, 4, 4, 6}},
	}
	for _, tt := range tests {
		for _, known := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/known=%v", tt.name, known), func(t *testing.T) {
				ins := slices.Clone(tt.ins)
				ins[1].static = known
				_, got := run(t, foldModel("ScatterND", ins, []string{"y"}, 18, false, aStr("reduction", tt.reduction)), ins)
				if y := got["y"]; y == nil || !slices.Equal(y.Data, tt.want) {
					t.Errorf("y = %v, want %v", y, tt.want)
				}
			})
		}
	}
	t.Run("Dropout", func(t *testing.T) {
		ratio := foldInput{name: "r", dt: f32, dims: []int64{}, vals: []float64{0}, static: true}
		training := foldInput{name: "m", dt: onnxpb.TensorProto_BOOL, dims: []int64{}, vals: []float64{1}, static: true}
		ins := []foldInput{data, ratio, training}
		_, got := run(t, foldModel("Dropout", ins, []string{"y", "z"}, 13, false), ins)
		if y, z := got["y"], got["z"]; y == nil || z == nil || !slices.Equal(y.Data, data.vals) || !slices.Equal(z.Data, []float64{1, 1, 1, 1, 1, 1}) {
			t.Errorf("y = %v, mask %v; want x and all true", y, z)
		}
	})
	refused := []struct {
		name string
		m    *onnxpb.ModelProto
		err  string
	}{
		{"reduction", foldModel("ScatterND", []foldInput{data, ints("idx", []int64{1, 1}, 0), upd([]int64{1, 2}, 1, 1)}, []string{"y"}, 18, false, aStr("reduction", "avg")),
			`ScatterND with reduction "avg" is not supported (none, add, mul, max and min are)`},
		{"float indices", foldModel("ScatterND", []foldInput{data, {name: "idx", dt: f32, dims: []int64{1, 1}, vals: []float64{0}}, upd([]int64{1, 2}, 1, 1)}, []string{"y"}, 16, false),
			"ScatterND indices of type f32"},
		{"index out of range", foldModel("ScatterND", []foldInput{data, ints("idx", []int64{1, 1}, 3), upd([]int64{1, 2}, 1, 1)}, []string{"y"}, 16, false),
			"index 3 is out of range for axis 0 of size 3"},
		{"training", foldModel("Dropout", []foldInput{data, {name: "r", dt: f32, dims: []int64{}, vals: []float64{0.1}, static: true},
			{name: "m", dt: onnxpb.TensorProto_BOOL, dims: []int64{}, vals: []float64{1}, static: true}}, []string{"y"}, 13, false),
			"Dropout in training mode is not supported (but with a ratio of 0)"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Import(tt.m, Options{}); err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Import: %v, want an error containing %q", err, tt.err)
			}
		})
	}
}

// TestTopK checks TopK's values and indices, largest and smallest, along
// an inner axis, with ties (the lower index first, as ONNX orders them),
// and the refusal of a K beyond the axis.
func TestTopK(t *testing.T) {
	x := foldInput{name: "x", dt: f32, dims: []int64{2, 5}, vals: []float64{3, 1, 4, 1, 5, 9, 2, 6, 5, 3}}
	k := func(v float64) foldInput {
		return foldInput{name: "k", dt: onnxpb.TensorProto_INT64, dims: []int64{1}, vals: []float64{v}, static: true}
	}
	tests := []struct {
		name            string
		k               float64
		attrs           []*onnxpb.AttributeProto
		values, indices []float64
	}{
		{"largest", 3, nil, []float64{5, 4, 3, 9, 6, 5}, []float64{4, 2, 0, 0, 2, 3}},
		{"smallest, ties", 3, []*onnxpb.AttributeProto{aInt("largest", 0)}, []float64{1, 1, 3, 2, 3, 5}, []float64{1, 3, 0, 1, 4, 3}},
		{"all", 5, []*onnxpb.AttributeProto{aInt("sorted", 0)}, []float64{5, 4, 3, 1, 1, 9, 6, 5, 3, 2}, []float64{4, 2, 0, 1, 3, 0, 2, 3, 4, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ins := []foldInput{x, k(tt.k)}
			_, got := run(t, foldModel("TopK", ins, []string{"values", "indices"}, 13, false, tt.attrs...), ins)
			if v, i := got["values"], got["indices"]; v == nil || i == nil || !slices.Equal(v.Data, tt.values) || !slices.Equal(i.Data, tt.indices) {
				t.Errorf("values %v, indices %v; want %v, %v", v, i, tt.values, tt.indices)
			}
		})
	}
	ins := []foldInput{x, k(6)}
	if _, err := Import(foldModel("TopK", ins, []string{"values", "indices"}, 13, false), Options{}); err == nil || !strings.Contains(err.Error(), "K 6 is out of range for an axis of size 5") {
		t.Errorf("K past the axis: %v", err)
	}
}

// TestGatherND checks GatherND with indices known at import (elements
// and rows, a negative index) and at run time, with batch_dims 0 and 1
// (the ONNX specification's examples), against values written out, and
// the refusal of batch axes that do not match.
func TestGatherND(t *testing.T) {
	const i64 = onnxpb.TensorProto_INT64
	data := foldInput{name: "x", dt: f32, dims: []int64{3, 2}, vals: []float64{1, 2, 3, 4, 5, 6}}
	cube := foldInput{name: "x", dt: f32, dims: []int64{2, 2, 2}, vals: []float64{0, 1, 2, 3, 4, 5, 6, 7}}
	tests := []struct {
		name   string
		data   foldInput
		batch  int64
		static bool
		dims   []int64
		idx    []float64
		want   []float64
	}{
		{"elements", data, 0, true, []int64{3, 2}, []float64{0, 1, 2, 0, -1, -1}, []float64{2, 5, 6}},
		{"rows", data, 0, true, []int64{2, 1}, []float64{2, 0}, []float64{5, 6, 1, 2}},
		{"at run time", data, 0, false, []int64{2, 2}, []float64{1, 1, -3, 0}, []float64{4, 1}},
		{"batch rows", cube, 1, true, []int64{2, 1}, []float64{1, 0}, []float64{2, 3, 4, 5}},
		{"batch rows at run time", cube, 1, false, []int64{2, 1}, []float64{1, 0}, []float64{2, 3, 4, 5}},
		{"batch elements", cube, 1, false, []int64{2, 1, 2}, []float64{0, 1, 1, -2}, []float64{1, 6}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ins := []foldInput{tt.data, {name: "ind", dt: i64, dims: tt.dims, vals: tt.idx, static: tt.static}}
			_, got := run(t, foldModel("GatherND", ins, []string{"y"}, 13, false, aInt("batch_dims", tt.batch)), ins)
			if y := got["y"]; y == nil || !slices.Equal(y.Data, tt.want) {
				t.Errorf("y = %v, want %v", y, tt.want)
			}
		})
	}
	ins := []foldInput{data, {name: "ind", dt: i64, dims: []int64{2, 1}, vals: []float64{0, 0}, static: true}}
	for _, b := range []int64{1, 2} {
		if _, err := Import(foldModel("GatherND", ins, []string{"y"}, 13, false, aInt("batch_dims", b)), Options{}); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("GatherND with batch_dims %d of indices [2 1] and data [3 2]", b)) {
			t.Errorf("batch_dims %d: %v", b, err)
		}
	}
}

// TestCubicWeights checks Keys's kernel as Resize's cubic mode uses it:
// the weights of the four neighbours sum to 1, a point on an input reads
// it alone, and halfway between two inputs they are the kernel's values
// at 1.5 and 0.5 (a/8 and 1/2 − a/8, worked out by hand for two a),
// symmetric.
func TestCubicWeights(t *testing.T) {
	for _, tt := range []struct {
		t, a float64
		want [4]float64
	}{
		{0, -0.75, [4]float64{0, 1, 0, 0}},
		{0.5, -0.75, [4]float64{-0.09375, 0.59375, 0.59375, -0.09375}},
		{0.5, -0.5, [4]float64{-0.0625, 0.5625, 0.5625, -0.0625}},
	} {
		got := cubicWeights(tt.t, tt.a)
		sum := 0.0
		for i, w := range got {
			sum += w
			if math.Abs(w-tt.want[i]) > 1e-12 {
				t.Errorf("cubicWeights(%v, %v) = %v, want %v", tt.t, tt.a, got, tt.want)
				break
			}
		}
		if math.Abs(sum-1) > 1e-12 {
			t.Errorf("cubicWeights(%v, %v) sum to %v", tt.t, tt.a, sum)
		}
	}
}

// TestSymbolicDims imports models whose inputs have symbolic dimensions
// (an export's dynamic axes): each becomes a const of the program, at the
// size --dim gives or at 1 with a warning, and the sizes computed from it
// follow it (a Reshape's target from Shape, the product of two of them),
// so that -D changes them; a dimension that the values of a folded param
// depend on stays fixed, with a warning saying why. An unknown name or a
// size below 1 is refused.
func TestSymbolicDims(t *testing.T) {
	symbolic := func(m *onnxpb.ModelProto, names ...string) *onnxpb.ModelProto {
		for _, in := range m.Graph.Input {
			for i, name := range names {
				in.Type.GetTensorType().Shape.Dim[i].Value = &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: name}
			}
		}
		return m
	}
	reshape := func() *onnxpb.ModelProto {
		return symbolic(newGraph().input("x", f32, 1, 3).input("z", f32, 1, 3).
			node("Add", []string{"x", "z"}, []string{"a"}).
			node("Shape", []string{"a"}, []string{"s"}).
			node("Reshape", []string{"a", "s"}, []string{"y"}).output("y").model(13), "batch")
	}
	// y = x reshaped to [N·S, 4], the target computed from x's shape
	product := func() *onnxpb.ModelProto {
		return symbolic(newGraph().input("x", f32, 1, 1, 4).ints("i0", nil, 0).ints("i1", nil, 1).ints("axes0", []int64{1}, 0).ints("four", []int64{1}, 4).
			node("Shape", []string{"x"}, []string{"s"}).
			node("Gather", []string{"s", "i0"}, []string{"n"}, aInt("axis", 0)).
			node("Gather", []string{"s", "i1"}, []string{"q"}, aInt("axis", 0)).
			node("Mul", []string{"n", "q"}, []string{"nq"}).
			node("Unsqueeze", []string{"nq", "axes0"}, []string{"nq1"}).
			node("Concat", []string{"nq1", "four"}, []string{"t"}, aInt("axis", 0)).
			node("Reshape", []string{"x", "t"}, []string{"y"}).output("y").model(13), "N", "S")
	}
	// y = x + [0, 1, ..., batch-1] down its rows: a folded Range of the
	// batch's size, a param whose values depend on it
	ranged := func() *onnxpb.ModelProto {
		return symbolic(newGraph().input("x", f32, 1, 3).ints("zero", nil, 0).ints("one", nil, 1).ints("ax", []int64{1}, 1).
			node("Shape", []string{"x"}, []string{"s"}).
			node("Gather", []string{"s", "zero"}, []string{"b"}, aInt("axis", 0)).
			node("Range", []string{"zero", "b", "one"}, []string{"r"}).
			node("Cast", []string{"r"}, []string{"rf"}, aInt("to", int64(f32))).
			node("Unsqueeze", []string{"rf", "ax"}, []string{"col"}).
			node("Add", []string{"x", "col"}, []string{"y"}).output("y").model(13), "batch")
	}
	for _, tt := range []struct {
		name     string
		model    func() *onnxpb.ModelProto
		dims     map[string]int
		want     []string          // in the program
		defines  map[string]string // -D
		shape    []int             // y's there
		warnings []string
	}{
		{"given", reshape, map[string]int{"batch": 5}, []string{"const batch = 5\n", "input x: f32[batch, 3]", "output y"},
			nil, []int{5, 3}, nil},
		{"given, -D", reshape, map[string]int{"batch": 5}, nil, map[string]string{"batch": "7"}, []int{7, 3}, nil},
		{"defaulted", reshape, nil, []string{"const batch = 1\n", "input x: f32[batch, 3]"}, map[string]string{"batch": "2"}, []int{2, 3},
			[]string{`symbolic dimension "batch" has no size given; the program's const batch is 1 (choose another with -D batch=SIZE`}},
		{"product", product, map[string]int{"N": 2, "S": 3}, []string{"const N = 2\n", "const S = 3\n", "input x: f32[N, S, 4]", "N * S"},
			map[string]string{"N": "3", "S": "5"}, []int{15, 4}, nil},
		{"param of the size", ranged, map[string]int{"batch": 4}, []string{"input x: f32[4, 3]", "# Fixed at the sizes imported"},
			nil, []int{4, 3}, []string{"the program's sizes are fixed at batch = 4: the values of param col, which the import computes from the inputs' sizes, depend on batch"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Import(tt.model(), Options{Dims: tt.dims})
			if err != nil {
				t.Fatal(err)
			}
			prog := string(res.Program)
			for _, want := range tt.want {
				if !strings.Contains(prog, want) {
					t.Errorf("the program lacks %q:\n%s", want, prog)
				}
			}
			p, diags := lang.Check("dims.te", res.Program, lang.Config{Defines: tt.defines})
			if diags.HasErrors() {
				t.Fatalf("%v\n%s", diags.Error(), prog)
			}
			if y := p.Lookup("y"); y == nil || !slices.Equal(y.Shape, tt.shape) {
				t.Errorf("y = %v, want shape %v", y, tt.shape)
			}
			if len(res.Warnings) != len(tt.warnings) {
				t.Errorf("warnings %q, want %d", res.Warnings, len(tt.warnings))
			}
			for _, w := range tt.warnings {
				if !strings.Contains(strings.Join(res.Warnings, "\n"), w) {
					t.Errorf("warnings %q lack %q", res.Warnings, w)
				}
			}
		})
	}
	for _, tt := range []struct {
		dims map[string]int
		err  string
	}{
		{map[string]int{"batch": 2, "seq": 4}, "--dim seq: the model's inputs have no dimension of that name (they have: batch)"},
		{map[string]int{"batch": 0}, "--dim batch=0: a size must be 1 to"},
	} {
		if _, err := Import(reshape(), Options{Dims: tt.dims}); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("Dims %v: %v, want an error containing %q", tt.dims, err, tt.err)
		}
	}
}
