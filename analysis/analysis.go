package analysis

import (
	"fmt"

	"tec/te"
)

// Options controls Analyze.
type Options struct {
	// Threshold is the compute-memory ratio at and above which a TE is
	// compute-intensive; 0 means DefaultThreshold.
	Threshold float64
}

// Analysis is the global analysis of one program.
type Analysis struct {
	Program   *te.Program
	Graph     *Graph
	Threshold float64
	// TEs holds one entry per compute tensor, in topological order.
	TEs []*TE
	// Reuse holds one entry per tensor that two or more TEs read, in
	// topological order of the tensor.
	Reuse []*Reuse

	te    map[*te.Tensor]*TE
	reuse map[*te.Tensor]*Reuse
}

// TE is the analysis of one compute tensor.
type TE struct {
	Tensor *te.Tensor
	// Accesses are the distinct accesses of the body, in order of first load.
	Accesses []*Access
	// Dependence is the least precise of the accesses' (OneToOne for a TE
	// that loads nothing).
	Dependence Dependence
	Intensity  Intensity
}

// Analyze builds the dependency graph of p and analyses every TE in it.
func Analyze(p *te.Program, opts Options) (*Analysis, error) {
	g, err := NewGraph(p)
	if err != nil {
		return nil, err
	}
	th := opts.Threshold
	if th == 0 {
		th = DefaultThreshold
	}
	if th < 0 {
		return nil, fmt.Errorf("analysis: negative intensity threshold %g", th)
	}
	a := &Analysis{
		Program:   p,
		Graph:     g,
		Threshold: th,
		TEs:       make([]*TE, 0, g.Len()),
		te:        make(map[*te.Tensor]*TE, g.Len()),
		reuse:     map[*te.Tensor]*Reuse{},
	}
	for i, t := range g.nodes {
		if t.Kind == te.Compute {
			accs := accessesOf(t)
			x := &TE{Tensor: t, Accesses: accs, Intensity: intensityOf(t, accs, th)}
			for _, acc := range accs {
				x.Dependence = max(x.Dependence, acc.Dependence())
			}
			a.TEs = append(a.TEs, x)
			a.te[t] = x
		}
		if r := g.reuseOf(int32(i)); r != nil {
			a.Reuse = append(a.Reuse, r)
			a.reuse[t] = r
		}
	}
	return a, nil
}

// TE returns the analysis of compute tensor t, or nil if t is not one of the
// program's compute tensors.
func (a *Analysis) TE(t *te.Tensor) *TE { return a.te[t] }

// ReuseOf returns the reuse of t, or nil if fewer than two TEs read it.
func (a *Analysis) ReuseOf(t *te.Tensor) *Reuse { return a.reuse[t] }

// AccessesOf returns the accesses of x that read tensor in.
func (x *TE) AccessesOf(in *te.Tensor) []*Access {
	var as []*Access
	for _, a := range x.Accesses {
		if a.In == in {
			as = append(as, a)
		}
	}
	return as
}

// Summary counts a program's tensors and TEs by class and sums its costs.
type Summary struct {
	Tensors, Inputs, Params, Computes, Outputs int

	OneToOne, OneToMany, Opaque       int // TEs by dependence
	ComputeIntensive, MemoryIntensive int // TEs by intensity class

	// FLOPs is the sum of the TEs' Intensity.Ops.
	FLOPs int64
	// CompulsoryBytes is what any implementation must move: InputBytes +
	// ParamBytes + OutputBytes. OutputBytes counts computed outputs only (a
	// placeholder returned as an output is already an input or param).
	CompulsoryBytes                     int64
	InputBytes, ParamBytes, OutputBytes int64

	// SpatialReuse and TemporalReuse count the tensors with each kind of
	// reuse (a tensor may have both).
	SpatialReuse, TemporalReuse int
}

// Summary returns the program's summary.
func (a *Analysis) Summary() Summary {
	var s Summary
	s.Tensors = len(a.Program.Tensors)
	s.Outputs = len(a.Program.Outputs)
	for _, t := range a.Program.Tensors {
		switch t.Kind {
		case te.Input:
			s.Inputs++
			s.InputBytes += t.Bytes()
		case te.Param:
			s.Params++
			s.ParamBytes += t.Bytes()
		default:
			s.Computes++
		}
	}
	seen := map[*te.Tensor]bool{}
	for _, t := range a.Program.Outputs {
		if !seen[t] && t.Kind == te.Compute {
			s.OutputBytes += t.Bytes()
		}
		seen[t] = true
	}
	s.CompulsoryBytes = s.InputBytes + s.ParamBytes + s.OutputBytes
	for _, x := range a.TEs {
		switch x.Dependence {
		case OneToOne:
			s.OneToOne++
		case OneToMany:
			s.OneToMany++
		default:
			s.Opaque++
		}
		if x.Intensity.Class == ComputeIntensive {
			s.ComputeIntensive++
		} else {
			s.MemoryIntensive++
		}
		s.FLOPs += x.Intensity.Ops
	}
	for _, r := range a.Reuse {
		if r.IsSpatial() {
			s.SpatialReuse++
		}
		if r.IsTemporal() {
			s.TemporalReuse++
		}
	}
	return s
}
