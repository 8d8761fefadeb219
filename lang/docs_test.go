package lang

import (
	"strings"
	"testing"
)

// TestStdlibFuncs checks that every standard library function has a doc
// comment, a signature and its source, and a few by value.
func TestStdlibFuncs(t *testing.T) {
	fs := StdlibFuncs()
	if len(fs) < 30 {
		t.Fatalf("%d functions: the extraction is broken", len(fs))
	}
	byName := map[string]FuncDoc{}
	for _, f := range fs {
		byName[f.Name] = f
		if f.Doc == "" || !strings.HasPrefix(f.Source, "fn "+f.Name+"(") || !strings.HasPrefix(f.Signature, f.Name+"(") || f.Line < 1 {
			t.Errorf("%s at %s:%d: doc %q, signature %q, source %q", f.Name, f.File, f.Line, f.Doc, f.Signature, f.Source)
		}
	}
	tests := []struct {
		name, file, sig, summary string
	}{
		{"softmax", "stdlib/norm.te", "softmax(x: T[M, N]) -> T[M, N]", "softmax over the last axis: exp(x - max) / sum(exp(x - max))"},
		{"relu", "stdlib/activations.te", "relu(v)", "max(v, 0)"},
		{"layernorm", "stdlib/norm.te", "layernorm(x: T[M, N], g: T[N], b: T[N], eps: float) -> T[M, N]", "layer normalisation over the last axis, with gain g and bias b:"},
	}
	for _, tt := range tests {
		f, ok := byName[tt.name]
		if !ok {
			t.Errorf("%s: missing", tt.name)
			continue
		}
		if f.File != tt.file || f.Signature != tt.sig || f.Summary() != tt.summary {
			t.Errorf("%s: got %s, %q, %q; want %s, %q, %q", tt.name, f.File, f.Signature, f.Summary(), tt.file, tt.sig, tt.summary)
		}
	}
	if s := byName["softmax"].Source; !strings.HasSuffix(s, "return y\n}") {
		t.Errorf("softmax source does not end with its body:\n%s", s)
	}
}
