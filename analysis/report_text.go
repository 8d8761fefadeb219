package analysis

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// WriteText writes the report in the readable form of `tec explain`: one
// paragraph per TE (type, location, dependence and intensity, live range,
// each access relation, who reads the result), then the reused tensors and a
// summary. With summaryOnly it writes the summary alone.
func (r *Report) WriteText(w io.Writer, summaryOnly bool) error {
	bw := bufio.NewWriter(w)
	s := r.Summary
	fmt.Fprintf(bw, "model %s: %d tensors (%s, %s, %s), %s\n", r.Program, s.Tensors,
		plural(s.Inputs, "input"), plural(s.Params, "param"), plural(s.TEs, "TE"), plural(s.Outputs, "output"))
	if !summaryOnly {
		tensors := make(map[string]*TensorReport, len(r.Tensors))
		for k := range r.Tensors {
			tensors[r.Tensors[k].Name] = &r.Tensors[k]
		}
		reuse := make(map[string]*ReuseReport, len(r.Reuse))
		for k := range r.Reuse {
			reuse[r.Reuse[k].Tensor] = &r.Reuse[k]
		}
		for _, x := range r.TEs {
			writeTE(bw, &x, tensors[x.Name], reuse[x.Name])
		}
		var shared []*ReuseReport
		for k := range r.Reuse {
			if tensors[r.Reuse[k].Tensor].Kind != "compute" {
				shared = append(shared, &r.Reuse[k])
			}
		}
		if len(shared) > 0 {
			fmt.Fprintf(bw, "\nreused inputs and params:\n")
			for _, ru := range shared {
				fmt.Fprintf(bw, "  %s read by %s\n", ru.Tensor, describeReuse(ru))
			}
		}
	}
	fmt.Fprintf(bw, "\nsummary:\n")
	fmt.Fprintf(bw, "  TEs: %d one-relies-on-one, %d one-relies-on-many, %d opaque\n", s.OneToOne, s.OneToMany, s.Opaque)
	fmt.Fprintf(bw, "       %d compute-intensive, %d memory-intensive (threshold %g ops per element)\n",
		s.ComputeIntensive, s.MemoryIntensive, r.Threshold)
	fmt.Fprintf(bw, "  FLOPs: %s\n", thousands(s.FLOPs))
	fmt.Fprintf(bw, "  compulsory bytes: %s = inputs %s + params %s + outputs %s\n",
		thousands(s.CompulsoryBytes), thousands(s.InputBytes), thousands(s.ParamBytes), thousands(s.OutputBytes))
	fmt.Fprintf(bw, "  reuse: %s with spatial reuse, %d with temporal reuse\n", plural(s.SpatialReuse, "tensor"), s.TemporalReuse)
	return bw.Flush()
}

func writeTE(w io.Writer, x *TEReport, t *TensorReport, ru *ReuseReport) {
	fmt.Fprintf(w, "\n%s: %s", x.Name, t.Type)
	if x.Location != "" {
		fmt.Fprintf(w, " at %s", x.Location)
	}
	if len(t.Scope) > 0 {
		fmt.Fprintf(w, " in %s", strings.Join(t.Scope, " / "))
	}
	if t.Output {
		fmt.Fprint(w, " (output)")
	}
	fmt.Fprintf(w, "\n  %s %s, %s %s: %.3g ops per element = %s ops / (%s read + %s written)\n",
		x.Dependence.Short(), x.Dependence, x.Class.Short(), x.Class, x.Ratio,
		thousands(x.Ops), thousands(x.Read), thousands(x.Written))
	fmt.Fprintf(w, "  live %d..", t.Live.Def)
	if t.Live.LiveOut {
		fmt.Fprint(w, "end")
	} else {
		fmt.Fprint(w, t.Live.LastUse)
	}
	fmt.Fprintf(w, ", level %d", t.Level)
	if t.Idom != "" {
		fmt.Fprintf(w, ", dominated by %s", t.Idom)
	}
	fmt.Fprintln(w)
	for _, a := range x.Accesses {
		fmt.Fprintf(w, "  %s %s", a.Dependence.Short(), a.Relation)
		var notes []string
		if a.Count > 1 {
			notes = append(notes, fmt.Sprintf("%d loads", a.Count))
		}
		if a.Inexact {
			notes = append(notes, "data-dependent guard left out")
		}
		if len(notes) > 0 {
			fmt.Fprintf(w, "  (%s)", strings.Join(notes, "; "))
		}
		fmt.Fprintln(w)
	}
	switch {
	case ru != nil:
		fmt.Fprintf(w, "  read by %s\n", describeReuse(ru))
	case len(t.Consumers) == 1:
		fmt.Fprintf(w, "  read by %s\n", t.Consumers[0])
	}
}

// describeReuse formats the readers of a reused tensor and how they reuse it.
func describeReuse(ru *ReuseReport) string {
	var b strings.Builder
	b.WriteString(strings.Join(ru.Readers, ", "))
	var kinds []string
	for _, grp := range ru.Spatial {
		kinds = append(kinds, "spatial {"+strings.Join(grp, ", ")+"}")
	}
	if len(ru.Temporal) > 0 {
		kinds = append(kinds, "temporal "+strings.Join(ru.Temporal, ", "))
	}
	if len(kinds) > 0 {
		b.WriteString(": ")
		b.WriteString(strings.Join(kinds, "; "))
	}
	return b.String()
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// thousands formats n with commas between groups of three digits.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for k, r := range s {
		if k > 0 && (len(s)-k)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
