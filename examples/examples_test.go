package examples

import (
	"io/fs"
	"slices"
	"strings"
	"testing"

	"tec/lang/syntax"
)

// TestHeaders checks that every example has a header with a description and a
// tiny configuration.
func TestHeaders(t *testing.T) {
	names, err := fs.Glob(FS(), "*.te")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		src, err := fs.ReadFile(FS(), name)
		if err != nil {
			t.Fatal(err)
		}
		ex, err := ParseHeader(name[:len(name)-len(".te")], src)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if ex.Doc == "" {
			t.Errorf("%s: the header says nothing about the example", name)
		}
	}
	files := map[string]bool{}
	for _, ex := range All() {
		files[ex.File()] = true
	}
	if len(files) != len(names) {
		t.Errorf("All() lists the examples of %d files, FS holds %d", len(files), len(names))
	}
}

// TestSeveralModels checks that a file with several models is one example
// per model, each lowering its own model, and that a file with one is one
// example without a Model.
func TestSeveralModels(t *testing.T) {
	tests := []struct {
		src  string
		want []string
	}{
		{src: "model a {\n}\n", want: []string{"a"}},
		{src: "# model x {\nmodel prefill {\n}\n\nmodel decode{\n}\n", want: []string{"prefill", "decode"}},
		{src: "const N = 1\n", want: nil},
	}
	for _, tt := range tests {
		if got := ModelNames([]byte(tt.src)); !slices.Equal(got, tt.want) {
			t.Errorf("ModelNames(%q) = %q, want %q", tt.src, got, tt.want)
		}
	}
	var llama []string
	for _, ex := range All() {
		if ex.File() == "llama.te" {
			llama = append(llama, ex.Name+" "+ex.Model)
			if flags := ex.TinyFlags(); !slices.Equal(flags[len(flags)-2:], []string{"--model", ex.Model}) {
				t.Errorf("%s: TinyFlags %q do not pick the model", ex.Name, flags)
			}
		} else if ex.Model != "" || strings.Contains(ex.Name, "/") {
			t.Errorf("%s (model %q): a file with one model is one example without a model", ex.Name, ex.Model)
		}
	}
	if want := []string{"llama/prefill prefill", "llama/decode decode"}; !slices.Equal(llama, want) {
		t.Errorf("llama.te's examples: %q, want %q", llama, want)
	}
	if ex, ok := Lookup("llama/decode"); !ok || ex.File() != "llama.te" || ex.Model != "decode" {
		t.Errorf("Lookup(llama/decode) = %+v, %v", ex, ok)
	}
}

// TestParseHeader checks the header parser on good and bad headers.
func TestParseHeader(t *testing.T) {
	tests := []struct {
		src     string
		want    map[string]string
		wantErr bool
	}{
		{src: "# doc\n#\n# tiny: -D N=4 -D D=8\n\nconst N = 1\n", want: map[string]string{"N": "4", "D": "8"}},
		{src: "# doc\n# tiny: -D EPS=1e-3\n", want: map[string]string{"EPS": "1e-3"}},
		{src: "# doc\nconst N = 1\n# tiny: -D N=4\n", wantErr: true}, // not in the header
		{src: "# tiny: -D N\n", wantErr: true},
		{src: "# tiny: N=4\n", wantErr: true},
		{src: "# tiny: -D N=4 -D N=5\n", wantErr: true},
		{src: "# tiny:\n", wantErr: true},
		{src: "# tiny: -D N=1\n# tiny: -D N=2\n", wantErr: true},
	}
	for _, tt := range tests {
		ex, err := ParseHeader("t", []byte(tt.src))
		if (err != nil) != tt.wantErr {
			t.Errorf("ParseHeader(%q): error %v, want error %v", tt.src, err, tt.wantErr)
			continue
		}
		if tt.wantErr {
			continue
		}
		if len(ex.Tiny) != len(tt.want) {
			t.Errorf("ParseHeader(%q).Tiny = %v, want %v", tt.src, ex.Tiny, tt.want)
		}
		for k, v := range tt.want {
			if ex.Tiny[k] != v {
				t.Errorf("ParseHeader(%q).Tiny = %v, want %v", tt.src, ex.Tiny, tt.want)
			}
		}
	}
}

// TestParse checks that every example is syntactically valid.
func TestParse(t *testing.T) {
	for _, ex := range All() {
		t.Run(ex.Name, func(t *testing.T) {
			if _, err := syntax.Parse(ex.File(), ex.Source()); err != nil {
				t.Fatal(err)
			}
		})
	}
}
