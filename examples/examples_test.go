package examples

import (
	"io/fs"
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
	if got := len(All()); got != len(names) {
		t.Errorf("All() lists %d examples, FS holds %d", got, len(names))
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
