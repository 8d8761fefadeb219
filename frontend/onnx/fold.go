package onnx

import (
	"fmt"
	"strings"

	"tec/lang"
	"tec/te"
)

// Folding at import.
//
// Every node whose inputs are all known at import is folded: its outputs
// become constants, and it prints nothing. Most operators build their
// result as an element expression, which define evaluates with the
// importer's own evaluator (eval) instead of printing it. The others —
// those whose statements call the standard library (softmax) or a
// function of their own (LSTM and GRU cells), or that print several
// statements — are folded after the fact: the statements they printed are
// checked as a program of their own and run by the reference evaluator
// (te.Evaluate), the program that tec run --device ref would run, and
// then taken back. A half-precision weight widened by a Cast is the one
// exception: it stays a param of its own type (see castOp).

// foldMark is where a node's printing began.
type foldMark struct {
	body, params, helpers, named, outUsed int
}

func (im *importer) mark() foldMark {
	return foldMark{len(im.body), len(im.params), len(im.helpers), len(im.named), len(im.outUsed)}
}

// constantInputs reports whether the node has inputs and all are known at
// import.
func (n *node) constantInputs() bool {
	some := false
	for i, in := range n.p.GetInput() {
		if in == "" {
			continue
		}
		if v := n.in(i); v == nil || v.constant == nil {
			return false
		}
		some = true
	}
	return some
}

// foldStatements folds the node whose statements were printed since m,
// its inputs being all constants: it evaluates them, makes the outputs
// constants and takes back what the node printed, declared and named.
// Outputs of more than maxFold elements in all stay statements.
func (im *importer) foldStatements(n *node, m foldMark) error {
	var outs []*value
	total := 0
	for _, o := range n.p.GetOutput() {
		v := im.values[o]
		if o == "" || v == nil || v.constant != nil {
			continue
		}
		size, err := te.CheckShape(v.shape)
		if err != nil {
			return err
		}
		total += size
		outs = append(outs, v)
	}
	if len(outs) == 0 || total > maxFold {
		return nil
	}
	var src strings.Builder
	for _, h := range im.helpers {
		src.WriteString(h + "\n")
	}
	src.WriteString("model fold {\n")
	for _, l := range im.params {
		src.WriteString("  " + l + "\n")
	}
	for _, l := range im.body[m.body:] {
		src.WriteString("  " + l + "\n")
	}
	names := make([]string, len(outs))
	for i, v := range outs {
		names[i] = v.name
	}
	fmt.Fprintf(&src, "  output %s\n}\n", strings.Join(names, ", "))
	prog, diags := lang.Check("fold.te", []byte(src.String()), lang.Config{})
	if diags.HasErrors() {
		return fmt.Errorf("folding at import: the node's statements do not check:\n%v", diags.Error())
	}
	feeds := map[string]*te.Array{}
	for _, t := range prog.Placeholders() {
		feeds[t.Name] = im.outData[t.Name]
	}
	res, err := te.Evaluate(prog, feeds, te.EvalOptions{})
	if err != nil {
		return fmt.Errorf("folding at import: %w", err)
	}

	// Take back the statements, and the params, names and functions that
	// only they needed.
	dropped := map[string]bool{}
	for _, l := range im.params[m.params:] {
		name, _, _ := strings.Cut(strings.TrimPrefix(l, "param "), ":")
		dropped[name] = true
		delete(im.outData, name)
	}
	for _, v := range im.values {
		if dropped[v.name] {
			v.name = ""
		}
	}
	for _, name := range im.named[m.named:] {
		delete(im.taken, name)
	}
	for i := m.outUsed; i < len(im.outUsed); i += 2 {
		im.outName[im.outUsed[i]] = im.outUsed[i+1]
	}
	for _, h := range im.helpers[m.helpers:] {
		for name, src := range cellSource {
			if src == h {
				delete(im.haveFn, name)
			}
		}
	}
	im.body, im.params, im.helpers = im.body[:m.body], im.params[:m.params], im.helpers[:m.helpers]
	im.named, im.outUsed = im.named[:m.named], im.outUsed[:m.outUsed]
	for _, v := range outs {
		a := res[v.name]
		if a == nil {
			return fmt.Errorf("folding at import: no value for %s", v.name)
		}
		v.name, v.dt, v.constant = "", a.DType, a
	}
	return nil
}
