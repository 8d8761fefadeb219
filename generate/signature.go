package generate

import (
	"fmt"
	"slices"
	"strings"

	"tec/te"
)

// Entry is a tensor of a model's signature: an input or param that the
// caller feeds, or an output.
type Entry struct {
	Name string
	// Role is "input", "param" or "output"; an output that is one of the
	// model's inputs or params has that one's role.
	Role  string
	DType string // as the language writes it: "i32", "f32", ...
	Shape []int
	// InPlace marks an input that the model updates in place.
	InPlace bool
}

// Type formats the entry's type as the language does, e.g. "i32[2, 3]".
func (e Entry) Type() string {
	s := make([]string, len(e.Shape))
	for i, d := range e.Shape {
		s[i] = fmt.Sprint(d)
	}
	return e.DType + "[" + strings.Join(s, ", ") + "]"
}

// Signature is a model as the protocol sees it: what its caller feeds and
// what it outputs. NewPlan builds one of each te program (NewSignature);
// gpurun builds one of each model of a generation job from its buffers.
type Signature struct {
	Model string
	// Fed are the inputs and params, in the model's order.
	Fed []Entry
	// Outputs are the model's outputs, in order.
	Outputs []Entry
}

// NewSignature returns the signature of program p.
func NewSignature(p *te.Program) *Signature {
	s := &Signature{Model: p.Name}
	for _, t := range p.Placeholders() {
		s.Fed = append(s.Fed, entry(t, t.Kind.String(), t.Kind == te.Input && p.Updated(t)))
	}
	for _, t := range p.Outputs {
		role := t.Kind.String()
		if t.Kind == te.Compute {
			role = "output"
		}
		s.Outputs = append(s.Outputs, entry(t, role, false))
	}
	return s
}

func entry(t *te.Tensor, role string, inPlace bool) Entry {
	return Entry{Name: t.Name, Role: role, DType: t.DType.String(), Shape: t.Shape, InPlace: inPlace}
}

// fed returns the index in s.Fed of the entry name of the given role, or -1.
func (s *Signature) fed(name, role string) int {
	return slices.IndexFunc(s.Fed, func(e Entry) bool { return e.Name == name && e.Role == role })
}

// updated returns the names of the inputs that s updates in place, in
// its order.
func (s *Signature) updated() []string {
	var out []string
	for _, e := range s.Fed {
		if e.InPlace {
			out = append(out, e.Name)
		}
	}
	return out
}

// Wording selects the text of Check's errors; the rules are the same.
type Wording int

const (
	// Explain words an error for the user of tec generate: what the
	// protocol feeds the model, and how to fix it.
	Explain Wording = iota
	// Terse words it for a job that a program wrote (gpurun's
	// GenerateJob): what is wrong and what is wanted.
	Terse
)

// Layout is where the protocol's tensors are in two signatures that
// Check accepted.
type Layout struct {
	// B is the number of sequences, P the prompt's length.
	B, P int
	// Prompts is the index in the prefill's Fed of its ids; IDs and Pos
	// those in the decode step's Fed of its ids and pos.
	Prompts, IDs, Pos int
	// Next is the index in each model's Outputs (prefill, decode) of next.
	Next [2]int
	// Caches are the names of the inputs that both models update in
	// place, in the prefill's order.
	Caches []string
	// Shared are the names of every other input and param, fed once to
	// both: the prefill's in its order, then those only the decode step
	// has.
	Shared []string
}

// Check checks that pre and dec, a prefill and a decode step, fit the
// protocol, and returns where its tensors are. The prefill takes
// ids: i32[B, P] and no pos, the decode step ids: i32[B] and pos: i32[B],
// none of them updated in place; each outputs next: i32[B]; the two have
// names of their own; an input or param of the same name is the same in
// both (role, type, updated in place or not); the inputs updated in place,
// the caches, are the same in both, and there is one at least. w words
// the errors.
func Check(pre, dec *Signature, w Wording) (*Layout, error) {
	l := &Layout{}
	var err error
	if l.Prompts, err = findIDs(pre, IDs, "the prompts", "--prefill", w, nil); err != nil {
		return nil, err
	}
	from := &prompts{model: pre.Model, ids: pre.Fed[l.Prompts]}
	l.B, l.P = from.ids.Shape[0], from.ids.Shape[1]
	if l.IDs, err = findIDs(dec, IDs, "each sequence's last token", "--decode", w, from); err != nil {
		return nil, err
	}
	if l.Pos, err = findIDs(dec, Pos, "each token's position", "--decode", w, from); err != nil {
		return nil, err
	}
	if slices.ContainsFunc(pre.Fed, func(e Entry) bool { return e.Name == Pos }) {
		return nil, fmt.Errorf("prefill model %s has an input %s: only the decode model takes positions (the prompt is at 0..P-1)", pre.Model, Pos)
	}
	if pre.Model == dec.Model {
		return nil, fmt.Errorf("the prefill and the decode model are both named %s: a generation runs each by its name", pre.Model)
	}
	for m, s := range []*Signature{pre, dec} {
		if l.Next[m], err = findNext(s, l.B, w); err != nil {
			return nil, err
		}
	}
	if err := l.share(pre, dec, w); err != nil {
		return nil, err
	}
	return l, nil
}

// prompts is the prefill's ids, which give the decode step's B.
type prompts struct {
	model string // the prefill's name
	ids   Entry
}

// findIDs returns the index in s.Fed of its input name: i32[B, P] where
// from is nil (the prefill's ids), else i32[B] with from's B. what and
// flag word Explain's error: what the protocol feeds the input, and the
// flag that picks the model.
func findIDs(s *Signature, name, what, flag string, w Wording, from *prompts) (int, error) {
	typ, rank := PromptType, 2
	if from != nil {
		typ, rank = fmt.Sprintf("i32[%d]", from.ids.Shape[0]), 1
	}
	i := s.fed(name, "input")
	if i < 0 {
		if w == Terse {
			return 0, fmt.Errorf("model %s has no input %s", s.Model, name)
		}
		return 0, fmt.Errorf("model %s has no input %s: tec generate feeds it %s as %s: %s"+hintSep+
			"declare input %s: %s in it, or pick another model with %s", s.Model, name, what, name, typ, name, typ, flag)
	}
	e := s.Fed[i]
	if e.DType == te.I32.String() && len(e.Shape) == rank && (from == nil || e.Shape[0] == from.ids.Shape[0]) && !e.InPlace {
		return i, nil
	}
	switch {
	case w == Terse && from == nil:
		return 0, fmt.Errorf("model %s: input %s is %s, want %s", s.Model, name, e.Type(), PromptType)
	case w == Terse:
		return 0, fmt.Errorf("model %s: input %s is %s, want %s with B = %d", s.Model, name, e.Type(), TokenType, from.ids.Shape[0])
	case from == nil:
		return 0, fmt.Errorf("model %s's input %s is %s; tec generate feeds it the prompts, %s: %s", s.Model, name, e.Type(), name, typ)
	}
	return 0, fmt.Errorf("model %s's input %s is %s; with model %s's %d sequences (ids %s), tec generate feeds it %s: %s",
		s.Model, name, e.Type(), from.model, from.ids.Shape[0], from.ids.Type(), name, typ)
}

// findNext returns the index in s.Outputs of its output next: i32[b].
func findNext(s *Signature, b int, w Wording) (int, error) {
	i := slices.IndexFunc(s.Outputs, func(e Entry) bool { return e.Name == Next })
	if i < 0 {
		if w == Terse {
			return 0, fmt.Errorf("model %s has no output %s", s.Model, Next)
		}
		return 0, fmt.Errorf("model %s has no output next: tec generate reads the greedy next token of each sequence from it, next: i32[%d]"+hintSep+
			"output it, e.g. next[b] = argmax[t](logits[b, t]) and output next", s.Model, b)
	}
	if e := s.Outputs[i]; e.DType != te.I32.String() || len(e.Shape) != 1 || e.Shape[0] != b || e.Role != "output" {
		if w == Terse {
			return 0, fmt.Errorf("model %s: output %s is %s %s, want an output i32[%d]", s.Model, Next, e.Role, e.Type(), b)
		}
		return 0, fmt.Errorf("model %s's output next is %s; tec generate reads the next token of each of the %d sequences from it, next: i32[%d]",
			s.Model, e.Type(), b, b)
	}
	return i, nil
}

// share sets the caches and the shared names: every input and param of
// the two but ids and pos. One that both take must be the same in both;
// one that either updates in place, both must.
func (l *Layout) share(pre, dec *Signature, w Wording) error {
	seen := map[string]Entry{}
	for _, e := range pre.Fed {
		if !PerStep(e.Name) {
			seen[e.Name] = e
		}
	}
	for _, d := range dec.Fed {
		p, ok := seen[d.Name]
		if PerStep(d.Name) || !ok || p.Role == d.Role && p.Type() == d.Type() && p.InPlace == d.InPlace {
			continue
		}
		switch {
		case w == Terse:
			return fmt.Errorf("%s %s is %s in model %s and %s in model %s: the two models share it, so it must be the same in both",
				d.Role, d.Name, describe(p), pre.Model, describe(d), dec.Model)
		case p.InPlace != d.InPlace:
			return inPlaceDiffers(pre, dec)
		case p.InPlace:
			return fmt.Errorf("cache %s is %s in model %s but %s in model %s; tec generate keeps one cache for both"+hintSep+
				"declare it alike in both models", p.Name, p.Type(), pre.Model, d.Type(), dec.Model)
		}
		return fmt.Errorf("%s %s is %s in model %s but %s %s in model %s; tec generate feeds it once to both"+hintSep+
			"declare it alike in both models", p.Role, p.Name, p.Type(), pre.Model, d.Role, d.Type(), dec.Model)
	}
	pu, du := pre.updated(), dec.updated()
	if !slices.Equal(slices.Sorted(slices.Values(pu)), slices.Sorted(slices.Values(du))) {
		if w == Explain {
			return inPlaceDiffers(pre, dec)
		}
		for _, name := range slices.Sorted(slices.Values(append(slices.Clone(pu), du...))) {
			if !slices.Contains(pu, name) || !slices.Contains(du, name) {
				return fmt.Errorf("input %s is updated in place by only one of models %s and %s: a cache is updated by both", name, pre.Model, dec.Model)
			}
		}
	}
	if len(du) == 0 {
		return noCaches(dec)
	}
	l.Caches = pu
	for _, s := range []*Signature{pre, dec} {
		for _, e := range s.Fed {
			if !PerStep(e.Name) && !e.InPlace && !slices.Contains(l.Shared, e.Name) {
				l.Shared = append(l.Shared, e.Name)
			}
		}
	}
	return nil
}

// inPlaceDiffers is Explain's error of two models that update different
// inputs in place.
func inPlaceDiffers(pre, dec *Signature) error {
	du := dec.updated()
	if len(du) == 0 {
		return noCaches(dec)
	}
	return fmt.Errorf("the models update different inputs in place: %s updates %s, %s updates %s; tec generate keeps one set of caches for both"+hintSep+
		"declare the same cache inputs in both models, and update each in both", pre.Model, names(pre.updated()), dec.Model, names(du))
}

// noCaches is the error of a decode step that updates no input in place.
func noCaches(dec *Signature) error {
	return fmt.Errorf("model %s updates no input in place: tec generate needs the KV caches that it writes at pos (update k_cache[..., pos[b], ...] = ...)", dec.Model)
}

// describe words an entry's role, type and update for Terse's errors.
func describe(e Entry) string {
	s := e.Role + " " + e.Type()
	if e.InPlace {
		s += " updated in place"
	}
	return s
}

// names lists names for a message, or says none.
func names(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
