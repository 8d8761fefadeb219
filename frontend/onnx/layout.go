package onnx

import (
	"fmt"
	"math"
	"slices"

	"tec/te"
)

// reshapeIndex returns the index of the element of a tensor of shape in
// that is element vs of the same data read as shape out (row-major). The
// dimensions of size 1 are dropped, and the others matched in groups of
// equal size, so that [1, 8, 32] as [1, 8, 4, 8] reads x[0, i1, i2 * 8 + i3].
func reshapeIndex(in []int, vs []loopVar) []expr {
	idx := make([]expr, len(in))
	var ins []int // positions of in's dimensions that are not 1
	for d, n := range in {
		idx[d] = ilit(0)
		if n != 1 {
			ins = append(ins, d)
		}
	}
	var outs []loopVar
	for _, a := range vs {
		if a.size != 1 {
			outs = append(outs, a)
		}
	}
	i, j := 0, 0
	for i < len(ins) && j < len(outs) {
		gi, gj := []int{ins[i]}, []loopVar{outs[j]}
		pi, pj := in[ins[i]], outs[j].size
		i, j = i+1, j+1
		for pi != pj {
			if pi < pj {
				gi = append(gi, ins[i])
				pi *= in[ins[i]]
				i++
			} else {
				gj = append(gj, outs[j])
				pj *= outs[j].size
				j++
			}
		}
		var flat expr = ivar{gj[0].name}
		for _, a := range gj[1:] {
			flat = add(mul(flat, ilit(a.size)), ivar{a.name})
		}
		stride := pi
		for k, d := range gi {
			stride /= in[d]
			e := idiv(flat, stride)
			if k > 0 {
				e = imod(e, in[d])
			}
			idx[d] = e
		}
	}
	return idx
}

// reshapeTo defines output 0 as x read as shape.
func reshapeTo(n *node, x *value, shape []int) error {
	nx, err := te.CheckShape(x.shape)
	if err != nil {
		return err
	}
	ny, err := te.CheckShape(shape)
	if err != nil {
		return err
	}
	if nx != ny || nx == 0 {
		return fmt.Errorf("cannot reshape %s to %v", typeString(x.dt, x.shape), shape)
	}
	vs := vars(shape)
	return n.im.define(n.out(0, x.dt, shape), vs, n.im.read(x, reshapeIndex(x.shape, vs)...))
}

func reshapeOp(n *node) error {
	x, err := n.need(0)
	if err != nil {
		return err
	}
	spec, _, err := n.constInts(1)
	if err != nil {
		return err
	}
	allowZero := n.int("allowzero", 0) != 0
	shape := make([]int, len(spec))
	infer, known := -1, 1
	for i, d := range spec {
		switch {
		case d == -1:
			if infer >= 0 {
				return fmt.Errorf("the shape %v has two -1s", spec)
			}
			infer = i
			continue
		case d == 0 && !allowZero:
			if i >= x.rank() {
				return fmt.Errorf("the shape %v copies dimension %d, which the input has not", spec, i)
			}
			d = x.shape[i]
		case d <= 0:
			return fmt.Errorf("the shape %v has dimension %d (empty tensors are not supported)", spec, d)
		}
		shape[i] = d
		known *= d
	}
	if infer >= 0 {
		total, _ := te.CheckShape(x.shape)
		if known == 0 || total%known != 0 {
			return fmt.Errorf("cannot reshape %s to %v", typeString(x.dt, x.shape), spec)
		}
		shape[infer] = total / known
	}
	return reshapeTo(n, x, shape)
}

func flattenOp(n *node) error {
	x, err := n.need(0)
	if err != nil {
		return err
	}
	a := n.int("axis", 1)
	if a < 0 {
		a += x.rank()
	}
	if a < 0 || a > x.rank() {
		return fmt.Errorf("axis %d is out of range for rank %d", n.int("axis", 1), x.rank())
	}
	outer, inner := 1, 1
	for d, s := range x.shape {
		if d < a {
			outer *= s
		} else {
			inner *= s
		}
	}
	return reshapeTo(n, x, []int{outer, inner})
}

// axesInput returns the axes of Squeeze, Unsqueeze or a Reduce operator:
// input 1 (opset 13; 18 for the Reduce operators but ReduceSum) or the
// attribute axes.
func axesInput(n *node) ([]int, bool, error) {
	if axes, ok, err := n.constInts(1); ok || err != nil {
		return axes, ok, err
	}
	axes, ok := n.ints("axes")
	return axes, ok, nil
}

func squeezeOp(n *node) error {
	x, err := n.need(0)
	if err != nil {
		return err
	}
	axes, ok, err := axesInput(n)
	if err != nil {
		return err
	}
	drop := map[int]bool{}
	for _, a := range axes {
		a, err := normAxis(a, x.rank())
		if err != nil {
			return err
		}
		if x.shape[a] != 1 {
			return fmt.Errorf("cannot squeeze axis %d of size %d", a, x.shape[a])
		}
		drop[a] = true
	}
	var shape []int
	for d, s := range x.shape {
		if ok && !drop[d] || !ok && s != 1 {
			shape = append(shape, s)
		}
	}
	return reshapeTo(n, x, shape)
}

func unsqueezeOp(n *node) error {
	x, err := n.need(0)
	if err != nil {
		return err
	}
	axes, _, err := axesInput(n)
	if err != nil {
		return err
	}
	r := x.rank() + len(axes)
	ones := map[int]bool{}
	for _, a := range axes {
		d, err := normAxis(a, r)
		if err != nil {
			return err
		}
		if ones[d] {
			return fmt.Errorf("axis %d is repeated in axes %v", a, axes)
		}
		ones[d] = true
	}
	shape := make([]int, 0, r)
	k := 0
	for d := 0; d < r; d++ {
		if ones[d] {
			shape = append(shape, 1)
		} else {
			shape = append(shape, x.shape[k])
			k++
		}
	}
	return reshapeTo(n, x, shape)
}

func transposeOp(n *node) error {
	x, err := n.need(0)
	if err != nil {
		return err
	}
	r := x.rank()
	perm, ok := n.ints("perm")
	if !ok {
		for d := r - 1; d >= 0; d-- {
			perm = append(perm, d)
		}
	}
	if len(perm) != r {
		return fmt.Errorf("perm %v does not have %d axes", perm, r)
	}
	shape := make([]int, r)
	seen := map[int]bool{}
	for t, p := range perm {
		if p < 0 || p >= r || seen[p] {
			return fmt.Errorf("perm %v is not a permutation", perm)
		}
		seen[p] = true
		shape[t] = x.shape[p]
	}
	vs := vars(shape)
	idx := make([]expr, r)
	for t, p := range perm {
		idx[p] = ivar{vs[t].name}
	}
	return n.im.define(n.out(0, x.dt, shape), vs, n.im.read(x, idx...))
}

// alongAxis reads x at vs with index e on axis (the others direct).
func alongAxis(n *node, x *value, vs []loopVar, axis int, e expr) expr {
	idx := make([]expr, x.rank())
	for d := range idx {
		idx[d] = ivar{vs[d].name}
	}
	idx[axis] = e
	return n.im.read(x, idx...)
}

func concatOp(n *node) error {
	var ins []*value
	for i := range n.p.GetInput() {
		v, err := n.need(i)
		if err != nil {
			return err
		}
		ins = append(ins, v)
	}
	if len(ins) == 0 {
		return fmt.Errorf("Concat needs an input")
	}
	axis, err := normAxis(n.int("axis", 0), ins[0].rank())
	if err != nil {
		return err
	}
	shape := append([]int{}, ins[0].shape...)
	shape[axis] = 0
	for _, v := range ins {
		if v.rank() != len(shape) {
			return fmt.Errorf("inputs of ranks %d and %d", len(shape), v.rank())
		}
		for d := range shape {
			if d != axis && v.shape[d] != shape[d] {
				return fmt.Errorf("inputs of shapes %v and %v differ outside axis %d", ins[0].shape, v.shape, axis)
			}
		}
		shape[axis] += v.shape[axis]
	}
	var nonEmpty []*value // an empty constant adds nothing
	for _, v := range ins {
		if v.shape[axis] > 0 {
			nonEmpty = append(nonEmpty, v)
		}
	}
	if len(nonEmpty) > 0 {
		ins = nonEmpty
	}
	if len(ins) == 1 {
		n.im.values[n.p.GetOutput()[0]] = ins[0] // as Identity
		return nil
	}
	vs := vars(shape)
	i := ivar{vs[axis].name}
	offsets := make([]int, len(ins))
	for k := 1; k < len(ins); k++ {
		offsets[k] = offsets[k-1] + ins[k-1].shape[axis]
	}
	last := len(ins) - 1
	body := alongAxis(n, ins[last], vs, axis, add(i, ilit(-offsets[last])))
	for k := last - 1; k >= 0; k-- {
		body = sel{binary{"<", i, ilit(offsets[k+1])}, alongAxis(n, ins[k], vs, axis, add(i, ilit(-offsets[k]))), body}
	}
	return n.im.define(n.out(0, ins[0].dt, shape), vs, body)
}

// sliceAxis is one axis of a slice: count elements from start by step.
type sliceAxis struct{ start, step, count int }

func sliceOp(n *node) error {
	x, err := n.need(0)
	if err != nil {
		return err
	}
	starts, _, err := n.constInts(1)
	if err != nil {
		return err
	}
	ends, _, err := n.constInts(2)
	if err != nil {
		return err
	}
	axes, haveAxes, err := n.constInts(3)
	if err != nil {
		return err
	}
	steps, haveSteps, err := n.constInts(4)
	if err != nil {
		return err
	}
	if len(starts) != len(ends) || haveAxes && len(axes) != len(starts) || haveSteps && len(steps) != len(starts) {
		return fmt.Errorf("starts, ends, axes and steps have different lengths")
	}
	r := x.rank()
	sl := make([]sliceAxis, r)
	for d := range sl {
		sl[d] = sliceAxis{0, 1, x.shape[d]}
	}
	for k := range starts {
		a := k
		if haveAxes {
			a = axes[k]
		}
		if a, err = normAxis(a, r); err != nil {
			return err
		}
		step := 1
		if haveSteps {
			step = steps[k]
		}
		if step == 0 {
			return fmt.Errorf("a slice step is 0")
		}
		dim := x.shape[a]
		start, end := starts[k], ends[k]
		if start < 0 {
			start += dim
		}
		if end < 0 {
			end += dim
		}
		var count int
		if step > 0 {
			start, end = min(max(start, 0), dim), min(max(end, 0), dim)
			count = (end - start + step - 1) / step
		} else {
			start, end = min(max(start, 0), dim-1), min(max(end, -1), dim-1)
			count = (start - end - step - 1) / -step
		}
		if count <= 0 && x.constant == nil {
			return fmt.Errorf("the slice of axis %d is empty (empty tensors are not supported)", a)
		}
		count = max(count, 0) // an empty constant folds
		sl[a] = sliceAxis{start, step, count}
	}
	return defineSlice(n, 0, x, sl)
}

// defineSlice defines output i as the slice sl of x.
func defineSlice(n *node, i int, x *value, sl []sliceAxis) error {
	shape := make([]int, len(sl))
	for d, s := range sl {
		shape[d] = s.count
	}
	vs := vars(shape)
	idx := make([]expr, len(sl))
	for d, s := range sl {
		idx[d] = add(mul(ilit(s.step), ivar{vs[d].name}), ilit(s.start))
	}
	return n.im.define(n.out(i, x.dt, shape), vs, n.im.read(x, idx...))
}

func splitOp(n *node) error {
	x, err := n.need(0)
	if err != nil {
		return err
	}
	axis, err := normAxis(n.int("axis", 0), x.rank())
	if err != nil {
		return err
	}
	sizes, ok, err := n.constInts(1)
	if err != nil {
		return err
	}
	k := len(n.p.GetOutput())
	if k == 0 {
		return fmt.Errorf("Split has no outputs")
	}
	parts := n.int("num_outputs", 0) // opset 18: the last part may be smaller
	uneven := parts != 0
	if uneven && parts != k {
		return fmt.Errorf("num_outputs %d for %d outputs", parts, k)
	}
	if !ok {
		if a, have := n.ints("split"); have {
			sizes = a
		} else {
			size := x.shape[axis] / k
			if x.shape[axis]%k != 0 {
				if !uneven {
					return fmt.Errorf("axis %d of size %d does not split into %d equal parts", axis, x.shape[axis], k)
				}
				// Opset 18: parts of ceil(size/k), the last smaller.
				size = (x.shape[axis] + k - 1) / k
			}
			for i := range k {
				sizes = append(sizes, max(0, min(size, x.shape[axis]-i*size)))
			}
		}
	}
	if len(sizes) != k {
		return fmt.Errorf("%d split sizes for %d outputs", len(sizes), k)
	}
	start := 0
	for i, s := range sizes {
		sl := make([]sliceAxis, x.rank())
		for d := range sl {
			sl[d] = sliceAxis{0, 1, x.shape[d]}
		}
		sl[axis] = sliceAxis{start, 1, s}
		start += s
		if n.p.GetOutput()[i] == "" {
			continue
		}
		if err := defineSlice(n, i, x, sl); err != nil {
			return err
		}
	}
	if start != x.shape[axis] {
		return fmt.Errorf("split sizes %v do not add up to %d", sizes, x.shape[axis])
	}
	return nil
}

func gatherOp(n *node) error {
	x, err := n.need(0)
	if err != nil {
		return err
	}
	ind, err := n.need(1)
	if err != nil {
		return err
	}
	axis, err := normAxis(n.int("axis", 0), x.rank())
	if err != nil {
		return err
	}
	dim := x.shape[axis]
	if ind.constant != nil {
		// negative indices count from the end; a wrong one is an error now
		c := &te.Array{DType: te.I32, Shape: ind.shape, Data: make([]float64, len(ind.constant.Data))}
		for i, v := range ind.constant.Data {
			if v < 0 {
				v += float64(dim)
			}
			if v < 0 || v >= float64(dim) {
				return fmt.Errorf("index %v is out of range for axis %d of size %d", ind.constant.Data[i], axis, dim)
			}
			c.Data[i] = v
		}
		ind = &value{onnx: ind.onnx, dt: te.I32, shape: ind.shape, constant: c}
	}
	shape := append(append(append([]int{}, x.shape[:axis]...), ind.shape...), x.shape[axis+1:]...)
	vs := vars(shape)
	q := ind.rank()
	var at expr
	switch {
	case ind.constant != nil && q == 0:
		at = ilit(int(ind.constant.Data[0]))
	case ind.constant != nil && q == 1 && progression(ind.constant.Data):
		d := ind.constant.Data
		step := 0
		if len(d) > 1 {
			step = int(d[1] - d[0])
		}
		at = add(mul(ilit(step), ivar{vs[axis].name}), ilit(int(d[0])))
	case ind.constant != nil && len(ind.constant.Data) <= maxSelectGather:
		// a few fixed indices: a select of the rows, each read at a
		// constant index, so the access stays affine
		c := ind.constant.Data
		body := n.im.read(x, gatherIndex(x, vs, axis, q, ilit(int(c[len(c)-1])))...)
		for p := len(c) - 2; p >= 0; p-- {
			var cond expr
			rest := p
			for d := q - 1; d >= 0; d-- {
				cond = and(binary{"==", ivar{vs[axis+d].name}, ilit(rest % ind.shape[d])}, cond)
				rest /= ind.shape[d]
			}
			body = sel{cond, n.im.read(x, gatherIndex(x, vs, axis, q, ilit(int(c[p])))...), body}
		}
		return n.im.define(n.out(0, x.dt, shape), vs, body)
	default:
		// indices known at run time (token ids): a negative one counts
		// from the end, as in ONNX; any other outside the axis is out of
		// range, which the reference and the simulator report
		id := n.im.read(ind, ivars(vs[axis:axis+q])...)
		at = sel{binary{"<", id, ilit(0)}, add(id, ilit(dim)), id}
	}
	return n.im.define(n.out(0, x.dt, shape), vs, n.im.read(x, gatherIndex(x, vs, axis, q, at)...))
}

// maxSelectGather is the most fixed indices a Gather reads by a select;
// more are read from a param of the indices (the gather syntax).
const maxSelectGather = 16

// gatherIndex is the index of x that element vs of a Gather reads, at on
// axis and q index dimensions.
func gatherIndex(x *value, vs []loopVar, axis, q int, at expr) []expr {
	idx := make([]expr, 0, x.rank())
	for d := 0; d < axis; d++ {
		idx = append(idx, ivar{vs[d].name})
	}
	idx = append(idx, at)
	for d := axis + 1; d < x.rank(); d++ {
		idx = append(idx, ivar{vs[d+q-1].name})
	}
	return idx
}

// progression reports whether d is an arithmetic progression.
func progression(d []float64) bool {
	for i := 2; i < len(d); i++ {
		if d[i]-d[i-1] != d[1]-d[0] {
			return false
		}
	}
	return true
}

func expandOp(n *node) error {
	x, err := n.need(0)
	if err != nil {
		return err
	}
	to, _, err := n.constInts(1)
	if err != nil {
		return err
	}
	shape, err := broadcastShape(x.shape, to)
	if err != nil {
		return err
	}
	vs := vars(shape)
	return n.im.define(n.out(0, x.dt, shape), vs, n.im.bcast(x, vs))
}

func padOp(n *node) error {
	x, err := n.need(0)
	if err != nil {
		return err
	}
	mode := n.str("mode", "constant")
	switch mode {
	case "constant", "reflect", "edge":
	default:
		return fmt.Errorf("Pad mode %q is not supported (constant, reflect and edge are)", mode)
	}
	pads, _, err := n.constInts(1)
	if err != nil {
		return err
	}
	r := x.rank()
	// Opset 18's axes input: pads lists the begins, then the ends, of
	// those axes alone.
	if axes, ok, err := n.constInts(3); err != nil {
		return err
	} else if ok {
		if len(pads) != 2*len(axes) {
			return fmt.Errorf("pads %v do not have 2 × %d values, for the axes %v", pads, len(axes), axes)
		}
		full := make([]int, 2*r)
		for i, a := range axes {
			a, err := normAxis(a, r)
			if err != nil {
				return err
			}
			full[a], full[r+a] = pads[i], pads[len(axes)+i]
		}
		pads = full
	}
	if len(pads) != 2*r {
		return fmt.Errorf("pads %v do not have 2 × %d values", pads, r)
	}
	var fill expr = lit{0, x.dt}
	if v := n.in(2); v != nil {
		u, ok := v.uniform()
		if !ok {
			return fmt.Errorf("the constant value must be known at import")
		}
		fill = lit{u, x.dt}
	}
	shape := make([]int, r)
	for d := range shape {
		shape[d] = x.shape[d] + pads[d] + pads[r+d]
		if shape[d] <= 0 {
			return fmt.Errorf("pads %v leave axis %d empty", pads, d)
		}
		if mode == "reflect" && (pads[d] >= x.shape[d] || pads[r+d] >= x.shape[d]) {
			return fmt.Errorf("reflect pads %v of axis %d reach past its size %d", pads, d, x.shape[d])
		}
	}
	vs := vars(shape)
	idx := make([]expr, r)
	var cond expr
	for d := range idx {
		b, e := pads[d], pads[r+d]
		i := add(ivar{vs[d].name}, ilit(-b))
		idx[d] = i
		if b > 0 {
			cond = and(cond, binary{">=", i, ilit(0)})
		}
		if e > 0 {
			cond = and(cond, binary{"<", i, ilit(x.shape[d])})
		}
	}
	if mode != "constant" {
		return n.im.define(n.out(0, x.dt, shape), vs, padBorder(n, x, mode, pads, vs, idx, 0))
	}
	body := n.im.read(x, idx...)
	if cond != nil {
		body = sel{cond, body, fill}
	}
	return n.im.define(n.out(0, x.dt, shape), vs, body)
}

// padBorder reads x at idx with the axes from d on mirrored (reflect) or
// clamped (edge) where they fall outside x: a select for each side of each
// padded axis, so that every access stays affine and in bounds. Output
// index v of axis d reads input index v - b, b being the axis's start pad.
func padBorder(n *node, x *value, mode string, pads []int, vs []loopVar, idx []expr, d int) expr {
	if d == len(idx) {
		return n.im.read(x, idx...)
	}
	r, size, b := x.rank(), x.shape[d], pads[d]
	v := ivar{vs[d].name}
	at := func(j expr) expr {
		c := append([]expr{}, idx...)
		c[d] = j
		return padBorder(n, x, mode, pads, vs, c, d+1)
	}
	body := at(idx[d])
	if pads[r+d] > 0 { // past the end: 2(size-1) - (v-b), or size-1
		end := ilit(size - 1)
		if mode == "reflect" {
			end = sub(ilit(2*size-2+b), v)
		}
		body = sel{binary{">=", v, ilit(size + b)}, at(end), body}
	}
	if b > 0 { // before the start: b - v, or 0
		start := ilit(0)
		if mode == "reflect" {
			start = sub(ilit(b), v)
		}
		body = sel{binary{"<", v, ilit(b)}, at(start), body}
	}
	return body
}

func tileOp(n *node) error {
	x, err := n.need(0)
	if err != nil {
		return err
	}
	reps, _, err := n.constInts(1)
	if err != nil {
		return err
	}
	if len(reps) != x.rank() || !positive(reps) {
		return fmt.Errorf("repeats %v for a tensor of rank %d", reps, x.rank())
	}
	shape := make([]int, x.rank())
	for d := range shape {
		shape[d] = x.shape[d] * reps[d]
	}
	vs := vars(shape)
	idx := make([]expr, x.rank())
	for d := range idx {
		idx[d] = ivar{vs[d].name}
		if reps[d] > 1 {
			idx[d] = imod(idx[d], x.shape[d])
		}
	}
	return n.im.define(n.out(0, x.dt, shape), vs, n.im.read(x, idx...))
}

// depthToSpaceOp is DepthToSpace: [N, C, H, W] to [N, C/b², H·b, W·b],
// output (c, h, w) reading channel ((h mod b)·b + w mod b)·C/b² + c
// (mode DCR, the default) or c·b² + (h mod b)·b + w mod b (CRD, PyTorch's
// pixel shuffle), at (h/b, w/b).
func depthToSpaceOp(n *node) error {
	x, err := n.need(0)
	if err != nil {
		return err
	}
	b := n.int("blocksize", 0)
	if x.rank() != 4 || b < 1 || x.shape[1]%(b*b) != 0 {
		return fmt.Errorf("DepthToSpace with blocksize %d of a tensor of shape %v: want [N, C, H, W] with C a multiple of blocksize²", b, x.shape)
	}
	mode := n.str("mode", "DCR")
	if mode != "DCR" && mode != "CRD" {
		return fmt.Errorf("DepthToSpace mode %q: want DCR or CRD", mode)
	}
	c := x.shape[1] / (b * b)
	shape := []int{x.shape[0], c, x.shape[2] * b, x.shape[3] * b}
	vs := vars(shape)
	h, w := ivar{vs[2].name}, ivar{vs[3].name}
	block := add(mul(imod(h, b), ilit(b)), imod(w, b))
	ch := add(mul(block, ilit(c)), ivar{vs[1].name})
	if mode == "CRD" {
		ch = add(mul(ivar{vs[1].name}, ilit(b*b)), block)
	}
	return n.im.define(n.out(0, x.dt, shape), vs, n.im.read(x, ivar{vs[0].name}, ch, idiv(h, b), idiv(w, b)))
}

// spaceToDepthOp is SpaceToDepth, DepthToSpace's DCR inverse: [N, C, H, W]
// to [N, C·b², H/b, W/b], output channel k reading channel k mod C at
// (h·b + (k/C)/b, w·b + (k/C) mod b).
func spaceToDepthOp(n *node) error {
	x, err := n.need(0)
	if err != nil {
		return err
	}
	b := n.int("blocksize", 0)
	if x.rank() != 4 || b < 1 || x.shape[2]%b != 0 || x.shape[3]%b != 0 {
		return fmt.Errorf("SpaceToDepth with blocksize %d of a tensor of shape %v: want [N, C, H, W] with H and W multiples of blocksize", b, x.shape)
	}
	c := x.shape[1]
	shape := []int{x.shape[0], c * b * b, x.shape[2] / b, x.shape[3] / b}
	vs := vars(shape)
	k := ivar{vs[1].name}
	block := idiv(k, c)
	return n.im.define(n.out(0, x.dt, shape), vs, n.im.read(x, ivar{vs[0].name}, imod(k, c),
		add(mul(ivar{vs[2].name}, ilit(b)), idiv(block, b)), add(mul(ivar{vs[3].name}, ilit(b)), imod(block, b))))
}

// cumSumOp is CumSum along the axis its second input names (known at
// import): each output element the masked sum of the elements before it
// along the axis (with it unless exclusive; after it where reverse).
func cumSumOp(n *node) error {
	x, err := n.need(0)
	if err != nil {
		return err
	}
	axes, ok, err := n.constInts(1)
	if err != nil {
		return err
	}
	if !ok || len(axes) != 1 {
		return fmt.Errorf("CumSum needs its axis, one value known at import")
	}
	axis, err := normAxis(axes[0], x.rank())
	if err != nil {
		return err
	}
	// The elements summed into output i: j <= i, or j < i (exclusive),
	// j >= i (reverse), j > i (both).
	exclusive, reverse := n.int("exclusive", 0) != 0, n.int("reverse", 0) != 0
	cmp := "<"
	if reverse {
		cmp = ">"
	}
	if !exclusive {
		cmp += "="
	}
	vs := vars(x.shape)
	k := n.im.raxis(x.shape[axis])
	idx := ivars(vs)
	idx[axis] = ivar{k.name}
	body := reduce{"sum", []loopVar{k}, sel{binary{cmp, ivar{k.name}, ivar{vs[axis].name}}, n.im.read(x, idx...), lit{0, x.dt}}}
	return n.im.define(n.out(0, x.dt, x.shape), vs, body)
}

// scatterNDOp is ScatterND: the data, with the slices that the indices'
// last axis names replaced by the updates (reduction none) or combined
// with them (add, mul, max, min). With the indices known at import and
// reduction none, the importer tabulates, for each position of the
// indexed prefix of the data's axes, the update that lands there (the
// last, as ONNX's sequential definition has it) or -1, as an i32 param,
// and the output selects the update or the data by it; where every input
// is known at import, the table folds away with the node. Otherwise
// (scatterNDRuntime) each position reduces over the updates whose index
// is its own.
func scatterNDOp(n *node) error {
	data, err := n.need(0)
	if err != nil {
		return err
	}
	ind, err := n.need(1)
	if err != nil {
		return err
	}
	upd, err := n.need(2)
	if err != nil {
		return err
	}
	red := n.str("reduction", "none")
	switch red {
	case "none", "add", "mul", "max", "min":
	default:
		return fmt.Errorf("ScatterND with reduction %q is not supported (none, add, mul, max and min are)", red)
	}
	if ind.dt != te.I32 && ind.dt != te.I64 {
		return fmt.Errorf("ScatterND indices of type %s", ind.dt)
	}
	k, lead, want, err := ndIndices("ScatterND", data, ind)
	if err != nil {
		return err
	}
	if !equalShape(upd.shape, want) {
		return fmt.Errorf("ScatterND updates of shape %v, want %v", upd.shape, want)
	}
	if ind, err = normalIndices(ind, data.shape, k); err != nil {
		return err
	}
	if ind.constant == nil || red != "none" {
		return scatterNDRuntime(n, data, ind, upd, red, k, lead)
	}
	idx, err := ndIndexValues(ind.constant, data.shape, k)
	if err != nil {
		return err
	}
	prefix := data.shape[:k]
	count, err := te.CheckShape(prefix)
	if err != nil {
		return err
	}
	slot := &te.Array{DType: te.I32, Shape: prefix, Data: make([]float64, count)}
	for i := range slot.Data {
		slot.Data[i] = -1
	}
	for u := 0; u*k < len(idx); u++ {
		at := 0
		for d := range k {
			at = at*prefix[d] + idx[u*k+d]
		}
		slot.Data[at] = float64(u)
	}
	table := &value{onnx: ind.onnx + "_slots", dt: te.I32, shape: prefix, constant: slot}
	vs := vars(data.shape)
	s := n.im.read(table, ivars(vs[:k])...)
	// the update's index: slot (at least 0, read only where it is) unravelled
	// over the indices' leading axes, then the data's trailing axes
	ui := append(unravel(binary{"max", s, ilit(0)}, lead), ivars(vs[k:])...)
	body := sel{binary{">=", s, ilit(0)}, n.im.read(upd, ui...), n.im.read(data, ivars(vs)...)}
	return n.im.define(n.out(0, data.dt, data.shape), vs, body)
}

// scatterNDRuntime is ScatterND of indices read where they are (at run
// time, or known but with a reduction), k values each, over the indices'
// leading axes lead: output position p reduces over the updates u whose
// index is p's first k coordinates — the last of them (reduction none:
// max[u] of u where it matches, -1 where none does, as a tensor of its
// own that the output selects by), or their sum, product, maximum or
// minimum with the data. A negative index counts from its axis's end, as
// in ONNX; one outside its axis, which ONNX leaves undefined, updates
// nothing. Each output element reads every index: the cost is the
// output's elements times the updates.
func scatterNDRuntime(n *node, data, ind, upd *value, red string, k int, lead []int) error {
	count, err := te.CheckShape(lead)
	if err != nil {
		return err
	}
	vs := vars(data.shape)
	u := n.im.raxis(max(count, 1))
	at := unravel(ivar{u.name}, lead) // the update's leading index
	var match expr
	for d := range k {
		id := n.im.read(ind, append(slices.Clone(at), ilit(d))...)
		if ind.constant == nil {
			id = sel{binary{"<", id, ilit(0)}, add(id, ilit(data.shape[d])), id}
		}
		match = and(match, binary{"==", id, ivar{vs[d].name}})
	}
	cur := n.im.read(data, ivars(vs)...)
	over := []loopVar{u}
	updAt := n.im.read(upd, append(slices.Clone(at), ivars(vs[k:])...)...)
	var body expr
	switch red {
	case "none":
		slot := n.temp("slot", te.I32, data.shape[:k])
		sv := vars(slot.shape)
		if err := n.im.define(slot, sv, reduce{"max", over, sel{match, ivar{u.name}, ilit(-1)}}); err != nil {
			return err
		}
		s := n.im.read(slot, ivars(vs[:k])...)
		ui := unravel(binary{"max", s, ilit(0)}, lead)
		body = sel{binary{">=", s, ilit(0)}, n.im.read(upd, append(ui, ivars(vs[k:])...)...), cur}
	case "add":
		body = add(cur, reduce{"sum", over, sel{match, updAt, lit{0, upd.dt}}})
	case "mul":
		body = binary{"*", cur, reduce{"prod", over, sel{match, updAt, lit{1, upd.dt}}}}
	case "max":
		body = binary{"max", cur, reduce{"max", over, sel{match, updAt, lit{math.Inf(-1), upd.dt}}}}
	case "min":
		body = binary{"min", cur, reduce{"min", over, sel{match, updAt, lit{math.Inf(1), upd.dt}}}}
	}
	return n.im.define(n.out(0, data.dt, data.shape), vs, body)
}

// unravel returns the index of element flat of a row-major array of shape
// dims, flat in range.
func unravel(flat expr, dims []int) []expr {
	at := make([]expr, len(dims))
	for d := len(dims) - 1; d > 0; d-- {
		at[d] = imod(flat, dims[d])
		flat = idiv(flat, dims[d])
	}
	if len(dims) > 0 {
		at[0] = flat
	}
	return at
}

// gatherNDOp is GatherND: output element (b, p, r) reads the data at the
// batch index b (the first batch_dims axes, which the data and the
// indices share), then the index the indices' last axis holds at (b, p),
// then r. The indices are read where they are, known at import or not (a
// gather); a negative one counts from the end, as in ONNX, and any other
// outside its axis is out of range, which the reference and the
// simulator report.
func gatherNDOp(n *node) error {
	data, err := n.need(0)
	if err != nil {
		return err
	}
	ind, err := n.need(1)
	if err != nil {
		return err
	}
	if ind.dt != te.I32 && ind.dt != te.I64 {
		return fmt.Errorf("GatherND indices of type %s", ind.dt)
	}
	nb := int(n.int("batch_dims", 0))
	if nb < 0 || nb >= ind.rank() || nb >= data.rank() || !equalShape(ind.shape[:nb], data.shape[:nb]) {
		return fmt.Errorf("GatherND with batch_dims %d of indices %v and data %v: want fewer than either's rank, and their first batch_dims axes the same", nb, ind.shape, data.shape)
	}
	// the data past its batch axes, indexed as batch_dims 0 would
	inner := &value{onnx: data.onnx, dt: data.dt, shape: data.shape[nb:]}
	k, lead, shape, err := ndIndices("GatherND", inner, ind)
	if err != nil {
		return err
	}
	vs := vars(shape)
	known := ind.constant != nil
	if ind, err = normalIndices(ind, inner.shape, k); err != nil {
		return err
	}
	at := ivars(vs[:nb]) // the batch axes: lead's first
	for d := range k {
		id := n.im.read(ind, append(ivars(vs[:len(lead)]), ilit(d))...)
		if !known {
			id = sel{binary{"<", id, ilit(0)}, add(id, ilit(inner.shape[d])), id}
		}
		at = append(at, id)
	}
	at = append(at, ivars(vs[len(lead):])...)
	return n.im.define(n.out(0, data.dt, shape), vs, n.im.read(data, at...))
}

// ndIndices checks the indices of ScatterND or GatherND (op) against the
// data: their last axis holds k values, which index the data's first k
// axes; lead are the indices' other axes, and slice the shape of what
// one index selects for each of them (lead, then the data's axes past k),
// the updates' shape or the gather's.
func ndIndices(op string, data, ind *value) (k int, lead, slice []int, err error) {
	q := ind.rank()
	if q == 0 {
		return 0, nil, nil, fmt.Errorf("%s indices of rank 0", op)
	}
	k = ind.shape[q-1]
	if k < 1 || k > data.rank() {
		return 0, nil, nil, fmt.Errorf("%s indices of %d values for data of rank %d", op, k, data.rank())
	}
	lead = ind.shape[:q-1]
	return k, lead, append(append([]int{}, lead...), data.shape[k:]...), nil
}

// normalIndices returns ind, the indices of ScatterND or GatherND into
// axes of the sizes dims (k values an index), as an i32 value: where they
// are known at import, checked and made non-negative (ndIndexValues), read
// as a param; else ind itself.
func normalIndices(ind *value, dims []int, k int) (*value, error) {
	if ind.constant == nil {
		return ind, nil
	}
	idx, err := ndIndexValues(ind.constant, dims, k)
	if err != nil {
		return nil, err
	}
	norm := &te.Array{DType: te.I32, Shape: ind.shape, Data: make([]float64, len(idx))}
	for i, v := range idx {
		norm.Data[i] = float64(v)
	}
	return &value{onnx: ind.onnx, dt: te.I32, shape: ind.shape, constant: norm}, nil
}

// ndIndexValues returns indices known at import, k values an index into
// axes of the sizes dims, each made non-negative (a negative one counts
// from its axis's end, as in ONNX), and an error naming any outside its
// axis.
func ndIndexValues(c *te.Array, dims []int, k int) ([]int, error) {
	out := make([]int, len(c.Data))
	for i, v := range c.Data {
		dim := dims[i%k]
		x := int(v)
		if x < 0 {
			x += dim
		}
		if x < 0 || x >= dim {
			return nil, fmt.Errorf("index %v is out of range for axis %d of size %d", v, i%k, dim)
		}
		out[i] = x
	}
	return out, nil
}
