package cuda

import (
	"fmt"
	"strings"

	"tec/backend/internal/dedup"
	"tec/backend/internal/sign"
	"tec/backend/kir"
)

// stageFunc is a device function that computes the stages of a
// dedup.StageFunc (see dedup.Stages).
type stageFunc struct {
	*dedup.StageFunc
	name string
	// restrict[i] is whether every call's buffer i is one that its kernel
	// either writes only in this stage or does not write at all, and that
	// shares no bytes with another of the kernel's temporaries: a pointer
	// the compiler may read through the read-only cache.
	restrict []bool
}

// outlined holds the stage functions of a module.
type outlined struct {
	*dedup.StageCalls
	funcs []*stageFunc
	fn    map[*dedup.StageFunc]*stageFunc
}

// outline gives each shared stage code of m a device function.
func outline(m *kir.Module, groups map[*kir.Kernel]*kir.Kernel, n *names) *outlined {
	o := &outlined{StageCalls: dedup.Stages(m, groups), fn: map[*dedup.StageFunc]*stageFunc{}}
	aliased := map[*kir.Kernel]map[*kir.Buffer]bool{}
	written := map[*kir.Kernel]map[*kir.Buffer]bool{}
	for _, sf := range o.Funcs {
		f := &stageFunc{StageFunc: sf, name: n.module.Name("s_" + sf.Stages[0].Name)}
		f.restrict = make([]bool, len(f.Params))
		for i := range f.restrict {
			f.restrict[i] = f.Params[i].Space == kir.Global
		}
		for _, s := range sf.Stages {
			k := o.Kernel[s]
			al, ok := aliased[k]
			if !ok {
				al = kir.Overlapping(k, n.offsets)
				aliased[k] = al
			}
			if _, ok := written[k]; !ok {
				written[k] = writtenBy(k.Body)
			}
			here := writtenBy(s.Body)
			for i, b := range o.Args[s] {
				if al[b] || written[k][b] && !here[b] {
					f.restrict[i] = false
				}
			}
		}
		o.funcs = append(o.funcs, f)
		o.fn[sf] = f
	}
	return o
}

// call returns the device function that computes stage s, or nil if s is
// written inline (o may be nil).
func (o *outlined) call(s *kir.Stage) *stageFunc {
	if o == nil {
		return nil
	}
	return o.fn[o.Call(s)]
}

// writeStageFunc writes f's device function.
func writeStageFunc(b *strings.Builder, f *stageFunc, n *names) {
	local := map[*kir.Buffer]string{}
	scope := n.module.Child()
	fn := *n
	fn.local = local
	fn.stages = nil
	written := writtenBy(f.Body)
	var params []string
	for i, p := range f.Params {
		name := scope.Name(safe(p.Name))
		local[p] = name
		c := "const "
		if written[p] {
			c = ""
		}
		r := ""
		if f.restrict[i] {
			r = " __restrict__"
		}
		params = append(params, fmt.Sprintf("%s%s*%s %s", c, cType(p.DType), r, name))
	}
	var names []string
	for _, s := range f.Stages[:min(4, len(f.Stages))] {
		names = append(names, s.Name)
	}
	list := strings.Join(names, ", ")
	if len(f.Stages) > 4 {
		list += fmt.Sprintf(" and %d more", len(f.Stages)-4)
	}
	fmt.Fprintf(b, "\n// The code of %d stages: %s.\n", len(f.Stages), list)
	fmt.Fprintf(b, "static __device__ __noinline__ void %s(%s) {\n", f.name, strings.Join(params, ", "))
	w := &kernelWriter{b: b, k: &kir.Kernel{Body: f.Body, Locals: f.Locals}, names: &fn, vars: map[*kir.Var]string{}, scope: scope,
		facts: sign.Analyze(f.Body), live: liveVars(f.Body)}
	if w.k.HasGridSync() {
		w.line(1, "cg::grid_group grid = cg::this_grid();")
	}
	align := ""
	if usesWarpLevel(w.k) {
		align = "__align__(16) " // 16-byte accesses and fragments
	}
	for _, l := range f.Locals {
		name := scope.Name(safe(l.Name))
		local[l] = name
		w.line(1, "%s%s %s[%d];  // %s, per thread", align, cType(l.DType), name, l.Len(), shapeComment(l))
	}
	w.stmts(f.Body, 1)
	b.WriteString("}\n")
}
