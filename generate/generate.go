// Package generate runs greedy generation with the two entry points of a
// language model written in .te (docs/cli.md, "tec generate"): a prefill,
// which runs the prompts and writes their keys and values into the KV
// caches in place, and a decode step, which runs one token per sequence at
// a position and writes that slot of the caches.
//
// The protocol: the prefill takes ids: i32[B, P], the decode step
// ids: i32[B] and pos: i32[B]; both give next: i32[B]; both update the same
// caches (inputs of the same names, shapes and dtypes) in place, the decode
// step at pos; every other input and param of the same name is the same
// tensor, fed once. Check holds these rules, over two models' Signatures:
// NewPlan checks two te programs by it, and gpurun a generation job for
// the GPU. Generate drives a Runner through Loop, the prefill and then one
// decode step per new token, as gpurun does on the GPU; the Runner holds
// the params and the caches wherever the models run, so that only token
// ids and positions go in and the next tokens come out. Host is
// the Runner of the devices that run in this process on host arrays (the
// reference evaluator, the simulator).
//
// Where next is the argmax of a tensor's rows, next[b] = argmax[t](L[b, t])
// (the logits), and the model outputs that tensor (as examples/llama.te
// does, or after Plan.OutputLogits), Host checks each run's with
// Plan.CheckLogits: a row that holds a NaN, all NaN (a NaN upstream, which
// argmax gives as token 0) or only some (argmax would pick the greatest of
// the others), a +Inf, or nothing but -Inf stops the generation with an
// error naming the step and the sequence, where it would otherwise go on
// with tokens that mean nothing.
package generate

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"tec/te"
)

// The names that the protocol gives the models' inputs and output.
const (
	IDs  = "ids"  // the prompts [B, P] (prefill), the last tokens [B] (decode)
	Pos  = "pos"  // the decode step's positions [B]
	Next = "next" // the greedy next token of each sequence [B]
)

// The types of the protocol's tensors, with B the number of sequences and
// P the prompt's length.
const (
	PromptType = "i32[B, P]" // the prefill's ids
	TokenType  = "i32[B]"    // the decode step's ids and pos, each model's next
)

// PerStep reports whether the protocol feeds the input name to the decode
// step anew at every step (ids and pos), rather than once.
func PerStep(name string) bool { return name == IDs || name == Pos }

// hintSep separates an error's message from its hint, as tec prints them.
const hintSep = "\n  hint: "

// Plan is a checked pair of models for generation.
type Plan struct {
	Prefill, Decode *te.Program
	// Caches are the inputs that both models update in place, as the
	// prefill declares them, in its order.
	Caches []*te.Tensor
	// Shared are the other inputs and params of the two models, each fed
	// once to both (by name): the prefill's tensor where it has one, then
	// those only the decode step has.
	Shared []*te.Tensor
	// B is the number of sequences, P the prompt length, T the caches'
	// positions: the extent of the dimension that the decode step's
	// updates index by pos.
	B, P, T int
	// TCache and TDim say which cache and dimension give T, for messages.
	TCache string
	TDim   int
	// Vocab is the range [0, Vocab) of token ids that the prefill's
	// gathers accept, or 0 when unknown.
	Vocab int
	// Logits holds, by model name, the tensor whose rows each model's
	// next picks from, where next is next[b] = argmax[t](L[b, t]), for
	// CheckLogits. A model whose next is defined otherwise has none.
	Logits map[string]*te.Tensor
}

// NewPlan checks that prefill and decode fit the protocol (Check, over
// their signatures) and returns their plan. Each error says what does not fit and how to fix it.
func NewPlan(prefill, decode *te.Program) (*Plan, error) {
	pl := &Plan{Prefill: prefill, Decode: decode}
	l, err := Check(NewSignature(prefill), NewSignature(decode), Explain)
	if err != nil {
		return nil, err
	}
	pl.B, pl.P = l.B, l.P
	for _, name := range l.Caches {
		pl.Caches = append(pl.Caches, prefill.Lookup(name))
	}
	for _, name := range l.Shared {
		t := prefill.Lookup(name)
		if t == nil || t.Kind == te.Compute {
			t = decode.Lookup(name)
		}
		pl.Shared = append(pl.Shared, t)
	}
	ids, pos := prefill.Lookup(IDs), decode.Lookup(Pos)
	if err := pl.findT(pos); err != nil {
		return nil, err
	}
	pl.Vocab = vocab(prefill, ids)
	pl.Logits = map[string]*te.Tensor{}
	for _, p := range []*te.Program{prefill, decode} {
		if l := logits(p); l != nil {
			pl.Logits[p.Name] = l
		}
	}
	return pl, nil
}

// OutputLogits makes each model's logits (pl.Logits) an output of the
// model where it is not one, so that a Host run gives them and checks
// them. It changes the programs: call it before compiling them.
func (pl *Plan) OutputLogits() {
	for _, p := range []*te.Program{pl.Prefill, pl.Decode} {
		if l := pl.Logits[p.Name]; l != nil && !slices.Contains(p.Outputs, l) {
			p.Outputs = append(p.Outputs, l)
		}
	}
}

// logits returns the tensor L of p's next[b] = argmax[t](L[b, t]), read
// through a cast or not, or nil where next is defined otherwise.
func logits(p *te.Program) *te.Tensor {
	next := p.Lookup(Next)
	if next == nil || len(next.Axes) != 1 {
		return nil
	}
	r, ok := next.Body.(*te.Reduce)
	if !ok || r.Op != te.Argmax || len(r.Axes) != 1 {
		return nil
	}
	body := r.Body
	if c, ok := body.(*te.Cast); ok {
		body = c.X
	}
	l, ok := body.(*te.Load)
	if !ok || l.IsGather() || len(l.Index) != 2 || len(l.Tensor.Shape) != 2 ||
		!isVar(l.Index[0], next.Axes[0]) || !isVar(l.Index[1], r.Axes[0]) || l.Tensor.Shape[1] != r.Axes[0].Extent {
		return nil
	}
	return l.Tensor
}

// isVar reports whether x is the variable v alone.
func isVar(x te.Index, v *te.Var) bool {
	return x.Const == 0 && len(x.Terms) == 1 && x.Terms[0].Coef == 1 &&
		x.Terms[0].Atom.Op == te.AtomVar && x.Terms[0].Atom.Var == v
}

// CheckLogits checks the logits that model's run gave (the array of
// pl.Logits[model], [B, V]): greedy generation picks each sequence's next
// token as the position of the greatest of its row, and stops with an
// error naming the sequence where that pick means nothing. A row that
// holds a NaN, all NaN or only some (a NaN upstream, which argmax would
// pass over for the greatest of the others), or a +Inf (an overflow,
// which argmax would pick), or nothing but -Inf (every token masked), is
// such a row. The error names the sequence, the count and the first
// position.
func (pl *Plan) CheckLogits(model string, logits *te.Array) error {
	l := pl.Logits[model]
	if l == nil {
		return nil
	}
	if logits == nil || !te.SameShape(logits.Shape, l.Shape) {
		return fmt.Errorf("the run gave no logits %s: %s", l.Name, l.TypeString())
	}
	v := l.Shape[1]
	for b := range l.Shape[0] {
		row := logits.Data[b*v : (b+1)*v]
		nan, inf, ninf, first := 0, 0, 0, -1
		for t, x := range row {
			switch {
			case math.IsNaN(x):
				nan++
			case math.IsInf(x, 1):
				inf++
			case math.IsInf(x, -1):
				ninf++
				continue
			default:
				continue
			}
			if first < 0 {
				first = t
			}
		}
		var what string
		switch {
		case nan == v:
			what = fmt.Sprintf("are all NaN (%d values): there is no greatest to pick", v)
		case nan > 0:
			what = fmt.Sprintf("hold %d NaN of %d values (the first at %s[%d, %d]): the greatest of the others would be a guess", nan, v, l.Name, b, first)
		case inf > 0:
			what = fmt.Sprintf("hold %d +Inf of %d values (the first at %s[%d, %d]): an overflow, not a greatest", inf, v, l.Name, b, first)
		case ninf == v:
			what = fmt.Sprintf("are all -Inf (%d values): every token is masked", v)
		default:
			continue
		}
		return fmt.Errorf("sequence %d: the logits it picks its next token from, %s[%d, :], %s"+hintSep+
			"a NaN or Inf upstream, from the params or the constants (-D); tec run --model %s on the same feeds reports each output's NaNs and Infs",
			b, l.Name, b, what, model)
	}
	return nil
}

// IsCache reports whether name is one of the caches that both models
// update in place (pl.Caches).
func (pl *Plan) IsCache(name string) bool {
	return slices.ContainsFunc(pl.Caches, func(c *te.Tensor) bool { return c.Name == name })
}

// findT sets T from the dimension of each cache that the decode step's
// update of it indexes by pos: every cache must have one, of one extent.
func (pl *Plan) findT(pos *te.Tensor) error {
	for _, c := range pl.Caches {
		target := pl.Decode.Lookup(c.Name)
		dim := -1
		for _, u := range pl.Decode.Updates() {
			if u.Update.Target != target {
				continue
			}
			dest := u.Update.Dest()
			for d := range target.Shape {
				if g := dest.Gathered(d); g != nil && reads(g, pos) {
					dim = d
				}
			}
		}
		if dim < 0 {
			return fmt.Errorf("model %s's update of cache %s does not write the slot at pos: tec generate feeds the decode step each token's position in pos"+hintSep+
				"index the cache's position dimension by pos[b], e.g. update %s[..., pos[b], ...] = ...", pl.Decode.Name, c.Name, c.Name)
		}
		if pl.T != 0 && target.Shape[dim] != pl.T {
			return fmt.Errorf("the caches hold different numbers of positions: %s's dimension %d has %d, %s's dimension %d has %d",
				pl.TCache, pl.TDim, pl.T, c.Name, dim, target.Shape[dim])
		}
		if pl.T == 0 {
			pl.T, pl.TCache, pl.TDim = target.Shape[dim], c.Name, dim
		}
	}
	return nil
}

// reads reports whether e reads tensor t.
func reads(e te.Expr, t *te.Tensor) bool {
	found := false
	te.Walk(e, func(x te.Expr) bool {
		if l, ok := x.(*te.Load); ok && l.Tensor == t {
			found = true
		}
		return !found
	})
	return found
}

// vocab returns the extent of the table that the prefill's gathers index
// directly by ids (wte[ids[b, s], d]), or 0.
func vocab(p *te.Program, ids *te.Tensor) int {
	v := 0
	for _, t := range p.Tensors {
		if t.Body == nil {
			continue
		}
		te.Walk(t.Body, func(e te.Expr) bool {
			l, ok := e.(*te.Load)
			if !ok {
				return true
			}
			for d := range l.Index {
				g, isLoad := l.Gathered(d).(*te.Load)
				if c, isConst := l.Index[d].IsConst(); isLoad && isConst && c == 0 && g.Tensor == ids {
					if v == 0 || l.Tensor.Shape[d] < v {
						v = l.Tensor.Shape[d]
					}
				}
			}
			return true
		})
	}
	return v
}

// CheckSteps checks that steps decode steps after the prompt fit in the
// caches: P + steps positions, at most T.
func (pl *Plan) CheckSteps(steps int) error {
	if steps < 0 {
		return fmt.Errorf("%d steps: want 0 or more", steps)
	}
	if need := pl.P + steps; need > pl.T {
		fix := "generate fewer tokens"
		if pl.T > pl.P {
			fix = fmt.Sprintf("use --steps %d or fewer", pl.T-pl.P)
		}
		return fmt.Errorf("the prompt's %d tokens and %d decode steps need %d cache positions, but the caches hold %d (dimension %d of %s)"+hintSep+
			"%s, or give the caches at least %d positions (the constant that sizes that dimension, e.g. -D T=%d)",
			pl.P, steps, need, pl.T, pl.TDim, pl.TCache, fix, need, need)
	}
	return nil
}

// CheckPrompt checks that prompt fits the prefill's ids, and that every
// token is in the vocabulary when the plan knows it.
func (pl *Plan) CheckPrompt(prompt *te.Array) error {
	if prompt.DType != te.I32 || !te.SameShape(prompt.Shape, []int{pl.B, pl.P}) {
		ids := pl.Prefill.Lookup(IDs)
		return fmt.Errorf("the prompt is %s, but model %s takes the prompts as ids: %s (B = %d sequences of P = %d tokens)"+hintSep+
			"give token ids as int32 [B, P], or set the constants that size ids to the prompt's shape (-D B=... -D P=...)",
			(&te.Tensor{DType: prompt.DType, Shape: prompt.Shape}).TypeString(), pl.Prefill.Name, ids.TypeString(), pl.B, pl.P)
	}
	if pl.Vocab == 0 {
		return nil
	}
	for i, v := range prompt.Data {
		if v < 0 || v >= float64(pl.Vocab) || v != math.Trunc(v) {
			return fmt.Errorf("the prompt's token %v at [%d, %d] is not in the vocabulary [0, %d)", v, i/pl.P, i%pl.P, pl.Vocab)
		}
	}
	return nil
}

// Runner runs the two models of a generation where their state lives: it
// feeds every shared input and param, and the caches as the last run left
// them (zeros before the first), and keeps the caches that each run
// updates for the next.
type Runner interface {
	// Run runs the model named (the plan's Prefill or Decode program's
	// name) with the step's inputs (ids, and pos for the decode step; the
	// prefill's ids are absent where the Runner holds the prompts) and
	// returns its next tokens, i32[B]. It fails where the plan's
	// CheckLogits fails on the run's logits, if it can see them.
	Run(model string, inputs map[string]*te.Array) (next *te.Array, err error)
}

// Result is a generation's tokens and times.
type Result struct {
	// Tokens holds, for each sequence, the prefill's next token and then
	// each decode step's: Steps+1 tokens.
	Tokens [][]int
	// Prefill is the prefill's time, Steps each decode step's: the wall
	// time of the Runner's Run.
	Prefill time.Duration
	Steps   []time.Duration
}

// Generate runs the prefill on prompt (i32[B, P]) and then steps decode
// steps, step i feeding each sequence's last token at position P + i.
func Generate(r Runner, pl *Plan, prompt *te.Array, steps int) (*Result, error) {
	return GenerateEach(r, pl, prompt, steps, nil)
}

// Step is one run of a generation, as GenerateEach reports it when it
// ends.
type Step struct {
	// Step is the decode step, or -1 for the prefill.
	Step int
	// Next holds each sequence's new token.
	Next []int
	// Took is the run's wall time.
	Took time.Duration
}

// GenerateEach is Generate, calling each (unless nil) after every run with
// the tokens it gave, so that a caller may show them as they come.
func GenerateEach(r Runner, pl *Plan, prompt *te.Array, steps int, each func(Step)) (*Result, error) {
	if err := pl.CheckPrompt(prompt); err != nil {
		return nil, err
	}
	if err := pl.CheckSteps(steps); err != nil {
		return nil, err
	}
	l := &Loop{Prefill: pl.Prefill.Name, Decode: pl.Decode.Name, B: pl.B, P: pl.P, Each: each, Label: pl.label}
	return l.Run(r, prompt, steps)
}

// label names a run in the errors of GenerateEach: step -1 is the
// prefill, pos a decode step's position.
func (pl *Plan) label(step, pos int) string {
	if step < 0 {
		return fmt.Sprintf("prefill (model %s)", pl.Prefill.Name)
	}
	return fmt.Sprintf("decode step %d (model %s, position %d)", step, pl.Decode.Name, pos)
}

// Loop is the stepping of a generation, the same on every device: the
// prefill, then each decode step fed each sequence's last token at the
// position after the tokens before it. GenerateEach runs it with any
// Runner (Host in this process); gpurun runs it with a Runner that keeps
// the prompts, the params and the caches on the GPU.
type Loop struct {
	// Prefill and Decode are the models' names, as the Runner knows them.
	Prefill, Decode string
	// B is the number of sequences, P the prompt's length.
	B, P int
	// Label names a run in its errors: step -1 is the prefill; a decode
	// step's tokens are at position pos.
	Label func(step, pos int) string
	// Each, unless nil, is called after every run with the tokens it
	// gave.
	Each func(Step)
}

// Run runs the prefill, fed prompt as its ids (unless nil: a Runner that
// holds the prompts already), and then steps decode steps, step i feeding
// each sequence's last token at position P + i. Each time is the wall
// time of the Runner's Run.
func (l *Loop) Run(r Runner, prompt *te.Array, steps int) (*Result, error) {
	res := &Result{Tokens: make([][]int, l.B)}
	inputs := map[string]*te.Array{}
	if prompt != nil {
		inputs[IDs] = prompt
	}
	start := time.Now()
	next, err := r.Run(l.Prefill, inputs)
	res.Prefill = time.Since(start)
	if err == nil {
		err = res.append(l.B, next)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", l.Label(-1, 0), err)
	}
	res.report(l.Each, -1, res.Prefill)
	for i := range steps {
		ids, pos := te.NewArray(te.I32, []int{l.B}), te.NewArray(te.I32, []int{l.B})
		for b := range l.B {
			ids.Data[b] = float64(res.Tokens[b][i])
			pos.Data[b] = float64(l.P + i)
		}
		start := time.Now()
		next, err := r.Run(l.Decode, map[string]*te.Array{IDs: ids, Pos: pos})
		res.Steps = append(res.Steps, time.Since(start))
		if err == nil {
			err = res.append(l.B, next)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", l.Label(i, l.P+i), err)
		}
		res.report(l.Each, i, res.Steps[i])
	}
	return res, nil
}

// report calls each, unless nil, with the tokens the last run added.
func (res *Result) report(each func(Step), step int, took time.Duration) {
	if each == nil {
		return
	}
	next := make([]int, len(res.Tokens))
	for b, toks := range res.Tokens {
		next[b] = toks[len(toks)-1]
	}
	each(Step{Step: step, Next: next, Took: took})
}

// append adds each of the b sequences' next token.
func (res *Result) append(b int, next *te.Array) error {
	if next == nil || !te.SameShape(next.Shape, []int{b}) {
		return errors.New("the run gave no next token for each sequence")
	}
	for b, v := range next.Data {
		res.Tokens[b] = append(res.Tokens[b], int(v))
	}
	return nil
}

// EvalFunc runs program p on feeds, one array for each of its placeholders,
// and returns its outputs by name, the inputs it updates in place among
// them.
type EvalFunc func(p *te.Program, feeds map[string]*te.Array) (map[string]*te.Array, error)

// Host is the Runner of a device that runs in this process on host arrays:
// it holds the shared feeds and the caches, and runs a model with Eval.
type Host struct {
	plan  *Plan
	eval  EvalFunc
	state map[string]*te.Array
	// Last holds the outputs of the last run, by name.
	Last map[string]*te.Array
}

// NewHost returns a Host for pl whose shared feeds are shared (one array
// for each of pl.Shared, by name, conformed to it) and whose caches start
// at zeros.
func NewHost(pl *Plan, shared map[string]*te.Array, eval EvalFunc) (*Host, error) {
	h := &Host{plan: pl, eval: eval, state: map[string]*te.Array{}}
	for _, t := range pl.Shared {
		a := shared[t.Name]
		if a == nil {
			return nil, fmt.Errorf("no array for %s %s", t.Kind, t.Name)
		}
		h.state[t.Name] = a
	}
	for _, c := range pl.Caches {
		h.state[c.Name] = te.NewArray(c.DType, c.Shape)
	}
	return h, nil
}

// Run implements Runner.
func (h *Host) Run(model string, inputs map[string]*te.Array) (*te.Array, error) {
	var p *te.Program
	switch model {
	case h.plan.Prefill.Name:
		p = h.plan.Prefill
	case h.plan.Decode.Name:
		p = h.plan.Decode
	default:
		return nil, fmt.Errorf("no model %s in the plan (%s, %s)", model, h.plan.Prefill.Name, h.plan.Decode.Name)
	}
	feeds := map[string]*te.Array{}
	for _, t := range p.Placeholders() {
		a := inputs[t.Name]
		if a == nil {
			a = h.state[t.Name]
		}
		if a == nil {
			return nil, fmt.Errorf("no array for %s %s of model %s", t.Kind, t.Name, p.Name)
		}
		feeds[t.Name] = a
	}
	outs, err := h.eval(p, feeds)
	if err != nil {
		return nil, err
	}
	for _, c := range h.plan.Caches {
		a := outs[c.Name]
		if a == nil {
			return nil, fmt.Errorf("model %s gave back no cache %s", p.Name, c.Name)
		}
		h.state[c.Name] = a
	}
	h.Last = outs
	if l := h.plan.Logits[p.Name]; l != nil && slices.Contains(p.Outputs, l) {
		if err := h.plan.CheckLogits(p.Name, outs[l.Name]); err != nil {
			return nil, err
		}
	}
	return outs[Next], nil
}
