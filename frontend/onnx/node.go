package onnx

import (
	bin "encoding/binary"
	"fmt"
	"math"
	"strings"

	"tec/frontend/onnx/onnxpb"
	"tec/te"
)

// dtypeOf maps an ONNX element type to the language's dtype (package doc).
func dtypeOf(t onnxpb.TensorProto_DataType) (te.DType, error) {
	switch t {
	case onnxpb.TensorProto_FLOAT, onnxpb.TensorProto_DOUBLE:
		return te.F32, nil
	case onnxpb.TensorProto_FLOAT16:
		return te.F16, nil
	case onnxpb.TensorProto_BFLOAT16:
		return te.BF16, nil
	case onnxpb.TensorProto_INT64, onnxpb.TensorProto_INT32:
		return te.I32, nil
	case onnxpb.TensorProto_BOOL:
		return te.Bool, nil
	}
	return 0, fmt.Errorf("element type %s is not supported (tec has f32, f16, bf16, i32 and bool)", t)
}

// tensorArray decodes a TensorProto.
func tensorArray(t *onnxpb.TensorProto) (*te.Array, error) {
	if t.GetDataLocation() == onnxpb.TensorProto_EXTERNAL {
		return nil, fmt.Errorf("its data is in an external file, which tec does not read\n  hint: save the model with its weights inside (onnx.save(model, path, save_as_external_data=False))")
	}
	kind := onnxpb.TensorProto_DataType(t.GetDataType())
	dt, err := dtypeOf(kind)
	if err != nil {
		return nil, err
	}
	shape := make([]int, len(t.GetDims()))
	for i, d := range t.GetDims() {
		shape[i] = int(d)
	}
	n, err := te.CheckShape(shape)
	if err != nil {
		return nil, err
	}
	// The data's length is checked against the shape before anything is
	// allocated: a shape of 2^30 elements with no data behind it costs
	// nothing.
	raw := t.GetRawData()
	size := 4 // bytes per element of the raw data
	switch kind {
	case onnxpb.TensorProto_DOUBLE, onnxpb.TensorProto_INT64:
		size = 8
	case onnxpb.TensorProto_FLOAT16, onnxpb.TensorProto_BFLOAT16:
		size = 2
	case onnxpb.TensorProto_BOOL:
		size = 1
	}
	var got int
	switch {
	case raw != nil:
		if len(raw)%size != 0 {
			return nil, fmt.Errorf("its raw data of %d bytes is not a whole number of %d-byte elements", len(raw), size)
		}
		got = len(raw) / size
	case kind == onnxpb.TensorProto_FLOAT:
		got = len(t.GetFloatData())
	case kind == onnxpb.TensorProto_DOUBLE:
		got = len(t.GetDoubleData())
	case kind == onnxpb.TensorProto_INT64:
		got = len(t.GetInt64Data())
	default:
		got = len(t.GetInt32Data())
	}
	if got != n {
		return nil, fmt.Errorf("it holds %d values for shape %s, which has %d", got, typeString(dt, shape), n)
	}
	a := te.NewArray(dt, shape)
	le := bin.LittleEndian
	for i := range n {
		switch kind {
		case onnxpb.TensorProto_FLOAT:
			if raw != nil {
				a.Data[i] = float64(math.Float32frombits(le.Uint32(raw[4*i:])))
			} else {
				a.Data[i] = float64(t.GetFloatData()[i])
			}
		case onnxpb.TensorProto_DOUBLE:
			if raw != nil {
				a.Data[i] = float64(float32(math.Float64frombits(le.Uint64(raw[8*i:]))))
			} else {
				a.Data[i] = float64(float32(t.GetDoubleData()[i]))
			}
		case onnxpb.TensorProto_INT64:
			if raw != nil {
				a.Data[i] = float64(int64(le.Uint64(raw[8*i:])))
			} else {
				a.Data[i] = float64(t.GetInt64Data()[i])
			}
		default:
			// INT32, BOOL, FLOAT16 and BFLOAT16: int32_data holds each
			// element's bits when there is no raw data
			var b uint32
			switch {
			case raw == nil:
				b = uint32(t.GetInt32Data()[i])
			case size == 1:
				b = uint32(raw[i])
			case size == 2:
				b = uint32(le.Uint16(raw[2*i:]))
			default:
				b = le.Uint32(raw[4*i:])
			}
			switch kind {
			case onnxpb.TensorProto_INT32:
				a.Data[i] = float64(int32(b))
			case onnxpb.TensorProto_BOOL:
				a.Data[i] = b2f(b != 0)
			case onnxpb.TensorProto_FLOAT16:
				a.Data[i] = halfToFloat(uint16(b))
			case onnxpb.TensorProto_BFLOAT16:
				a.Data[i] = float64(math.Float32frombits(b << 16))
			}
		}
	}
	return a, nil
}

// halfToFloat converts IEEE 754 binary16 bits to a float.
func halfToFloat(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp := int(h>>10) & 0x1f
	frac := float64(h & 0x3ff)
	switch exp {
	case 0:
		return sign * math.Ldexp(frac, -24)
	case 31:
		if frac != 0 {
			return math.NaN()
		}
		return sign * math.Inf(1)
	}
	return sign * math.Ldexp(1+frac/1024, exp-15)
}

// node is the node being imported, with the attributes it has read.
type node struct {
	im    *importer
	p     *onnxpb.NodeProto
	attrs map[string]*onnxpb.AttributeProto
	used  map[string]bool
	// err is the first attribute of a type other than the operator's:
	// the node's error, whatever the importer made of its default.
	err error
	// keep says to print the node's statements even where its inputs are
	// all constants (foldStatements).
	keep bool
}

func (im *importer) node(index int, p *onnxpb.NodeProto) error {
	if d := p.GetDomain(); d != "" && d != "ai.onnx" {
		return fmt.Errorf("operator domain %q is not supported (only the default ONNX domain)", d)
	}
	op, ok := ops[p.GetOpType()]
	if !ok {
		return fmt.Errorf("operator %s is not supported\n  hint: docs/import.md lists the operators tec imports", p.GetOpType())
	}
	n := &node{im: im, p: p, attrs: map[string]*onnxpb.AttributeProto{}, used: map[string]bool{}}
	for _, a := range p.GetAttribute() {
		n.attrs[a.GetName()] = a
	}
	if len(p.GetOutput()) == 0 || p.GetOutput()[0] == "" {
		return fmt.Errorf("the node has no output")
	}
	for _, in := range p.GetInput() {
		if in != "" && im.values[in] == nil {
			return fmt.Errorf("input %q is not defined before the node", in)
		}
	}
	if err := im.checkOutputs(p); err != nil {
		return err
	}
	defer func() {
		name := p.GetName()
		if name == "" {
			name = p.GetOutput()[0]
		}
		for _, o := range p.GetOutput() {
			if o != "" {
				im.writers[o] = fmt.Sprintf("node %d (%s %q)", index, p.GetOpType(), name)
			}
		}
	}()
	im.kcount = 0
	fm := im.mark()
	mark := fm.body
	im.comment("node %d: %s %q", index, p.GetOpType(), p.GetName())
	if err := op(n); err != nil || n.err != nil {
		if n.err != nil {
			return n.err // what went wrong after is a consequence
		}
		return err
	}
	if im.err != nil {
		return im.err
	}
	for _, name := range sortedKeys(n.attrs) {
		if !n.used[name] {
			return fmt.Errorf("attribute %s is not supported", name)
		}
	}
	if len(im.body) == mark+1 {
		im.body = im.body[:mark] // folded: no comment for nothing
	}
	for i, o := range p.GetOutput() {
		if o != "" && im.values[o] == nil {
			return fmt.Errorf("output %d (%q) is not supported", i, o)
		}
	}
	if !n.keep && n.constantInputs() {
		return im.foldStatements(n, fm)
	}
	return nil
}

// checkOutputs checks that each output of p is a value of its own: ONNX
// graphs are in single static assignment form, and a second writer of a
// value would leave the importer choosing one.
func (im *importer) checkOutputs(p *onnxpb.NodeProto) error {
	seen := map[string]bool{}
	for _, o := range p.GetOutput() {
		if o == "" {
			continue
		}
		if seen[o] {
			return fmt.Errorf("output %q is listed twice", o)
		}
		seen[o] = true
		if w, ok := im.writers[o]; ok {
			return fmt.Errorf("output %q is already the output of %s", o, w)
		}
		if v := im.values[o]; v != nil {
			if v.weight {
				return fmt.Errorf("output %q is already an initializer", o)
			}
			return fmt.Errorf("output %q is already an input of the graph", o)
		}
	}
	return nil
}

// in returns input i, or nil when it is absent.
func (n *node) in(i int) *value {
	ins := n.p.GetInput()
	if i >= len(ins) || ins[i] == "" {
		return nil
	}
	return n.im.values[ins[i]]
}

// need returns input i, or an error when it is absent.
func (n *node) need(i int) (*value, error) {
	v := n.in(i)
	if v == nil {
		return nil, fmt.Errorf("input %d is missing", i)
	}
	return v, nil
}

// numOutputs is the number of outputs the graph uses (trailing empty names
// dropped).
func (n *node) numOutputs() int {
	outs := n.p.GetOutput()
	k := len(outs)
	for k > 0 && outs[k-1] == "" {
		k--
	}
	return k
}

// out makes output i's value.
func (n *node) out(i int, dt te.DType, shape []int) *value {
	v := newValue(n.p.GetOutput()[i], dt, shape)
	n.im.values[v.onnx] = v
	return v
}

// temp makes a value for a statement a node needs besides its outputs,
// named after output 0 with a suffix.
func (n *node) temp(suffix string, dt te.DType, shape []int) *value {
	return newValue(strings.TrimSuffix(n.p.GetOutput()[0], "_output_0")+"_"+suffix, dt, shape)
}

func (n *node) attr(name string) *onnxpb.AttributeProto {
	n.used[name] = true
	return n.attrs[name]
}

// typed returns the attribute name, or nil when the node has none or has
// one of another type than want, which is the node's error (n.err). An
// attribute of no declared type (UNDEFINED) is taken when the field of
// want is set.
func (n *node) typed(name string, want onnxpb.AttributeProto_AttributeType) *onnxpb.AttributeProto {
	a := n.attr(name)
	if a == nil {
		return nil
	}
	got := a.GetType()
	if got == onnxpb.AttributeProto_UNDEFINED && holds(a, want) {
		return a
	}
	if got != want {
		if n.err == nil {
			n.err = fmt.Errorf("attribute %s is %s, but %s takes %s", name, attrValue(a), n.p.GetOpType(), attrTypeName(want))
		}
		return nil
	}
	return a
}

// holds reports whether a's field for values of type t is set.
func holds(a *onnxpb.AttributeProto, t onnxpb.AttributeProto_AttributeType) bool {
	switch t {
	case onnxpb.AttributeProto_FLOAT:
		return a.F != nil
	case onnxpb.AttributeProto_INT:
		return a.I != nil
	case onnxpb.AttributeProto_STRING:
		return a.S != nil
	case onnxpb.AttributeProto_TENSOR:
		return a.T != nil
	case onnxpb.AttributeProto_FLOATS:
		return len(a.Floats) > 0
	case onnxpb.AttributeProto_INTS:
		return len(a.Ints) > 0
	case onnxpb.AttributeProto_STRINGS:
		return len(a.Strings) > 0
	}
	return false
}

// attrTypeName names an attribute type as messages do: "an int".
func attrTypeName(t onnxpb.AttributeProto_AttributeType) string {
	switch t {
	case onnxpb.AttributeProto_FLOAT:
		return "a float"
	case onnxpb.AttributeProto_INT:
		return "an int"
	case onnxpb.AttributeProto_STRING:
		return "a string"
	case onnxpb.AttributeProto_TENSOR:
		return "a tensor"
	case onnxpb.AttributeProto_GRAPH:
		return "a graph"
	case onnxpb.AttributeProto_FLOATS:
		return "a list of floats"
	case onnxpb.AttributeProto_INTS:
		return "a list of ints"
	case onnxpb.AttributeProto_STRINGS:
		return "a list of strings"
	case onnxpb.AttributeProto_UNDEFINED:
		return "of no type"
	}
	return strings.ToLower(t.String())
}

// attrValue describes an attribute's type and, where short, its value:
// a string ("abc").
func attrValue(a *onnxpb.AttributeProto) string {
	t := a.GetType()
	desc := attrTypeName(t)
	switch t {
	case onnxpb.AttributeProto_FLOAT:
		desc += fmt.Sprintf(" (%v)", a.GetF())
	case onnxpb.AttributeProto_INT:
		desc += fmt.Sprintf(" (%d)", a.GetI())
	case onnxpb.AttributeProto_STRING:
		if len(a.GetS()) <= 40 {
			desc += fmt.Sprintf(" (%q)", a.GetS())
		}
	case onnxpb.AttributeProto_INTS:
		if len(a.GetInts()) <= 8 {
			desc += fmt.Sprintf(" (%v)", a.GetInts())
		}
	case onnxpb.AttributeProto_FLOATS:
		if len(a.GetFloats()) <= 8 {
			desc += fmt.Sprintf(" (%v)", a.GetFloats())
		}
	}
	return desc
}

func (n *node) int(name string, def int) int {
	if a := n.typed(name, onnxpb.AttributeProto_INT); a != nil {
		return int(a.GetI())
	}
	return def
}

func (n *node) float(name string, def float64) float64 {
	if a := n.typed(name, onnxpb.AttributeProto_FLOAT); a != nil {
		return float64(a.GetF())
	}
	return def
}

func (n *node) str(name, def string) string {
	if a := n.typed(name, onnxpb.AttributeProto_STRING); a != nil {
		return string(a.GetS())
	}
	return def
}

func (n *node) ints(name string) ([]int, bool) {
	a := n.typed(name, onnxpb.AttributeProto_INTS)
	if a == nil {
		return nil, false
	}
	out := make([]int, len(a.GetInts()))
	for i, x := range a.GetInts() {
		out[i] = int(x)
	}
	return out, true
}

// constInts returns input i's values, which must be known at import.
func (n *node) constInts(i int) ([]int, bool, error) {
	v := n.in(i)
	if v == nil {
		return nil, false, nil
	}
	if v.constant == nil {
		return nil, false, fmt.Errorf("input %d (%q) must be known at import (tec needs static shapes)", i, v.onnx)
	}
	out := make([]int, len(v.constant.Data))
	for j, x := range v.constant.Data {
		// INT64_MAX and INT64_MIN mean "to the end" in Slice
		out[j] = int(min(max(x, -1<<40), 1<<40))
	}
	return out, true, nil
}

// axis normalises a possibly negative axis of a tensor of rank r.
func normAxis(a, r int) (int, error) {
	if a < -r || a >= r {
		return 0, fmt.Errorf("axis %d is out of range for rank %d", a, r)
	}
	if a < 0 {
		a += r
	}
	return a, nil
}
