package pipeline

import (
	"slices"
	"strings"
	"testing"

	"tec/gpu"
	"tec/te"
)

// TestVerifyProgram checks that the structural check between passes
// accepts a valid program and names what is wrong with a broken one.
func TestVerifyProgram(t *testing.T) {
	for _, tt := range []struct {
		name  string
		spoil func(p *te.Program)
		want  string
	}{
		{"valid", func(*te.Program) {}, ""},
		{"no body", func(p *te.Program) { p.Lookup("h").Body = nil }, "tensor h: want a body over 2 axes"},
		{"axes", func(p *te.Program) { h := p.Lookup("h"); h.Axes = h.Axes[:1] }, "tensor h: want a body over 2 axes"},
		{"loaded before it is defined", func(p *te.Program) {
			i := slices.Index(p.Tensors, p.Lookup("r"))
			p.Tensors[i-1], p.Tensors[i] = p.Tensors[i], p.Tensors[i-1]
		}, "tensor r: loads h, defined after it"},
		{"loaded, not in the program", func(p *te.Program) {
			p.Tensors = slices.DeleteFunc(p.Tensors, func(t *te.Tensor) bool { return t.Name == "w1" })
		}, "tensor h: loads w1, no tensor of the program"},
		{"index count", func(p *te.Program) {
			r := p.Lookup("r")
			r.Body = &te.Load{Tensor: p.Lookup("h"), Index: []te.Index{te.VarIndex(r.Axes[0])}}
		}, "tensor r: loads h with 1 indexes, want 2"},
		{"output", func(p *te.Program) { p.Outputs = append(p.Outputs, &te.Tensor{Name: "z"}) }, "output z is no tensor of the program"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := mlp()
			tt.spoil(p)
			err := verifyProgram(p)
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("verifyProgram: %v; want %q", err, tt.want)
			}
		})
	}
}

// TestVerifyPlan checks that the check between passes rejects a plan of
// another program and one that computes a stage twice.
func TestVerifyPlan(t *testing.T) {
	for _, tt := range []struct {
		name  string
		spoil func(b *build)
		want  string
	}{
		{"valid", func(*build) {}, ""},
		{"another program", func(b *build) { b.prog = mlp() }, "the plan partitions another program"},
		{"a stage twice", func(b *build) {
			k := b.plan.Kernels[0]
			k.Stages = append(k.Stages, k.Stages[0])
		}, "is computed twice"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			small, _ := gpu.Builtin("small")
			opts := Options{GPU: small}
			b := &build{opts: opts, popts: partitionOptions(opts), prog: mlp()}
			if _, err := b.runPasses(func(name string) bool { return name == "plan" }, nil); err != nil {
				t.Fatal(err)
			}
			b.checked.plan = nil
			tt.spoil(b)
			err := b.verify()
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("verify: %v; want %q", err, tt.want)
			}
		})
	}
}
