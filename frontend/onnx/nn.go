package onnx

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"tec/te"
)

// batchIndex reads the leading (batch) dimensions of a tensor of shape,
// broadcast against the batch variables bv.
func batchIndex(shape []int, bv []loopVar) []expr {
	off := len(bv) - len(shape)
	idx := make([]expr, len(shape))
	for d := range shape {
		if shape[d] == 1 && bv[off+d].size != 1 {
			idx[d] = ilit(0)
		} else {
			idx[d] = ivar{bv[off+d].name}
		}
	}
	return idx
}

func matmulOp(n *node) error {
	a, err := n.need(0)
	if err != nil {
		return err
	}
	b, err := n.need(1)
	if err != nil {
		return err
	}
	if a.rank() == 0 || b.rank() == 0 {
		return fmt.Errorf("MatMul of a scalar")
	}
	as, bs := a.shape, b.shape
	if a.rank() == 1 {
		as = []int{1, as[0]}
	}
	if b.rank() == 1 {
		bs = []int{bs[0], 1}
	}
	m, k, k2, nn := as[len(as)-2], as[len(as)-1], bs[len(bs)-2], bs[len(bs)-1]
	if k != k2 {
		return fmt.Errorf("MatMul of %v and %v: inner dimensions %d and %d differ", a.shape, b.shape, k, k2)
	}
	batch, err := broadcastShape(as[:len(as)-2], bs[:len(bs)-2])
	if err != nil {
		return err
	}
	shape := append([]int{}, batch...)
	if a.rank() > 1 {
		shape = append(shape, m)
	}
	if b.rank() > 1 {
		shape = append(shape, nn)
	}
	vs := vars(shape)
	bv := vs[:len(batch)]
	var mi, ni expr = ilit(0), ilit(0)
	rest := vs[len(batch):]
	if a.rank() > 1 {
		mi, rest = ivar{rest[0].name}, rest[1:]
	}
	if b.rank() > 1 {
		ni = ivar{rest[0].name}
	}
	kk := n.im.raxis(k)
	ai := append(batchIndex(as[:len(as)-2], bv), mi, ivar{kk.name})
	bi := append(batchIndex(bs[:len(bs)-2], bv), ivar{kk.name}, ni)
	if a.rank() == 1 {
		ai = ai[len(ai)-1:]
	}
	if b.rank() == 1 {
		bi = bi[:len(bi)-1]
	}
	body := reduce{"sum", []loopVar{kk}, mul(n.im.read(a, ai...), n.im.read(b, bi...))}
	out := n.out(0, te.F32, shape)
	fn := ""
	switch {
	case !sameFloat(a, b):
	case a.rank() == 2 && b.rank() == 2:
		fn = "matmul(%s)"
	case a.rank() == 3 && b.rank() == 3 && a.shape[0] == b.shape[0]:
		fn = "batch_matmul(%s)"
	}
	if fn == "" {
		return n.im.define(out, vs, body)
	}
	return n.im.defineCall(out, fn, []*value{a, b}, vs, body)
}

// sameFloat reports whether the values have one float dtype, as the
// standard library's functions, generic over it (T), want.
func sameFloat(vs ...*value) bool {
	for _, v := range vs {
		if v.dt != vs[0].dt || v.dt != te.F32 && v.dt != te.F16 && v.dt != te.BF16 {
			return false
		}
	}
	return true
}

func gemmOp(n *node) error {
	a, err := n.need(0)
	if err != nil {
		return err
	}
	b, err := n.need(1)
	if err != nil {
		return err
	}
	c := n.in(2)
	alpha, beta := n.float("alpha", 1), n.float("beta", 1)
	ta, tb := n.int("transA", 0) != 0, n.int("transB", 0) != 0
	if a.rank() != 2 || b.rank() != 2 {
		return fmt.Errorf("Gemm of ranks %d and %d (want 2)", a.rank(), b.rank())
	}
	m, k := a.shape[0], a.shape[1]
	if ta {
		m, k = k, m
	}
	k2, nn := b.shape[0], b.shape[1]
	if tb {
		k2, nn = nn, k2
	}
	if k != k2 {
		return fmt.Errorf("Gemm inner dimensions %d and %d differ", k, k2)
	}
	shape := []int{m, nn}
	vs := vars(shape)
	kk := n.im.raxis(k)
	mi, ni, ki := ivar{vs[0].name}, ivar{vs[1].name}, ivar{kk.name}
	ai, bi := []expr{mi, ki}, []expr{ki, ni}
	if ta {
		ai = []expr{ki, mi}
	}
	if tb {
		bi = []expr{ni, ki}
	}
	var body expr = reduce{"sum", []loopVar{kk}, mul(n.im.read(a, ai...), n.im.read(b, bi...))}
	body = mul(flit(alpha), body)
	if c != nil {
		if _, err := broadcastShape(c.shape, shape); err != nil {
			return err
		}
		body = add(body, mul(flit(beta), n.im.bcast(c, vs)))
	}
	out := n.out(0, te.F32, shape)
	if !ta && alpha == 1 && beta == 1 && c != nil && c.rank() == 1 && c.shape[0] == nn && sameFloat(a, b, c) {
		if _, ok := c.uniform(); !ok { // a bias of equal values is a number
			fn := "linear(%s)"
			if tb {
				fn = "linear_t(%s)" // torch.nn.Linear's [out, in] weight
			}
			return n.im.defineCall(out, fn, []*value{a, b, c}, vs, body)
		}
	}
	return n.im.define(out, vs, body)
}

// window is the geometry of a convolution or pooling along its spatial
// axes: kernel size, stride, dilation, padding at the start and end, and
// the input and output sizes.
type window struct {
	k, s, d, pb, pe, in, out []int
}

// readWindow reads the attributes of Conv, MaxPool and AveragePool for an
// input of spatial size in and kernel size k; ceil says to round the
// output size up (ceil_mode).
func readWindow(n *node, in, k []int, ceil bool) (*window, error) {
	r := len(in)
	w := &window{k: k, in: in, s: ones(r), d: ones(r), pb: make([]int, r), pe: make([]int, r), out: make([]int, r)}
	if s, ok := n.ints("strides"); ok {
		if len(s) != r {
			return nil, fmt.Errorf("strides %v for %d spatial axes", s, r)
		}
		if err := inRange("strides", s, 1); err != nil {
			return nil, err
		}
		w.s = s
	}
	if d, ok := n.ints("dilations"); ok {
		if len(d) != r {
			return nil, fmt.Errorf("dilations %v for %d spatial axes", d, r)
		}
		if err := inRange("dilations", d, 1); err != nil {
			return nil, err
		}
		w.d = d
	}
	if err := inRange("kernel shape", k, 1); err != nil {
		return nil, err
	}
	autoPad := n.str("auto_pad", "NOTSET")
	if p, ok := n.ints("pads"); ok {
		if len(p) != 2*r {
			return nil, fmt.Errorf("pads %v for %d spatial axes", p, r)
		}
		if autoPad != "NOTSET" {
			return nil, fmt.Errorf("both pads and auto_pad %s", autoPad)
		}
		if err := inRange("pads", p, 0); err != nil {
			return nil, err
		}
		copy(w.pb, p[:r])
		copy(w.pe, p[r:])
	}
	for i := range in {
		ext := w.d[i]*(k[i]-1) + 1
		switch autoPad {
		case "NOTSET", "VALID":
		case "SAME_UPPER", "SAME_LOWER":
			out := (in[i] + w.s[i] - 1) / w.s[i]
			total := max((out-1)*w.s[i]+ext-in[i], 0)
			w.pb[i], w.pe[i] = total/2, total-total/2
			if autoPad == "SAME_LOWER" {
				w.pb[i], w.pe[i] = w.pe[i], w.pb[i]
			}
		default:
			return nil, fmt.Errorf("auto_pad %q is not supported", autoPad)
		}
		span := in[i] + w.pb[i] + w.pe[i] - ext
		if span < 0 {
			return nil, fmt.Errorf("the window of %d is larger than the padded input %d", ext, in[i]+w.pb[i]+w.pe[i])
		}
		w.out[i] = span/w.s[i] + 1
		if ceil && span%w.s[i] != 0 {
			w.out[i]++
			// PyTorch's rule: the last window starts inside the input or
			// its start padding
			if (w.out[i]-1)*w.s[i] >= in[i]+w.pb[i] {
				w.out[i]--
			}
		}
	}
	return w, nil
}

// inRange checks that every element of the attribute name's values is
// from least to te.MaxElements: no size or step of a tensor is larger, and
// the window's arithmetic stays far from overflowing.
func inRange(name string, vals []int, least int) error {
	for _, x := range vals {
		if x < least || x > te.MaxElements {
			return fmt.Errorf("%s %v: each must be %d to %d", name, vals, least, te.MaxElements)
		}
	}
	return nil
}

// positive reports whether every element of s is above 0.
func positive(s []int) bool {
	for _, x := range s {
		if x <= 0 {
			return false
		}
	}
	return true
}

func ones(r int) []int {
	out := make([]int, r)
	for i := range out {
		out[i] = 1
	}
	return out
}

// at returns the input index of spatial axis i at output position o and
// kernel position k, and the condition that it lies inside the input
// (nil when it always does).
func (w *window) at(i int, o, k expr) (expr, expr) {
	e := add(add(mul(ilit(w.s[i]), o), mul(ilit(w.d[i]), k)), ilit(-w.pb[i]))
	var cond expr
	if w.pb[i] > 0 {
		cond = binary{">=", e, ilit(0)}
	}
	if last := w.s[i]*(w.out[i]-1) + w.d[i]*(w.k[i]-1) - w.pb[i]; last >= w.in[i] {
		cond = and(cond, binary{"<", e, ilit(w.in[i])})
	}
	return e, cond
}

// uniform reports whether every spatial axis has the same stride,
// dilation and symmetric padding, and a square kernel: what the standard
// library's 2-D functions take.
func (w *window) uniform() bool {
	for i := range w.k {
		if w.k[i] != w.k[0] || w.s[i] != w.s[0] || w.d[i] != w.d[0] || w.pb[i] != w.pb[0] || w.pe[i] != w.pb[0] {
			return false
		}
	}
	return true
}

func convOp(n *node) error {
	x, err := n.need(0)
	if err != nil {
		return err
	}
	wt, err := n.need(1)
	if err != nil {
		return err
	}
	b := n.in(2)
	if x.rank() < 3 || wt.rank() != x.rank() {
		return fmt.Errorf("Conv of input %v and weight %v (want NC... and OC...)", x.shape, wt.shape)
	}
	r := x.rank() - 2
	groups := n.int("group", 1)
	batch, c, o, cg := x.shape[0], x.shape[1], wt.shape[0], wt.shape[1]
	if groups <= 0 || c%groups != 0 || o%groups != 0 || c/groups != cg {
		return fmt.Errorf("Conv of %d input channels in %d groups with weight %v", c, groups, wt.shape)
	}
	k := wt.shape[2:]
	if ks, ok := n.ints("kernel_shape"); ok && !equalShape(ks, k) {
		return fmt.Errorf("kernel_shape %v differs from the weight's %v", ks, k)
	}
	w, err := readWindow(n, x.shape[2:], k, false)
	if err != nil {
		return err
	}
	shape := append([]int{batch, o}, w.out...)
	vs := vars(shape)
	og := o / groups
	var axes []loopVar
	var ci expr = ilit(0)
	if cg > 1 {
		ca := n.im.raxis(cg)
		axes = append(axes, ca)
		ci = ivar{ca.name}
	}
	oi := ivar{vs[1].name}
	xc := add(mul(idiv(oi, og), ilit(cg)), ci) // the input channel
	if groups == 1 {
		xc = ci
	}
	xi := []expr{ivar{vs[0].name}, xc}
	wi := []expr{oi, ci}
	var cond expr
	for i := 0; i < r; i++ {
		ka := n.im.raxis(k[i])
		axes = append(axes, ka)
		e, c := w.at(i, ivar{vs[2+i].name}, ivar{ka.name})
		xi = append(xi, e)
		wi = append(wi, ivar{ka.name})
		if c != nil {
			cond = and(cond, c)
		}
	}
	term := mul(n.im.read(x, xi...), n.im.read(wt, wi...))
	if cond != nil {
		term = sel{cond, term, flit(0)}
	}
	var body expr = reduce{"sum", axes, term}
	if b != nil {
		body = add(body, n.im.read(b, oi))
	}
	out := n.out(0, te.F32, shape)
	if r == 2 && w.uniform() && sameFloat(x, wt) && (b == nil || sameFloat(x, b)) {
		args := fmt.Sprintf("%d, %d, %d, %d", w.s[0], w.pb[0], w.d[0], groups)
		if b != nil {
			return n.im.defineCall(out, "conv2d_bias(%s, "+args+")", []*value{x, wt, b}, vs, body)
		}
		return n.im.defineCall(out, "conv2d(%s, "+args+")", []*value{x, wt}, vs, body)
	}
	return n.im.define(out, vs, body)
}

func poolOp(kind string) func(*node) error {
	return func(n *node) error {
		x, err := n.need(0)
		if err != nil {
			return err
		}
		if n.numOutputs() > 1 {
			return fmt.Errorf("the Indices output of MaxPool is not supported")
		}
		if x.rank() < 3 {
			return fmt.Errorf("%s of rank %d (want NC...)", n.p.GetOpType(), x.rank())
		}
		k, ok := n.ints("kernel_shape")
		if !ok || len(k) != x.rank()-2 {
			return fmt.Errorf("kernel_shape %v for %d spatial axes", k, x.rank()-2)
		}
		ceil := n.int("ceil_mode", 0) != 0
		includePad := true
		if kind == "max" {
			n.attr("storage_order") // it orders only the Indices output
		} else {
			includePad = n.int("count_include_pad", 0) != 0
			if _, ok := n.attrs["dilations"]; ok {
				return fmt.Errorf("AveragePool with dilations is not supported")
			}
		}
		w, err := readWindow(n, x.shape[2:], k, ceil)
		if err != nil {
			return err
		}
		shape := append([]int{x.shape[0], x.shape[1]}, w.out...)
		vs := vars(shape)
		xi := []expr{ivar{vs[0].name}, ivar{vs[1].name}}
		var axes []loopVar
		var inside, padded expr // inside the input; inside the padded input
		count := 1
		for i := range k {
			ka := n.im.raxis(k[i])
			axes = append(axes, ka)
			e, c := w.at(i, ivar{vs[2+i].name}, ivar{ka.name})
			xi = append(xi, e)
			if c != nil {
				inside = and(inside, c)
			}
			if last := w.s[i]*(w.out[i]-1) + w.d[i]*(w.k[i]-1) - w.pb[i]; last >= w.in[i]+w.pe[i] {
				padded = and(padded, binary{"<", e, ilit(w.in[i] + w.pe[i])})
			}
			count *= k[i]
		}
		v := n.im.read(x, xi...)
		out := n.out(0, te.F32, shape)
		var body expr
		if kind == "max" {
			if inside != nil {
				v = sel{inside, v, flit(math.Inf(-1))}
			}
			body = reduce{"max", axes, v}
			if len(k) == 2 && w.uniform() && padded == nil && w.d[0] == 1 && sameFloat(x) {
				return n.im.defineCall(out, fmt.Sprintf("max_pool2d(%%s, %d, %d, %d)", k[0], w.s[0], w.pb[0]), []*value{x}, vs, body)
			}
			return n.im.define(out, vs, body)
		}
		if inside != nil {
			v = sel{inside, v, flit(0)}
		}
		var divisor expr = flit(float64(count))
		switch {
		case !includePad && inside != nil:
			divisor = reduce{"sum", axes, sel{inside, flit(1), flit(0)}}
		case includePad && padded != nil:
			divisor = reduce{"sum", axes, sel{padded, flit(1), flit(0)}}
		}
		body = div(reduce{"sum", axes, v}, divisor)
		if len(k) == 2 && w.uniform() && padded == nil && (includePad || inside == nil) && sameFloat(x) {
			return n.im.defineCall(out, fmt.Sprintf("avg_pool2d(%%s, %d, %d, %d)", k[0], w.s[0], w.pb[0]), []*value{x}, vs, body)
		}
		return n.im.define(out, vs, body)
	}
}

func globalPoolOp(kind string) func(*node) error {
	return func(n *node) error {
		x, err := n.need(0)
		if err != nil {
			return err
		}
		if x.rank() < 3 {
			return fmt.Errorf("%s of rank %d (want NC...)", n.p.GetOpType(), x.rank())
		}
		shape := []int{x.shape[0], x.shape[1]}
		count := 1
		xi := []expr{ivar{"i0"}, ivar{"i1"}}
		var axes []loopVar
		for _, s := range x.shape[2:] {
			shape = append(shape, 1)
			a := n.im.raxis(s)
			axes = append(axes, a)
			xi = append(xi, ivar{a.name})
			count *= s
		}
		vs := vars(shape)
		var body expr
		if kind == "max" {
			body = reduce{"max", axes, n.im.read(x, xi...)}
		} else {
			body = div(reduce{"sum", axes, n.im.read(x, xi...)}, flit(float64(count)))
		}
		return n.im.define(n.out(0, te.F32, shape), vs, body)
	}
}

func batchNormOp(n *node) error {
	var in [5]*value
	for i := range in {
		v, err := n.need(i)
		if err != nil {
			return err
		}
		in[i] = v
	}
	x, scale, bias, mean, variance := in[0], in[1], in[2], in[3], in[4]
	if x.rank() < 2 {
		return fmt.Errorf("BatchNormalization of rank %d", x.rank())
	}
	for _, v := range in[1:] {
		if !equalShape(v.shape, x.shape[1:2]) {
			return fmt.Errorf("the statistics and affine parameters must have shape [%d], not %v", x.shape[1], v.shape)
		}
	}
	if n.int("training_mode", 0) != 0 || n.numOutputs() > 1 {
		return fmt.Errorf("BatchNormalization in training mode is not supported")
	}
	n.attr("momentum") // used in training only
	eps := n.float("epsilon", 1e-5)
	if x.rank() < 2 {
		return fmt.Errorf("BatchNormalization of rank %d", x.rank())
	}
	vs := vars(x.shape)
	c := ivar{vs[1].name}
	body := add(mul(mul(sub(n.im.bcast(x, vs), n.im.read(mean, c)),
		call("rsqrt", add(n.im.read(variance, c), flit(eps)))), n.im.read(scale, c)), n.im.read(bias, c))
	out := n.out(0, te.F32, x.shape)
	if x.rank() == 4 && sameFloat(x, mean, variance, scale, bias) {
		return n.im.defineCall(out, fmt.Sprintf("batchnorm2d(%%s, %s)", formatLit(lit{eps, te.F32})), []*value{x, mean, variance, scale, bias}, vs, body)
	}
	return n.im.define(out, vs, body)
}

// withAxes returns the outer variables of vs (up to len(outer)) followed by
// inner.
func withAxes(vs []loopVar, outer int, inner []loopVar) []expr {
	return append(ivars(vs[:outer]), ivars(inner)...)
}

func layerNormOp(n *node) error {
	x, err := n.need(0)
	if err != nil {
		return err
	}
	scale, err := n.need(1)
	if err != nil {
		return err
	}
	bias := n.in(2)
	if n.numOutputs() > 1 {
		return fmt.Errorf("the Mean and InvStdDev outputs are not supported")
	}
	axis, err := normAxis(n.int("axis", -1), x.rank())
	if err != nil {
		return err
	}
	eps := n.float("epsilon", 1e-5)
	n.attr("stash_type") // the precision of the statistics: tec's is f32 or wider
	for _, v := range []*value{scale, bias} {
		if v == nil {
			continue
		}
		if _, err := broadcastShape(v.shape, x.shape[axis:]); err != nil || v.rank() > x.rank()-axis {
			return fmt.Errorf("Scale and B of shape %v do not fit the normalised axes %v", v.shape, x.shape[axis:])
		}
	}
	out := n.out(0, te.F32, x.shape)
	if x.rank() == 2 && axis == 1 && bias != nil && scale.rank() == 1 && bias.rank() == 1 && scale.constant != nil && bias.constant != nil && sameFloat(x, scale, bias) {
		_, su := scale.uniform()
		_, bu := bias.uniform()
		if !su && !bu {
			return n.im.defineCall(out, fmt.Sprintf("layernorm(%%s, %s)", formatLit(lit{eps, te.F32})), []*value{x, scale, bias}, vars(x.shape), layerNormBody(n, x, scale, bias, axis, eps))
		}
	}
	vs := vars(x.shape)
	normed, err := normalized(n, x, axis, eps, vs)
	if err != nil {
		return err
	}
	inner := vs[axis:]
	body := mul(normed, n.im.bcast(scale, inner))
	if bias != nil {
		body = add(body, n.im.bcast(bias, inner))
	}
	return n.im.define(out, vs, body)
}

// normalized defines x's mean and variance over its axes from axis on,
// as tensors of the outer axes (moments), and returns x at vs normalised
// by them: (x - mean) * rsqrt(var + eps).
func normalized(n *node, x *value, axis int, eps float64, vs []loopVar) (expr, error) {
	mean, variance, err := moments(n, x, x.shape[:axis], x.shape[axis:], func(ov, red []loopVar) []expr { return withAxes(ov, axis, red) })
	if err != nil {
		return nil, err
	}
	stat := ivars(vs[:axis])
	return mul(sub(n.im.read(x, ivars(vs)...), n.im.read(mean, stat...)),
		call("rsqrt", add(n.im.read(variance, stat...), flit(eps)))), nil
}

// moments defines the mean and the variance of groups of x's elements,
// as tensors of shape outer: element ov's group is x read at at(ov, red)
// for red over reduction axes of the sizes given.
func moments(n *node, x *value, outer, sizes []int, at func(ov, red []loopVar) []expr) (mean, variance *value, err error) {
	count := 1
	for _, s := range sizes {
		count *= s
	}
	axes := func() []loopVar {
		red := make([]loopVar, 0, len(sizes))
		for _, s := range sizes {
			red = append(red, n.im.raxis(s))
		}
		return red
	}
	ov := vars(outer)
	mean = n.temp("mean", te.F32, outer)
	red := axes()
	if err := n.im.define(mean, ov, div(reduce{"sum", red, n.im.read(x, at(ov, red)...)}, flit(float64(count)))); err != nil {
		return nil, nil, err
	}
	variance = n.temp("var", te.F32, outer)
	red = axes()
	dev := sub(n.im.read(x, at(ov, red)...), n.im.read(mean, ivars(ov)...))
	if err := n.im.define(variance, ov, div(reduce{"sum", red, binary{"**", dev, ilit(2)}}, flit(float64(count)))); err != nil {
		return nil, nil, err
	}
	return mean, variance, nil
}

// instanceNormOp is InstanceNormalization: each channel of each batch
// entry (x's axes 0 and 1) normalised over the spatial axes, then scaled
// and shifted by the channel's scale and B.
func instanceNormOp(n *node) error {
	x, err := n.need(0)
	if err != nil {
		return err
	}
	if x.rank() < 3 {
		return fmt.Errorf("the input has rank %d; InstanceNormalization takes [N, C, D1, ...]", x.rank())
	}
	scale, err := n.need(1)
	if err != nil {
		return err
	}
	bias, err := n.need(2)
	if err != nil {
		return err
	}
	c := x.shape[1]
	for _, v := range []*value{scale, bias} {
		if v.rank() != 1 || v.shape[0] != c {
			return fmt.Errorf("scale and B must have shape [%d] (the channels), not %v", c, v.shape)
		}
	}
	vs := vars(x.shape)
	normed, err := normalized(n, x, 2, n.float("epsilon", 1e-5), vs)
	if err != nil {
		return err
	}
	ch := ivars(vs[1:2])
	body := add(mul(normed, n.im.read(scale, ch...)), n.im.read(bias, ch...))
	return n.im.define(n.out(0, te.F32, x.shape), vs, body)
}

// layerNormBody is layer normalisation as one expression, for folding.
func layerNormBody(n *node, x, scale, bias *value, axis int, eps float64) expr {
	vs := vars(x.shape)
	ov := vs[:axis]
	var red, red2, red3 []loopVar
	for _, s := range x.shape[axis:] {
		red = append(red, n.im.raxis(s))
		red2 = append(red2, n.im.raxis(s))
		red3 = append(red3, n.im.raxis(s))
	}
	cnt := 1
	for _, s := range x.shape[axis:] {
		cnt *= s
	}
	count := flit(float64(cnt))
	mean := func(r []loopVar) expr {
		return div(reduce{"sum", r, n.im.read(x, withAxes(ov, axis, r)...)}, count)
	}
	variance := div(reduce{"sum", red2, binary{"**", sub(n.im.read(x, withAxes(ov, axis, red2)...), mean(red3)), ilit(2)}}, count)
	body := mul(mul(sub(n.im.read(x, ivars(vs)...), mean(red)), call("rsqrt", add(variance, flit(eps)))), n.im.bcast(scale, vs[axis:]))
	return add(body, n.im.bcast(bias, vs[axis:]))
}

func softmaxOp(logarithm bool) func(*node) error {
	return func(n *node) error {
		x, err := n.need(0)
		if err != nil {
			return err
		}
		axis, err := normAxis(n.int("axis", -1), x.rank())
		if err != nil {
			return err
		}
		vs := vars(x.shape)
		out := n.out(0, te.F32, x.shape)
		// the reduced shape keeps axis as 1
		rshape := append([]int{}, x.shape...)
		rshape[axis] = 1
		rv := vars(rshape)
		ka := n.im.raxis(x.shape[axis])
		along := func(a loopVar) []expr {
			idx := ivars(rv)
			idx[axis] = ivar{a.name}
			return idx
		}
		at := func(v *value) expr { // v (reduced) at the output's position
			idx := ivars(vs)
			idx[axis] = ilit(0)
			return n.im.read(v, idx...)
		}
		if !logarithm && x.rank() == 2 && axis == 1 && x.constant == nil && sameFloat(x) {
			return n.im.defineCall(out, "softmax(%s)", []*value{x}, vs, nil)
		}
		mx := n.temp("max", te.F32, rshape)
		if err := n.im.define(mx, rv, reduce{"max", []loopVar{ka}, n.im.read(x, along(ka)...)}); err != nil {
			return err
		}
		if logarithm {
			sum := n.temp("sum", te.F32, rshape)
			kb := n.im.raxis(x.shape[axis])
			idx := along(kb)
			mi := ivars(rv)
			if err := n.im.define(sum, rv, reduce{"sum", []loopVar{kb}, call("exp", sub(n.im.read(x, idx...), n.im.read(mx, mi...)))}); err != nil {
				return err
			}
			return n.im.define(out, vs, sub(sub(n.im.read(x, ivars(vs)...), at(mx)), call("log", at(sum))))
		}
		e := n.temp("exp", te.F32, x.shape)
		if err := n.im.define(e, vs, call("exp", sub(n.im.read(x, ivars(vs)...), at(mx)))); err != nil {
			return err
		}
		sum := n.temp("sum", te.F32, rshape)
		kb := n.im.raxis(x.shape[axis])
		if err := n.im.define(sum, rv, reduce{"sum", []loopVar{kb}, n.im.read(e, along(kb)...)}); err != nil {
			return err
		}
		return n.im.define(out, vs, div(n.im.read(e, ivars(vs)...), at(sum)))
	}
}

func reduceOp(kind string) func(*node) error {
	return func(n *node) error {
		x, err := n.need(0)
		if err != nil {
			return err
		}
		// The axes: an input since opset 13 (ReduceSum) or 18 (the
		// others), an attribute before.
		axes, ok, err := axesInput(n)
		if err != nil {
			return err
		}
		keep := n.int("keepdims", 1) != 0
		if !ok || len(axes) == 0 {
			if n.int("noop_with_empty_axes", 0) != 0 {
				return identityOp(n)
			}
			axes = nil
			for d := range x.shape {
				axes = append(axes, d)
			}
		}
		red := map[int]bool{}
		for _, a := range axes {
			a, err := normAxis(a, x.rank())
			if err != nil {
				return err
			}
			red[a] = true
		}
		var shape []int
		for d, s := range x.shape {
			switch {
			case !red[d]:
				shape = append(shape, s)
			case keep:
				shape = append(shape, 1)
			}
		}
		vs := vars(shape)
		idx := make([]expr, x.rank())
		var raxes []loopVar
		count := 1
		o := 0
		for d, s := range x.shape {
			if red[d] {
				a := n.im.raxis(s)
				raxes = append(raxes, a)
				idx[d] = ivar{a.name}
				count *= s
				if keep {
					o++
				}
				continue
			}
			idx[d] = ivar{vs[o].name}
			o++
		}
		v := n.im.read(x, idx...)
		var body expr
		switch kind {
		case "mean":
			body = div(reduce{"sum", raxes, v}, flit(float64(count)))
		default:
			body = reduce{kind, raxes, v}
		}
		return n.im.define(n.out(0, x.dt, shape), vs, body)
	}
}

// argOp imports ArgMax and ArgMin: the first position of the greatest
// (least) value along axis, as an i32, which is what the language's
// argmax and argmin give.
func argOp(kind string) func(*node) error {
	return func(n *node) error {
		x, err := n.need(0)
		if err != nil {
			return err
		}
		if n.int("select_last_index", 0) != 0 {
			return fmt.Errorf("select_last_index 1 (the last position on ties) is not supported: tec's %s gives the first", kind)
		}
		axis, err := normAxis(n.int("axis", 0), x.rank())
		if err != nil {
			return err
		}
		keep := n.int("keepdims", 1) != 0
		var shape []int
		for d, s := range x.shape {
			switch {
			case d != axis:
				shape = append(shape, s)
			case keep:
				shape = append(shape, 1)
			}
		}
		vs := vars(shape)
		ka := n.im.raxis(x.shape[axis])
		idx := make([]expr, 0, x.rank())
		o := 0
		for d := range x.shape {
			if d == axis {
				idx = append(idx, ivar{ka.name})
				if keep {
					o++
				}
				continue
			}
			idx = append(idx, ivar{vs[o].name})
			o++
		}
		return n.im.define(n.out(0, te.I32, shape), vs, reduce{kind, []loopVar{ka}, n.im.read(x, idx...)})
	}
}

// einsumOp is Einsum: an equation of one letter an axis (explicit, with
// "->" and the output's letters, or implicit, the output being the letters
// that appear once, in alphabetical order), as one statement: the output's
// letters index it, every other letter is summed over, and a letter
// repeated within one operand reads its diagonal. Contractions,
// permutations, diagonals, traces and outer products are all of this
// form; an ellipsis ("...") is refused.
func einsumOp(n *node) error {
	eq := strings.ReplaceAll(n.str("equation", ""), " ", "")
	if eq == "" {
		return fmt.Errorf("Einsum without an equation")
	}
	lhs, rhs, explicit := strings.Cut(eq, "->")
	if strings.Contains(eq, ".") {
		return fmt.Errorf("Einsum %q: an ellipsis (...) is not supported; write the axes out", eq)
	}
	terms := strings.Split(lhs, ",")
	if len(terms) != len(n.p.GetInput()) {
		return fmt.Errorf("Einsum %q has %d operands in its equation and %d inputs", eq, len(terms), len(n.p.GetInput()))
	}
	size := map[rune]int{}
	count := map[rune]int{}
	ins := make([]*value, len(terms))
	for i, term := range terms {
		x, err := n.need(i)
		if err != nil {
			return err
		}
		if x.dt != te.F32 && x.dt != te.F16 && x.dt != te.BF16 {
			return fmt.Errorf("Einsum of %s tensors is not supported (float ones are)", x.dt)
		}
		ins[i] = x
		if len(term) != x.rank() {
			return fmt.Errorf("Einsum %q: operand %d (%q) has rank %d", eq, i, term, x.rank())
		}
		for d, r := range term {
			if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z') {
				return fmt.Errorf("Einsum %q: %q is not a letter", eq, r)
			}
			if s, ok := size[r]; ok && s != x.shape[d] {
				return fmt.Errorf("Einsum %q: axis %c has sizes %d and %d", eq, r, s, x.shape[d])
			}
			size[r] = x.shape[d]
			count[r]++
		}
	}
	var out []rune
	if explicit {
		for _, r := range rhs {
			if _, ok := size[r]; !ok {
				return fmt.Errorf("Einsum %q: output axis %c is in no operand", eq, r)
			}
			if slices.Contains(out, r) {
				return fmt.Errorf("Einsum %q: output axis %c appears twice", eq, r)
			}
			out = append(out, r)
		}
	} else {
		for r, c := range count {
			if c == 1 {
				out = append(out, r)
			}
		}
		slices.Sort(out)
	}
	shape := make([]int, len(out))
	for i, r := range out {
		shape[i] = size[r]
	}
	vs := vars(shape)
	index := map[rune]expr{}
	for i, r := range out {
		index[r] = ivar{vs[i].name}
	}
	var summed []loopVar
	for _, term := range terms {
		for _, r := range term {
			if _, ok := index[r]; !ok {
				k := n.im.raxis(size[r])
				index[r] = ivar{k.name}
				summed = append(summed, k)
			}
		}
	}
	var body expr
	for i, term := range terms {
		var idx []expr
		for _, r := range term {
			idx = append(idx, index[r])
		}
		f := n.im.read(ins[i], idx...)
		if body == nil {
			body = f
		} else {
			body = mul(body, f)
		}
	}
	if len(summed) > 0 {
		body = reduce{"sum", summed, body}
	}
	return n.im.define(n.out(0, te.F32, shape), vs, body)
}

// convTransposeOp is ConvTranspose, the gradient of Conv: y[n, o, p] sums
// x[n, c, i]·w[c, o mod O/group, k] over the input channels c of o's
// group and the kernel offsets k where i·stride + k·dilation = p + pad,
// as one statement whose terms are selected where that i is a whole input
// index (the others are never read). The output size is
// stride·(in − 1) + output_padding + dilation·(k − 1) + 1 − pads, or
// output_shape, whose total padding is split as the specification says.
func convTransposeOp(n *node) error {
	x, err := n.need(0)
	if err != nil {
		return err
	}
	wt, err := n.need(1)
	if err != nil {
		return err
	}
	b := n.in(2)
	if x.rank() < 3 || wt.rank() != x.rank() {
		return fmt.Errorf("ConvTranspose of input %v and weight %v (want NC... and C O/group ...)", x.shape, wt.shape)
	}
	r := x.rank() - 2
	groups := n.int("group", 1)
	batch, c, og := x.shape[0], x.shape[1], wt.shape[1]
	if groups <= 0 || c%groups != 0 || wt.shape[0] != c {
		return fmt.Errorf("ConvTranspose of %d input channels in %d groups with weight %v", c, groups, wt.shape)
	}
	k, in := wt.shape[2:], x.shape[2:]
	if ks, ok := n.ints("kernel_shape"); ok && !equalShape(ks, k) {
		return fmt.Errorf("kernel_shape %v differs from the weight's %v", ks, k)
	}
	geom := func(name string, def int) ([]int, error) {
		v, ok := n.ints(name)
		if !ok {
			v = make([]int, r)
			for i := range v {
				v[i] = def
			}
		}
		if len(v) != r {
			return nil, fmt.Errorf("%s %v for %d spatial axes", name, v, r)
		}
		return v, inRange(name, v, min(def, 1))
	}
	s, err := geom("strides", 1)
	if err != nil {
		return err
	}
	d, err := geom("dilations", 1)
	if err != nil {
		return err
	}
	op, err := geom("output_padding", 0)
	if err != nil {
		return err
	}
	for i := range r {
		if op[i] >= max(s[i], d[i]) {
			return fmt.Errorf("output_padding %v: each must be less than its axis's stride or dilation", op)
		}
	}
	pb, pe := make([]int, r), make([]int, r)
	if p, ok := n.ints("pads"); ok {
		if len(p) != 2*r {
			return fmt.Errorf("pads %v for %d spatial axes", p, r)
		}
		if err := inRange("pads", p, 0); err != nil {
			return err
		}
		copy(pb, p[:r])
		copy(pe, p[r:])
	}
	full := make([]int, r) // the output size before padding
	for i := range r {
		full[i] = s[i]*(in[i]-1) + op[i] + d[i]*(k[i]-1) + 1
	}
	autoPad := n.str("auto_pad", "NOTSET")
	want, given := n.ints("output_shape")
	switch autoPad {
	case "NOTSET", "VALID":
	case "SAME_UPPER", "SAME_LOWER":
		if !given {
			want, given = make([]int, r), true
			for i := range r {
				want[i] = in[i] * s[i]
			}
		}
	default:
		return fmt.Errorf("auto_pad %q is not supported", autoPad)
	}
	if given {
		if len(want) != r {
			return fmt.Errorf("output_shape %v for %d spatial axes", want, r)
		}
		for i := range r {
			total := full[i] - want[i]
			if total < 0 {
				return fmt.Errorf("output_shape %v is larger than the %v the input gives", want, full)
			}
			pb[i], pe[i] = total-total/2, total/2
			if autoPad == "SAME_UPPER" {
				pb[i], pe[i] = total/2, total-total/2
			}
		}
	}
	shape := []int{batch, og * groups}
	for i := range r {
		size := full[i] - pb[i] - pe[i]
		if size <= 0 {
			return fmt.Errorf("pads %v %v leave spatial axis %d empty", pb, pe, i)
		}
		shape = append(shape, size)
	}
	vs := vars(shape)
	cg := c / groups
	oi := ivar{vs[1].name}
	var axes []loopVar
	var ci expr = ilit(0)
	if cg > 1 {
		ca := n.im.raxis(cg)
		axes = append(axes, ca)
		ci = ivar{ca.name}
	}
	xc, wo := ci, expr(oi) // the input channel, and the output channel in its group
	if groups > 1 {
		xc, wo = add(mul(idiv(oi, og), ilit(cg)), ci), imod(oi, og)
	}
	xi := []expr{ivar{vs[0].name}, xc}
	wi := []expr{xc, wo}
	var cond expr
	for i := range r {
		ka := n.im.raxis(k[i])
		axes = append(axes, ka)
		// p + pad − k·dilation, which stride·i must equal
		t := sub(add(ivar{vs[2+i].name}, ilit(pb[i])), mul(ivar{ka.name}, ilit(d[i])))
		at := t
		if s[i] > 1 {
			at = idiv(t, s[i])
			cond = and(cond, binary{"==", imod(t, s[i]), ilit(0)})
		}
		// (floor division: t >= 0 exactly where t / stride >= 0)
		cond = and(cond, and(binary{">=", at, ilit(0)}, binary{"<", at, ilit(in[i])}))
		xi = append(xi, at)
		wi = append(wi, ivar{ka.name})
	}
	var body expr = reduce{"sum", axes, sel{cond, mul(n.im.read(x, xi...), n.im.read(wt, wi...)), flit(0)}}
	if b != nil {
		body = add(body, n.im.read(b, oi))
	}
	return n.im.define(n.out(0, te.F32, shape), vs, body)
}

// groupNormOp is GroupNormalization: x's channels in num_groups groups,
// each group of each batch entry normalised over its channels and the
// spatial axes, then scaled and shifted: by the group's scale and bias
// before opset 21, by the channel's from 21 on.
func groupNormOp(n *node) error {
	x, err := n.need(0)
	if err != nil {
		return err
	}
	scale, err := n.need(1)
	if err != nil {
		return err
	}
	bias, err := n.need(2)
	if err != nil {
		return err
	}
	groups := n.int("num_groups", 0)
	if x.rank() < 3 || groups <= 0 || x.shape[1]%groups != 0 {
		return fmt.Errorf("GroupNormalization of %v in %d groups: want [N, C, D1, ...] with C a multiple of num_groups", x.shape, groups)
	}
	c := x.shape[1]
	cg := c / groups
	perChannel := n.im.opset >= 21
	want := groups
	if perChannel {
		want = c
	}
	for _, v := range []*value{scale, bias} {
		if v.rank() != 1 || v.shape[0] != want {
			return fmt.Errorf("scale and bias must have shape [%d] at opset %d, not %v", want, n.im.opset, v.shape)
		}
	}
	n.attr("stash_type") // the statistics' precision: tec's is f32 or wider
	eps := n.float("epsilon", 1e-5)
	// group g of entry b: channels g·cg + red[0], at spatial red[1:]
	sizes := append([]int{cg}, x.shape[2:]...)
	mean, variance, err := moments(n, x, []int{x.shape[0], groups}, sizes, func(ov, red []loopVar) []expr {
		idx := []expr{ivar{ov[0].name}, add(mul(ivar{ov[1].name}, ilit(cg)), ivar{red[0].name})}
		return append(idx, ivars(red[1:])...)
	})
	if err != nil {
		return err
	}
	vs := vars(x.shape)
	ch := ivar{vs[1].name}
	stat := []expr{ivar{vs[0].name}, idiv(ch, cg)}
	normed := mul(sub(n.im.read(x, ivars(vs)...), n.im.read(mean, stat...)), call("rsqrt", add(n.im.read(variance, stat...), flit(eps))))
	at := stat[1]
	if perChannel {
		at = ch
	}
	body := add(mul(normed, n.im.read(scale, at)), n.im.read(bias, at))
	return n.im.define(n.out(0, te.F32, x.shape), vs, body)
}

// topKOp is TopK with K known at import: each element's rank along the
// axis — how many elements come before it, larger (smallest: smaller)
// or equal at a lower index, ONNX's order — counted by a masked sum, and
// output j the element of rank j and its index, each a masked sum over the
// axis. Quadratic in the axis's length; the outputs are sorted (which
// sorted 0 allows).
func topKOp(n *node) error {
	x, err := n.need(0)
	if err != nil {
		return err
	}
	ks, ok, err := n.constInts(1)
	if err != nil {
		return err
	}
	if !ok || len(ks) != 1 {
		return fmt.Errorf("TopK needs K, one value known at import")
	}
	axis, err := normAxis(n.int("axis", -1), x.rank())
	if err != nil {
		return err
	}
	k, size := ks[0], x.shape[axis]
	if k < 0 || k > size {
		return fmt.Errorf("K %d is out of range for an axis of size %d", k, size)
	}
	before := ">"
	if n.int("largest", 1) == 0 {
		before = "<"
	}
	n.int("sorted", 1) // the outputs are sorted either way
	vs := vars(x.shape)
	i := ivar{vs[axis].name}
	other := n.im.raxis(size)
	at := ivars(vs)
	at[axis] = ivar{other.name}
	xi, xo := n.im.read(x, ivars(vs)...), n.im.read(x, at...)
	first := or(binary{before, xo, xi}, and(binary{"==", xo, xi}, binary{"<", ivar{other.name}, i}))
	rank := n.temp("rank", te.I32, x.shape)
	if err := n.im.define(rank, vs, reduce{"sum", []loopVar{other}, sel{first, ilit(1), ilit(0)}}); err != nil {
		return err
	}
	shape := append([]int{}, x.shape...)
	shape[axis] = k
	out := vars(shape)
	// ofRank sums, over the axis, f at the element whose rank is the
	// output's position: that element's value or index.
	ofRank := func(f func(at []expr, j expr) expr, zero expr) expr {
		j := n.im.raxis(size)
		at := ivars(out)
		at[axis] = ivar{j.name}
		return reduce{"sum", []loopVar{j}, sel{binary{"==", n.im.read(rank, at...), ivar{out[axis].name}}, f(at, ivar{j.name}), zero}}
	}
	values := ofRank(func(at []expr, _ expr) expr { return n.im.read(x, at...) }, lit{0, x.dt})
	if err := n.im.define(n.out(0, x.dt, shape), out, values); err != nil {
		return err
	}
	if outs := n.p.GetOutput(); len(outs) < 2 || outs[1] == "" {
		return nil
	}
	indices := ofRank(func(_ []expr, j expr) expr { return j }, ilit(0))
	return n.im.define(n.out(1, te.I32, shape), out, indices)
}
