package analysis

import (
	"tec/te"
)

// Report is an Analysis as plain data: what `tec explain` prints, and, with
// its JSON field names, what `tec explain --json` writes (docs/cli.md
// documents the schema). Tensors are referred to by name.
type Report struct {
	Program   string         `json:"program"`
	Threshold float64        `json:"threshold"`
	Summary   SummaryReport  `json:"summary"`
	Tensors   []TensorReport `json:"tensors"`
	TEs       []TEReport     `json:"tes"`
	Reuse     []ReuseReport  `json:"reuse"`
}

// SummaryReport is Summary with JSON field names.
type SummaryReport struct {
	Tensors          int   `json:"tensors"`
	Inputs           int   `json:"inputs"`
	Params           int   `json:"params"`
	TEs              int   `json:"tes"`
	Outputs          int   `json:"outputs"`
	OneToOne         int   `json:"one_relies_on_one"`
	OneToMany        int   `json:"one_relies_on_many"`
	Opaque           int   `json:"opaque"`
	ComputeIntensive int   `json:"compute_intensive"`
	MemoryIntensive  int   `json:"memory_intensive"`
	FLOPs            int64 `json:"flops"`
	CompulsoryBytes  int64 `json:"compulsory_bytes"`
	InputBytes       int64 `json:"input_bytes"`
	ParamBytes       int64 `json:"param_bytes"`
	OutputBytes      int64 `json:"output_bytes"`
	SpatialReuse     int   `json:"spatial_reuse"`
	TemporalReuse    int   `json:"temporal_reuse"`
}

// TensorReport describes one tensor of the dependency graph.
type TensorReport struct {
	Name      string     `json:"name"`
	Kind      string     `json:"kind"` // "input", "param" or "compute"
	Type      string     `json:"type"` // e.g. "f32[64, 64]"
	Shape     []int      `json:"shape"`
	Bytes     int64      `json:"bytes"`
	Location  string     `json:"location,omitempty"` // file:line:col
	Scope     []string   `json:"scope,omitempty"`
	Output    bool       `json:"output,omitempty"`
	Level     int        `json:"level"`
	Live      LiveReport `json:"live"`
	Producers []string   `json:"producers"`
	Consumers []string   `json:"consumers"`
	Idom      string     `json:"idom,omitempty"`
}

// LiveReport is a LiveRange with JSON field names.
type LiveReport struct {
	Def     int  `json:"def"`
	LastUse int  `json:"last_use"`
	LiveOut bool `json:"live_out,omitempty"`
}

// TEReport describes the analysis of one compute tensor.
type TEReport struct {
	Name       string         `json:"name"`
	Location   string         `json:"location,omitempty"`
	Dependence Dependence     `json:"dependence"`
	Class      Class          `json:"class"`
	Ratio      float64        `json:"ratio"`
	Ops        int64          `json:"ops"`
	Read       int64          `json:"read"`
	Written    int64          `json:"written"`
	Accesses   []AccessReport `json:"accesses"`
}

// AccessReport describes one distinct access.
type AccessReport struct {
	Tensor     string     `json:"tensor"`
	Relation   string     `json:"relation"` // Map.String
	Dependence Dependence `json:"dependence"`
	Count      int        `json:"count"`
	Inexact    bool       `json:"inexact,omitempty"`
	// Matrix and Offset give an affine relation as Matrix·v + Offset, one
	// row per dimension of Tensor and one column per variable (output axes,
	// then reduction variables); both are absent for a quasi-affine one.
	Matrix [][]int `json:"matrix,omitempty"`
	Offset []int   `json:"offset,omitempty"`
}

// ReuseReport is a Reuse by names.
type ReuseReport struct {
	Tensor   string     `json:"tensor"`
	Readers  []string   `json:"readers"`
	Spatial  [][]string `json:"spatial"`
	Temporal []string   `json:"temporal"`
}

// Report returns the analysis as a Report.
func (a *Analysis) Report() *Report {
	s := a.Summary()
	r := &Report{
		Program:   a.Program.Name,
		Threshold: a.Threshold,
		Summary: SummaryReport{
			Tensors: s.Tensors, Inputs: s.Inputs, Params: s.Params, TEs: s.Computes, Outputs: s.Outputs,
			OneToOne: s.OneToOne, OneToMany: s.OneToMany, Opaque: s.Opaque,
			ComputeIntensive: s.ComputeIntensive, MemoryIntensive: s.MemoryIntensive,
			FLOPs: s.FLOPs, CompulsoryBytes: s.CompulsoryBytes,
			InputBytes: s.InputBytes, ParamBytes: s.ParamBytes, OutputBytes: s.OutputBytes,
			SpatialReuse: s.SpatialReuse, TemporalReuse: s.TemporalReuse,
		},
		Tensors: make([]TensorReport, 0, a.Graph.Len()),
		TEs:     make([]TEReport, 0, len(a.TEs)),
		Reuse:   make([]ReuseReport, 0, len(a.Reuse)),
	}
	g := a.Graph
	for _, t := range g.Order() {
		lr := g.LiveRange(t)
		tr := TensorReport{
			Name:      t.Name,
			Kind:      t.Kind.String(),
			Type:      t.TypeString(),
			Shape:     append([]int{}, t.Shape...),
			Bytes:     t.Bytes(),
			Location:  location(t.Span),
			Scope:     t.Scope,
			Output:    g.IsOutput(t),
			Level:     g.Level(t),
			Live:      LiveReport{Def: lr.Def, LastUse: lr.LastUse, LiveOut: lr.LiveOut},
			Producers: tensorNames(g.Producers(t)),
			Consumers: tensorNames(g.Consumers(t)),
		}
		if d := g.Idom(t); d != nil {
			tr.Idom = d.Name
		}
		r.Tensors = append(r.Tensors, tr)
	}
	for _, x := range a.TEs {
		tr := TEReport{
			Name:       x.Tensor.Name,
			Location:   location(x.Tensor.Span),
			Dependence: x.Dependence,
			Class:      x.Intensity.Class,
			Ratio:      x.Intensity.Ratio,
			Ops:        x.Intensity.Ops,
			Read:       x.Intensity.Read,
			Written:    x.Intensity.Written,
			Accesses:   make([]AccessReport, 0, len(x.Accesses)),
		}
		for _, acc := range x.Accesses {
			ar := AccessReport{
				Tensor:     acc.In.Name,
				Relation:   acc.String(),
				Dependence: acc.Dependence(),
				Count:      acc.Count,
				Inexact:    acc.Inexact,
			}
			if M, c, ok := acc.Affine(); ok {
				ar.Matrix, ar.Offset = M, c
			}
			tr.Accesses = append(tr.Accesses, ar)
		}
		r.TEs = append(r.TEs, tr)
	}
	for _, ru := range a.Reuse {
		rr := ReuseReport{
			Tensor:   ru.Tensor.Name,
			Readers:  tensorNames(ru.Readers),
			Spatial:  make([][]string, 0, len(ru.Spatial)),
			Temporal: tensorNames(ru.Temporal),
		}
		for _, grp := range ru.Spatial {
			rr.Spatial = append(rr.Spatial, tensorNames(grp))
		}
		r.Reuse = append(r.Reuse, rr)
	}
	return r
}

func location(s te.Span) string {
	if !s.IsValid() {
		return ""
	}
	return s.String()
}

// tensorNames returns the names of ts, never nil (so that JSON has []).
func tensorNames(ts []*te.Tensor) []string {
	ns := make([]string, len(ts))
	for k, t := range ts {
		ns[k] = t.Name
	}
	return ns
}
