package tokenizer

import (
	"encoding/json"
	"fmt"
)

// A postProcessor adds special tokens around an encoded text (when Encode
// is asked to).
type postProcessor interface {
	apply(ids []int) []int
	// bos and eos return the one special token put before, or after,
	// the text, if that is what the processor does.
	bos() (int, bool)
	eos() (int, bool)
}

// postSeq applies its processors in order.
type postSeq []postProcessor

func (q postSeq) apply(ids []int) []int {
	for _, p := range q {
		ids = p.apply(ids)
	}
	return ids
}

func (q postSeq) bos() (int, bool) {
	for _, p := range q {
		if id, ok := p.bos(); ok {
			return id, true
		}
	}
	return 0, false
}

func (q postSeq) eos() (int, bool) {
	for _, p := range q {
		if id, ok := p.eos(); ok {
			return id, true
		}
	}
	return 0, false
}

// byteLevelPost is the ByteLevel post-processor, which only adjusts
// offsets.
type byteLevelPost struct{}

func (byteLevelPost) apply(ids []int) []int { return ids }
func (byteLevelPost) bos() (int, bool)      { return 0, false }
func (byteLevelPost) eos() (int, bool)      { return 0, false }

// templatePost is TemplateProcessing's template for a single sequence:
// special tokens before and after the text.
type templatePost struct{ before, after []int }

func (p templatePost) apply(ids []int) []int {
	out := make([]int, 0, len(p.before)+len(ids)+len(p.after))
	out = append(out, p.before...)
	out = append(out, ids...)
	return append(out, p.after...)
}

func (p templatePost) bos() (int, bool) {
	if len(p.before) == 1 {
		return p.before[0], true
	}
	return 0, false
}

func (p templatePost) eos() (int, bool) {
	if len(p.after) == 1 {
		return p.after[0], true
	}
	return 0, false
}

// templatePieceJSON is a piece of a template: {"SpecialToken": {"id":
// "<s>", "type_id": 0}} or {"Sequence": {"id": "A", "type_id": 0}}.
type templatePieceJSON struct {
	SpecialToken *struct {
		ID     string `json:"id"`
		TypeID int    `json:"type_id"`
	} `json:"SpecialToken"`
	Sequence *struct {
		ID     string `json:"id"`
		TypeID int    `json:"type_id"`
	} `json:"Sequence"`
}

// parsePostProcessor reads a tokenizer.json "post_processor"; a null one
// is nil. t gives the ids that the special tokens must have.
func parsePostProcessor(raw json.RawMessage, t *Tokenizer) (postProcessor, error) {
	if isNull(raw) {
		return nil, nil
	}
	typ, err := typeOf(raw)
	if err != nil {
		return nil, err
	}
	switch typ {
	case "Sequence":
		parts, err := parseSequence(raw, "processors", func(r json.RawMessage) (postProcessor, error) { return parsePostProcessor(r, t) })
		return postSeq(parts), err
	case "ByteLevel":
		var v struct {
			Type           string `json:"type"`
			AddPrefixSpace bool   `json:"add_prefix_space"` // offsets only
			TrimOffsets    bool   `json:"trim_offsets"`     // offsets only
			UseRegex       bool   `json:"use_regex"`        // offsets only
		}
		if err := decodeStrict(raw, &v); err != nil {
			return nil, fmt.Errorf("ByteLevel: %w", err)
		}
		return byteLevelPost{}, nil
	case "TemplateProcessing":
		p, err := parseTemplate(raw, t)
		if err != nil {
			return nil, fmt.Errorf("TemplateProcessing: %w", err)
		}
		return p, nil
	}
	return nil, fmt.Errorf("unsupported type %q", typ)
}

func parseTemplate(raw json.RawMessage, t *Tokenizer) (templatePost, error) {
	var v struct {
		Type          string              `json:"type"`
		Single        []templatePieceJSON `json:"single"`
		Pair          json.RawMessage     `json:"pair"` // pairs are not encoded
		SpecialTokens map[string]struct {
			ID     string   `json:"id"`
			IDs    []int    `json:"ids"`
			Tokens []string `json:"tokens"`
		} `json:"special_tokens"`
	}
	if err := decodeStrict(raw, &v); err != nil {
		return templatePost{}, err
	}
	for name, st := range v.SpecialTokens {
		if len(st.IDs) != len(st.Tokens) {
			return templatePost{}, fmt.Errorf("special token %q: %d ids but %d tokens", name, len(st.IDs), len(st.Tokens))
		}
		for i, id := range st.IDs {
			if tok, ok := t.Token(id); !ok || tok != st.Tokens[i] {
				return templatePost{}, fmt.Errorf("special token %q: id %d is not the token %q", name, id, st.Tokens[i])
			}
		}
	}
	var p templatePost
	seen := false
	for i, piece := range v.Single {
		switch {
		case piece.Sequence != nil && piece.SpecialToken == nil:
			if piece.Sequence.ID != "A" || seen {
				return templatePost{}, fmt.Errorf("single[%d]: sequence %q (want one A)", i, piece.Sequence.ID)
			}
			seen = true
		case piece.SpecialToken != nil && piece.Sequence == nil:
			st, ok := v.SpecialTokens[piece.SpecialToken.ID]
			if !ok {
				return templatePost{}, fmt.Errorf("single[%d]: special token %q is not in special_tokens", i, piece.SpecialToken.ID)
			}
			if seen {
				p.after = append(p.after, st.IDs...)
			} else {
				p.before = append(p.before, st.IDs...)
			}
		default:
			return templatePost{}, fmt.Errorf("single[%d]: want one of SpecialToken and Sequence", i)
		}
	}
	if !seen {
		return templatePost{}, fmt.Errorf("single: no sequence A")
	}
	return p, nil
}
