// Package generate runs generation with the two entry points of a
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
// the GPU. GenerateWith drives a Runner through Loop, the prefill and then
// one decode step per new token, as gpurun does on the GPU; the Runner
// holds the params and the caches wherever the models run, so that only
// token ids and positions go in and the next tokens come out (and, when
// sampling, each run's logits). Host is the Runner of the devices that run
// in this process on host arrays (the reference evaluator, the simulator).
//
// Greedy generation takes each model's next, its argmax. Sampling
// (temperature, top-k, top-p, as Hugging Face's sampling) draws each token
// on the host from the run's logits instead, the same on every device for
// the same logits (Sampling.Sample). A sequence ends at an end-of-sequence
// token (Loop.EOS) or where Loop.Stop says; Loop.Each reports each run's
// tokens as they come.
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

// LogitsRunner is a Runner that also gives the logits of its last run,
// which a Loop that samples draws each token from. Loop asks for them
// only when it samples: greedy, it reads next alone.
type LogitsRunner interface {
	Runner
	// Logits returns the logits of the last run, [B, V]: the tensor
	// whose rows the model's next is the argmax of.
	Logits() (*te.Array, error)
}

// Finish says why a sequence of a generation ended.
type Finish string

const (
	FinishSteps Finish = "steps" // it ran every decode step
	FinishEOS   Finish = "eos"   // it gave one of the end-of-sequence tokens (Loop.EOS)
	FinishStop  Finish = "stop"  // Loop.Stop ended it
)

// NoToken is a Step's token of a sequence that had ended before the run.
const NoToken = -1

// Result is a generation's tokens and times.
type Result struct {
	// Tokens holds, for each sequence, the prefill's token and then each
	// decode step's, up to and with the token it ended at: Steps+1 at
	// most.
	Tokens [][]int
	// Finish says why each sequence ended.
	Finish []Finish
	// Prefill is the prefill's time, Steps each decode step's that ran
	// (fewer than asked where every sequence ended first): the wall time
	// of the Runner's Run.
	Prefill time.Duration
	Steps   []time.Duration
}

// Options are a generation's choices besides its prompt.
type Options struct {
	// Steps is the number of decode steps, at most.
	Steps int
	// Sampling picks each token; the zero value is greedy.
	Sampling Sampling
	// EOS and Stop end sequences early, as Loop's do.
	EOS  []int
	Stop func(seq int, tokens []int) bool
	// Each, unless nil, is called after every run with the tokens it
	// gave.
	Each func(Step)
}

// Generate runs the prefill on prompt (i32[B, P]) and then steps decode
// steps, step i feeding each sequence's last token at position P + i,
// greedily.
func Generate(r Runner, pl *Plan, prompt *te.Array, steps int) (*Result, error) {
	return GenerateWith(r, pl, prompt, Options{Steps: steps})
}

// Step is one run of a generation, as Loop reports it when it ends.
type Step struct {
	// Step is the decode step, or -1 for the prefill.
	Step int
	// Next holds each sequence's new token, NoToken for a sequence that
	// had ended before this run.
	Next []int
	// Took is the run's wall time.
	Took time.Duration
}

// GenerateEach is Generate, calling each (unless nil) after every run with
// the tokens it gave, so that a caller may show them as they come.
func GenerateEach(r Runner, pl *Plan, prompt *te.Array, steps int, each func(Step)) (*Result, error) {
	return GenerateWith(r, pl, prompt, Options{Steps: steps, Each: each})
}

// GenerateWith runs a generation as o says after checking it against the
// plan: the prompt, the steps, the sampling (CheckSampling) and the
// end-of-sequence tokens (CheckEOS).
func GenerateWith(r Runner, pl *Plan, prompt *te.Array, o Options) (*Result, error) {
	if err := pl.CheckPrompt(prompt); err != nil {
		return nil, err
	}
	if err := pl.CheckSteps(o.Steps); err != nil {
		return nil, err
	}
	if err := pl.CheckSampling(o.Sampling); err != nil {
		return nil, err
	}
	if err := pl.CheckEOS(o.EOS); err != nil {
		return nil, err
	}
	l := &Loop{Prefill: pl.Prefill.Name, Decode: pl.Decode.Name, B: pl.B, P: pl.P, Label: pl.label,
		Sampling: o.Sampling, EOS: o.EOS, Stop: o.Stop, Each: o.Each}
	return l.Run(r, prompt, o.Steps)
}

// CheckSampling checks s, and that each model has logits to draw from
// where s is not greedy: its next the argmax of a tensor's rows
// (pl.Logits).
func (pl *Plan) CheckSampling(s Sampling) error {
	if err := s.Check(); err != nil {
		return err
	}
	if s.Greedy() {
		return nil
	}
	for _, p := range []*te.Program{pl.Prefill, pl.Decode} {
		if pl.Logits[p.Name] == nil {
			return fmt.Errorf("model %s's next is not the argmax of a tensor of logits, [B, V], which sampling draws each token from"+hintSep+
				"define next[b] = argmax[t](logits[b, t]) over the logits, or generate greedily (temperature 0)", p.Name)
		}
	}
	return nil
}

// CheckEOS checks that each end-of-sequence token is in the vocabulary,
// where the plan knows it.
func (pl *Plan) CheckEOS(eos []int) error {
	for _, id := range eos {
		if id < 0 || pl.Vocab > 0 && id >= pl.Vocab {
			v := "token ids are 0 or more"
			if pl.Vocab > 0 {
				v = fmt.Sprintf("the vocabulary is [0, %d)", pl.Vocab)
			}
			return fmt.Errorf("end-of-sequence token %d is not in the vocabulary: %s", id, v)
		}
	}
	return nil
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
// position after the tokens before it. GenerateWith runs it with any
// Runner (Host in this process); gpurun runs it with a Runner that keeps
// the prompts, the params and the caches on the GPU.
//
// Each run gives each sequence a token: the model's next, or, where
// Sampling is not greedy, one drawn from the run's logits (the Runner
// must be a LogitsRunner), token k of sequence b drawn as
// Sampling.Sample(logits[b, :], b, k). A sequence ends at the first token
// in EOS, or where Stop says so, that token kept; it goes on running in
// the batch (the models have a fixed B), fed its last token, but its
// outputs are ignored and no more of its tokens reported. The loop ends
// when every sequence has ended, or after the last step.
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
	// Sampling picks each token; the zero value is greedy.
	Sampling Sampling
	// EOS are the end-of-sequence tokens: a sequence ends at the first
	// it gives.
	EOS []int
	// Stop, unless nil, is called with each new token of a sequence,
	// and all its tokens so far (the prompt's aside), that is not in
	// EOS; true ends the sequence there (stop strings, say).
	Stop func(seq int, tokens []int) bool
}

// Run runs the prefill, fed prompt as its ids (unless nil: a Runner that
// holds the prompts already), and then at most steps decode steps, step
// i feeding each sequence's last token at position P + i. Each time is
// the wall time of the Runner's Run.
func (l *Loop) Run(r Runner, prompt *te.Array, steps int) (*Result, error) {
	if err := l.Sampling.Check(); err != nil {
		return nil, err
	}
	var lr LogitsRunner
	if !l.Sampling.Greedy() {
		var ok bool
		if lr, ok = r.(LogitsRunner); !ok {
			return nil, errors.New("sampling draws each token from the logits, which this Runner does not give")
		}
	}
	res := &Result{Tokens: make([][]int, l.B), Finish: make([]Finish, l.B)}
	inputs := map[string]*te.Array{}
	if prompt != nil {
		inputs[IDs] = prompt
	}
	start := time.Now()
	next, err := r.Run(l.Prefill, inputs)
	res.Prefill = time.Since(start)
	var out []int
	if err == nil {
		out, err = l.take(res, next, lr, 0)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", l.Label(-1, 0), err)
	}
	l.report(-1, out, res.Prefill)
	for i := range steps {
		if !slices.Contains(res.Finish, "") {
			break
		}
		ids, pos := te.NewArray(te.I32, []int{l.B}), te.NewArray(te.I32, []int{l.B})
		for b, toks := range res.Tokens {
			ids.Data[b] = float64(toks[len(toks)-1])
			pos.Data[b] = float64(l.P + i)
		}
		start := time.Now()
		next, err := r.Run(l.Decode, map[string]*te.Array{IDs: ids, Pos: pos})
		res.Steps = append(res.Steps, time.Since(start))
		if err == nil {
			out, err = l.take(res, next, lr, i+1)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", l.Label(i, l.P+i), err)
		}
		l.report(i, out, res.Steps[i])
	}
	for b, f := range res.Finish {
		if f == "" {
			res.Finish[b] = FinishSteps
		}
	}
	return res, nil
}

// take adds token k of each sequence that has not ended: the run's next,
// or one drawn from the logits of lr's run unless lr is nil; and ends the
// sequences that end at it. It returns the tokens, NoToken for the
// sequences that had ended.
func (l *Loop) take(res *Result, next *te.Array, lr LogitsRunner, k int) ([]int, error) {
	if next == nil || !te.SameShape(next.Shape, []int{l.B}) {
		return nil, errors.New("the run gave no next token for each sequence")
	}
	var logits *te.Array
	if lr != nil {
		var err error
		if logits, err = lr.Logits(); err != nil {
			return nil, err
		}
		if logits == nil || len(logits.Shape) != 2 || logits.Shape[0] != l.B || logits.Shape[1] == 0 {
			return nil, fmt.Errorf("the run gave no logits to draw from, [%d, V]", l.B)
		}
	}
	out := make([]int, l.B)
	for b := range l.B {
		if res.Finish[b] != "" {
			out[b] = NoToken
			continue
		}
		tok := int(next.Data[b])
		if logits != nil {
			v := logits.Shape[1]
			var err error
			if tok, err = l.Sampling.Sample(logits.Data[b*v:(b+1)*v], b, k); err != nil {
				return nil, fmt.Errorf("sequence %d: %w", b, err)
			}
		}
		res.Tokens[b] = append(res.Tokens[b], tok)
		out[b] = tok
		switch {
		case slices.Contains(l.EOS, tok):
			res.Finish[b] = FinishEOS
		case l.Stop != nil && l.Stop(b, res.Tokens[b]):
			res.Finish[b] = FinishStop
		}
	}
	return out, nil
}

// report calls l.Each, unless nil, with the tokens of a run.
func (l *Loop) report(step int, next []int, took time.Duration) {
	if l.Each != nil {
		l.Each(Step{Step: step, Next: next, Took: took})
	}
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
	last  string // the model of the last run
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
	h.Last, h.last = outs, p.Name
	if l := h.plan.Logits[p.Name]; l != nil && slices.Contains(p.Outputs, l) {
		if err := h.plan.CheckLogits(p.Name, outs[l.Name]); err != nil {
			return nil, err
		}
	}
	return outs[Next], nil
}

// Logits implements LogitsRunner: the logits of the last run, where the
// model outputs them (Plan.OutputLogits makes them an output).
func (h *Host) Logits() (*te.Array, error) {
	l := h.plan.Logits[h.last]
	if l == nil {
		return nil, fmt.Errorf("model %s's next is not the argmax of a tensor of logits: there are none to draw from", h.last)
	}
	a := h.Last[l.Name]
	if a == nil {
		return nil, fmt.Errorf("model %s does not output its logits %s (Plan.OutputLogits makes them an output)", h.last, l.Name)
	}
	return a, nil
}
