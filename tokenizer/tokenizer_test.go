package tokenizer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// file is a tokenizer.json under construction.
type file map[string]any

// tiny returns a small byte-fallback BPE tokenizer in the layout of Llama
// 2's: the vocabulary <unk> <s> </s>, the 256 byte tokens, and pieces with
// their merges.
func tiny() file {
	vocab := map[string]any{"<unk>": 0, "<s>": 1, "</s>": 2}
	for b := range 256 {
		vocab[fmt.Sprintf("<0x%02X>", b)] = 3 + b
	}
	pieces := []string{"▁", "a", "b", "c", "h", "i", "ab", "bc", "abc", "▁a", "▁h", "▁hi", "▁ab", "x", "xx"}
	for i, p := range pieces {
		vocab[p] = 259 + i
	}
	return file{
		"version":    "1.0",
		"truncation": nil,
		"padding":    nil,
		"added_tokens": []any{
			map[string]any{"id": 0, "content": "<unk>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
			map[string]any{"id": 1, "content": "<s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
			map[string]any{"id": 2, "content": "</s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
		},
		"normalizer": map[string]any{"type": "Sequence", "normalizers": []any{
			map[string]any{"type": "Prepend", "prepend": "▁"},
			map[string]any{"type": "Replace", "pattern": map[string]any{"String": " "}, "content": "▁"},
		}},
		"pre_tokenizer": nil,
		"post_processor": map[string]any{
			"type":   "TemplateProcessing",
			"single": []any{map[string]any{"SpecialToken": map[string]any{"id": "<s>", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}},
			"pair": []any{map[string]any{"SpecialToken": map[string]any{"id": "<s>", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}},
				map[string]any{"Sequence": map[string]any{"id": "B", "type_id": 1}}},
			"special_tokens": map[string]any{"<s>": map[string]any{"id": "<s>", "ids": []any{1}, "tokens": []any{"<s>"}}},
		},
		"decoder": map[string]any{"type": "Sequence", "decoders": []any{
			map[string]any{"type": "Replace", "pattern": map[string]any{"String": "▁"}, "content": " "},
			map[string]any{"type": "ByteFallback"},
			map[string]any{"type": "Fuse"},
			map[string]any{"type": "Strip", "content": " ", "start": 1, "stop": 0},
		}},
		"model": map[string]any{
			"type": "BPE", "dropout": nil, "unk_token": "<unk>", "continuing_subword_prefix": nil, "end_of_word_suffix": nil,
			"fuse_unk": true, "byte_fallback": true, "ignore_merges": false, "vocab": vocab,
			"merges": []any{"a b", "b c", "ab c", "▁ a", "▁ h", "▁h i", "▁a b", "x x"},
		},
	}
}

// model returns f's model, to change.
func (f file) model() map[string]any { return f["model"].(map[string]any) }

func (f file) parse(t *testing.T) *Tokenizer {
	t.Helper()
	tok, err := Parse(f.json(t))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func (f file) json(t *testing.T) []byte {
	t.Helper()
	data, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// byteLevelFile returns a byte-level tokenizer whose vocabulary is the 256
// byte characters and a few merges, with the pre-tokenizer pre.
func byteLevelFile(pre any) file {
	bl := newByteLevel()
	vocab := map[string]any{}
	for b := range 256 {
		vocab[bl.str[b]] = b
	}
	for i, tok := range []string{"Ġh", "Ġhi", "ĠĠ", "ll", "Ã©"} {
		vocab[tok] = 256 + i
	}
	return file{
		"version": "1.0", "truncation": nil, "padding": nil,
		"added_tokens":   []any{map[string]any{"id": 300, "content": "<|eot|>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}},
		"normalizer":     nil,
		"pre_tokenizer":  pre,
		"post_processor": map[string]any{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false, "use_regex": true},
		"decoder":        map[string]any{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
		"model": map[string]any{
			"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": "", "end_of_word_suffix": "",
			"fuse_unk": false, "byte_fallback": false, "vocab": vocab, "merges": []any{[]any{"Ġ", "h"}, []any{"Ġh", "i"}, []any{"Ġ", "Ġ"}, []any{"l", "l"}, []any{"Ã", "©"}},
		},
	}
}

func tokenStrings(t *testing.T, tok *Tokenizer, ids []int) []string {
	t.Helper()
	var out []string
	for _, id := range ids {
		s, ok := tok.Token(id)
		if !ok {
			t.Fatalf("id %d has no token", id)
		}
		out = append(out, s)
	}
	return out
}

func TestEncode(t *testing.T) {
	byteLevelPre := map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}
	tests := []struct {
		name   string
		file   file
		change func(f file)
		text   string
		want   []string
	}{
		// "a b" ranks before "▁ a": abc is reached, ▁a is not.
		{name: "merges by rank", file: tiny(), text: "abc", want: []string{"▁", "abc"}},
		{name: "merges by rank, reordered", file: tiny(), change: func(f file) {
			f.model()["merges"] = []any{"▁ a", "a b", "b c", "ab c", "▁a b"}
		}, text: "abc", want: []string{"▁a", "bc"}},
		{name: "leftmost among equal ranks", file: tiny(), text: "xxx", want: []string{"▁", "xx", "x"}},
		{name: "prefix before each piece", file: tiny(), text: "hi<s>hi", want: []string{"▁hi", "<s>", "▁hi"}},
		{name: "spaces", file: tiny(), text: "  hi ", want: []string{"▁", "▁", "▁hi", "▁"}},
		{name: "byte fallback", file: tiny(), text: "é", want: []string{"▁", "<0xC3>", "<0xA9>"}},
		{name: "unknown, fused", file: tiny(), change: func(f file) {
			f.model()["byte_fallback"] = false
		}, text: "hé€x", want: []string{"▁h", "<unk>", "x"}},
		{name: "unknown, one by one", file: tiny(), change: func(f file) {
			f.model()["byte_fallback"] = false
			f.model()["fuse_unk"] = false
		}, text: "hé€x", want: []string{"▁h", "<unk>", "<unk>", "x"}},
		{name: "unknown dropped without unk_token", file: tiny(), change: func(f file) {
			f.model()["byte_fallback"] = false
			f.model()["unk_token"] = nil
		}, text: "hé€x", want: []string{"▁h", "x"}},
		{name: "special tokens between text", file: tiny(), text: "<s></s>a<unk>", want: []string{"<s>", "</s>", "▁a", "<unk>"}},
		{name: "longest added token", file: tiny(), change: func(f file) {
			f["added_tokens"] = append(f["added_tokens"].([]any), map[string]any{"id": 300, "content": "<s>x", "special": false})
		}, text: "<s>x<s>", want: []string{"<s>x", "<s>"}},
		{name: "lstrip and rstrip", file: tiny(), change: func(f file) {
			f["added_tokens"] = append(f["added_tokens"].([]any), map[string]any{"id": 300, "content": "<m>", "lstrip": true, "rstrip": true})
		}, text: "a  <m>\t b", want: []string{"▁a", "<m>", "▁", "b"}},
		{name: "single word", file: tiny(), change: func(f file) {
			f["added_tokens"] = append(f["added_tokens"].([]any), map[string]any{"id": 300, "content": "hi", "single_word": true})
		}, text: "hi,ahi hi_ hi", want: []string{"hi", "▁", "<0x2C>", "a", "h", "i", "▁hi", "<0x5F>", "▁", "hi"}},
		// A normalized added token is matched in the normalized text, as
		// the normalizer writes it.
		{name: "normalized added token", file: tiny(), change: func(f file) {
			f["normalizer"] = map[string]any{"type": "Replace", "pattern": map[string]any{"String": " "}, "content": "▁"}
			f["added_tokens"] = append(f["added_tokens"].([]any), map[string]any{"id": 300, "content": " c", "normalized": true})
		}, text: "a c", want: []string{"a", " c"}},
		{name: "added token not normalized", file: tiny(), change: func(f file) {
			f["normalizer"] = map[string]any{"type": "Replace", "pattern": map[string]any{"String": " "}, "content": "▁"}
			f["added_tokens"] = append(f["added_tokens"].([]any), map[string]any{"id": 300, "content": "▁c", "normalized": false})
		}, text: "a c▁c", want: []string{"a", "▁", "c", "▁c"}},
		{name: "ignore merges", file: byteLevelFile(byteLevelPre), change: func(f file) {
			f.model()["ignore_merges"] = true
			f.model()["vocab"].(map[string]any)["Ġhil"] = 261
		}, text: " hil", want: []string{"Ġhil"}},
		{name: "merges without ignore_merges", file: byteLevelFile(byteLevelPre), change: func(f file) {
			f.model()["vocab"].(map[string]any)["Ġhil"] = 261
		}, text: " hil", want: []string{"Ġhi", "l"}},
		{name: "byte level", file: byteLevelFile(byteLevelPre), text: "hi  hi\té<|eot|>", want: []string{"h", "i", "Ġ", "Ġhi", "ĉ", "Ã©", "<|eot|>"}},
		{name: "byte level prefix space", file: byteLevelFile(map[string]any{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true}),
			text: "hi<|eot|>hi", want: []string{"Ġhi", "<|eot|>", "Ġhi"}},
		{name: "digits", file: byteLevelFile(map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Digits", "individual_digits": true},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}}}),
			text: "a12²٣", want: []string{"a", "1", "2", "Â", "²", "Ù", "£"}},
		{name: "digit runs", file: byteLevelFile(map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Digits", "individual_digits": false},
			map[string]any{"type": "Split", "pattern": map[string]any{"String": "1"}, "behavior": "Isolated", "invert": false},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}}}),
			text: "ll123ll", want: []string{"ll", "1", "2", "3", "ll"}},
		{name: "NFC", file: byteLevelFile(byteLevelPre), change: func(f file) {
			f["normalizer"] = map[string]any{"type": "NFC"}
		}, text: "e\u0301", want: []string{"Ã©"}},
		{name: "regex replace", file: tiny(), change: func(f file) {
			f["normalizer"] = map[string]any{"type": "Sequence", "normalizers": []any{
				map[string]any{"type": "Replace", "pattern": map[string]any{"Regex": `\s+`}, "content": " "},
				map[string]any{"type": "Prepend", "prepend": "▁"},
				map[string]any{"type": "Replace", "pattern": map[string]any{"String": " "}, "content": "▁"}}}
		}, text: "hi \t\n hi", want: []string{"▁hi", "▁hi"}},
		{name: "empty", file: tiny(), text: "", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := tt.file
			if tt.change != nil {
				tt.change(f)
			}
			tok := f.parse(t)
			ids, err := tok.Encode(tt.text, false)
			if err != nil {
				t.Fatal(err)
			}
			if got := tokenStrings(t, tok, ids); !slices.Equal(got, tt.want) {
				t.Errorf("Encode(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

func TestEncodeSpecial(t *testing.T) {
	tok := tiny().parse(t)
	ids, err := tok.Encode("hi", true)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{1, 270}; !slices.Equal(ids, want) {
		t.Errorf("Encode(hi, true) = %v, want %v", ids, want)
	}
	if id, ok := tok.BOS(); !ok || id != 1 {
		t.Errorf("BOS() = %d, %v, want 1, true", id, ok)
	}
	if _, ok := tok.EOS(); ok {
		t.Error("EOS() found a token after the text")
	}
	withEOS := tiny()
	pp := withEOS["post_processor"].(map[string]any)
	pp["single"] = append(pp["single"].([]any), map[string]any{"SpecialToken": map[string]any{"id": "</s>", "type_id": 0}})
	pp["special_tokens"].(map[string]any)["</s>"] = map[string]any{"id": "</s>", "ids": []any{2}, "tokens": []any{"</s>"}}
	if ids, _ := withEOS.parse(t).Encode("hi", true); !slices.Equal(ids, []int{1, 270, 2}) {
		t.Errorf("with </s> after the text: Encode(hi, true) = %v, want [1 270 2]", ids)
	}
	if id, ok := withEOS.parse(t).EOS(); !ok || id != 2 {
		t.Errorf("EOS() = %d, %v, want 2, true", id, ok)
	}
	if id, ok := tok.TokenID("</s>"); !ok || id != 2 {
		t.Errorf("TokenID(</s>) = %d, %v, want 2, true", id, ok)
	}
	if id, ok := tok.TokenID("▁hi"); !ok || id != 270 {
		t.Errorf("TokenID(▁hi) = %d, %v, want 270, true", id, ok)
	}
	if _, ok := tok.TokenID("nope"); ok {
		t.Error("TokenID(nope) found a token")
	}
	if !tok.IsSpecial(1) || tok.IsSpecial(270) {
		t.Error("IsSpecial: want <s> special and ▁hi not")
	}
	if n := tok.VocabSize(); n != 274 {
		t.Errorf("VocabSize() = %d, want 274", n)
	}
	bl := byteLevelFile(nil).parse(t)
	if _, ok := bl.BOS(); ok {
		t.Error("a ByteLevel post-processor has a BOS")
	}
	ids, err = bl.Encode("hi", true)
	if err != nil || len(ids) != 2 {
		t.Errorf("ByteLevel post-processor: Encode(hi, true) = %v, %v", ids, err)
	}
	if _, err := bl.Encode("\xff", false); err == nil || !strings.Contains(err.Error(), "not valid UTF-8") {
		t.Errorf("Encode of invalid UTF-8: error %v", err)
	}
}

func TestDecode(t *testing.T) {
	sp := tiny().parse(t)
	bl := byteLevelFile(nil).parse(t)
	id := func(tok *Tokenizer, s string) int {
		i, ok := tok.TokenID(s)
		if !ok {
			t.Fatalf("no token %q", s)
		}
		return i
	}
	tests := []struct {
		name        string
		tok         *Tokenizer
		tokens      []string
		skipSpecial bool
		want        string
	}{
		{"strip one space", sp, []string{"▁", "▁hi", "▁", "▁a"}, false, " hi  a"},
		{"special tokens kept", sp, []string{"<s>", "▁hi", "</s>"}, false, "<s> hi</s>"},
		{"special tokens skipped", sp, []string{"<s>", "▁hi", "</s>"}, true, "hi"},
		{"bytes", sp, []string{"▁a", "<0xC3>", "<0xA9>", "b"}, false, "aéb"},
		{"invalid bytes, one U+FFFD each", sp, []string{"▁a", "<0xE2>", "<0x82>", "b", "<0xFF>"}, false, "a\uFFFD\uFFFDb\uFFFD"},
		{"byte level", bl, []string{"h", "i", "Ġ", "Ġhi", "ĉ", "Ã©", "<|eot|>"}, false, "hi  hi\té<|eot|>"},
		{"byte level skips special", bl, []string{"h", "<|eot|>"}, true, "h"},
		{"byte level, maximal subparts", bl, []string{"a", "â", "Ĥ", "b", "í", "ł", "Ģ", "c"}, false, "a\uFFFDb\uFFFD\uFFFD\uFFFDc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ids []int
			for _, s := range tt.tokens {
				ids = append(ids, id(tt.tok, s))
			}
			got, err := tt.tok.Decode(ids, tt.skipSpecial)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Decode(%q) = %q, want %q", tt.tokens, got, tt.want)
			}
		})
	}
	if _, err := sp.Decode([]int{5, 9999}, false); err == nil || !strings.Contains(err.Error(), "id 9999") {
		t.Errorf("Decode of an unknown id: error %v", err)
	}
	if _, err := sp.Decode([]int{-1}, false); err == nil {
		t.Error("Decode of a negative id: no error")
	}
	noDecoder := tiny()
	noDecoder["decoder"] = nil
	if got, _ := noDecoder.parse(t).Decode([]int{270, 260}, false); got != "▁hi a" {
		t.Errorf("without a decoder: %q, want tokens joined by spaces", got)
	}
}

func TestLossyUTF8(t *testing.T) {
	tests := []struct{ in, want string }{
		{"abc", "abc"},
		{"a\xffb", "a\uFFFDb"},
		{"\xe2\x82", "\uFFFD"},              // a truncated sequence is one subpart
		{"\xe2\x82\xac\xe2\x82", "€\uFFFD"}, // ... also at the end
		{"\xf0\x9f\x98", "\uFFFD"},
		{"\xf0\x9f\x98a", "\uFFFDa"},
		{"\xc0\xaf", "\uFFFD\uFFFD"},                     // C0 starts nothing
		{"\xed\xa0\x80", "\uFFFD\uFFFD\uFFFD"},           // a surrogate: ED's second byte is at most 9F
		{"\xf4\x90\x80\x80", "\uFFFD\uFFFD\uFFFD\uFFFD"}, // past U+10FFFF
		{"\xe0\x80\x80", "\uFFFD\uFFFD\uFFFD"},           // overlong
		{"\xef\xbf\xbd", "\uFFFD"},                       // U+FFFD itself
		{"\x80\x80", "\uFFFD\uFFFD"},
	}
	for _, tt := range tests {
		if got := lossyUTF8([]byte(tt.in)); got != tt.want {
			t.Errorf("lossyUTF8(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestDecodeStream(t *testing.T) {
	sp := tiny().parse(t)
	bl := byteLevelFile(nil).parse(t)
	tests := []struct {
		name   string
		tok    *Tokenizer
		tokens []string
		want   []string // the text each step returns, then Flush
	}{
		{"spaces kept after the first", sp, []string{"▁hi", "▁a", "▁", "▁hi"}, []string{"hi", " a", " ", " hi", ""}},
		{"a character over two byte tokens", sp, []string{"▁a", "<0xC3>", "<0xA9>", "b"}, []string{"a", "", "é", "b", ""}},
		{"a character over byte-level tokens", bl, []string{"h", "â", "Ĥ", "¬", "!"}, []string{"h", "", "", "€", "!", ""}},
		{"an incomplete character flushed", bl, []string{"h", "â", "Ĥ"}, []string{"h", "", "", "\uFFFD"}},
		// ByteFallback replaces a whole run of byte tokens that is not
		// UTF-8: C3 A9 is é, C3 A9 80 three U+FFFD.
		{"earlier text changed", sp, []string{"▁a", "<0xC3>", "<0xA9>", "<0x80>", "b"}, []string{"a", "", "é", "", "\uFFFD\uFFFD\uFFFDb", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.tok.NewDecodeStream(false)
			var got []string
			for _, tok := range tt.tokens {
				id, ok := tt.tok.TokenID(tok)
				if !ok {
					t.Fatalf("no token %q", tok)
				}
				piece, err := s.Step(id)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, piece)
			}
			rest, err := s.Flush()
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, rest)
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	s := sp.NewDecodeStream(false)
	if _, err := s.Step(99999); err == nil {
		t.Error("Step of an unknown id: no error")
	}
	// The stream goes on after an error, and starts again after Flush.
	hi, _ := sp.TokenID("▁hi")
	for _, want := range []string{"hi", " hi", "<Flush>", "hi"} {
		var got string
		var err error
		if want == "<Flush>" {
			got, err = s.Flush()
			want = ""
		} else {
			got, err = s.Step(hi)
		}
		if err != nil || got != want {
			t.Errorf("got %q, %v, want %q", got, err, want)
		}
	}
}

// TestParseErrors checks that what Parse does not support, and files that
// contradict themselves, are errors that name the part.
func TestParseErrors(t *testing.T) {
	tests := []struct {
		name   string
		change func(f file)
		want   string
	}{
		{"unknown model", func(f file) { f["model"] = map[string]any{"type": "WordPiece", "vocab": map[string]any{}} }, `model: unsupported type "WordPiece"`},
		{"no model", func(f file) { f["model"] = nil }, "model: no model"},
		{"model without type", func(f file) { delete(f.model(), "type") }, "model: no type"},
		{"merge of an unknown token", func(f file) { f.model()["merges"] = []any{"a b", "a zz"} }, `merges[1] ("a", "zz"): "zz" is not in the vocabulary`},
		{"merge of an unknown left token", func(f file) { f.model()["merges"] = []any{"zz a"} }, `"zz" is not in the vocabulary`},
		{"merged token not in the vocabulary", func(f file) { f.model()["merges"] = []any{"c a"} }, `the merged token "ca" is not in the vocabulary`},
		{"merge of three tokens", func(f file) { f.model()["merges"] = []any{"a b c"} }, "is not two tokens"},
		{"merges mixed", func(f file) { f.model()["merges"] = []any{"a b", []any{"b", "c"}} }, "neither all"},
		{"merge pair of three", func(f file) { f.model()["merges"] = []any{[]any{"a", "b", "c"}} }, "is not a pair"},
		{"two tokens, one id", func(f file) { f.model()["vocab"].(map[string]any)["zz"] = 260 }, `tokens "a" and "zz" both have id 260`},
		{"negative id", func(f file) { f.model()["vocab"].(map[string]any)["zz"] = -1 }, `"zz" has id -1`},
		{"huge id", func(f file) { f.model()["vocab"].(map[string]any)["zz"] = 1 << 30 }, `"zz" has id 1073741824`},
		{"unknown pre-tokenizer", func(f file) { f["pre_tokenizer"] = map[string]any{"type": "Metaspace", "replacement": "▁"} }, `pre_tokenizer: unsupported type "Metaspace"`},
		{"unknown pre-tokenizer in a sequence", func(f file) {
			f["pre_tokenizer"] = map[string]any{"type": "Sequence", "pretokenizers": []any{map[string]any{"type": "Digits", "individual_digits": true}, map[string]any{"type": "Whitespace"}}}
		}, `pre_tokenizer: Sequence[1]: unsupported type "Whitespace"`},
		{"sequence with a field of another kind", func(f file) {
			f["decoder"] = map[string]any{"type": "Sequence", "normalizers": []any{}}
		}, `decoder: Sequence: json: unknown field "normalizers"`},
		{"split removed", func(f file) {
			f["pre_tokenizer"] = map[string]any{"type": "Split", "pattern": map[string]any{"String": " "}, "behavior": "Removed", "invert": false}
		}, `unsupported behavior "Removed"`},
		{"split inverted", func(f file) {
			f["pre_tokenizer"] = map[string]any{"type": "Split", "pattern": map[string]any{"String": " "}, "behavior": "Isolated", "invert": true}
		}, "unsupported invert"},
		{"bad regex", func(f file) {
			f["pre_tokenizer"] = map[string]any{"type": "Split", "pattern": map[string]any{"Regex": "(a"}, "behavior": "Isolated", "invert": false}
		}, `regex "(a"`},
		{"pattern of both kinds", func(f file) {
			f["pre_tokenizer"] = map[string]any{"type": "Split", "pattern": map[string]any{"Regex": "a", "String": "a"}, "behavior": "Isolated", "invert": false}
		}, "want one of String and Regex"},
		{"byte level without add_prefix_space", func(f file) { f["pre_tokenizer"] = map[string]any{"type": "ByteLevel"} }, "no add_prefix_space"},
		{"unknown normalizer", func(f file) { f["normalizer"] = map[string]any{"type": "NFKC"} }, `normalizer: unsupported type "NFKC"`},
		{"unknown decoder", func(f file) { f["decoder"] = map[string]any{"type": "WordPiece", "prefix": "##"} }, `decoder: unsupported type "WordPiece"`},
		{"strip of a string", func(f file) { f["decoder"] = map[string]any{"type": "Strip", "content": "ab", "start": 1, "stop": 0} }, "not one character"},
		{"unknown post-processor", func(f file) { f["post_processor"] = map[string]any{"type": "BertProcessing"} }, `post_processor: unsupported type "BertProcessing"`},
		{"template with an unknown special token", func(f file) {
			f["post_processor"].(map[string]any)["single"] = []any{map[string]any{"SpecialToken": map[string]any{"id": "[CLS]", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}}
		}, `special token "[CLS]" is not in special_tokens`},
		{"template special token of a wrong id", func(f file) {
			f["post_processor"].(map[string]any)["special_tokens"] = map[string]any{"<s>": map[string]any{"id": "<s>", "ids": []any{2}, "tokens": []any{"<s>"}}}
		}, `id 2 is not the token "<s>"`},
		{"template without the sequence", func(f file) {
			f["post_processor"].(map[string]any)["single"] = []any{map[string]any{"SpecialToken": map[string]any{"id": "<s>", "type_id": 0}}}
		}, "no sequence A"},
		{"unknown model field", func(f file) { f.model()["dropout_seed"] = 1 }, `unknown field "dropout_seed"`},
		{"unknown field", func(f file) { f["extra"] = 1 }, `unknown field "extra"`},
		{"unknown decoder field", func(f file) {
			f["decoder"] = map[string]any{"type": "Fuse", "strength": 2}
		}, `decoder: Fuse: json: unknown field "strength"`},
		{"truncation", func(f file) { f["truncation"] = map[string]any{"max_length": 512} }, "truncation: unsupported"},
		{"padding", func(f file) { f["padding"] = map[string]any{"strategy": "BatchLongest"} }, "padding: unsupported"},
		{"dropout", func(f file) { f.model()["dropout"] = 0.1 }, "unsupported dropout 0.1"},
		{"subword prefix", func(f file) { f.model()["continuing_subword_prefix"] = "##" }, `unsupported continuing_subword_prefix "##"`},
		{"unknown unk_token", func(f file) { f.model()["unk_token"] = "[UNK]" }, `unk_token "[UNK]" is not in the vocabulary`},
		{"added token on another token's id", func(f file) {
			f["added_tokens"] = append(f["added_tokens"].([]any), map[string]any{"id": 260, "content": "<new>"})
		}, `"<new>" has id 260, the model's "a"`},
		{"added token with another id than the vocabulary's", func(f file) {
			f["added_tokens"] = append(f["added_tokens"].([]any), map[string]any{"id": 300, "content": "a"})
		}, `"a" has id 300, but 260 in the model's vocabulary`},
		{"added token twice", func(f file) {
			f["added_tokens"] = append(f["added_tokens"].([]any), map[string]any{"id": 300, "content": "<s>"})
		}, `"<s>" is added twice`},
		{"two added tokens, one id", func(f file) {
			f["added_tokens"] = append(f["added_tokens"].([]any), map[string]any{"id": 300, "content": "<x>"}, map[string]any{"id": 300, "content": "<y>"})
		}, `"<y>" has id 300, as "<x>" does`},
		{"empty added token", func(f file) {
			f["added_tokens"] = append(f["added_tokens"].([]any), map[string]any{"id": 300, "content": ""})
		}, "empty content"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := tiny()
			tt.change(f)
			_, err := Parse(f.json(t))
			if err == nil {
				t.Fatalf("no error, want one containing %q", tt.want)
			}
			if !strings.HasPrefix(err.Error(), "tokenizer: ") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want one containing %q", err, tt.want)
			}
		})
	}
	for _, data := range []string{"", "{", "[]", `{"model": 3}`, `{} {}`} {
		if _, err := Parse([]byte(data)); err == nil {
			t.Errorf("Parse(%q): no error", data)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tokenizer.json")
	if err := os.WriteFile(path, tiny().json(t), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(filepath.Join(dir, "missing.json")); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("Load of a missing file: error %v", err)
	}
	f := tiny()
	f["normalizer"] = map[string]any{"type": "Lowercase"}
	if err := os.WriteFile(path, f.json(t), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), path+": normalizer: unsupported type \"Lowercase\"") {
		t.Errorf("Load of an unsupported file: error %v", err)
	}
}
