package onnx

import (
	"fmt"
	"math"

	"tec/frontend/onnx/onnxpb"
	"tec/te"
)

// ops maps each supported operator to its importer. docs/import.md lists
// them with their opsets; TestOpsDocumented keeps the two in step.
var ops map[string]func(*node) error

func init() {
	ops = map[string]func(*node) error{
		// element-wise, one input
		"Relu":        unaryOp(func(x expr) expr { return call("relu", x) }),
		"Sigmoid":     unaryOp(func(x expr) expr { return call("sigmoid", x) }),
		"Tanh":        unaryOp(func(x expr) expr { return call("tanh", x) }),
		"Erf":         unaryOp(func(x expr) expr { return call("erf", x) }),
		"Exp":         unaryOp(func(x expr) expr { return call("exp", x) }),
		"Log":         unaryOp(func(x expr) expr { return call("log", x) }),
		"Sqrt":        unaryOp(func(x expr) expr { return call("sqrt", x) }),
		"Abs":         unaryOp(func(x expr) expr { return call("abs", x) }),
		"Sin":         unaryOp(func(x expr) expr { return call("sin", x) }),
		"Cos":         unaryOp(func(x expr) expr { return call("cos", x) }),
		"Neg":         unaryOp(func(x expr) expr { return unary{"-", x} }),
		"Not":         unaryOp(func(x expr) expr { return unary{"!", x} }),
		"Reciprocal":  unaryOp(func(x expr) expr { return binary{"/", flit(1), x} }),
		"Gelu":        geluOp,
		"HardSigmoid": hardSigmoidOp,
		"HardSwish":   hardSwishOp,
		"LeakyRelu":   leakyReluOp,
		"PRelu":       preluOp,
		"Elu":         eluOp,
		"Softplus":    unaryOp(func(x expr) expr { return call("log", add(flit(1), call("exp", x))) }),
		"Clip":        clipOp,
		"Cast":        castOp,
		"Identity":    identityOp,
		"Dropout":     dropoutOp,
		// element-wise, several inputs
		"Add":            binaryOp("+"),
		"Sub":            binaryOp("-"),
		"Mul":            binaryOp("*"),
		"Div":            binaryOp("/"),
		"Pow":            powOp,
		"Max":            variadicOp("max"),
		"Min":            variadicOp("min"),
		"Sum":            variadicOp("+"),
		"Mean":           variadicOp("mean"),
		"Equal":          binaryOp("=="),
		"Less":           binaryOp("<"),
		"LessOrEqual":    binaryOp("<="),
		"Greater":        binaryOp(">"),
		"GreaterOrEqual": binaryOp(">="),
		"And":            binaryOp("&&"),
		"Or":             binaryOp("||"),
		"Where":          whereOp,
		"IsInf":          isInfOp,
		"Mod":            modOp,
		// constants and shapes, folded at import
		"Constant":        constantOp,
		"ConstantOfShape": constantOfShapeOp,
		"Shape":           shapeOp,
		"Range":           rangeOp,
		// layout
		"Reshape":      reshapeOp,
		"Flatten":      flattenOp,
		"Squeeze":      squeezeOp,
		"Unsqueeze":    unsqueezeOp,
		"Transpose":    transposeOp,
		"Concat":       concatOp,
		"Slice":        sliceOp,
		"Split":        splitOp,
		"Gather":       gatherOp,
		"Expand":       expandOp,
		"Pad":          padOp,
		"Resize":       resizeOp,
		"Tile":         tileOp,
		"DepthToSpace": depthToSpaceOp,
		"CumSum":       cumSumOp,
		"ScatterND":    scatterNDOp,
		"GatherND":     gatherNDOp,
		"TopK":         topKOp,
		"SpaceToDepth": spaceToDepthOp,
		// neural-network layers (nn.go, rnn.go)
		"MatMul":                matmulOp,
		"Einsum":                einsumOp,
		"ConvTranspose":         convTransposeOp,
		"Gemm":                  gemmOp,
		"Conv":                  convOp,
		"MaxPool":               poolOp("max"),
		"AveragePool":           poolOp("avg"),
		"GlobalAveragePool":     globalPoolOp("avg"),
		"GlobalMaxPool":         globalPoolOp("max"),
		"BatchNormalization":    batchNormOp,
		"LayerNormalization":    layerNormOp,
		"InstanceNormalization": instanceNormOp,
		"GroupNormalization":    groupNormOp,
		"Softmax":               softmaxOp(false),
		"LogSoftmax":            softmaxOp(true),
		"ReduceMean":            reduceOp("mean"),
		"ReduceSum":             reduceOp("sum"),
		"ReduceMax":             reduceOp("max"),
		"ReduceMin":             reduceOp("min"),
		"ReduceProd":            reduceOp("prod"),
		"ArgMax":                argOp("argmax"),
		"ArgMin":                argOp("argmin"),
		"LSTM":                  lstmOp,
		"GRU":                   gruOp,
	}
}

// broadcastShape is the shape of the result of an element-wise operation
// on tensors of the shapes, by NumPy's rules.
func broadcastShape(shapes ...[]int) ([]int, error) {
	r := 0
	for _, s := range shapes {
		r = max(r, len(s))
	}
	out := make([]int, r)
	for i := range out {
		out[i] = 1
	}
	for _, s := range shapes {
		off := r - len(s)
		for d, n := range s {
			switch {
			case n == out[off+d] || n == 1:
			case out[off+d] == 1:
				out[off+d] = n
			default:
				return nil, fmt.Errorf("shapes %v cannot be broadcast together", shapes)
			}
		}
	}
	return out, nil
}

// elementwise defines output 0 as f of the inputs broadcast together.
func elementwise(n *node, f func(args []expr) expr, ins ...*value) error {
	shapes := make([][]int, len(ins))
	for i, v := range ins {
		shapes[i] = v.shape
	}
	shape, err := broadcastShape(shapes...)
	if err != nil {
		return err
	}
	vs := vars(shape)
	args := make([]expr, len(ins))
	for i, v := range ins {
		args[i] = n.im.bcast(v, vs)
	}
	body := f(args)
	return n.im.define(n.out(0, body.dtype(), shape), vs, body)
}

func unaryOp(f func(x expr) expr) func(*node) error {
	return func(n *node) error {
		x, err := n.need(0)
		if err != nil {
			return err
		}
		return elementwise(n, func(a []expr) expr { return f(a[0]) }, x)
	}
}

func binaryOp(op string) func(*node) error {
	return func(n *node) error {
		a, err := n.need(0)
		if err != nil {
			return err
		}
		b, err := n.need(1)
		if err != nil {
			return err
		}
		return elementwise(n, func(x []expr) expr {
			switch op {
			case "+":
				return add(x[0], x[1])
			case "-":
				return sub(x[0], x[1])
			case "*":
				return mul(x[0], x[1])
			case "/":
				return div(x[0], x[1])
			}
			return binary{op, x[0], x[1]}
		}, a, b)
	}
}

func variadicOp(op string) func(*node) error {
	return func(n *node) error {
		var ins []*value
		for i := range n.p.GetInput() {
			v, err := n.need(i)
			if err != nil {
				return err
			}
			ins = append(ins, v)
		}
		if len(ins) == 0 {
			return fmt.Errorf("%s needs an input", n.p.GetOpType())
		}
		return elementwise(n, func(x []expr) expr {
			e := x[0]
			for _, y := range x[1:] {
				switch op {
				case "+", "mean":
					e = add(e, y)
				default:
					e = binary{op, e, y}
				}
			}
			if op == "mean" {
				e = div(e, flit(float64(len(x))))
			}
			return e
		}, ins...)
	}
}

// modOp is ONNX's Mod. On integers, fmod 0 (the default) is Python's
// remainder, with the divisor's sign: the language's floor division gives
// it as a - b * (a / b), or a % b where b is a positive constant; fmod 1 is
// C's, with the dividend's sign. On floats ONNX requires fmod 1, C's fmod,
// which the language cannot write exactly: it is folded at import where
// both inputs are known there, an error otherwise.
func modOp(n *node) error {
	a, err := n.need(0)
	if err != nil {
		return err
	}
	b, err := n.need(1)
	if err != nil {
		return err
	}
	fmod := n.int("fmod", 0)
	if fmod != 0 && fmod != 1 {
		return fmt.Errorf("fmod %d is not 0 or 1", fmod)
	}
	if a.dt != b.dt {
		return fmt.Errorf("the inputs are %s and %s; Mod takes two of one type", a.dt, b.dt)
	}
	if a.dt != te.I32 {
		if fmod != 1 {
			return fmt.Errorf("Mod of %s inputs needs fmod 1 (ONNX: fmod 0 is for integers)", a.dt)
		}
		if a.constant == nil || b.constant == nil {
			return fmt.Errorf("Mod of %s tensors computed at run time is not supported: the language has no floating-point remainder (only integer %%), so tec folds a float Mod only where both inputs are known at import", a.dt)
		}
		return elementwise(n, func(x []expr) expr { return binary{"fmod", x[0], x[1]} }, a, b)
	}
	u, uniform := b.uniform()
	if uniform && u == 0 {
		return fmt.Errorf("the divisor %q is 0", b.onnx)
	}
	return elementwise(n, func(x []expr) expr {
		p, q := x[0], x[1]
		var r expr
		if uniform && u > 0 {
			r = imod(p, int(u))
		} else {
			r = sub(p, mul(q, binary{"/", p, q}))
		}
		if fmod == 0 {
			return r
		}
		// C's remainder differs from the floor's where they are not 0 and
		// the operands' signs differ: by the divisor.
		var differ expr = sel{binary{"<", p, ilit(0)}, binary{">", q, ilit(0)}, binary{"<", q, ilit(0)}}
		if uniform {
			differ = binary{"<", p, ilit(0)}
			if u < 0 {
				differ = binary{">", p, ilit(0)}
			}
		}
		return sel{and(binary{"!=", r, ilit(0)}, differ), sub(r, q), r}
	}, a, b)
}

func powOp(n *node) error {
	a, err := n.need(0)
	if err != nil {
		return err
	}
	b, err := n.need(1)
	if err != nil {
		return err
	}
	// a constant integer exponent is written x ** k; an int base keeps
	// its type only under a non-negative one, as in the language
	if u, ok := b.uniform(); ok && b.rank() <= a.rank() && u == math.Trunc(u) && math.Abs(u) <= 1<<20 && (a.dt != te.I32 || u >= 0) {
		return elementwise(n, func(x []expr) expr { return binary{"**", x[0], ilit(int(u))} }, a)
	}
	return elementwise(n, func(x []expr) expr { return binary{"pow", x[0], x[1]} }, a, b)
}

func geluOp(n *node) error {
	approx := n.str("approximate", "none")
	return unaryOp(func(x expr) expr {
		if approx == "tanh" {
			return call("gelu", x)
		}
		// 0.5 * x * (1 + erf(x / sqrt(2)))
		return mul(mul(flit(0.5), x), add(flit(1), call("erf", mul(x, flit(1/math.Sqrt2)))))
	})(n)
}

func clamp01(x expr) expr { return binary{"max", flit(0), binary{"min", flit(1), x}} }

func hardSigmoidOp(n *node) error {
	alpha, beta := n.float("alpha", 0.2), n.float("beta", 0.5)
	return unaryOp(func(x expr) expr { return clamp01(add(mul(flit(alpha), x), flit(beta))) })(n)
}

func hardSwishOp(n *node) error {
	return unaryOp(func(x expr) expr { return mul(x, clamp01(add(div(x, flit(6)), flit(0.5)))) })(n)
}

func leakyReluOp(n *node) error {
	alpha := n.float("alpha", 0.01)
	return unaryOp(func(x expr) expr {
		return sel{binary{">=", x, flit(0)}, x, mul(flit(alpha), x)}
	})(n)
}

func preluOp(n *node) error {
	x, err := n.need(0)
	if err != nil {
		return err
	}
	slope, err := n.need(1)
	if err != nil {
		return err
	}
	return elementwise(n, func(a []expr) expr {
		return sel{binary{">=", a[0], flit(0)}, a[0], mul(a[1], a[0])}
	}, x, slope)
}

func eluOp(n *node) error {
	alpha := n.float("alpha", 1)
	return unaryOp(func(x expr) expr {
		return sel{binary{">=", x, flit(0)}, x, mul(flit(alpha), sub(call("exp", x), flit(1)))}
	})(n)
}

func clipOp(n *node) error {
	x, err := n.need(0)
	if err != nil {
		return err
	}
	bound := func(i int) (expr, error) {
		v := n.in(i)
		if v == nil {
			return nil, nil
		}
		u, ok := v.uniform()
		if !ok || v.rank() != 0 {
			return nil, fmt.Errorf("input %d (%q) must be a scalar known at import", i, v.onnx)
		}
		if math.IsNaN(u) {
			return nil, fmt.Errorf("input %d (%q) is NaN, which bounds nothing", i, v.onnx)
		}
		return lit{u, x.dt}, nil
	}
	lo, err := bound(1)
	if err != nil {
		return err
	}
	hi, err := bound(2)
	if err != nil {
		return err
	}
	return unaryOp(func(e expr) expr {
		if hi != nil {
			e = binary{"min", e, hi}
		}
		if lo != nil {
			e = binary{"max", e, lo}
		}
		return e
	})(n)
}

func castOp(n *node) error {
	to, err := dtypeOf(onnxpb.TensorProto_DataType(n.int("to", 0)))
	if err != nil {
		return err
	}
	x, err := n.need(0)
	if err != nil {
		return err
	}
	// Opset 19's saturate concerns conversions to float8 alone, which
	// dtypeOf refuses.
	n.int("saturate", 1)
	if x.dt == to {
		return identityOp(n)
	}
	if x.weight && (x.dt == te.F16 || x.dt == te.BF16) && to == te.F32 {
		// a half-precision weight widened: the weight stays a param of
		// its dtype, converted where it is read, rather than folded into
		// an f32 param twice its size
		vs := vars(x.shape)
		n.im.emit(n.out(0, to, x.shape), vs, cast{to, n.im.read(x, ivars(vs)...)})
		n.keep = true
		return nil
	}
	return elementwise(n, func(a []expr) expr { return cast{to, a[0]} }, x)
}

// identityOp gives the output the input's value: no statement, unless the
// output is one of the graph's, which must be a tensor of its own name.
func identityOp(n *node) error {
	x, err := n.need(0)
	if err != nil {
		return err
	}
	n.im.values[n.p.GetOutput()[0]] = x
	return nil
}

// dropoutOp is Dropout in inference, or in training mode with a ratio of
// 0 (torchvision's Swin calls F.dropout with training's default, true):
// the input, and where the node has the mask output, a mask of all true
// (every element kept), known at import.
func dropoutOp(n *node) error {
	if m := n.in(2); m != nil {
		if u, ok := m.uniform(); !ok || u != 0 {
			if r := n.in(1); r == nil {
				return fmt.Errorf("Dropout in training mode is not supported (but with a ratio of 0)")
			} else if u, ok := r.uniform(); !ok || u != 0 {
				return fmt.Errorf("Dropout in training mode is not supported (but with a ratio of 0)")
			}
		}
	}
	n.attr("seed")
	if n.numOutputs() > 1 {
		x, err := n.need(0)
		if err != nil {
			return err
		}
		mask := te.NewArray(te.Bool, x.shape)
		for i := range mask.Data {
			mask.Data[i] = 1
		}
		setConst(n, 1, mask)
	}
	return identityOp(n)
}

func isInfOp(n *node) error {
	pos, neg := n.int("detect_positive", 1) != 0, n.int("detect_negative", 1) != 0
	return unaryOp(func(x expr) expr {
		var e expr = lit{0, te.Bool}
		if pos {
			e = binary{"==", x, flit(math.Inf(1))}
		}
		if neg {
			e = or(e, binary{"==", x, flit(math.Inf(-1))})
		}
		return e
	})(n)
}

func whereOp(n *node) error {
	c, err := n.need(0)
	if err != nil {
		return err
	}
	a, err := n.need(1)
	if err != nil {
		return err
	}
	b, err := n.need(2)
	if err != nil {
		return err
	}
	return elementwise(n, func(x []expr) expr { return sel{x[0], x[1], x[2]} }, c, a, b)
}

// Constants and shapes.

func setConst(n *node, i int, a *te.Array) {
	v := n.out(i, a.DType, a.Shape)
	v.constant = a
}

func constantOp(n *node) error {
	kinds := map[string]onnxpb.AttributeProto_AttributeType{
		"value": onnxpb.AttributeProto_TENSOR, "value_float": onnxpb.AttributeProto_FLOAT, "value_floats": onnxpb.AttributeProto_FLOATS,
		"value_int": onnxpb.AttributeProto_INT, "value_ints": onnxpb.AttributeProto_INTS,
	}
	for _, name := range []string{"value", "value_float", "value_floats", "value_int", "value_ints"} {
		if n.attrs[name] == nil {
			continue
		}
		a := n.typed(name, kinds[name])
		if a == nil {
			return n.err
		}
		switch name {
		case "value":
			arr, err := tensorArray(a.GetT())
			if err != nil {
				return err
			}
			setConst(n, 0, arr)
		case "value_float":
			setConst(n, 0, &te.Array{DType: te.F32, Shape: []int{}, Data: []float64{float64(a.GetF())}})
		case "value_floats":
			arr := te.NewArray(te.F32, []int{len(a.GetFloats())})
			for i, f := range a.GetFloats() {
				arr.Data[i] = float64(f)
			}
			setConst(n, 0, arr)
		case "value_int":
			setConst(n, 0, &te.Array{DType: te.I32, Shape: []int{}, Data: []float64{float64(a.GetI())}})
		case "value_ints":
			arr := te.NewArray(te.I32, []int{len(a.GetInts())})
			for i, f := range a.GetInts() {
				arr.Data[i] = float64(f)
			}
			setConst(n, 0, arr)
		}
		return nil
	}
	return fmt.Errorf("Constant has no value attribute that tec reads (value, value_float(s), value_int(s))")
}

func constantOfShapeOp(n *node) error {
	shape, _, err := n.constInts(0)
	if err != nil {
		return err
	}
	fill := &te.Array{DType: te.F32, Data: []float64{0}}
	if a := n.typed("value", onnxpb.AttributeProto_TENSOR); a != nil {
		if fill, err = tensorArray(a.GetT()); err != nil {
			return err
		}
		if len(fill.Data) != 1 {
			return fmt.Errorf("the value must have one element, not %d", len(fill.Data))
		}
	}
	size, err := te.CheckShape(shape)
	if err != nil {
		return err
	}
	if size > maxFold {
		return fmt.Errorf("a constant of %d elements is too large to make at import", size)
	}
	arr := te.NewArray(fill.DType, shape)
	for i := range arr.Data {
		arr.Data[i] = fill.Data[0]
	}
	setConst(n, 0, arr)
	return nil
}

func shapeOp(n *node) error {
	x, err := n.need(0)
	if err != nil {
		return err
	}
	r := x.rank()
	start, end := clampAxis(n.int("start", 0), r), clampAxis(n.int("end", r), r)
	dims := x.shape[start:max(start, end)]
	arr := te.NewArray(te.I32, []int{len(dims)})
	for i, d := range dims {
		arr.Data[i] = float64(d)
	}
	setConst(n, 0, arr)
	return nil
}

// clampAxis normalises a bound of Shape's start and end for rank r.
func clampAxis(a, r int) int {
	if a < 0 {
		a += r
	}
	return min(max(a, 0), r)
}

func rangeOp(n *node) error {
	var v [3]*value
	for i := range v {
		x, err := n.need(i)
		if err != nil {
			return err
		}
		if x.constant == nil || x.rank() != 0 {
			return fmt.Errorf("input %d (%q) must be a scalar known at import", i, x.onnx)
		}
		v[i] = x
	}
	start, limit, delta := v[0].constant.Data[0], v[1].constant.Data[0], v[2].constant.Data[0]
	if delta == 0 {
		return fmt.Errorf("Range with delta 0")
	}
	count := max(int(math.Ceil((limit-start)/delta)), 0)
	if count == 0 || count > maxFold {
		return fmt.Errorf("Range of %d elements is not supported", count)
	}
	arr := te.NewArray(v[0].dt, []int{count})
	for i := range arr.Data {
		arr.Data[i] = start + float64(i)*delta
	}
	setConst(n, 0, arr)
	return nil
}
