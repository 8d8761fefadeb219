package driver

import (
	"encoding/json"
	"errors"
	"math"
	"testing"

	"tec/gpu"
	"tec/lang"
	"tec/pipeline"
)

func TestReport(t *testing.T) {
	g, err := gpu.Lookup("a100")
	if err != nil {
		t.Fatal(err)
	}
	arch, err := gpu.LookupArch(gpu.DefaultArch())
	if err != nil {
		t.Fatal(err)
	}
	slow := g
	slow.DRAMBandwidth = 1e-310 // subnormal: bytes over it overflow to +Inf
	p, err := Check("softmax.te", []byte(softmax), lang.Config{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		g         gpu.Model
		notFinite bool
	}{
		{"a100", g, false},
		{"a rate no GPU has", slow, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Compile(p, pipeline.Options{Level: pipeline.MaxLevel, GPU: tt.g})
			if err != nil {
				t.Fatal(err)
			}
			data, err := c.Report(tt.g, arch)
			if tt.notFinite {
				if !errors.Is(err, ErrNotFinite) {
					t.Fatalf("Report: %v, want ErrNotFinite", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var r Report
			if err := json.Unmarshal(data, &r); err != nil {
				t.Fatal(err)
			}
			if r.Model != "softmax" || r.Target != arch.Name || len(r.Kernels) != len(c.Module.Kernels) ||
				r.ResidentBlocks != ResidentBlocks(c.Module, tt.g) || r.WorkspaceBytes != c.Layout().Bytes || !(r.Predicted.MS > 0) {
				t.Errorf("report %+v does not describe the build", r)
			}
			// Each kernel's stages and their predictions, as the plan has them.
			var stages, want float64
			for i, k := range r.Kernels {
				pk := c.Plan.Kernels[i]
				if len(k.Stages) != len(pk.Stages) {
					t.Fatalf("kernel %s: %d stage predictions, want the plan's %d", k.Name, len(k.Stages), len(pk.Stages))
				}
				for j, s := range k.Stages {
					if s.Stage != pk.Stages[j].Name || s.Bound == "" || !(s.PredictedUS > 0) {
						t.Errorf("kernel %s: stage %d is %+v, want %s with a time and a bound", k.Name, j, s, pk.Stages[j].Name)
					}
					stages += s.PredictedUS
					want += pk.StageCosts[j].Time * 1e6
				}
			}
			if stages == 0 || math.Abs(stages-want) > 1e-9*want {
				t.Errorf("the stages' predictions add up to %g us, want the plan's %g", stages, want)
			}
		})
	}
}
