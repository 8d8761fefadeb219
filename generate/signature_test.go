package generate

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// signatures returns a prefill and a decode step that fit the protocol:
// B = 2 sequences, P = 3 tokens, a cache kc, a param emb and an input
// mask of the decode step's only.
func signatures() (pre, dec *Signature) {
	kc := Entry{Name: "kc", Role: "input", DType: "f32", Shape: []int{2, 8, 4}, InPlace: true}
	emb := Entry{Name: "emb", Role: "param", DType: "f32", Shape: []int{5, 4}}
	next := Entry{Name: Next, Role: "output", DType: "i32", Shape: []int{2}}
	logits := Entry{Name: "logits", Role: "output", DType: "f32", Shape: []int{2, 5}}
	pre = &Signature{Model: "prefill",
		Fed:     []Entry{{Name: IDs, Role: "input", DType: "i32", Shape: []int{2, 3}}, kc, emb},
		Outputs: []Entry{logits, next}}
	dec = &Signature{Model: "decode",
		Fed: []Entry{{Name: IDs, Role: "input", DType: "i32", Shape: []int{2}}, {Name: Pos, Role: "input", DType: "i32", Shape: []int{2}},
			kc, emb, {Name: "mask", Role: "input", DType: "f32", Shape: []int{8}}},
		Outputs: []Entry{next}}
	return pre, dec
}

func TestCheck(t *testing.T) {
	pre, dec := signatures()
	for _, w := range []Wording{Explain, Terse} {
		l, err := Check(pre, dec, w)
		if err != nil {
			t.Fatalf("wording %d: %v", w, err)
		}
		want := &Layout{B: 2, P: 3, Prompts: 0, IDs: 0, Pos: 1, Next: [2]int{1, 0}, Caches: []string{"kc"}, Shared: []string{"emb", "mask"}}
		if !reflect.DeepEqual(l, want) {
			t.Errorf("wording %d: layout %+v, want %+v", w, l, want)
		}
	}
}

// fed returns the entry name of s's fed entries, for an edit.
func fed(s *Signature, name string) *Entry {
	return &s.Fed[slices.IndexFunc(s.Fed, func(e Entry) bool { return e.Name == name })]
}

// TestCheckRules breaks each of the protocol's rules once and checks the
// error in both wordings.
func TestCheckRules(t *testing.T) {
	tests := []struct {
		rule           string
		edit           func(pre, dec *Signature)
		explain, terse string
	}{
		{"prefill has ids", func(pre, _ *Signature) { fed(pre, IDs).Name = "tok" },
			"model prefill has no input ids: tec generate feeds it the prompts as ids: i32[B, P]", "model prefill has no input ids"},
		{"prefill's ids are i32[B, P]", func(pre, _ *Signature) { fed(pre, IDs).Shape = []int{6} },
			"model prefill's input ids is i32[6]; tec generate feeds it the prompts, ids: i32[B, P]", "model prefill: input ids is i32[6], want i32[B, P]"},
		{"prefill's ids are not updated", func(pre, _ *Signature) { fed(pre, IDs).InPlace = true },
			"model prefill's input ids is i32[2, 3]", "model prefill: input ids is i32[2, 3], want i32[B, P]"},
		{"decode has ids", func(_, dec *Signature) { fed(dec, IDs).Role = "param" },
			"model decode has no input ids: tec generate feeds it each sequence's last token as ids: i32[2]", "model decode has no input ids"},
		{"decode's ids are i32[B]", func(_, dec *Signature) { fed(dec, IDs).Shape = []int{3} },
			"model decode's input ids is i32[3]; with model prefill's 2 sequences (ids i32[2, 3]), tec generate feeds it ids: i32[2]",
			"model decode: input ids is i32[3], want i32[B] with B = 2"},
		{"decode has pos", func(_, dec *Signature) { fed(dec, Pos).Name = "at" },
			"model decode has no input pos: tec generate feeds it each token's position as pos: i32[2]", "model decode has no input pos"},
		{"decode's pos is i32[B]", func(_, dec *Signature) { fed(dec, Pos).DType = "f32" },
			"model decode's input pos is f32[2]", "model decode: input pos is f32[2], want i32[B] with B = 2"},
		{"prefill has no pos", func(pre, _ *Signature) {
			pre.Fed = append(pre.Fed, Entry{Name: Pos, Role: "param", DType: "i32", Shape: []int{2}})
		},
			"prefill model prefill has an input pos: only the decode model takes positions", "prefill model prefill has an input pos"},
		{"names of their own", func(pre, dec *Signature) { dec.Model = pre.Model },
			"the prefill and the decode model are both named prefill", "the prefill and the decode model are both named prefill"},
		{"prefill has next", func(pre, _ *Signature) { pre.Outputs = pre.Outputs[:1] },
			"model prefill has no output next: tec generate reads the greedy next token of each sequence from it, next: i32[2]", "model prefill has no output next"},
		{"next is i32[B]", func(_, dec *Signature) { dec.Outputs[0].DType = "f32" },
			"model decode's output next is f32[2]; tec generate reads the next token of each of the 2 sequences from it", "model decode: output next is output f32[2], want an output i32[2]"},
		{"next is an output", func(_, dec *Signature) { dec.Outputs[0].Role = "input" },
			"model decode's output next is i32[2]", "model decode: output next is input i32[2], want an output i32[2]"},
		{"a shared param is alike", func(_, dec *Signature) { fed(dec, "emb").DType = "f16" },
			"param emb is f32[5, 4] in model prefill but param f16[5, 4] in model decode; tec generate feeds it once to both",
			"param emb is param f32[5, 4] in model prefill and param f16[5, 4] in model decode: the two models share it"},
		{"a cache is alike", func(_, dec *Signature) { fed(dec, "kc").Shape = []int{2, 9, 4} },
			"cache kc is f32[2, 8, 4] in model prefill but f32[2, 9, 4] in model decode; tec generate keeps one cache for both",
			"input kc is input f32[2, 8, 4] updated in place in model prefill and input f32[2, 9, 4] updated in place in model decode"},
		{"both update a cache", func(pre, _ *Signature) { fed(pre, "kc").InPlace = false },
			"the models update different inputs in place: prefill updates none, decode updates kc",
			"input kc is input f32[2, 8, 4] in model prefill and input f32[2, 8, 4] updated in place in model decode"},
		{"both have a cache", func(pre, _ *Signature) { fed(pre, "kc").Name = "cache" },
			"the models update different inputs in place: prefill updates cache, decode updates kc",
			"input cache is updated in place by only one of models prefill and decode: a cache is updated by both"},
		{"the decode step updates a cache", func(pre, dec *Signature) { fed(pre, "kc").InPlace, fed(dec, "kc").InPlace = false, false },
			"model decode updates no input in place", "model decode updates no input in place"},
	}
	for _, tt := range tests {
		for w, want := range map[Wording]string{Explain: tt.explain, Terse: tt.terse} {
			pre, dec := signatures()
			tt.edit(pre, dec)
			if _, err := Check(pre, dec, w); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s, wording %d: %v\nwant an error containing %q", tt.rule, w, err, want)
			}
		}
	}
}
