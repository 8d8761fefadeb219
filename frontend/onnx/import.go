// Package onnx translates an ONNX model into a readable .te program
// and its weights: the job of "tec import" (docs/import.md).
//
// Each ONNX node becomes one statement (a few nodes, such as Softmax, a
// short run of them, and LSTM and GRU a loop over a cell function), named
// after its output value. The graph's inputs become inputs, its
// initializers params, and the arrays of the params are returned under
// the names the program declares, for an .npz file.
//
// Shapes are static: they are computed at import from the inputs' declared
// shapes. A node whose inputs are all known at import (Constant, Shape,
// ConstantOfShape, the shape arithmetic that follows them, and any other
// operator) is folded into a constant: the statement it would print is
// evaluated instead, or the statements it printed are run on the
// reference evaluator and taken back (fold.go). A constant is written into
// the program only where a statement reads it: a single value (or a
// tensor of equal values) as a number, anything else as a param.
//
// # Names
//
// An ONNX value name becomes a .te name by replacing every run of
// characters other than letters, digits and '_' by one '_', trimming '_'
// at both ends, and dropping PyTorch's "_output_0" suffix: the value
// "/layer1/layer1.0/conv1/Conv_output_0" is layer1_layer1_0_conv1_Conv,
// the initializer "layer1.0.conv1.weight" is layer1_0_conv1_weight. A name
// that starts with a digit, is empty, or would be a keyword, a builtin, a
// standard-library function or an index variable (i0, k1) gets the prefix
// v_; a name already taken gets _2, _3, ... Statements that a node needs
// besides its own add a suffix to its name (y_max, y_sum for a Softmax y).
//
// # Types
//
// float32 is f32, float16 f16, bfloat16 bf16, bool bool; int64 and int32
// are i32 (the language's only integer type), and double is computed as
// f32. A statement's result has the dtype the language stores it in: f32
// unless it is a cast, i32, bool or an alias, whatever ONNX's type, which
// only the precision of float16 arithmetic tells apart. An unsupported op, attribute or input is an error naming the node,
// its op type and its position in the graph (*NodeError); the importer
// never writes a program that computes something else than the model.
package onnx

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"

	"tec/frontend/onnx/onnxpb"
	"tec/lang"
	"tec/te"
)

// The opsets of the default ONNX domain that the importer reads.
const (
	MinOpset = 13
	MaxOpset = 21
)

// maxFold is the most elements a node folded at import may have.
const maxFold = 1 << 22

// Options configure an import.
type Options struct {
	// Model is the name of the .te model; empty means the graph's name.
	Model string
	// Source names the ONNX file in the program's header comment.
	Source string
	// Dims gives the size of each symbolic dimension of the graph's
	// inputs (an export's dynamic axes, by their names): the value of the
	// const the program declares for it (generalize), or of the size the
	// program fixes where it cannot be a const. One without a size here
	// is 1, with a warning. A name the graph's inputs do not have is an
	// error.
	Dims map[string]int
}

// Result is an imported model.
type Result struct {
	// Program is the .te source.
	Program []byte
	// Params holds the value of every param the program declares, by name.
	Params map[string]*te.Array
	// Warnings are what the import did that the user may not expect: a
	// symbolic dimension imported at 1 for want of a size, or fixed in
	// the program rather than a const.
	Warnings []string
}

// NodeError is an error in one node of the graph.
type NodeError struct {
	Index  int    // the node's position in the graph, from 0
	Name   string // the node's name, or its first output's when it has none
	OpType string
	Err    error
}

func (e *NodeError) Error() string {
	return fmt.Sprintf("node %d (%s %q): %v", e.Index, e.OpType, e.Name, e.Err)
}

func (e *NodeError) Unwrap() error { return e.Err }

// Decode parses a serialized ONNX ModelProto.
func Decode(data []byte) (*onnxpb.ModelProto, error) {
	m := &onnxpb.ModelProto{}
	if err := proto.Unmarshal(data, m); err != nil {
		return nil, fmt.Errorf("not an ONNX model: %w", err)
	}
	if m.GetGraph() == nil {
		return nil, errors.New("not an ONNX model: it has no graph")
	}
	return m, nil
}

// value is an ONNX value: a graph input, an initializer, or a node's output.
type value struct {
	onnx     string // the ONNX name
	name     string // the .te name, once declared or defined
	dt       te.DType
	shape    []int
	constant *te.Array // the value, when known at import
	weight   bool      // an initializer: a param, even if its values are equal
}

func (v *value) rank() int { return len(v.shape) }

// uniform returns the value every element of a constant has, if they are
// all equal. An initializer of more than one element is a weight, which
// stays a param whatever its values.
func (v *value) uniform() (float64, bool) {
	c := v.constant
	if c == nil || len(c.Data) == 0 || v.weight && len(c.Data) > 1 {
		return 0, false
	}
	for _, x := range c.Data[1:] {
		if x != c.Data[0] {
			return 0, false
		}
	}
	return c.Data[0], true
}

type importer struct {
	opset   int64
	values  map[string]*value
	taken   map[string]bool // .te names in use
	inputs  []string        // declarations
	params  []string
	body    []string
	helpers []string // functions the statements call
	outData map[string]*te.Array
	haveFn  map[string]bool
	outName map[string]string // the .te names of the graph's outputs
	writers map[string]string // the node that wrote each value, for messages
	// named lists the names taken, and outUsed the graph outputs' names
	// given to values, in order, so that a node folded after its
	// statements were printed gives them back (foldStatements).
	named   []string
	outUsed []string
	kcount  int   // reduction axes made for the current node
	err     error // the first error of materialize
	// dims are the sizes the symbolic dimensions were imported at, in
	// the order the inputs name them, and warnings the import's
	// (Result.Warnings).
	dims     []symbolicDim
	warnings []string
}

// symbolicDim is a named dimension of the graph's inputs, the .te name of
// its const (ident) and the size it was imported at.
type symbolicDim struct {
	name, ident string
	size        int
}

// Import translates m into a .te program and the arrays of its params.
// The symbolic dimensions of the graph's inputs become consts of the
// program wherever the program's sizes follow them (generalize).
func Import(m *onnxpb.ModelProto, opts Options) (*Result, error) {
	res, dims, err := importAt(m, opts, opts.Dims)
	if err != nil || len(dims) == 0 {
		return res, err
	}
	return generalize(m, opts, res, dims), nil
}

// importAt translates m with its symbolic dimensions at sizes (and 1
// where sizes gives none), and returns them.
func importAt(m *onnxpb.ModelProto, opts Options, sizes map[string]int) (res *Result, dims []symbolicDim, err error) {
	defer func() {
		// a bug of the importer, reported rather than crashing tec
		if r := recover(); r != nil {
			res, dims, err = nil, nil, fmt.Errorf("internal error in the importer: %v\n  hint: please report this with the model", r)
		}
	}()
	im := &importer{
		values:  map[string]*value{},
		taken:   reservedNames(),
		outData: map[string]*te.Array{},
		haveFn:  map[string]bool{},
		outName: map[string]string{},
		writers: map[string]string{},
	}
	if err := im.readOpset(m); err != nil {
		return nil, nil, err
	}
	g := m.GetGraph()
	if err := im.readInitializers(g); err != nil {
		return nil, nil, err
	}
	if err := im.readInputs(g, sizes); err != nil {
		return nil, nil, err
	}
	// The outputs' names are taken first, so that no statement a node
	// needs besides its output takes one.
	for _, o := range g.GetOutput() {
		if v := im.values[o.GetName()]; v == nil || v.name == "" {
			im.outName[o.GetName()] = im.uniqueName(sanitize(o.GetName()))
		}
	}
	for i, n := range g.GetNode() {
		if err := im.node(i, n); err != nil {
			name := n.GetName()
			if name == "" && len(n.GetOutput()) > 0 {
				name = n.GetOutput()[0]
			}
			return nil, nil, &NodeError{Index: i, Name: name, OpType: n.GetOpType(), Err: err}
		}
	}
	outs, err := im.outputs(g)
	if err == nil {
		err = im.err
	}
	if err != nil {
		return nil, nil, err
	}
	model := opts.Model
	if model == "" {
		model = g.GetName()
	}
	return &Result{Program: im.program(sanitize(model), opts.Source, m, outs), Params: im.outData, Warnings: im.warnings}, im.dims, nil
}

func (im *importer) readOpset(m *onnxpb.ModelProto) error {
	for _, o := range m.GetOpsetImport() {
		switch o.GetDomain() {
		case "", "ai.onnx":
			im.opset = o.GetVersion()
		}
	}
	if im.opset < MinOpset || im.opset > MaxOpset {
		return fmt.Errorf("the model uses opset %d of the ONNX operators; tec imports opsets %d to %d\n  hint: export with torch.onnx.export(..., opset_version=%d)", im.opset, MinOpset, MaxOpset, MaxOpset)
	}
	return nil
}

func (im *importer) readInitializers(g *onnxpb.GraphProto) error {
	for _, t := range g.GetInitializer() {
		a, err := tensorArray(t)
		if err != nil {
			return fmt.Errorf("initializer %q: %w", t.GetName(), err)
		}
		im.values[t.GetName()] = &value{onnx: t.GetName(), dt: a.DType, shape: a.Shape, constant: a, weight: true}
	}
	if len(g.GetSparseInitializer()) > 0 {
		return errors.New("the graph has sparse initializers, which tec does not import")
	}
	return nil
}

func (im *importer) readInputs(g *onnxpb.GraphProto, sizes map[string]int) error {
	for _, name := range sortedKeys(sizes) {
		if sizes[name] < 1 || sizes[name] > te.MaxElements {
			return fmt.Errorf("--dim %s=%d: a size must be 1 to %d", name, sizes[name], te.MaxElements)
		}
	}
	used := map[string]bool{}
	for _, in := range g.GetInput() {
		if _, ok := im.values[in.GetName()]; ok {
			continue // an initializer listed as an input (IR version 3)
		}
		tt := in.GetType().GetTensorType()
		if tt == nil {
			return fmt.Errorf("input %q is not a tensor", in.GetName())
		}
		dt, err := dtypeOf(onnxpb.TensorProto_DataType(tt.GetElemType()))
		if err != nil {
			return fmt.Errorf("input %q: %w", in.GetName(), err)
		}
		if tt.GetShape() == nil {
			return fmt.Errorf("input %q has no shape (its rank is unknown; a scalar has a shape of no dimensions)\n  hint: tec needs static shapes: export with fixed sizes (no dynamic_axes)", in.GetName())
		}
		var shape []int
		for i, d := range tt.GetShape().GetDim() {
			size := int(d.GetDimValue())
			if size <= 0 {
				name := d.GetDimParam()
				if name == "" {
					return fmt.Errorf("input %q has no size in dimension %d, not even a name\n  hint: tec needs static shapes: export with fixed sizes, or name the dynamic axis (dynamic_axes) and give its size with tec import --dim NAME=SIZE", in.GetName(), i)
				}
				size = im.dimSize(name, sizes, in.GetName(), i)
				used[name] = true
			}
			shape = append(shape, size)
		}
		if _, err := te.CheckShape(shape); err != nil {
			return fmt.Errorf("input %q: %w", in.GetName(), err)
		}
		v := &value{onnx: in.GetName(), dt: dt, shape: shape}
		v.name = im.uniqueName(sanitize(in.GetName()))
		im.inputs = append(im.inputs, fmt.Sprintf("input %s: %s", v.name, typeString(dt, shape)))
		im.values[in.GetName()] = v
	}
	for _, name := range sortedKeys(sizes) {
		if !used[name] {
			var have []string
			for _, d := range im.dims {
				have = append(have, d.name)
			}
			list := "none"
			if len(have) > 0 {
				list = strings.Join(have, ", ")
			}
			return fmt.Errorf("--dim %s: the model's inputs have no dimension of that name (they have: %s)", name, list)
		}
	}
	return nil
}

// dimSize returns the size of the symbolic dimension name (dimension i of
// input in): from sizes, or 1 with a warning; the first input to name it
// fixes it for the others.
func (im *importer) dimSize(name string, sizes map[string]int, in string, i int) int {
	for _, d := range im.dims {
		if d.name == name {
			return d.size
		}
	}
	size, ok := sizes[name]
	if !ok {
		size = 1
		im.warnings = append(im.warnings, fmt.Sprintf("input %q: dimension %d (%q) has no static size; imported at 1 (give one with --dim %s=SIZE)", in, i, name, name))
	}
	im.dims = append(im.dims, symbolicDim{name: name, ident: im.uniqueName(sanitize(name)), size: size})
	return size
}

// outputs returns the .te names of the graph's outputs, declaring each
// that is a constant as a param.
func (im *importer) outputs(g *onnxpb.GraphProto) ([]string, error) {
	if len(g.GetOutput()) == 0 {
		return nil, errors.New("the graph has no outputs")
	}
	var names []string
	for _, o := range g.GetOutput() {
		v, ok := im.values[o.GetName()]
		if !ok {
			return nil, fmt.Errorf("output %q is not computed by any node", o.GetName())
		}
		if empty(v.shape) {
			return nil, fmt.Errorf("output %q has shape %v (empty tensors are not supported)", o.GetName(), v.shape)
		}
		if v.onnx != o.GetName() {
			// an output that Identity passes on: a tensor of its own name
			c := newValue(o.GetName(), v.dt, v.shape)
			vs := vars(v.shape)
			if err := im.define(c, vs, im.read(v, ivars(vs)...)); err != nil {
				return nil, fmt.Errorf("output %q: %w", o.GetName(), err)
			}
			v = c
		}
		im.materialize(v)
		names = append(names, v.name)
	}
	return names, nil
}

func (im *importer) program(model, source string, m *onnxpb.ModelProto, outs []string) []byte {
	var b strings.Builder
	from := "an ONNX model"
	if source != "" {
		from = source
	}
	fmt.Fprintf(&b, "# Imported by tec import from %s", from)
	if p := m.GetProducerName(); p != "" {
		fmt.Fprintf(&b, " (%s %s, opset %d)", p, m.GetProducerVersion(), im.opset)
	}
	b.WriteString(".\n# Params are bound by name from the .npz file written with it.\n\n")
	for _, h := range im.helpers {
		b.WriteString(h + "\n")
	}
	fmt.Fprintf(&b, "model %s {\n", model)
	for _, l := range im.inputs {
		b.WriteString("  " + l + "\n")
	}
	for _, l := range im.params {
		b.WriteString("  " + l + "\n")
	}
	for _, l := range im.body {
		b.WriteString("  " + l + "\n")
	}
	fmt.Fprintf(&b, "  output %s\n}\n", strings.Join(outs, ", "))
	return []byte(b.String())
}

// Names.

var keywords = []string{"import", "const", "fn", "model", "input", "param", "output", "for", "in", "return", "where", "update"}

// reservedNames returns the names no value may take: keywords, builtins,
// standard-library functions and the importer's own functions.
func reservedNames() map[string]bool {
	r := map[string]bool{lstmCell: true, gruCell: true, gruCellLBR0: true}
	for _, k := range keywords {
		r[k] = true
	}
	for _, b := range lang.Builtins() {
		r[b.Name] = true
	}
	for _, f := range lang.StdlibFuncs() {
		r[f.Name] = true
	}
	return r
}

var (
	nonIdent  = regexp.MustCompile(`[^A-Za-z0-9_]+`)
	indexLike = regexp.MustCompile(`^[ikst][0-9]*$`)
)

// sanitize makes an identifier of an ONNX name (see the package doc).
func sanitize(s string) string {
	s = nonIdent.ReplaceAllString(s, "_")
	s = strings.Trim(s, "_")
	s = strings.TrimSuffix(s, "_output_0")
	for strings.Contains(s, "__") {
		s = strings.ReplaceAll(s, "__", "_")
	}
	if s == "" || s[0] >= '0' && s[0] <= '9' || indexLike.MatchString(s) {
		s = "v_" + s
	}
	return strings.TrimSuffix(s, "_")
}

// uniqueName returns base, or base_2, base_3, ... if taken, and takes it.
func (im *importer) uniqueName(base string) string {
	name := base
	if im.taken[name] {
		name = "v_" + base
	}
	for n := 2; im.taken[name]; n++ {
		name = fmt.Sprintf("%s_%d", base, n)
	}
	im.taken[name] = true
	im.named = append(im.named, name)
	return name
}

// nameOf returns the .te name for a new tensor of the ONNX value onnx.
func (im *importer) nameOf(onnx string) string {
	if name, ok := im.outName[onnx]; ok {
		delete(im.outName, onnx)
		im.outUsed = append(im.outUsed, onnx, name)
		return name
	}
	return im.uniqueName(sanitize(onnx))
}

// Declarations and statements.

func typeString(dt te.DType, shape []int) string {
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = fmt.Sprint(d)
	}
	return dt.String() + "[" + strings.Join(dims, ", ") + "]"
}

// materialize declares a constant that a statement reads as a param, unless
// it is already declared or defined.
func (im *importer) materialize(v *value) {
	if v.name != "" {
		return
	}
	if v.dt == te.I32 {
		// int64 values are read exactly; they must fit i32 to be data
		for _, x := range v.constant.Data {
			if (x < math.MinInt32 || x > math.MaxInt32) && im.err == nil {
				im.err = fmt.Errorf("value %v of %q does not fit i32, tec's integer type", x, v.onnx)
			}
		}
	}
	v.name = im.nameOf(v.onnx)
	im.params = append(im.params, fmt.Sprintf("param %s: %s", v.name, typeString(v.dt, v.shape)))
	im.outData[v.name] = v.constant
}

// read returns the element of v at idx (one index per dimension): a number
// when v is a constant of equal values, else an access of v. A constant is
// declared as a param when a statement that reads it is printed, not when
// the statement folds.
func (im *importer) read(v *value, idx ...expr) expr {
	if u, ok := v.uniform(); ok {
		return lit{u, v.dt}
	}
	return access{v, idx}
}

// bcast reads v broadcast to the shape of vars, by ONNX's (NumPy's) rules:
// v's dimensions align with the last ones, and a dimension of 1 repeats.
func (im *importer) bcast(v *value, vars []loopVar) expr {
	off := len(vars) - v.rank()
	idx := make([]expr, v.rank())
	for d := range idx {
		if v.shape[d] == 1 && vars[off+d].size != 1 {
			idx[d] = ilit(0)
		} else {
			idx[d] = ivar{vars[off+d].name}
		}
	}
	return im.read(v, idx...)
}

// vars returns the index variables i0, i1, ... of a statement of shape.
func vars(shape []int) []loopVar {
	out := make([]loopVar, len(shape))
	for i, d := range shape {
		out[i] = loopVar{fmt.Sprintf("i%d", i), d}
	}
	return out
}

// raxis returns a fresh reduction axis of size n.
func (im *importer) raxis(n int) loopVar {
	a := loopVar{fmt.Sprintf("k%d", im.kcount), n}
	im.kcount++
	return a
}

func ivars(axes []loopVar) []expr {
	out := make([]expr, len(axes))
	for i, a := range axes {
		out[i] = ivar{a.name}
	}
	return out
}

// newValue makes the value of a node's output.
func newValue(onnxName string, dt te.DType, shape []int) *value {
	return &value{onnx: onnxName, dt: dt, shape: append([]int{}, shape...)}
}

// define makes v the tensor whose element at vars is body: folded into a
// constant when body reads only constants, else printed as a statement.
func (im *importer) define(v *value, vars []loopVar, body expr) error {
	if v.dt != body.dtype() && !(v.dt == te.F16 || v.dt == te.BF16) {
		v.dt = body.dtype()
	}
	n, err := te.CheckShape(v.shape)
	if err != nil {
		return fmt.Errorf("the result's %w", err)
	}
	if n == 0 {
		if empty(v.shape) && foldable(body) {
			// an empty constant of shape arithmetic (the Slice of no
			// dimensions in PyTorch's flatten): it folds, as Concat drops it
			v.constant = &te.Array{DType: v.dt, Shape: v.shape, Data: []float64{}}
			return nil
		}
		return fmt.Errorf("the result has shape %v (empty tensors are not supported)", v.shape)
	}
	if foldable(body) {
		if n <= maxFold {
			a := te.NewArray(v.dt, v.shape)
			i := 0
			env := map[string]int{}
			err := forEach(vars, env, func() error {
				x, err := eval(body, env)
				a.Data[i] = x
				i++
				return err
			})
			if err != nil {
				return fmt.Errorf("folding at import: %w", err)
			}
			v.constant = a
			return nil
		}
	}
	im.emit(v, vars, body)
	return nil
}

// emit prints v's definition, declaring what it reads. v's dtype becomes
// the one the language stores the statement's result in.
func (im *importer) emit(v *value, vars []loopVar, body expr) {
	v.dt = storage(v, vars, body)
	im.declareReads(body)
	v.name = im.nameOf(v.onnx)
	im.body = append(im.body, statement(v, vars, body))
}

// defineCall makes v the result of a standard-library call, printed as
// name = call. fallback is the same tensor as an element expression, used
// when the inputs are all constants.
func (im *importer) defineCall(v *value, call string, args []*value, vars []loopVar, fallback expr) error {
	if fallback != nil && foldable(fallback) {
		return im.define(v, vars, fallback)
	}
	for _, a := range args {
		im.materialize(a)
	}
	v.dt = args[0].dt // the standard library's functions store their T
	v.name = im.nameOf(v.onnx)
	names := make([]string, len(args))
	for i, a := range args {
		names[i] = a.name
	}
	im.body = append(im.body, fmt.Sprintf("%s = %s", v.name, strings.ReplaceAll(call, "%s", strings.Join(names, ", "))))
	return nil
}

// comment adds a comment line to the model's body.
func (im *importer) comment(format string, args ...any) {
	im.body = append(im.body, "# "+fmt.Sprintf(format, args...))
}

// foldable reports whether every tensor that e reads is a constant.
func foldable(e expr) bool {
	ok := true
	walk(e, func(e expr) {
		if a, is := e.(access); is && a.v.constant == nil {
			ok = false
		}
	})
	return ok
}

func (im *importer) declareReads(e expr) {
	walk(e, func(e expr) {
		if a, ok := e.(access); ok {
			im.materialize(a.v)
		}
	})
}

// walk calls f on e and every expression inside it.
func walk(e expr, f func(expr)) {
	f(e)
	switch e := e.(type) {
	case access:
		for _, x := range e.idx {
			walk(x, f)
		}
	case unary:
		walk(e.x, f)
	case binary:
		walk(e.a, f)
		walk(e.b, f)
	case sel:
		walk(e.c, f)
		walk(e.a, f)
		walk(e.b, f)
	case reduce:
		walk(e.body, f)
	case cast:
		walk(e.x, f)
	}
}

// statement prints v's definition. A body that reads every tensor at
// exactly the statement's indices, and uses them nowhere else, is printed
// as a whole-tensor expression (y = relu(x)); otherwise the indices are
// written, with a where clause for each index variable whose range the
// direct uses do not give.
func statement(v *value, vars []loopVar, body expr) string {
	if len(vars) == 0 {
		where := whereClause(nil, body)
		return v.name + " = " + printer{}.print(body) + where
	}
	if whole(v, vars, body) {
		return v.name + " = " + printer{bare: true}.print(body)
	}
	names := make([]string, len(vars))
	for i, a := range vars {
		names[i] = a.name
	}
	return v.name + "[" + strings.Join(names, ", ") + "] = " + printer{}.print(body) + whereClause(vars, body)
}

// storage is the dtype the language stores a statement in: a cast's,
// i32 or bool for a body of that type, the tensor's own for a whole tensor
// (y = x, an alias), and f32 for anything else.
func storage(v *value, vars []loopVar, body expr) te.DType {
	switch b := body.(type) {
	case cast:
		return b.to
	case access:
		if len(vars) == 0 && len(b.idx) == 0 || len(vars) > 0 && whole(v, vars, body) {
			return b.v.dt
		}
	}
	if dt := body.dtype(); dt == te.I32 || dt == te.Bool {
		return dt
	}
	return te.F32
}

// whole reports whether body can be printed without indices.
func whole(v *value, vars []loopVar, body expr) bool {
	reads := 0
	ok := true
	var check func(e expr)
	check = func(e expr) {
		switch e := e.(type) {
		case ivar, reduce:
			ok = false
		case access:
			if e.v.rank() == 0 {
				return
			}
			reads++
			if !equalShape(e.v.shape, v.shape) {
				ok = false
				return
			}
			for i, x := range e.idx {
				if iv, is := x.(ivar); !is || iv.name != vars[i].name {
					ok = false
				}
			}
		case unary:
			check(e.x)
		case binary:
			check(e.a)
			check(e.b)
		case sel:
			check(e.c)
			check(e.a)
			check(e.b)
		case cast:
			check(e.x)
		}
	}
	check(body)
	return ok && reads > 0
}

// empty reports whether shape has a dimension of 0 and none negative.
func empty(shape []int) bool {
	zero := false
	for _, d := range shape {
		if d < 0 {
			return false
		}
		zero = zero || d == 0
	}
	return zero
}

func equalShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// whereClause returns " where ..." for the statement's and its reductions'
// variables that no access uses alone as an index of the same size, or that
// one uses alone as an index of another size.
func whereClause(vars []loopVar, body expr) string {
	all := append([]loopVar{}, vars...)
	walk(body, func(e expr) {
		if r, ok := e.(reduce); ok {
			all = append(all, r.vars...)
		}
	})
	size := map[string]int{}
	for _, a := range all {
		size[a.name] = a.size
	}
	direct := map[string]bool{}
	clash := map[string]bool{}
	walk(body, func(e expr) {
		a, ok := e.(access)
		if !ok {
			return
		}
		for d, x := range a.idx {
			if iv, ok := x.(ivar); ok {
				if a.v.shape[d] == size[iv.name] {
					direct[iv.name] = true
				} else {
					clash[iv.name] = true
				}
			}
		}
	})
	var parts []string
	listed := map[string]bool{}
	for _, a := range all {
		if listed[a.name] {
			continue // a reduction's axes used twice (a sum and its count)
		}
		listed[a.name] = true
		if !direct[a.name] || clash[a.name] {
			parts = append(parts, fmt.Sprintf("%s in 0..%d", a.name, a.size))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " where " + strings.Join(parts, ", ")
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
