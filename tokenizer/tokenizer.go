package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"unicode/utf8"
)

// A Tokenizer encodes text to token ids and decodes ids to text as the
// tokenizer.json it was read from says. It is safe for concurrent use.
type Tokenizer struct {
	model      *bpe
	normalizer normalizer   // nil: none
	pre        preTokenizer // nil: none
	post       postProcessor
	decoder    decoder // nil: tokens joined with spaces

	tokens   []string // by id: the model's tokens and the added ones
	known    []bool   // whether an id has a token
	added    map[int]*addedToken
	byString map[string]int // added tokens by content
	raw      *matcher       // added tokens matched in the raw text
	norm     *matcher       // added tokens matched in the normalized text
}

// Load reads the tokenizer.json file at path (see Parse).
func Load(path string) (*Tokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	t, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", path, err)
	}
	return t, nil
}

// Parse reads a tokenizer from the contents of a tokenizer.json file. Any
// part of the file it does not support (a model, normalizer,
// pre-tokenizer, post-processor or decoder type, an option of one, an
// unknown field) is an error that names it, as is an inconsistent file: a
// merge of tokens the vocabulary lacks, two tokens with one id.
func Parse(data []byte) (*Tokenizer, error) {
	t, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	return t, nil
}

// fileJSON is the top level of tokenizer.json.
type fileJSON struct {
	Version       string          `json:"version"`
	Truncation    json.RawMessage `json:"truncation"`
	Padding       json.RawMessage `json:"padding"`
	AddedTokens   []addedToken    `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Decoder       json.RawMessage `json:"decoder"`
	Model         json.RawMessage `json:"model"`
}

func parse(data []byte) (*Tokenizer, error) {
	var f fileJSON
	if err := decodeStrict(data, &f); err != nil {
		return nil, err
	}
	if !isNull(f.Truncation) {
		return nil, fmt.Errorf("truncation: unsupported (want null, have %s)", f.Truncation)
	}
	if !isNull(f.Padding) {
		return nil, fmt.Errorf("padding: unsupported (want null, have %s)", f.Padding)
	}
	bl := newByteLevel()
	t := &Tokenizer{added: map[int]*addedToken{}, byString: map[string]int{}}
	var err error
	if t.model, err = parseModel(f.Model); err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	if t.normalizer, err = parseNormalizer(f.Normalizer); err != nil {
		return nil, fmt.Errorf("normalizer: %w", err)
	}
	if t.pre, err = parsePreTokenizer(f.PreTokenizer, bl); err != nil {
		return nil, fmt.Errorf("pre_tokenizer: %w", err)
	}
	if t.decoder, err = parseDecoder(f.Decoder, bl); err != nil {
		return nil, fmt.Errorf("decoder: %w", err)
	}
	if err := t.buildVocab(f.AddedTokens); err != nil {
		return nil, err
	}
	if t.post, err = parsePostProcessor(f.PostProcessor, t); err != nil {
		return nil, fmt.Errorf("post_processor: %w", err)
	}
	return t, nil
}

// buildVocab makes the id table from the model's vocabulary and the added
// tokens, and the matchers of the added tokens.
func (t *Tokenizer) buildVocab(added []addedToken) error {
	n := 0
	for _, id := range t.model.vocab {
		n = max(n, id+1)
	}
	for _, a := range added {
		if a.ID < 0 || a.ID >= maxID {
			return fmt.Errorf("added_tokens: %q has id %d, outside [0, %d)", a.Content, a.ID, maxID)
		}
		n = max(n, a.ID+1)
	}
	t.tokens = make([]string, n)
	t.known = make([]bool, n)
	for tok, id := range t.model.vocab {
		if t.known[id] {
			a, b := t.tokens[id], tok
			if a > b {
				a, b = b, a
			}
			return fmt.Errorf("model: vocab: tokens %q and %q both have id %d", a, b, id)
		}
		t.tokens[id], t.known[id] = tok, true
	}
	var rawPats, normPats []string
	var rawToks, normToks []*addedToken
	for i := range added {
		a := &added[i]
		if a.Content == "" {
			return fmt.Errorf("added_tokens[%d]: empty content", i)
		}
		if _, dup := t.byString[a.Content]; dup {
			return fmt.Errorf("added_tokens[%d]: %q is added twice", i, a.Content)
		}
		if _, dup := t.added[a.ID]; dup {
			return fmt.Errorf("added_tokens[%d]: %q has id %d, as %q does", i, a.Content, a.ID, t.added[a.ID].Content)
		}
		if id, ok := t.model.vocab[a.Content]; ok && id != a.ID {
			return fmt.Errorf("added_tokens[%d]: %q has id %d, but %d in the model's vocabulary", i, a.Content, a.ID, id)
		}
		if t.known[a.ID] && t.tokens[a.ID] != a.Content {
			return fmt.Errorf("added_tokens[%d]: %q has id %d, the model's %q", i, a.Content, a.ID, t.tokens[a.ID])
		}
		t.tokens[a.ID], t.known[a.ID] = a.Content, true
		t.added[a.ID] = a
		t.byString[a.Content] = a.ID
		if a.Normalized && t.normalizer != nil {
			p, err := t.normalizer.normalize(a.Content)
			if err != nil {
				return fmt.Errorf("added_tokens[%d]: normalizing %q: %w", i, a.Content, err)
			}
			normPats, normToks = append(normPats, p), append(normToks, a)
		} else {
			rawPats, rawToks = append(rawPats, a.Content), append(rawToks, a)
		}
	}
	t.raw = newMatcher(rawPats, rawToks)
	t.norm = newMatcher(normPats, normToks)
	return nil
}

// Encode returns the ids of text. The added tokens (special or not) are
// found in the text first; the pieces between them are normalized,
// pre-tokenized and encoded by the model. With addSpecial, the
// post-processor's special tokens are added too (Llama's beginning of
// text); a prompt rendered from a chat template already holds them and is
// encoded without.
func (t *Tokenizer) Encode(text string, addSpecial bool) ([]int, error) {
	if !utf8.ValidString(text) {
		return nil, fmt.Errorf("tokenizer: encode: the text is not valid UTF-8: %q", truncate(text))
	}
	var ids []int
	for _, seg := range t.raw.split(text, nil) {
		if seg.id >= 0 {
			ids = append(ids, seg.id)
			continue
		}
		s := seg.text
		if t.normalizer != nil {
			var err error
			if s, err = t.normalizer.normalize(s); err != nil {
				return nil, fmt.Errorf("tokenizer: encode: normalizer: %w", err)
			}
		}
		for _, seg := range t.norm.split(s, nil) {
			if seg.id >= 0 {
				ids = append(ids, seg.id)
				continue
			}
			words := []string{seg.text}
			if t.pre != nil {
				var err error
				if words, err = t.pre.split(words); err != nil {
					return nil, fmt.Errorf("tokenizer: encode: pre_tokenizer: %w", err)
				}
			}
			for _, w := range words {
				ids = t.model.encode(w, ids)
			}
		}
	}
	if addSpecial && t.post != nil {
		ids = t.post.apply(ids)
	}
	return ids, nil
}

// Decode returns the text of ids: their tokens through the decoder. With
// skipSpecial, special added tokens are left out. An id with no token is
// an error.
func (t *Tokenizer) Decode(ids []int, skipSpecial bool) (string, error) {
	toks := make([]string, 0, len(ids))
	for _, id := range ids {
		tok, ok := t.Token(id)
		if !ok {
			return "", fmt.Errorf("tokenizer: decode: id %d has no token (vocabulary size %d)", id, len(t.tokens))
		}
		if skipSpecial && t.IsSpecial(id) {
			continue
		}
		toks = append(toks, tok)
	}
	if t.decoder == nil {
		return strings.Join(toks, " "), nil
	}
	out, err := t.decoder.decodeChain(toks)
	if err != nil {
		return "", fmt.Errorf("tokenizer: decode: %w", err)
	}
	return strings.Join(out, ""), nil
}

// TokenID returns the id of a token, added ("<|eot_id|>") or of the
// model's vocabulary, and whether there is one.
func (t *Tokenizer) TokenID(token string) (int, bool) {
	if id, ok := t.byString[token]; ok {
		return id, true
	}
	id, ok := t.model.vocab[token]
	return id, ok
}

// Token returns the token of an id and whether there is one.
func (t *Tokenizer) Token(id int) (string, bool) {
	if id < 0 || id >= len(t.tokens) || !t.known[id] {
		return "", false
	}
	return t.tokens[id], true
}

// IsSpecial reports whether id is a special added token.
func (t *Tokenizer) IsSpecial(id int) bool {
	a, ok := t.added[id]
	return ok && a.Special
}

// VocabSize returns one more than the largest id, the size of a model's
// embedding table for this vocabulary at least.
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// BOS returns the id of the beginning-of-sequence token that Encode adds
// with addSpecial, where the post-processor adds exactly one special token
// before the text (Llama's).
func (t *Tokenizer) BOS() (int, bool) {
	if t.post == nil {
		return 0, false
	}
	return t.post.bos()
}

// EOS returns the id of the end-of-sequence token that Encode adds with
// addSpecial, where the post-processor adds exactly one special token
// after the text. Most generative models' files add none: the token that
// ends a generation is the configuration's (Config.EOSToken).
func (t *Tokenizer) EOS() (int, bool) {
	if t.post == nil {
		return 0, false
	}
	return t.post.eos()
}

// decodeStrict decodes JSON into v, rejecting fields v does not have, and
// anything after the value.
func decodeStrict(data []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("data after the JSON value")
	}
	return nil
}

// parseSequence reads a component of type Sequence whose parts are listed
// under the key field, each read by parse; the parts that parse to nil
// (a null one) are left out. Any other key is an error, as decodeStrict's.
func parseSequence[T comparable](raw json.RawMessage, field string, parse func(json.RawMessage) (T, error)) ([]T, error) {
	var v map[string]json.RawMessage
	if err := decodeStrict(raw, &v); err != nil {
		return nil, fmt.Errorf("Sequence: %w", err)
	}
	for _, k := range slices.Sorted(maps.Keys(v)) {
		if k != "type" && k != field {
			return nil, fmt.Errorf("Sequence: json: unknown field %q", k)
		}
	}
	var list []json.RawMessage
	if err := json.Unmarshal(v[field], &list); err != nil && v[field] != nil {
		return nil, fmt.Errorf("Sequence: %s: %w", field, err)
	}
	var parts []T
	for i, r := range list {
		p, err := parse(r)
		if err != nil {
			return nil, fmt.Errorf("Sequence[%d]: %w", i, err)
		}
		var none T
		if p != none {
			parts = append(parts, p)
		}
	}
	return parts, nil
}

// typeOf returns the "type" of a component, reading no further into it
// than that field (a model's "type" comes before its large vocabulary).
func typeOf(raw json.RawMessage) (string, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return "", fmt.Errorf("want an object, have %s", truncate(string(raw)))
	}
	for d.More() {
		key, err := d.Token()
		if err != nil {
			return "", err
		}
		if key == "type" {
			var typ string
			if err := d.Decode(&typ); err != nil {
				return "", fmt.Errorf("type: %w", err)
			}
			return typ, nil
		}
		var skip json.RawMessage
		if err := d.Decode(&skip); err != nil {
			return "", err
		}
	}
	return "", fmt.Errorf("no type in %s", truncate(string(raw)))
}

func isNull(raw json.RawMessage) bool {
	s := bytes.TrimSpace(raw)
	return len(s) == 0 || string(s) == "null"
}
