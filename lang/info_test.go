package lang

import (
	"strings"
	"testing"
)

// TestInfo checks the facts recorded for editors: hover text and definition
// sites of constants, functions, tensors, index variables and lists.
func TestInfo(t *testing.T) {
	src := `const N = 4
const D = N * 2

fn double(x: f32[K]) -> f32[K] {
  y[i] = x[i] * 2.0
  return y
}

model m {
  input x: f32[N, D]
  s[i] = sum[j](x[i, j])
  d = double(s)
  hs = [d, d]
  output z = relu(hs[1])
}
`
	var info Info
	_, ds := Check("m.te", []byte(src), Config{Info: &info})
	if ds.HasErrors() {
		t.Fatalf("check failed:\n%s", render("m.te", []byte(src), ds))
	}
	// at returns the identifier at the n-th occurrence (from 1) of word.
	at := func(word string, n int) *Ident {
		off := -1
		for k := 0; k < n; k++ {
			i := strings.Index(src[off+1:], word)
			if i < 0 {
				t.Fatalf("no occurrence %d of %q", n, word)
			}
			off += 1 + i
		}
		return info.At("m.te", off)
	}
	tests := []struct {
		word    string
		n       int
		kind    SymbolKind
		detail  string
		defLine int
	}{
		{"N", 2, SymConst, "const N = 4", 1},
		{"D", 2, SymConst, "const D = 8", 2},
		{"double", 2, SymFunc, "fn double(x: f32[K]) -> f32[K]", 4},
		{"x[i]", 1, SymTensor, "x: f32[4]", 4},
		{"i]", 2, SymIndex, "i in 0..4", 5},
		{"x[i, j]", 1, SymTensor, "x: f32[4, 8]", 10},
		{"j]", 1, SymIndex, "j in 0..8", 11},
		{"s)", 1, SymTensor, "s: f32[4]", 11},
		{"hs[1]", 1, SymList, "hs: list of 2 elements", 13},
		{"relu", 1, SymFunc, "fn relu(v)", 0},
	}
	for _, tc := range tests {
		id := at(tc.word, tc.n)
		if id == nil {
			t.Errorf("%s #%d: no identifier recorded", tc.word, tc.n)
			continue
		}
		if id.Symbol.Kind != tc.kind || id.Symbol.Detail != tc.detail {
			t.Errorf("%s #%d: got kind %d %q, want kind %d %q", tc.word, tc.n, id.Symbol.Kind, id.Symbol.Detail, tc.kind, tc.detail)
		}
		if tc.defLine > 0 && (id.Symbol.File != "m.te" || id.Symbol.Def.Start.Line != tc.defLine) {
			t.Errorf("%s #%d: defined at %s:%d, want m.te:%d", tc.word, tc.n, id.Symbol.File, id.Symbol.Def.Start.Line, tc.defLine)
		}
		if tc.defLine == 0 && !strings.HasPrefix(id.Symbol.File, "stdlib/") {
			t.Errorf("%s #%d: defined in %q, want the standard library", tc.word, tc.n, id.Symbol.File)
		}
	}
	// The structured facts: a tensor's type and first tensor, an index
	// variable's extent, and the programs lowered.
	if x := at("s)", 1); x == nil || x.Symbol.Type != "f32[4]" || x.Symbol.Tensor == nil || x.Symbol.Tensor.Name != "s" {
		t.Errorf("s: got %+v, want type f32[4] and tensor s", x)
	}
	if x := at("j]", 1); x == nil || x.Symbol.Extent != 8 {
		t.Errorf("j: got %+v, want extent 8", x)
	}
	if len(info.Programs) != 1 || info.Programs[0].Name != "m" {
		t.Errorf("Programs = %v, want the program of model m", info.Programs)
	}
	if got := info.At("m.te", len(src)-1); got != nil {
		t.Errorf("At past the last identifier = %+v, want nil", got)
	}
}

// TestInfoWhere checks that the variable of a where clause is recorded as a
// use of the index variable or reduction axis whose range it states.
func TestInfoWhere(t *testing.T) {
	src := `model m {
  input x: f32[8]
  e[i] = x[2 * i] where i in 0..4
  s = sum[k](x[k]) where k in 0..8
  output e, s
}
`
	var info Info
	if _, ds := Check("m.te", []byte(src), Config{Info: &info}); ds.HasErrors() {
		t.Fatalf("check failed:\n%s", render("m.te", []byte(src), ds))
	}
	for _, tc := range []struct {
		where, decl string
		extent      int
	}{{"i in 0..4", "e[i]", 4}, {"k in 0..8", "sum[k]", 8}} {
		id := info.At("m.te", strings.Index(src, tc.where))
		declOff := strings.Index(src, tc.decl) + strings.Index(tc.decl, "[") + 1
		if id == nil || id.Symbol.Kind != SymIndex || id.Symbol.Extent != tc.extent || id.Symbol.Def.Start.Offset != declOff {
			t.Errorf("where %s: got %+v, want index variable of extent %d declared at offset %d", tc.where, id, tc.extent, declOff)
		}
	}
}
