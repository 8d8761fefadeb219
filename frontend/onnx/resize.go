package onnx

import (
	"fmt"
	"math"

	"tec/te"
)

// resizeAxis is how one axis of a Resize reads its input: output index o
// reads input index lo[o] (nearest), or lo[o] and hi[o] weighted 1-w[o]
// and w[o] (linear), or the four of taps[·][o] weighted tw[·][o] (cubic).
type resizeAxis struct {
	lo, hi []int
	w      []float64
	taps   [][]int
	tw     [][]float64
}

func resizeOp(n *node) error {
	x, err := n.need(0)
	if err != nil {
		return err
	}
	mode := n.str("mode", "nearest")
	if mode != "nearest" && mode != "linear" && mode != "cubic" {
		return fmt.Errorf("Resize mode %q is not supported (nearest, linear and cubic are)", mode)
	}
	coord := n.str("coordinate_transformation_mode", "half_pixel")
	switch coord {
	case "half_pixel", "pytorch_half_pixel", "asymmetric", "align_corners":
	default:
		return fmt.Errorf("coordinate_transformation_mode %q is not supported (half_pixel, pytorch_half_pixel, asymmetric and align_corners are)", coord)
	}
	nearest := n.str("nearest_mode", "round_prefer_floor")
	switch nearest {
	case "round_prefer_floor", "round_prefer_ceil", "floor", "ceil":
	default:
		return fmt.Errorf("nearest_mode %q is not supported", nearest)
	}
	if n.int("exclude_outside", 0) != 0 {
		return fmt.Errorf("exclude_outside 1 is not supported")
	}
	cubicA := n.float("cubic_coeff_a", -0.75) // cubic mode only
	n.attr("extrapolation_value")             // tf_crop_and_resize only
	// Opset 18's attributes, where they change nothing here: antialias
	// changes a linear or cubic downscale's filter, keep_aspect_ratio_policy
	// the sizes input's meaning, axes the axes the scales or sizes list.
	if n.int("antialias", 0) != 0 && mode != "nearest" {
		return fmt.Errorf("antialias 1 is not supported (a linear or cubic Resize without it is)")
	}
	if p := n.str("keep_aspect_ratio_policy", "stretch"); p != "stretch" {
		return fmt.Errorf("keep_aspect_ratio_policy %q is not supported (stretch is)", p)
	}
	if _, ok := n.ints("axes"); ok {
		return fmt.Errorf("the axes attribute is not supported (scales or sizes for every axis are)")
	}
	shape, scales, err := resizeShape(n, x)
	if err != nil {
		return err
	}
	vs := vars(shape)
	axes := make([]resizeAxis, x.rank())
	for d := range axes {
		axes[d] = resizeTables(x.shape[d], shape[d], scales[d], coord, mode, nearest, cubicA)
	}
	body := resizeBody(n, x, resizeIndexes(n, axes, vs), make([]expr, x.rank()), 0)
	return n.im.define(n.out(0, x.dt, shape), vs, body)
}

// resizeShape reads Resize's output shape and its scale on every axis
// from the scales or the sizes input, which must be known at import.
func resizeShape(n *node, x *value) ([]int, []float64, error) {
	r := x.rank()
	shape := make([]int, r)
	scales := make([]float64, r)
	if s := n.in(2); s != nil && (s.constant == nil || len(s.constant.Data) > 0) {
		if s.constant == nil {
			return nil, nil, fmt.Errorf("input 2 (%q) must be known at import (tec needs static shapes)", s.onnx)
		}
		if len(s.constant.Data) != r {
			return nil, nil, fmt.Errorf("%d scales for a tensor of rank %d", len(s.constant.Data), r)
		}
		for d, f := range s.constant.Data {
			shape[d] = int(math.Floor(float64(x.shape[d]) * f))
			scales[d] = f
			if f <= 0 || shape[d] <= 0 {
				return nil, nil, fmt.Errorf("scale %v of axis %d leaves it empty", f, d)
			}
		}
		return shape, scales, nil
	}
	sizes, ok, err := n.constInts(3)
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		return nil, nil, fmt.Errorf("Resize needs scales or sizes")
	}
	if len(sizes) != r || !positive(sizes) {
		return nil, nil, fmt.Errorf("sizes %v for a tensor of rank %d", sizes, r)
	}
	for d := range shape {
		shape[d] = sizes[d]
		scales[d] = float64(sizes[d]) / float64(x.shape[d])
	}
	return shape, scales, nil
}

// resizeTables works out, for an axis of size in resized to out, which
// input elements each output element reads, as ONNX defines Resize: the
// output coordinate is mapped to the input's, then rounded (nearest) or
// interpolated between its neighbours (linear), the edge repeated.
func resizeTables(in, out int, scale float64, coord, mode, nearest string, cubicA float64) resizeAxis {
	a := resizeAxis{lo: make([]int, out), hi: make([]int, out), w: make([]float64, out)}
	if mode == "cubic" {
		a.taps, a.tw = make([][]int, 4), make([][]float64, 4)
		for t := range 4 {
			a.taps[t], a.tw[t] = make([]int, out), make([]float64, out)
		}
	}
	clamp := func(i int) int { return min(max(i, 0), in-1) }
	for o := range out {
		var x float64
		switch coord {
		case "half_pixel":
			x = (float64(o)+0.5)/scale - 0.5
		case "pytorch_half_pixel":
			if out > 1 {
				x = (float64(o)+0.5)/scale - 0.5
			}
		case "asymmetric":
			x = float64(o) / scale
		case "align_corners":
			if out > 1 {
				x = float64(o) * float64(in-1) / float64(out-1)
			}
		}
		if mode == "cubic" {
			// Keys's cubic convolution with coefficient A on the four
			// neighbours floor(x)-1 .. floor(x)+2, the edge repeated
			// (exclude_outside 0)
			f := math.Floor(x)
			for t, w := range cubicWeights(x-f, cubicA) {
				a.taps[t][o], a.tw[t][o] = clamp(int(f)+t-1), w
			}
			continue
		}
		if mode == "linear" {
			f := math.Floor(x)
			a.lo[o], a.hi[o] = clamp(int(f)), clamp(int(f)+1)
			a.w[o] = x - f
			if a.lo[o] == a.hi[o] {
				a.w[o] = 0
			}
			continue
		}
		var i float64
		switch frac := x - math.Floor(x); {
		case nearest == "floor":
			i = math.Floor(x)
		case nearest == "ceil":
			i = math.Ceil(x)
		case frac == 0.5 && nearest == "round_prefer_floor":
			i = math.Floor(x)
		case frac == 0.5:
			i = math.Ceil(x)
		default:
			i = math.Round(x)
		}
		a.lo[o] = clamp(int(i))
		a.hi[o] = a.lo[o]
	}
	if mode == "cubic" {
		for o := range out {
			if a.tw[1][o] != 1 {
				return a
			}
		}
		// every output falls on an input (weights 0, 1, 0, 0): no
		// interpolation, one read
		copy(a.lo, a.taps[1])
		copy(a.hi, a.lo)
		a.taps, a.tw = nil, nil
		return a
	}
	for _, w := range a.w {
		if w != 0 {
			return a
		}
	}
	copy(a.hi, a.lo) // every output falls on an input: no interpolation
	return a
}

// cubicWeights returns the weights of the four neighbours of a point at
// fraction t past the second, by Keys's cubic convolution kernel with
// coefficient a (ONNX's cubic_coeff_a; PyTorch's bicubic is -0.75).
func cubicWeights(t, a float64) [4]float64 {
	near := func(d float64) float64 { return ((a+2)*d-(a+3))*d*d + 1 }  // |d| <= 1
	far := func(d float64) float64 { return ((a*d-5*a)*d+8*a)*d - 4*a } // 1 < |d| < 2
	return [4]float64{far(t + 1), near(t), near(1 - t), far(2 - t)}
}

// resizeIndex is how one axis of a Resize reads its input, as
// expressions of the output's index variable: lo alone (w nil), or lo and
// hi weighted 1-w and w, or (cubic) each of taps weighted by tw.
type resizeIndex struct {
	lo, hi, w expr
	taps, tw  []expr
}

// resizeIndexes makes the expressions of every axis, once each, so that a
// table that more than one read needs is declared once.
func resizeIndexes(n *node, axes []resizeAxis, vs []loopVar) []resizeIndex {
	out := make([]resizeIndex, len(axes))
	for d, a := range axes {
		if a.taps != nil {
			for t := range a.taps {
				out[d].taps = append(out[d].taps, tableIndex(n, a.taps[t], vs[d], fmt.Sprintf("tap%d_%d", d, t)))
				w := n.temp(fmt.Sprintf("tw%d_%d", d, t), te.F32, []int{len(a.tw[t])})
				w.constant = &te.Array{DType: te.F32, Shape: w.shape, Data: a.tw[t]}
				out[d].tw = append(out[d].tw, n.im.read(w, ivar{vs[d].name}))
			}
			continue
		}
		out[d].lo = tableIndex(n, a.lo, vs[d], fmt.Sprintf("lo%d", d))
		if equalShape(a.lo, a.hi) {
			continue
		}
		out[d].hi = tableIndex(n, a.hi, vs[d], fmt.Sprintf("hi%d", d))
		w := n.temp(fmt.Sprintf("w%d", d), te.F32, []int{len(a.w)})
		w.constant = &te.Array{DType: te.F32, Shape: w.shape, Data: a.w}
		out[d].w = n.im.read(w, ivar{vs[d].name})
	}
	return out
}

// resizeBody is the element of the Resize with the axes before d read at
// idx: a linear axis adds up its two neighbours, weighted.
func resizeBody(n *node, x *value, ri []resizeIndex, idx []expr, d int) expr {
	if d == len(ri) {
		return n.im.read(x, idx...)
	}
	at := func(i expr) expr {
		c := append([]expr{}, idx...)
		c[d] = i
		return resizeBody(n, x, ri, c, d+1)
	}
	if ri[d].taps != nil {
		var sum expr
		for t, i := range ri[d].taps {
			term := mul(ri[d].tw[t], at(i))
			if sum == nil {
				sum = term
			} else {
				sum = add(sum, term)
			}
		}
		return sum
	}
	if ri[d].w == nil {
		return at(ri[d].lo)
	}
	return add(mul(sub(flit(1), ri[d].w), at(ri[d].lo)), mul(ri[d].w, at(ri[d].hi)))
}

// tableIndex is an index expression of v whose value at o is t[o]: the
// quasi-affine (a*v + b) / c where one fits, else a gather from an i32
// param of t.
func tableIndex(n *node, t []int, v loopVar, suffix string) expr {
	if a, b, c, ok := fitAffine(t); ok {
		return idiv(add(mul(ilit(a), ivar{v.name}), ilit(b)), c)
	}
	tv := n.temp(suffix, te.I32, []int{len(t)})
	tv.constant = te.NewArray(te.I32, tv.shape)
	for i, x := range t {
		tv.constant.Data[i] = float64(x)
	}
	return n.im.read(tv, ivar{v.name})
}

// fitAffine looks for small non-negative a, b and c > 0 with
// t[o] = floor((a*o + b) / c) for every o.
func fitAffine(t []int) (a, b, c int, ok bool) {
	if len(t) == 1 {
		return 0, t[0], 1, true
	}
	for c = 1; c <= 16; c++ {
		slope := float64(c*(t[len(t)-1]-t[0])) / float64(len(t)-1)
		for a = max(int(math.Floor(slope))-1, 0); a <= int(math.Ceil(slope))+1; a++ {
			for b = c * t[0]; b < c*(t[0]+1); b++ {
				if fits(t, a, b, c) {
					return a, b, c, true
				}
			}
		}
	}
	return 0, 0, 0, false
}

func fits(t []int, a, b, c int) bool {
	for o, x := range t {
		if (a*o+b)/c != x {
			return false
		}
	}
	return true
}
