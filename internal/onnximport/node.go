package onnximport

import (
	bin "encoding/binary"
	"fmt"
	"math"
	"strings"

	"tec/internal/onnxpb"
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
	a := te.NewArray(dt, shape)
	raw := t.GetRawData()
	var got int
	switch kind {
	case onnxpb.TensorProto_FLOAT:
		if raw != nil {
			got = len(raw) / 4
			for i := 0; i < min(got, n); i++ {
				a.Data[i] = float64(math.Float32frombits(bin.LittleEndian.Uint32(raw[4*i:])))
			}
		} else {
			got = len(t.GetFloatData())
			for i := 0; i < min(got, n); i++ {
				a.Data[i] = float64(t.GetFloatData()[i])
			}
		}
	case onnxpb.TensorProto_DOUBLE:
		if raw != nil {
			got = len(raw) / 8
			for i := 0; i < min(got, n); i++ {
				a.Data[i] = float64(float32(math.Float64frombits(bin.LittleEndian.Uint64(raw[8*i:]))))
			}
		} else {
			got = len(t.GetDoubleData())
			for i := 0; i < min(got, n); i++ {
				a.Data[i] = float64(float32(t.GetDoubleData()[i]))
			}
		}
	case onnxpb.TensorProto_INT64:
		if raw != nil {
			got = len(raw) / 8
			for i := 0; i < min(got, n); i++ {
				a.Data[i] = float64(int64(bin.LittleEndian.Uint64(raw[8*i:])))
			}
		} else {
			got = len(t.GetInt64Data())
			for i := 0; i < min(got, n); i++ {
				a.Data[i] = float64(t.GetInt64Data()[i])
			}
		}
	case onnxpb.TensorProto_INT32, onnxpb.TensorProto_BOOL, onnxpb.TensorProto_FLOAT16, onnxpb.TensorProto_BFLOAT16:
		size := 4
		switch kind {
		case onnxpb.TensorProto_BOOL:
			size = 1
		case onnxpb.TensorProto_FLOAT16, onnxpb.TensorProto_BFLOAT16:
			size = 2
		}
		bits := func(i int) uint32 {
			if raw == nil {
				return uint32(t.GetInt32Data()[i])
			}
			switch size {
			case 1:
				return uint32(raw[i])
			case 2:
				return uint32(bin.LittleEndian.Uint16(raw[2*i:]))
			}
			return bin.LittleEndian.Uint32(raw[4*i:])
		}
		got = len(t.GetInt32Data())
		if raw != nil {
			got = len(raw) / size
		}
		for i := 0; i < min(got, n); i++ {
			b := bits(i)
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
	if got != n {
		return nil, fmt.Errorf("it holds %d values for shape %s, which has %d", got, typeString(dt, shape), n)
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
	im.kcount = 0
	mark := len(im.body)
	im.comment("node %d: %s %q", index, p.GetOpType(), p.GetName())
	if err := op(n); err != nil {
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

func (n *node) int(name string, def int) int {
	if a := n.attr(name); a != nil {
		return int(a.GetI())
	}
	return def
}

func (n *node) float(name string, def float64) float64 {
	if a := n.attr(name); a != nil {
		return float64(a.GetF())
	}
	return def
}

func (n *node) str(name, def string) string {
	if a := n.attr(name); a != nil {
		return string(a.GetS())
	}
	return def
}

func (n *node) ints(name string) ([]int, bool) {
	a := n.attr(name)
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
