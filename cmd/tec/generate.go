package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"tec/driver"
	"tec/generate"
	"tec/internal/numeric"
	"tec/internal/tensorio"
	"tec/lang/diag"
	"tec/lang/syntax"
	"tec/pipeline"
	"tec/precision"
	"tec/te"
)

type generateFlags struct {
	compileFlags
	optFlags
	prefill, decode string
	device          string
	race            bool
	prompt          string
	params          string
	fill            string
	seed            uint64
	steps           int
	json            bool
	stream          bool
	maxTime         time.Duration
	cuda            cudaFlags // --codegen and --target, for --device cuda
	// sampling and eos: --temperature, --top-k, --top-p and --seed;
	// --eos.
	sampling generate.Sampling
	eos      tokenList
	// chat, system and stops: --chat, --system and --stop, for a prompt
	// given as text; source is the program of a checkpoint's directory
	// given as FILE.
	chat   bool
	system string
	stops  stringList
	source []byte
}

// tokenList is the value of a repeatable flag of token ids (--eos 2
// --eos 3, or --eos 2,3).
type tokenList []int

func (l *tokenList) String() string {
	s := make([]string, len(*l))
	for i, id := range *l {
		s[i] = fmt.Sprint(id)
	}
	return strings.Join(s, ",")
}

func (l *tokenList) Set(v string) error {
	for _, f := range strings.Split(v, ",") {
		id, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return fmt.Errorf("%q is not a token id", f)
		}
		if id < 0 {
			return fmt.Errorf("token %d: token ids are 0 or more", id)
		}
		*l = append(*l, id)
	}
	return nil
}

func generateCommand() *command {
	c := &command{
		name:    "generate",
		summary: "LLM generation (greedy or sampled) with a file's prefill and decode models",
		usage:   "[flags] FILE",
		help: `Generate runs generation with two models of FILE: the prefill
(--prefill, default prefill) runs the prompts, ids: i32[B, P], and the
decode step (--decode, default decode) runs one token per sequence,
ids: i32[B] at positions pos: i32[B]. Both output next: i32[B], the greedy
next token, and update the same KV caches in place (inputs of the same
names, shapes and dtypes, written with update; the decode step writes the
slot at pos). The caches start as zeros; every other input and param is
shared by name and fed once, from --params or filled as --fill says.
With --params DIR, the params of a program that tec import DIR wrote come
from the Hugging Face checkpoint's safetensors; FILE may be such a DIR,
whose program is tec import DIR's.

Where --prompt is not an .npy file it is text, which the checkpoint's
tokenizer.json encodes (--chat: as a user's message in its chat
template, after --system); B is then 1, P the prompt's tokens, the end
tokens the checkpoint's, and the text is printed as it comes (stdout; the
rest on stderr), cut before the first --stop string.

The prefill runs on the prompt (--prompt FILE.npy, i32[B, P], or filled
with token ids by --fill); then decode step i feeds each sequence's last
token at position P + i, for --steps steps. Each sequence's tokens are the
prefill's next token and each step's. P + steps must not exceed the
caches' positions.

Each token is the model's next (greedy, --temperature 0), or, with
--temperature above 0, drawn on the host from the run's logits (the
tensor whose rows next is the argmax of) as Hugging Face samples: the
logits divided by the temperature, then --top-k, then --top-p (nucleus),
then a softmax and a draw, seeded by --seed, the same on every device for
the same logits. A sequence ends at its first --eos token (kept); the
generation ends when every sequence has, or after --steps.

Where next is the argmax of a tensor's rows (next[b] =
argmax[t](logits[b, t])), a row of that tensor that holds a NaN or a +Inf,
or nothing but -Inf, stops the generation on ref and sim (and on cuda when
sampling) with an error naming the step and the sequence: argmax would
pass over the NaN and pick a token all the same.

  ref   the reference evaluator (float64 arithmetic)
  sim   the kernels that "tec build" emits at -O (with --gpu), in the
        simulator, each step checked for data races (--race)
  cuda  the same kernels on an NVIDIA GPU through tec-cuda, the whole
        loop in it with the params and caches resident on the GPU
        (--codegen, --target as for tec run); the times are those of
        the kernels, measured with CUDA events

It prints each sequence's tokens and the time of the prefill and of each
step; --json prints {"tokens": [[...]], "finish": [...], "prefill_ms":
..., "step_ms": [...], "device": ...} on standard output, and with
--stream each run's tokens as a JSON line as it ends, before that.`,
	}
	c.run = func(e *env, args []string) int {
		fs := newFlagSet(c)
		gf := generateFlags{}
		gf.register(fs)
		gf.registerOpt(fs)
		fs.StringVar(&gf.prefill, "prefill", "prefill", "the model that runs the prompts and fills the caches")
		fs.StringVar(&gf.decode, "decode", "decode", "the model that runs one decode step")
		fs.StringVar(&gf.device, "device", "ref", "where to run: ref, sim or cuda")
		fs.BoolVar(&gf.race, "race", true, "with --device sim, detect data races and reads of memory nothing wrote (status 1 if any)")
		fs.StringVar(&gf.prompt, "prompt", "", "the prompt: an .npy file of token ids, i32[B, P], or text, which the checkpoint's tokenizer encodes")
		fs.BoolVar(&gf.chat, "chat", false, "with a text prompt, give it as a user's message in the checkpoint's chat template (Llama 3, ChatML)")
		fs.StringVar(&gf.system, "system", "", "with --chat, a system message before the prompt")
		fs.Var(&gf.stops, "stop", "with a text prompt, end a sequence where its text holds this string, cut before it (repeatable)")
		fs.StringVar(&gf.params, "params", "", "an .npz archive of the params (and other shared inputs), by name, or a Hugging Face checkpoint's directory (tec import DIR's)")
		fs.StringVar(&gf.fill, "fill", "", "fill what is not supplied (the params, the prompt): zeros, ones or random")
		fs.Uint64Var(&gf.seed, "seed", 0, "the seed of --fill random and of sampling")
		fs.Float64Var(&gf.sampling.Temperature, "temperature", 0, "sample each token from the logits divided by this; 0: greedy, the model's next")
		fs.IntVar(&gf.sampling.TopK, "top-k", 0, "when sampling, draw from the K most probable tokens only (0: off)")
		fs.Float64Var(&gf.sampling.TopP, "top-p", 1, "when sampling, draw from the fewest most probable tokens whose probability sums to P or more (1: off)")
		fs.Var(&gf.eos, "eos", "an end-of-sequence token id: a sequence ends at the first it gives (repeatable, or a comma-separated list)")
		fs.BoolVar(&gf.stream, "stream", false, "with --json, print each run's new tokens as a JSON line as it ends")
		fs.IntVar(&gf.steps, "steps", 16, "the number of decode steps: each sequence gets steps+1 tokens")
		fs.BoolVar(&gf.json, "json", false, "print the tokens and times as JSON on standard output, and failures as JSON diagnostics")
		fs.DurationVar(&gf.maxTime, "max-time", time.Minute, "refuse a generation estimated to take longer than this (0: no limit)")
		gf.cuda.registerGenerate(fs)
		pos, code, ok := e.parse(c, fs, splitOptLevel(args))
		if !ok {
			return code
		}
		e.setJSON(gf.diagnostics, isSet(fs, "diagnostics"), gf.json)
		gf.json = gf.json || e.json
		gf.sampling.Seed = gf.seed
		if err := gf.check(fs); err != nil {
			return e.usageError(c, "%v", err)
		}
		opts, err := gf.options("")
		if err != nil {
			return e.optionsError(c, err)
		}
		var fill *numeric.Fill
		if gf.fill != "" {
			f, err := numeric.ParseFill(gf.fill)
			if err != nil {
				return e.usageError(c, "--fill: %v", err)
			}
			fill = &f
		}
		if len(pos) != 1 {
			return e.usageError(c, "want one FILE, got %d arguments", len(pos))
		}
		tg, code := e.textPrompt(c, &gf, pos[0])
		if code != exitOK {
			return code
		}
		plan, code := e.generatePlan(c, &gf, pos[0], opts.Precision)
		if plan == nil {
			return code
		}
		opts.Precision = precision.F32 // the programs are already at --precision
		return e.runGenerate(c, &gf, plan, opts, fill, tg)
	}
	return c
}

// textPrompt reads a checkpoint's directory given as file, as its program
// and, without --params, its weights, and a text prompt (prepareText),
// which it returns; nil for a prompt of token ids.
func (e *env) textPrompt(c *command, gf *generateFlags, file string) (*textGeneration, int) {
	dir := ""
	switch {
	case isCheckpoint(file):
		src, err := checkpointSource(file)
		if err != nil {
			return nil, e.failf(c, exitUser, &failure{code: codeData, file: file, err: err})
		}
		gf.source, dir = src, file
		if gf.params == "" {
			gf.params = file
		}
	case gf.params != "" && isCheckpoint(gf.params):
		dir = gf.params
	}
	text := gf.prompt != "" && !isIDsFile(gf.prompt)
	switch {
	case !text && (gf.chat || len(gf.stops) > 0):
		return nil, e.usageError(c, "--chat and --stop are for a prompt given as text"+hintSep+"pass --prompt TEXT with a checkpoint directory whose tokenizer encodes it")
	case gf.system != "" && !gf.chat:
		return nil, e.usageError(c, "--system is a system message of a chat"+hintSep+"add --chat")
	case !text:
		return nil, exitOK
	case dir == "":
		return nil, e.usageError(c, "--prompt %q is no .npy file of token ids, and there is no checkpoint directory to encode it as text with"+hintSep+
			"give FILE or --params as a Hugging Face checkpoint's directory (its tokenizer.json encodes the text), or the prompt's token ids as an .npy file", shorten(gf.prompt, 40))
	}
	tg, err := gf.prepareText(dir)
	if err != nil {
		return nil, e.failf(c, exitUser, &failure{code: codeData, file: dir, err: err})
	}
	return tg, exitOK
}

// check reports a misused command line.
func (gf *generateFlags) check(fs *flag.FlagSet) error {
	if err := gf.validate(); err != nil {
		return err
	}
	if gf.device != "ref" && gf.device != "sim" && gf.device != "cuda" {
		return fmt.Errorf("unknown device %q (want ref, sim or cuda)", gf.device)
	}
	if err := kernelFlagsNeedSim(fs, gf.device); err != nil {
		return err
	}
	if err := checkCUDAFlags(fs, gf.device, &gf.cuda); err != nil {
		return err
	}
	if gf.steps < 0 {
		return fmt.Errorf("--steps %d: want 0 or more", gf.steps)
	}
	if err := gf.checkSampling(fs); err != nil {
		return err
	}
	if gf.stream && !gf.json {
		return errors.New("--stream prints JSON lines, with --json only" + hintSep + "add --json; without it, the tokens of a single sequence are printed as they come")
	}
	if gf.maxTime < 0 {
		return errors.New("--max-time must not be negative")
	}
	if gf.prompt == "" && gf.fill == "" {
		return errors.New("no prompt" + hintSep + "pass --prompt ids.npy (token ids, i32[B, P]), or --fill random to fill it")
	}
	return nil
}

// checkSampling reports a temperature, top-k or top-p that means nothing,
// and a filter given without sampling.
func (gf *generateFlags) checkSampling(fs *flag.FlagSet) error {
	s := gf.sampling
	switch {
	case !(s.Temperature >= 0) || math.IsInf(s.Temperature, 1):
		return fmt.Errorf("--temperature %v: want 0 or a positive number"+hintSep+
			"0 is greedy (the model's next); 1 samples from the model's distribution, below 1 sharpens it, above 1 flattens it", s.Temperature)
	case s.TopK < 0:
		return fmt.Errorf("--top-k %d: want 0 or a positive number of tokens"+hintSep+"0 is off; --top-k 40 draws from the 40 most probable tokens", s.TopK)
	case !(s.TopP > 0 && s.TopP <= 1):
		return fmt.Errorf("--top-p %v: want a probability above 0 and at most 1"+hintSep+
			"1 is off; --top-p 0.9 draws from the fewest most probable tokens that make up 90%% of the probability", s.TopP)
	}
	if s.Greedy() {
		for _, f := range []string{"top-k", "top-p"} {
			if isSet(fs, f) {
				return fmt.Errorf("--%s filters the tokens that sampling draws from, but generation is greedy at temperature 0"+hintSep+
					"sample with --temperature 1 (the model's distribution) or another above 0, or drop --%s", f, f)
			}
		}
	}
	return nil
}

// generatePlan compiles the two models of file at mode and checks that
// they fit together; it returns nil and the exit status on failure.
func (e *env) generatePlan(c *command, gf *generateFlags, file string, mode precision.Mode) (*generate.Plan, int) {
	src := gf.source
	if src == nil {
		var err error
		if src, err = readSource(file); err != nil {
			return nil, e.failf(nil, exitUser, &failure{code: codeIO, file: file, err: err})
		}
	}
	if err := checkModelNames(file, src, gf.prefill, gf.decode); err != nil {
		return nil, e.failf(c, exitUser, err)
	}
	var progs [2]*te.Program
	for i, name := range []string{gf.prefill, gf.decode} {
		cf := gf.compileFlags
		cf.model = name
		prog, code := e.compileSource(&cf, file, src)
		if prog == nil {
			return nil, code
		}
		progs[i] = precision.Apply(prog, mode)
	}
	plan, err := generate.NewPlan(progs[0], progs[1])
	if err != nil {
		return nil, e.failf(c, exitUser, &failure{code: codeData, file: file, err: fmt.Errorf("%s: %w", file, err)})
	}
	if err := plan.CheckSteps(gf.steps); err != nil {
		return nil, e.failf(c, exitUser, &failure{code: codeData, file: file, err: fmt.Errorf("%s: %w", file, err)})
	}
	if err := plan.CheckSampling(gf.sampling); err != nil {
		return nil, e.failf(c, exitUser, &failure{code: codeData, file: file, err: fmt.Errorf("%s: --temperature %v: %w", file, gf.sampling.Temperature, err)})
	}
	if err := plan.CheckEOS(gf.eos); err != nil {
		return nil, e.usageError(c, "--eos: %v", err)
	}
	return plan, exitOK
}

// checkModelNames reports a file that parses but lacks the model prefill
// or decode names, with the models it has; other errors of the file are
// left to the compiler.
func checkModelNames(file string, src []byte, prefill, decode string) error {
	f, err := syntax.Parse(file, src)
	if err != nil {
		return nil
	}
	var have []string
	for _, d := range f.Decls {
		if m, ok := d.(*syntax.ModelDecl); ok {
			have = append(have, m.Name.Name)
		}
	}
	var lack []string
	for _, name := range []string{prefill, decode} {
		if !slices.Contains(have, name) {
			lack = append(lack, name)
		}
	}
	if len(lack) == 0 {
		return nil
	}
	models := "no model"
	if len(have) > 0 {
		models = plural(len(have), "the model ", "the models ") + strings.Join(have, ", ")
	}
	hint := "name the prefill and the decode step with --prefill NAME and --decode NAME (docs/cli.md, tec generate)"
	for _, name := range lack {
		if s := diag.Suggest(name, have); s != "" {
			hint = fmt.Sprintf("did you mean %q? ", s) + hint
		}
	}
	role := "the prefill and the decode step"
	switch {
	case len(lack) == 2:
	case lack[0] == prefill:
		role = "the prefill"
	default:
		role = "the decode step"
	}
	return &failure{code: "model", file: file, err: fmt.Errorf("%s has no model %s, which tec generate runs as %s; it has %s"+hintSep+"%s",
		file, strings.Join(lack, " or "), role, models, hint)}
}

// generateSummary is the JSON printed by "tec generate --json"; docs/cli.md
// documents its fields.
type generateSummary struct {
	Prefill string  `json:"prefill"`
	Decode  string  `json:"decode"`
	Device  string  `json:"device"`
	Tokens  [][]int `json:"tokens"`
	// Text is each sequence's tokens decoded, for a text prompt.
	Text []string `json:"text,omitempty"`
	// Finish says why each sequence ended: "steps" or "eos".
	Finish []generate.Finish `json:"finish"`
	// Sampling is the sampling, unless greedy; EOS the end-of-sequence
	// tokens.
	Sampling  *generate.Sampling `json:"sampling,omitempty"`
	EOS       []int              `json:"eos,omitempty"`
	PrefillMS jsonFloat          `json:"prefill_ms"`
	StepMS    []jsonFloat        `json:"step_ms"`
	Filled    []string           `json:"filled"`
	// CUDA describes the GPU run of --device cuda.
	CUDA *cudaGeneration `json:"cuda,omitempty"`
	// Warnings are the warnings of the run, as JSON diagnostics.
	Warnings []diag.JSONDiagnostic `json:"warnings"`
}

// runGenerate binds the prompt and the shared feeds, runs the generation
// on gf's device and prints the result.
func (e *env) runGenerate(c *command, gf *generateFlags, plan *generate.Plan, opts pipeline.Options, fill *numeric.Fill, tg *textGeneration) int {
	rf := &runFlags{device: gf.device, race: gf.race, seed: gf.seed, maxTime: gf.maxTime}
	if _, err := checkGenerateWork(plan, gf.steps, rf); err != nil {
		return e.failf(c, exitUser, fail(codeTime, err))
	}
	if gf.device != "cuda" || !gf.sampling.Greedy() {
		// each step's logits are checked in this process (generate.Host);
		// tec-cuda's loop does not check them, but samples from them
		plan.OutputLogits()
	}
	mods := map[*te.Program]*driver.Compiled{}
	if gf.device == "sim" || gf.device == "cuda" {
		for _, p := range []*te.Program{plan.Prefill, plan.Decode} {
			res, err := e.compileForDevice(c, p, opts, gf.device, &gf.cuda)
			if err != nil {
				return e.failf(c, exitUser, fail(codeBuild, fmt.Errorf("model %s: %w", p.Name, err)))
			}
			mods[p] = res
		}
	}
	var prompt *te.Array
	var err error
	if tg != nil {
		prompt, err = tg.promptArray(plan)
		if err != nil {
			err = &failure{code: codeData, file: tg.dir, err: err}
		}
	} else {
		prompt, err = readPrompt(plan, gf, fill)
	}
	if err != nil {
		return e.failf(c, exitUser, err)
	}
	shared, filled, err := e.bindShared(c, plan, gf, fill)
	if err != nil {
		return e.failf(c, exitUser, err)
	}
	if gf.prompt == "" {
		filled = append([]string{generate.IDs}, filled...)
	}
	sum := generateSummary{Prefill: plan.Prefill.Name, Decode: plan.Decode.Name, Device: gf.device,
		StepMS: []jsonFloat{}, Filled: filled, EOS: gf.eos}
	if !gf.sampling.Greedy() {
		sum.Sampling = &gf.sampling
	}
	// The header first, and the tokens as they come: a long generation
	// does not run in silence.
	stream := &tokenStream{steps: gf.steps}
	if gf.stream && gf.device != "cuda" {
		stream.lines = e.stdout
	}
	// With a text prompt, stdout has the text alone; the rest goes to
	// stderr.
	info := e.stdout
	if tg != nil {
		info = e.stderr
		for range plan.B {
			stream.texts = append(stream.texts, newTextStream(tg, nil))
		}
	}
	if !gf.json {
		printGenerateHeader(info, &sum, plan.B, gf, opts)
		switch {
		case plan.B == 1 && gf.device != "cuda" && tg != nil:
			stream.texts[0].out = e.stdout
		case plan.B == 1 && gf.device != "cuda":
			stream.out = e.stdout
		}
	}
	if e.terminal(e.stderr) {
		stream.progress = e.stderr
	}
	var res *generate.Result
	var gpu *cudaGeneration
	o := generate.Options{Steps: gf.steps, Sampling: gf.sampling, EOS: gf.eos}
	if gf.device == "cuda" {
		res, gpu, err = e.generateOnGPU(plan, mods, prompt, shared, gf, o)
		if err == nil {
			stream.replay(res) // the tokens come at the end from tec-cuda
		}
	} else {
		o.Each = stream.step
		if stream.texts != nil {
			o.Stop = stream.stop
		}
		res, err = e.generateOnHost(plan, mods, prompt, shared, rf, o)
	}
	if err == nil && stream.texts != nil {
		sum.Text, err = stream.finishText(res, o.Stop != nil)
		if rest := stream.freshText(); err == nil && stream.lines != nil && slices.ContainsFunc(rest, func(s string) bool { return s != "" }) {
			line, _ := json.Marshal(streamLine{Step: len(res.Steps), Tokens: []int{}, Text: rest, End: true})
			fmt.Fprintf(stream.lines, "%s\n", line)
		}
	}
	stream.end()
	if err != nil {
		return e.failf(c, exitUser, fail(codeEval, err))
	}
	sum.Tokens, sum.Finish, sum.PrefillMS, sum.CUDA = res.Tokens, res.Finish, millis(res.Prefill), gpu
	for _, d := range res.Steps {
		sum.StepMS = append(sum.StepMS, millis(d))
	}
	if gf.json {
		sum.Warnings = e.jsonWarnings()
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(sum); err != nil {
			return e.failf(c, exitUser, fail(codeIO, err))
		}
		return exitOK
	}
	if tg != nil {
		for _, t := range sum.Text {
			if stream.texts[0].out == nil {
				fmt.Fprint(e.stdout, t)
			}
			fmt.Fprintln(e.stdout)
		}
		printGenerate(info, &sum, true)
		return exitOK
	}
	printGenerate(e.stdout, &sum, stream.out != nil)
	return exitOK
}

// tokenStream shows a generation's tokens as each run gives them: on
// stdout, where there is a single sequence (its line of tokens grows as
// they come, the same line tec generate prints at the end otherwise), as
// JSON lines (--json --stream), and as a progress line on stderr when
// stderr is a terminal.
type tokenStream struct {
	out      io.Writer     // nil: the tokens are printed at the end
	texts    []*textStream // each sequence's text, for a text prompt
	lines    io.Writer     // nil: no JSON lines
	progress io.Writer     // nil: no progress line
	steps    int
	tokens   int // written to out
	drawn    bool
}

// streamLine is a JSON line of tec generate --json --stream: one run's
// new token of each sequence, -1 for a sequence that had ended.
type streamLine struct {
	Step   int       `json:"step"` // -1: the prefill
	Tokens []int     `json:"tokens"`
	MS     jsonFloat `json:"ms"`
	// Text is each sequence's new text, for a text prompt. The last line
	// may have no tokens, and End set: the text held back until the end
	// (a character whose bytes had not all come, what might have begun a
	// stop string).
	Text []string `json:"text,omitempty"`
	End  bool     `json:"end,omitempty"`
}

// step shows the tokens of one run.
func (ts *tokenStream) step(s generate.Step) {
	if ts.out != nil && s.Next[0] != generate.NoToken {
		if ts.tokens == 0 {
			fmt.Fprint(ts.out, "sequence 0:")
		}
		fmt.Fprintf(ts.out, " %d", s.Next[0])
		ts.tokens++
	}
	if ts.lines != nil {
		line, _ := json.Marshal(streamLine{Step: s.Step, Tokens: s.Next, MS: millis(s.Took), Text: ts.freshText()})
		fmt.Fprintf(ts.lines, "%s\n", line)
	}
	if ts.progress != nil {
		what := "prefill"
		if s.Step >= 0 {
			what = fmt.Sprintf("decode step %d/%d", s.Step+1, ts.steps)
		}
		fmt.Fprintf(ts.progress, "\r\x1b[K%s done (%.1f ms)", what, float64(s.Took.Microseconds())/1000)
		ts.drawn = true
	}
}

// stop decodes sequence b's new token (the last of tokens, Loop.Stop),
// and reports whether its text reached a stop string.
func (ts *tokenStream) stop(b int, tokens []int) bool {
	return ts.texts[b].add(tokens[len(tokens)-1])
}

// freshText returns each sequence's text since the last call, or nil
// without a text prompt.
func (ts *tokenStream) freshText() []string {
	if ts.texts == nil {
		return nil
	}
	out := make([]string, len(ts.texts))
	for b, s := range ts.texts {
		out[b] = s.fresh()
	}
	return out
}

// finishText returns each sequence's text: decoded as the tokens came
// (fed, through Loop.Stop), or, where they came at the end (tec-cuda),
// now, with the text after a stop string cut.
func (ts *tokenStream) finishText(res *generate.Result, fed bool) ([]string, error) {
	var texts []string
	for b, s := range ts.texts {
		if !fed {
			for _, id := range res.Tokens[b] {
				if s.add(id) {
					break
				}
			}
		}
		t, err := s.finish()
		if err != nil {
			return nil, fmt.Errorf("sequence %d: decoding its tokens: %w", b, err)
		}
		texts = append(texts, t)
	}
	return texts, nil
}

// replay shows the runs of a generation that reported its tokens at the
// end (tec-cuda's), as JSON lines.
func (ts *tokenStream) replay(res *generate.Result) {
	if ts.lines == nil {
		return
	}
	for k := range len(res.Steps) + 1 {
		s := generate.Step{Step: k - 1, Took: res.Prefill, Next: make([]int, len(res.Tokens))}
		if k > 0 {
			s.Took = res.Steps[k-1]
		}
		for b, toks := range res.Tokens {
			s.Next[b] = generate.NoToken
			if k < len(toks) {
				s.Next[b] = toks[k]
			}
		}
		line, _ := json.Marshal(streamLine{Step: s.Step, Tokens: s.Next, MS: millis(s.Took)})
		fmt.Fprintf(ts.lines, "%s\n", line)
	}
}

// end ends the line of tokens and clears the progress line.
func (ts *tokenStream) end() {
	if ts.tokens > 0 {
		fmt.Fprintln(ts.out)
	}
	if ts.drawn {
		fmt.Fprint(ts.progress, "\r\x1b[K")
	}
}

// generateOnHost runs the generation in this process, on the reference
// evaluator or in the simulator (the kernels mods).
func (e *env) generateOnHost(plan *generate.Plan, mods map[*te.Program]*driver.Compiled, prompt *te.Array, shared map[string]*te.Array, rf *runFlags, o generate.Options) (*generate.Result, error) {
	dev := namedDevice(rf.device, rf.race)
	eval := func(p *te.Program, feeds map[string]*te.Array) (map[string]*te.Array, error) {
		return e.evaluate(dev, p, mods[p], feeds)
	}
	host, err := generate.NewHost(plan, shared, eval)
	if err != nil {
		return nil, fail(codeInternal, err)
	}
	return generate.GenerateWith(host, plan, prompt, o)
}

func millis(d time.Duration) jsonFloat { return jsonFloat(d.Microseconds()) / 1000 }

// checkGenerateWork returns the estimated seconds of the prefill and the
// steps decode steps on rf's device, and refuses a generation estimated
// to take longer than --max-time.
func checkGenerateWork(plan *generate.Plan, steps int, rf *runFlags) (float64, error) {
	pw, dw := plan.Prefill.Work(), plan.Decode.Work()
	n := float64(steps)
	w := te.Work{Scalar: pw.Scalar + n*dw.Scalar, Contraction: pw.Contraction + n*dw.Contraction}
	secs := namedDevice(rf.device, rf.race).WorkSeconds(w)
	if rf.maxTime == 0 || secs <= rf.maxTime.Seconds() {
		return secs, nil
	}
	return secs, fmt.Errorf("the prefill and %d decode steps take about %.2g operations, some %s on %s; refusing a generation estimated over %v"+hintSep+
		"use smaller sizes (-D NAME=VALUE) or fewer --steps, or --max-time 0 to run it anyway", steps, w.Total(), formatSeconds(secs), rf.device, rf.maxTime)
}

// readPrompt reads --prompt, or fills the prompt with token ids.
func readPrompt(plan *generate.Plan, gf *generateFlags, fill *numeric.Fill) (*te.Array, error) {
	ids := plan.Prefill.Lookup(generate.IDs)
	if gf.prompt == "" {
		r, ok := numeric.GatherRanges(plan.Prefill)[ids]
		if !ok {
			return numeric.NewFilled(ids, *fill, gf.seed), nil
		}
		return numeric.NewFilledIndex(ids, *fill, gf.seed, r), nil
	}
	a, err := tensorio.ReadNPYFile(gf.prompt, &tensorio.Spec{DType: te.I32, Shape: ids.Shape})
	if err != nil {
		f := dataFailure(gf.prompt, err).(*failure)
		if f.code == codeData {
			f.err = fmt.Errorf("--prompt: %w"+hintSep+"the prompt is model %s's ids: %s, token ids (int32 or int64) of B = %d sequences of P = %d tokens; set the constants that size ids to the prompt's shape (-D B=... -D P=...)",
				err, plan.Prefill.Name, ids.TypeString(), plan.B, plan.P)
		}
		return nil, f
	}
	if err := plan.CheckPrompt(a); err != nil {
		return nil, &failure{code: codeData, file: gf.prompt, err: fmt.Errorf("--prompt %s: %w", gf.prompt, err)}
	}
	return a, nil
}

// bindShared reads the shared inputs and params from --params and fills
// the rest as --fill says; it returns them and the names it filled.
func (e *env) bindShared(c *command, plan *generate.Plan, gf *generateFlags, fill *numeric.Fill) (map[string]*te.Array, []string, error) {
	specs := map[string]tensorio.Spec{}
	for _, t := range plan.Shared {
		specs[t.Name] = tensorio.Spec{DType: t.DType, Shape: t.Shape}
	}
	given := map[string]*te.Array{}
	if gf.params != "" {
		arrays, others, err := readParams(gf.params, specs)
		if err != nil {
			return nil, nil, dataFailure(gf.params, err)
		}
		given = arrays
		known := slices.Sorted(maps.Keys(specs))
		sort.Strings(others)
		e.warnExtras(c, others, func(string) string { return gf.params }, func(name string) string {
			msg := fmt.Sprintf("%s holds %q, which is no shared input or param of models %s and %s", gf.params, name, plan.Prefill.Name, plan.Decode.Name)
			switch {
			case generate.PerStep(name):
				msg = fmt.Sprintf("%s holds %q, which tec generate feeds itself (ids from --prompt and each step's tokens, pos from the step)", gf.params, name)
			case plan.IsCache(name):
				msg = fmt.Sprintf("%s holds %q, a KV cache, which starts as zeros", gf.params, name)
			default:
				if s := diag.Suggest(name, known); s != "" {
					msg += fmt.Sprintf(" (did you mean %q?)", s)
				}
			}
			return msg
		}, fmt.Sprintf("no shared input or param of models %s and %s", plan.Prefill.Name, plan.Decode.Name))
	}
	ranges := gatherRanges(plan.Prefill, plan.Decode)
	feeds, filled, missing, err := fillOrConform(plan.Shared, given, func(string) string { return gf.params }, fill, gf.seed, ranges)
	if err != nil {
		return nil, nil, err
	}
	if len(missing) > 0 {
		return nil, nil, fail(codeData, fmt.Errorf("no data for %s %s of models %s and %s"+hintSep+"pass --params, or --fill zeros|ones|random",
			plural(len(missing), "tensor", "tensors"), strings.Join(missing, ", "), plan.Prefill.Name, plan.Decode.Name))
	}
	return feeds, filled, nil
}

// printGenerateHeader prints what a generation runs, before it runs: the
// models, the device, the sequences and steps, what was filled.
func printGenerateHeader(w io.Writer, s *generateSummary, sequences int, gf *generateFlags, opts pipeline.Options) {
	on := s.Device
	if s.Device == "sim" || s.Device == "cuda" {
		on = fmt.Sprintf("%s -O%d", s.Device, opts.Level)
	}
	fmt.Fprintf(w, "models %s and %s on %s: %d %s, %d decode %s", s.Prefill, s.Decode, on,
		sequences, plural(sequences, "sequence", "sequences"), gf.steps, plural(gf.steps, "step", "steps"))
	if !gf.sampling.Greedy() {
		fmt.Fprintf(w, ", sampling at %s", gf.sampling)
	}
	if len(gf.eos) > 0 {
		fmt.Fprintf(w, ", ending at %s %s", plural(len(gf.eos), "token", "tokens"), strings.Join(strings.Split(gf.eos.String(), ","), ", "))
	}
	fmt.Fprintln(w)
	if len(s.Filled) > 0 {
		fmt.Fprintf(w, "filled with %s (seed %d): %s\n", gf.fill, gf.seed, strings.Join(s.Filled, ", "))
	}
}

// printGenerate prints the tokens, unless streamed, and the times as text.
func printGenerate(w io.Writer, s *generateSummary, streamed bool) {
	for b, toks := range s.Tokens {
		if streamed {
			break
		}
		words := make([]string, len(toks))
		for i, t := range toks {
			words[i] = fmt.Sprint(t)
		}
		fmt.Fprintf(w, "sequence %d: %s\n", b, strings.Join(words, " "))
	}
	if s.CUDA != nil {
		printGenerateCUDA(w, s.CUDA)
	}
	fmt.Fprintf(w, "prefill: %.3f ms\n", s.PrefillMS)
	if len(s.StepMS) > 0 {
		ms := make([]string, len(s.StepMS))
		sorted := make([]float64, len(s.StepMS))
		for i, t := range s.StepMS {
			ms[i] = fmt.Sprintf("%.3f", t)
			sorted[i] = float64(t)
		}
		sort.Float64s(sorted)
		fmt.Fprintf(w, "decode steps: median %.3f ms (min %.3f, max %.3f)\n  %s\n", sorted[len(sorted)/2], sorted[0], sorted[len(sorted)-1], strings.Join(ms, " "))
	}
}
