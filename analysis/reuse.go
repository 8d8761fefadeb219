package analysis

import "tec/te"

// Reuse records the TEs that read one tensor when two or more do (§5.1): the
// set s(t) = {op_j, ..., op_k} of the paper, split by how its members relate.
type Reuse struct {
	Tensor *te.Tensor
	// Readers are the TEs that load Tensor, in topological order.
	Readers []*te.Tensor
	// Spatial partitions the readers into the fewest groups of mutually
	// independent TEs (Graph.Antichains) and keeps the groups of two or
	// more: the members of a group may run side by side and load Tensor
	// once for all (the horizontal transform; QKV projections, MMoE
	// experts, LSTM gates).
	Spatial [][]*te.Tensor
	// Temporal lists the readers joined by a path to another reader: Tensor
	// is read again after a dependent step, so keeping it on chip saves the
	// reload (LSTM weights at every step, a result read by a reduction and
	// by a later element-wise TE).
	Temporal []*te.Tensor
}

// IsSpatial reports whether some readers are independent of each other.
func (r *Reuse) IsSpatial() bool { return len(r.Spatial) > 0 }

// IsTemporal reports whether some readers depend on each other.
func (r *Reuse) IsTemporal() bool { return len(r.Temporal) > 0 }

// reuseOf returns the reuse of tensor position v, or nil if fewer than two
// TEs read it.
func (g *Graph) reuseOf(v int32) *Reuse {
	readers := g.succs[v]
	if len(readers) < 2 {
		return nil
	}
	r := &Reuse{Tensor: g.nodes[v], Readers: g.tensors(readers)}
	before, after := g.chainRanks(readers)
	var groups [][]*te.Tensor
	for k, u := range readers {
		rank := int(before[k]) - 1
		for len(groups) <= rank {
			groups = append(groups, nil)
		}
		groups[rank] = append(groups[rank], g.nodes[u])
		if before[k] > 1 || after[k] > 1 {
			r.Temporal = append(r.Temporal, g.nodes[u])
		}
	}
	for _, grp := range groups {
		if len(grp) > 1 {
			r.Spatial = append(r.Spatial, grp)
		}
	}
	return r
}
