package onnx

import (
	"fmt"
	"strings"

	"tec/frontend/onnx/onnxpb"
	"tec/te"
)

// The functions that LSTM and GRU nodes call, written once into the
// program that needs them.
const (
	lstmCell    = "onnx_lstm_cell"
	gruCell     = "onnx_gru_cell"
	gruCellLBR0 = "onnx_gru_cell_reset_first"
)

var cellSource = map[string]string{
	lstmCell: `# one step of an ONNX LSTM with the default activations: W, R and bias hold
# the gates in the order i, o, f, c; bias is Wb then Rb
fn onnx_lstm_cell(x: f32[B, I], h: f32[B, H], c: f32[B, H], W: f32[G, I], R: f32[G, H], bias: f32[G2])
    -> (f32[B, H], f32[B, H]) {
  g[b, j] = sum[k](x[b, k] * W[j, k]) + sum[k](h[b, k] * R[j, k]) + bias[j] + bias[G + j] where j in 0..G
  c2[b, j] = sigmoid(g[b, 2 * H + j]) * c[b, j] + sigmoid(g[b, j]) * tanh(g[b, 3 * H + j]) where j in 0..H
  h2[b, j] = sigmoid(g[b, H + j]) * tanh(c2[b, j])
  return h2, c2
}
`,
	gruCell: `# one step of an ONNX GRU with the default activations and
# linear_before_reset = 1 (PyTorch's GRU): W, R and bias hold the gates in
# the order z, r, h; bias is Wb then Rb
fn onnx_gru_cell(x: f32[B, I], h: f32[B, H], W: f32[G, I], R: f32[G, H], bias: f32[G2]) -> f32[B, H] {
  gx[b, j] = sum[k](x[b, k] * W[j, k]) + bias[j] where j in 0..G
  gh[b, j] = sum[k](h[b, k] * R[j, k]) + bias[G + j] where j in 0..G
  z[b, j] = sigmoid(gx[b, j] + gh[b, j]) where j in 0..H
  r[b, j] = sigmoid(gx[b, H + j] + gh[b, H + j]) where j in 0..H
  n[b, j] = tanh(gx[b, 2 * H + j] + r[b, j] * gh[b, 2 * H + j])
  h2[b, j] = (1.0 - z[b, j]) * n[b, j] + z[b, j] * h[b, j]
  return h2
}
`,
	gruCellLBR0: `# one step of an ONNX GRU with the default activations and
# linear_before_reset = 0: the reset gate scales h before R
fn onnx_gru_cell_reset_first(x: f32[B, I], h: f32[B, H], W: f32[G, I], R: f32[G, H], bias: f32[G2]) -> f32[B, H] {
  gx[b, j] = sum[k](x[b, k] * W[j, k]) + bias[j] where j in 0..G
  gh[b, j] = sum[k](h[b, k] * R[j, k]) + bias[G + j] where j in 0..2*H
  z[b, j] = sigmoid(gx[b, j] + gh[b, j]) where j in 0..H
  r[b, j] = sigmoid(gx[b, H + j] + gh[b, H + j]) where j in 0..H
  rh[b, j] = r[b, j] * h[b, j]
  n[b, j] = tanh(gx[b, 2 * H + j] + sum[k](rh[b, k] * R[2 * H + j, k]) + bias[G + 2 * H + j]) where j in 0..H
  h2[b, j] = (1.0 - z[b, j]) * n[b, j] + z[b, j] * h[b, j]
  return h2
}
`,
}

func (im *importer) useHelper(name string) {
	if !im.haveFn[name] {
		im.haveFn[name] = true
		im.helpers = append(im.helpers, cellSource[name])
	}
}

func lstmOp(n *node) error { return recurrentOp(n, 4, true) }
func gruOp(n *node) error  { return recurrentOp(n, 3, false) }

// recurrentOp imports LSTM (gates = 4, with a cell state) and GRU (gates =
// 3) as a loop over the time steps that calls the cell function.
func recurrentOp(n *node, gates int, lstm bool) error {
	x, err := n.need(0)
	if err != nil {
		return err
	}
	w, err := n.need(1)
	if err != nil {
		return err
	}
	r, err := n.need(2)
	if err != nil {
		return err
	}
	if n.int("layout", 0) != 0 {
		return fmt.Errorf("layout 1 (batch first) is not supported")
	}
	if a := n.attr("clip"); a != nil {
		return fmt.Errorf("attribute clip is not supported")
	}
	if n.int("input_forget", 0) != 0 {
		return fmt.Errorf("input_forget is not supported")
	}
	if n.attr("activation_alpha") != nil || n.attr("activation_beta") != nil {
		return fmt.Errorf("activation_alpha and activation_beta are not supported")
	}
	hidden := n.int("hidden_size", 0)
	dir := n.str("direction", "forward")
	dirs := map[string][]bool{"forward": {false}, "reverse": {true}, "bidirectional": {false, true}}[dir]
	if dirs == nil {
		return fmt.Errorf("direction %q is not one of forward, reverse, bidirectional", dir)
	}
	if acts := n.typed("activations", onnxpb.AttributeProto_STRINGS); acts != nil {
		want := []string{"Sigmoid", "Tanh", "Tanh"}
		if !lstm {
			want = want[:2]
		}
		for i, a := range acts.GetStrings() {
			if !strings.EqualFold(string(a), want[i%len(want)]) {
				return fmt.Errorf("activations %q are not supported (only the defaults)", acts.GetStrings())
			}
		}
	}
	if x.rank() != 3 {
		return fmt.Errorf("the input X must be an f32[T, B, I] tensor")
	}
	steps, batch, inSize := x.shape[0], x.shape[1], x.shape[2]
	d := len(dirs)
	g := gates * hidden
	if hidden <= 0 || !equalShape(w.shape, []int{d, g, inSize}) || !equalShape(r.shape, []int{d, g, hidden}) {
		return fmt.Errorf("weights W %v and R %v do not fit hidden_size %d, %d directions and input %v", w.shape, r.shape, hidden, d, x.shape)
	}
	if sl := n.in(4); sl != nil {
		if u, ok := sl.uniform(); !ok || int(u) != steps {
			return fmt.Errorf("sequence_lens other than the full length %d are not supported", steps)
		}
	}
	if lstm && n.in(7) != nil {
		return fmt.Errorf("peephole weights (P) are not supported")
	}
	cell := lstmCell
	if !lstm {
		cell = gruCell
		if n.int("linear_before_reset", 0) == 0 {
			cell = gruCellLBR0
		}
	}
	im := n.im
	im.useHelper(cell)
	base := sanitize(n.p.GetOutput()[0])
	if n.p.GetOutput()[0] == "" {
		base = sanitize(n.p.GetName())
	}
	im.materialize(x)
	im.materialize(w)
	im.materialize(r)
	bias := "zeros(f32[" + fmt.Sprint(2*g) + "])"
	if b := n.in(3); b != nil {
		if !equalShape(b.shape, []int{d, 2 * g}) {
			return fmt.Errorf("bias B %v does not fit", b.shape)
		}
		if u, ok := b.uniform(); ok {
			bias = fmt.Sprintf("full(f32[%d], %s)", 2*g, formatLit(lit{u, te.F32}))
		} else {
			im.materialize(b)
			bias = b.name + "[%d]"
		}
	}
	for _, v := range []*value{n.in(5), n.in(6)} {
		if v != nil && !equalShape(v.shape, []int{d, batch, hidden}) {
			return fmt.Errorf("initial state %q of shape %v, want [%d, %d, %d]", v.onnx, v.shape, d, batch, hidden)
		}
	}
	state := func(v *value) string { // an initial state, [D, B, H]
		if v == nil {
			return fmt.Sprintf("zeros(f32[%d, %d])", batch, hidden)
		}
		if u, ok := v.uniform(); ok {
			if u == 0 {
				return fmt.Sprintf("zeros(f32[%d, %d])", batch, hidden)
			}
			return fmt.Sprintf("full(f32[%d, %d], %s)", batch, hidden, formatLit(lit{u, te.F32}))
		}
		im.materialize(v)
		return v.name + "[%d]"
	}
	initH, initC := state(n.in(5)), ""
	if lstm {
		initC = state(n.in(6))
	}
	var hs, cs, ys []*value
	for di, reverse := range dirs {
		suffix := ""
		if d == 2 {
			suffix = []string{"_fwd", "_bwd"}[di]
		}
		name := func(s string) string { return im.uniqueName(base + suffix + s) }
		h, c, list := name("_h"), name("_c"), name("_ys")
		at := func(s string) string {
			if strings.Contains(s, "%d") {
				return fmt.Sprintf(s, di)
			}
			return s
		}
		im.body = append(im.body, fmt.Sprintf("%s = %s", h, at(initH)))
		if lstm {
			im.body = append(im.body, fmt.Sprintf("%s = %s", c, at(initC)))
		}
		im.body = append(im.body, list+" = []")
		t := "t"
		if reverse {
			im.body = append(im.body, fmt.Sprintf("for s in 0..%d {", steps), fmt.Sprintf("  t = %d - s", steps-1))
		} else {
			im.body = append(im.body, fmt.Sprintf("for t in 0..%d {", steps))
		}
		args := fmt.Sprintf("%s[%s], %s", x.name, t, h)
		if lstm {
			args += ", " + c
		}
		args += fmt.Sprintf(", %s[%d], %s[%d], %s", w.name, di, r.name, di, at(bias))
		if lstm {
			im.body = append(im.body, fmt.Sprintf("  %s, %s = %s(%s)", h, c, cell, args))
		} else {
			im.body = append(im.body, fmt.Sprintf("  %s = %s(%s)", h, cell, args))
		}
		if reverse {
			im.body = append(im.body, fmt.Sprintf("  %s = [%s] + %s", list, h, list))
		} else {
			im.body = append(im.body, fmt.Sprintf("  %s = %s + [%s]", list, list, h))
		}
		im.body = append(im.body, "}")
		stacked := &value{onnx: base + suffix + "_seq", dt: te.F32, shape: []int{steps, batch, hidden}}
		stacked.name = im.uniqueName(base + suffix + "_seq")
		im.body = append(im.body, fmt.Sprintf("%s = stack(%s)", stacked.name, list))
		ys = append(ys, stacked)
		hs = append(hs, &value{name: h, dt: te.F32, shape: []int{batch, hidden}})
		cs = append(cs, &value{name: c, dt: te.F32, shape: []int{batch, hidden}})
	}
	// Y [T, D, B, H]; Y_h and Y_c [D, B, H]
	join := func(i int, parts []*value, lead []int) error {
		if i >= len(n.p.GetOutput()) || n.p.GetOutput()[i] == "" {
			return nil
		}
		shape := append(append([]int{}, lead...), d, batch, hidden)
		vs := vars(shape)
		dv := ivar{vs[len(lead)].name}
		pick := func(v *value) expr {
			return access{v, append(ivars(vs[:len(lead)]), ivar{vs[len(lead)+1].name}, ivar{vs[len(lead)+2].name})}
		}
		body := pick(parts[0])
		if d == 2 {
			body = sel{binary{"==", dv, ilit(0)}, body, pick(parts[1])}
		}
		return im.define(n.out(i, te.F32, shape), vs, body)
	}
	if err := join(0, ys, []int{steps}); err != nil {
		return err
	}
	if err := join(1, hs, nil); err != nil {
		return err
	}
	if lstm {
		return join(2, cs, nil)
	}
	return nil
}
