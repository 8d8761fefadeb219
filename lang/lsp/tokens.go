package lsp

import (
	"context"
	"encoding/json"
	"iter"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"go.lsp.dev/protocol"

	"tec/lang"
	"tec/lang/syntax"
)

// The semantic token types and modifiers, in the order of the legend.
const (
	tokKeyword = iota
	tokComment
	tokString
	tokNumber
	tokFunction
	tokVariable
	tokParameter
	tokType
	tokNamespace
)

const (
	modDeclaration = 1 << iota
	modReadonly
	modDefaultLibrary
	modReduction
)

// tokenLegend returns the legend of the semantic tokens: tensors and lists
// are variables, constants readonly variables, index variables parameters
// (reduction axes with the modifier "reduction"), functions functions
// (builtins and the standard library with "defaultLibrary"), dtypes types
// and models namespaces.
func tokenLegend() protocol.SemanticTokensLegend {
	return protocol.SemanticTokensLegend{
		TokenTypes: []protocol.SemanticTokenTypes{"keyword", "comment", "string", "number", "function", "variable",
			"parameter", "type", "namespace"},
		TokenModifiers: []protocol.SemanticTokenModifiers{"declaration", "readonly", "defaultLibrary", "reduction"},
	}
}

// lexeme is a token of the source for highlighting.
type lexeme struct {
	start, end int
	kind       int // tokKeyword ... tokNumber, or -1 for a name
}

// scan splits src into comments, strings, numbers, keywords and names,
// skipping operators and white space, and yields them in order. It accepts
// any text.
func scan(src []byte) iter.Seq[lexeme] {
	return func(yield func(lexeme) bool) {
		scanText(src, yield)
	}
}

// scanText yields the lexemes of src until yield returns false.
func scanText(src []byte, yield func(lexeme) bool) {
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '#':
			j := i
			for j < len(src) && src[j] != '\n' {
				j++
			}
			if !yield(lexeme{i, j, tokComment}) {
				return
			}
			i = j
		case c == '"':
			j := i + 1
			for j < len(src) && src[j] != '"' && src[j] != '\n' {
				j++
			}
			if j < len(src) && src[j] == '"' {
				j++
			}
			if !yield(lexeme{i, j, tokString}) {
				return
			}
			i = j
		case c >= '0' && c <= '9':
			j := i
			for j < len(src) && src[j] >= '0' && src[j] <= '9' {
				j++
			}
			if j+1 < len(src) && src[j] == '.' && src[j+1] >= '0' && src[j+1] <= '9' {
				j++
				for j < len(src) && src[j] >= '0' && src[j] <= '9' {
					j++
				}
			}
			if j < len(src) && (src[j] == 'e' || src[j] == 'E') {
				k := j + 1
				if k < len(src) && (src[k] == '+' || src[k] == '-') {
					k++
				}
				if k < len(src) && src[k] >= '0' && src[k] <= '9' {
					for k < len(src) && src[k] >= '0' && src[k] <= '9' {
						k++
					}
					j = k
				}
			}
			if !yield(lexeme{i, j, tokNumber}) {
				return
			}
			i = j
		case isNameByte(c):
			j := i
			for j < len(src) && isNameByte(src[j]) {
				j++
			}
			kind := -1
			if syntax.IsKeyword(string(src[i:j])) {
				kind = tokKeyword
			}
			if !yield(lexeme{i, j, kind}) {
				return
			}
			i = j
		default:
			_, n := utf8.DecodeRune(src[i:])
			i += n
		}
	}
}

// semanticTokens answers textDocument/semanticTokens/full.
func (s *server) semanticTokens(ctx context.Context, doc *document, raw json.RawMessage) (any, error) {
	snap, err := s.snapshot(ctx, doc)
	if err != nil {
		return nil, err
	}
	return &protocol.SemanticTokens{Data: encodeTokens(snap)}, nil
}

// encodeTokens returns the tokens of snap's document in the protocol's
// relative encoding.
func encodeTokens(snap *snapshot) []uint32 {
	src := snap.doc.text
	// The identifiers are sorted by offset, as the lexemes are: walk both.
	ids := snap.info.Idents[snap.doc.path]
	next := 0
	decls := declaredNames(snap.ast)
	data := []uint32{}
	var prevLine, prevChar uint32
	for lx := range scan(src) {
		typ, mods := lx.kind, 0
		if typ < 0 {
			decl, ok := decls[lx.start]
			if !ok {
				decl = -1
			}
			for next < len(ids) && ids[next].Span.Start.Offset < lx.start {
				next++
			}
			var id *lang.Ident
			if next < len(ids) && ids[next].Span.Start.Offset == lx.start {
				id = &ids[next]
			}
			typ, mods = classify(snap, id, string(src[lx.start:lx.end]), decl)
			if typ < 0 {
				continue
			}
		}
		pos := snap.m.position(lx.start)
		length := utf16Len(src[lx.start:lx.end])
		if pos.Line != prevLine {
			prevChar = 0
		}
		data = append(data, pos.Line-prevLine, pos.Character-prevChar, length, uint32(typ), uint32(mods))
		prevLine, prevChar = pos.Line, pos.Character
	}
	return data
}

// classify gives the token type and modifiers of a name: from what the
// checker recorded for it, else from its declaration or the builtins.
func classify(snap *snapshot, id *lang.Ident, name string, decl int) (int, int) {
	if id != nil {
		sym := id.Symbol
		mods := 0
		if id.Span == sym.Def && sym.File == snap.doc.path {
			mods |= modDeclaration
		}
		switch sym.Kind {
		case lang.SymConst:
			return tokVariable, mods | modReadonly
		case lang.SymFunc:
			if strings.HasPrefix(sym.File, "stdlib/") {
				mods |= modDefaultLibrary
			}
			return tokFunction, mods
		case lang.SymModel:
			return tokNamespace, mods
		case lang.SymIndex:
			if isReduceAxis(snap, sym) {
				mods |= modReduction
			}
			return tokParameter, mods
		}
		return tokVariable, mods
	}
	if decl >= 0 {
		return decl, modDeclaration
	}
	if b, ok := lang.LookupBuiltin(name); ok {
		if b.Kind == lang.DType {
			return tokType, modDefaultLibrary
		}
		return tokFunction, modDefaultLibrary
	}
	return tokVariable, 0
}

// declaredNames returns the token type of the names that top-level
// declarations declare, by offset: functions, models and constants are known
// even where the checker never reached them.
func declaredNames(f *syntax.File) map[int]int {
	out := map[int]int{}
	if f == nil {
		return out
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *syntax.FnDecl:
			out[d.Name.Span.Start.Offset] = tokFunction
		case *syntax.ModelDecl:
			out[d.Name.Span.Start.Offset] = tokNamespace
		case *syntax.ConstDecl:
			out[d.Name.Span.Start.Offset] = tokVariable
		}
	}
	return out
}

// utf16Len returns the length of b in UTF-16 code units.
func utf16Len(b []byte) uint32 {
	n := uint32(0)
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if w := utf16.RuneLen(r); w > 0 {
			n += uint32(w)
		} else {
			n++
		}
		b = b[size:]
	}
	return n
}
