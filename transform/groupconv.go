package transform

import "tec/te"

// Grouped convolutions: a convolution of G groups reads, for output
// channel o, the input channels of o's group alone,
//
//	z[n, o, oh, ow] = sum[c, kh, kw](x[n, c + C*(o/C), ...] * w[o, c, kh, kw])
//
// with C = O/G output channels a group. Every axis of z is read by the
// input, and o by the weights too, so it is no contraction: a tile of
// pixels shares nothing along o, and the partitioner computes it point by
// point. Split o into its group and the channel in it, as grouped rows
// are (SharedRows),
//
//	z[n, g, j, oh, ow] = sum[c, kh, kw](x[n, c + C*g, ...] * w[g*C + j, c, kh, kw])
//
// and g is read by both factors (a batch of G contractions), j by the
// weights alone: a batched implicit GEMM of G groups, each of the pixels
// by the group's C channels over its C·kh·kw inputs. The tensor's
// elements keep their places, its readers load [..., o / C, o % C, ...].

// ConvGroups returns the position of the axis o and the points C of its
// groups (the output channels a group) of a tensor t computed as a
// grouped convolution (see the note above): a sum one of whose loads
// reads o plainly, another only as o / C, C dividing o's extent (two
// groups at least). It
// returns 0, 0 for any other tensor. Whether the split makes a
// contraction the partitioner tiles is contraction.Of's to say.
func ConvGroups(t *te.Tensor) (int, int) {
	dim, g := sharedAxis(t, 1<<30)
	if g > 1 && g == t.Shape[dim] {
		return 0, 0 // one group: a plain convolution, o / O = 0 in it
	}
	return dim, g
}

// GroupConvolutions returns p with the axis that ConvGroups finds split
// into groups in each tensor that group accepts, and in the element-wise
// tensors that read one plainly along that axis (a bias, an activation:
// the convolution's epilogue, which transform.Vertical then inlines into
// it, as it does into any contraction); an output keeps its name and
// shape (computed grouped as NAME/rows and copied back), and the other
// tensors stay as they are. It also returns the tensor of the new program
// that each compute tensor of p became. p is not modified.
func GroupConvolutions(p *te.Program, group func(*te.Tensor) bool) (*te.Program, map[*te.Tensor]*te.Tensor) {
	splits := map[*te.Tensor]axisSplit{}
	for _, t := range p.Tensors {
		if group(t) {
			if dim, g := ConvGroups(t); g > 1 {
				splits[t] = axisSplit{dim: dim, g: g}
			}
			continue
		}
		if s, ok := epilogueSplit(t, splits); ok {
			splits[t] = s
		}
	}
	return splitAxes(p, splits)
}

// epilogueSplit returns the split of t's axis a where t is element-wise
// (computed, no reduction, no update) and reads tensors of splits, each
// with a alone in its split dimension, all of one group size, and a's
// extent is the same as theirs along it.
func epilogueSplit(t *te.Tensor, splits map[*te.Tensor]axisSplit) (axisSplit, bool) {
	if t.Kind != te.Compute || t.Update != nil || te.HasReduce(t.Body) {
		return axisSplit{}, false
	}
	var axis *te.Var
	g, ok := 0, true
	te.Walk(t.Body, func(x te.Expr) bool {
		l, isLoad := x.(*te.Load)
		if !isLoad || !ok {
			return ok
		}
		s, isSplit := splits[l.Tensor]
		if !isSplit {
			return true
		}
		v, isVar := l.Index[s.dim].AsVar()
		switch {
		case !isVar || axis != nil && v != axis || g != 0 && g != s.g || v.Extent != l.Tensor.Shape[s.dim]:
			ok = false
		case l.Gather != nil && l.Gather[s.dim] != nil:
			ok = false
		default:
			axis, g = v, s.g
		}
		return ok
	})
	if !ok || axis == nil {
		return axisSplit{}, false
	}
	for dim, a := range t.Axes {
		if a == axis {
			return axisSplit{dim: dim, g: g}, true
		}
	}
	return axisSplit{}, false
}
