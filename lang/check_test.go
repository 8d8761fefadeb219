package lang

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"testing"
)

// TestCheckCodes checks small programs for the codes of the errors they
// produce (none for a valid program).
func TestCheckCodes(t *testing.T) {
	tests := []struct {
		name string
		src  string
		cfg  Config
		want []string // the codes, in order
	}{
		{"define overrides", "const N = 4\nmodel m { input x: f32[N]\n output y = x * 2.0 }", Config{Defines: map[string]string{"N": "8"}}, nil},
		{"define float", "const E = 1\nmodel m { input x: f32[2]\n output y = x * E }", Config{Defines: map[string]string{"E": "0.5"}}, nil},
		{"user fn shadows stdlib", "fn relu(v) = v * 0.0\nmodel m { input x: f32[2]\n output y = relu(x) }", Config{}, nil},
		{"loop carries bindings", "model m { input x: f32[2]\n h = x\n for t in 0..3 { h = h * 2.0 }\n output h }", Config{}, nil},
		{"loop var visible after loop", "model m { input x: f32[2]\n for t in 0..3 { }\n y[i] = x[i] * t\n output y }", Config{}, nil},
		{"local const", "model m { const K = 2\n input x: f32[K]\n output y = x * K }", Config{}, nil},
		{"local const twice", "model m { const K = 2\n const K = 3\n input x: f32[K]\n output x }", Config{}, []string{"redefined"}},
		{"assign to local const", "model m { const K = 2\n K = 3\n input x: f32[K]\n output x }", Config{}, []string{"redefined"}},
		{"param in loop", "model m { input x: f32[2]\n h = x\n for l in 0..2 { param w: f32[2]\n h = h * w }\n output h }", Config{}, nil},
		{"param in two loops", "model m { input x: f32[2]\n h = x\n for l in 0..2 { param w: f32[2]\n h = h * w }\n for l in 0..2 { param w: f32[2]\n h = h * w }\n output h }", Config{}, []string{"redefined"}},
		{"param in a loop and outside", "model m { input x: f32[2]\n param w: f32[2]\n h = x * w\n for l in 0..2 { param w: f32[2]\n h = h * w }\n output h }", Config{}, []string{"redefined"}},
		{"param in a loop, then outside", "model m { input x: f32[2]\n h = x\n for l in 0..2 { param w: f32[2]\n h = h * w }\n param w: f32[2]\n output h }", Config{}, []string{"redefined"}},
		{"const in loop", "model m { input x: f32[2]\n for l in 0..2 { const K = l }\n output x }", Config{}, nil},
		{"input in function", "fn f(a) { input x: f32[2]\n return x }\nmodel m { input x: f32[2]\n output y = f(x) }", Config{}, []string{"type"}},
		{"return in model", "model m { input x: f32[2]\n return x }", Config{}, []string{"type"}},
		{"no output", "model m { input x: f32[2] }", Config{}, []string{"type"}},
		{"no model", "const N = 1", Config{}, []string{"model"}},
		{"all models", "model a { input x: f32[2]\n output x }\nmodel b { input x: f32[2]\n y[i] = x[i + 1] where i in 0..2\n output y }", Config{AllModels: true}, []string{"bounds"}},
		{"int param", "fn f(x: f32[N], k: int) { y[i] = x[i] * k\n return y }\nmodel m { input x: f32[2]\n output y = f(x, 2.5) }", Config{}, []string{"type"}},
		{"number overflow", "const A = 9223372036854775807 + 1\nmodel m { input x: f32[2]\n output x }", Config{}, []string{"type"}},
		{"division by zero", "const A = 1 / 0\nmodel m { input x: f32[2]\n output x }", Config{}, []string{"type"}},
		{"negative dimension", "model m { input x: f32[-2]\n output x }", Config{}, []string{"shape"}},
		{"float mod", "model m { input x: f32[2]\n y[i] = x[i] % 2.0\n output y }", Config{}, []string{"type"}},
		{"empty where", "model m { input x: f32[2]\n y[i] = x[0] where i in 0..0\n output y }", Config{}, []string{"range"}},
		{"index var twice", "model m { input x: f32[2, 2]\n y[i, i] = x[i, i]\n output y }", Config{}, []string{"redefined"}},
		{"axis twice", "model m { input x: f32[2, 2]\n y[] = sum[k, k](x[k, k])\n output y }", Config{}, []string{"redefined"}},
		{"output twice", "model m { input x: f32[2]\n output y = x, y = x }", Config{}, []string{"redefined"}},
		{"output named like input", "model m { input x: f32[2]\n input y: f32[2]\n output y = x }", Config{}, []string{"redefined"}},
		{"fn as value", "model m { input x: f32[2]\n f = exp\n output x }", Config{}, []string{"type"}},
		{"index var at compile time", "model m { input x: f32[4]\n y[i] = x[len(i)] where i in 0..4\n output y }", Config{}, []string{"type"}},
		{"tuple in list", "fn two(x) { return x, x }\nmodel m { input x: f32[2]\n l = [two(x)]\n output x }", Config{}, []string{"arity"}},
		{"missing return", "fn f(x: f32[N]) -> f32[N] { y = x }\nmodel m { input x: f32[2]\n output y = f(x) }", Config{}, []string{"type"}},
		{"result count", "fn f(x: f32[N]) -> (f32[N], f32[N]) { return x }\nmodel m { input x: f32[2]\n a, b = f(x)\n output a }", Config{}, []string{"arity"}},
		{"static select", "const K = 1\nmodel m { input x: f32[K]\n y[i] = select(K > 1, x[1], x[0]) where i in 0..3\n output y }", Config{}, nil},
		{"shifted guard", "model m { input x: f32[4]\n y[i] = select(i + 2 < 4, x[i + 2], 0.0) where i in 0..4\n output y }", Config{}, nil},
		{"negated guard", "model m { input x: f32[4]\n y[i] = select(i >= 4, 0.0, x[i]) where i in 0..6\n output y }", Config{}, nil},
		{"negated disjunction is not used", "model m { input x: f32[4]\n y[i] = select(i < 0 || i >= 4, 0.0, x[i]) where i in 0..6\n output y }", Config{}, []string{"bounds"}},
		{"parity, even size", "model m { input q: f32[8]\n y[d] = select(d % 2 == 0, q[d + 1], q[d - 1]) where d in 0..8\n output y }", Config{}, nil},
		{"parity, odd size", "model m { input q: f32[7]\n y[d] = select(d % 2 == 0, q[d + 1], q[d - 1]) where d in 0..7\n output y }", Config{}, []string{"bounds"}},
		{"parity, odd values", "model m { input q: f32[8]\n y[d] = select(d % 2 == 1, q[d - 1], q[d + 1]) where d in 0..8\n output y }", Config{}, nil},
		{"parity, odd values, odd size", "model m { input q: f32[7]\n y[d] = select(d % 2 == 1, q[d - 1], q[d + 1]) where d in 0..7\n output y }", Config{}, []string{"bounds"}},
		{"parity, no narrowing of the wrong end", "model m { input q: f32[8]\n y[d] = select(d % 2 == 0, q[d - 1], q[d + 1]) where d in 0..8\n output y }", Config{}, []string{"bounds", "bounds"}},
		{"parity, negated", "model m { input q: f32[8]\n y[d] = select(d % 2 != 0, q[d - 1], q[d + 1]) where d in 0..8\n output y }", Config{}, nil},
		{"parity of a shifted index", "model m { input q: f32[8]\n y[d] = select((d + 1) % 2 == 1, q[d + 1], q[d - 1]) where d in 0..8\n output y }", Config{}, nil},
		{"modulo 4", "model m { input q: f32[8]\n y[d] = select(d % 4 < 3, q[d + 1], q[d - 3]) where d in 0..8\n output y }", Config{}, nil},
		{"modulo 4, one short", "model m { input q: f32[8]\n y[d] = select(d % 4 < 3, q[d + 2], q[d - 3]) where d in 0..8\n output y }", Config{}, []string{"bounds"}},
		{"parity with a linear guard", "model m { input q: f32[8]\n y[d] = select(d % 2 == 0 && d >= 2, q[d - 2], q[d]) where d in 0..8\n output y }", Config{}, nil},
		{"contradictory residues", "model m { input q: f32[4]\n y[d] = select(d % 2 == 0 && (d + 1) % 2 == 0, q[d + 9], q[d - 0]) where d in 0..4\n output y }", Config{}, nil},
		{"huge loop", "model m { input x: f32[2]\n h = x\n for t in 0..1000000000 { h = h }\n output h }", Config{}, []string{"range"}},
		{"errors in a function are reported once", "fn f(x: f32[N]) { y[i] = x[i + 1] where i in 0..N\n return y }\nmodel m { input x: f32[2]\n h = x\n for t in 0..5 { h = f(x) }\n output h }", Config{}, []string{"bounds"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, ds := Check("m.te", []byte(tc.src), tc.cfg)
			var got []string
			for _, d := range ds {
				got = append(got, d.Code)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("codes %v, want %v:\n%s", got, tc.want, render("m.te", []byte(tc.src), ds))
			}
		})
	}
}

// TestImports checks imports through Config.ReadFile: paths relative to the
// importing file, nested imports, and that an imported file's own imports
// are not visible to the importer.
func TestImports(t *testing.T) {
	files := map[string]string{
		"lib/layers.te": "import \"act.te\"\nconst W = 3\nfn act2(v) = act(v) * 2.0\n",
		"lib/act.te":    "fn act(v) = max(v, 0.0)\n",
	}
	read := func(p string) ([]byte, error) {
		if s, ok := files[path.Clean(p)]; ok {
			return []byte(s), nil
		}
		return nil, fs.ErrNotExist
	}
	good := "import \"lib/layers.te\"\nmodel m { input x: f32[W]\n output y = act2(x) }"
	if _, ds := Check("main.te", []byte(good), Config{ReadFile: read}); ds.HasErrors() {
		t.Errorf("good import: %v", ds.Error())
	}
	bad := "import \"lib/layers.te\"\nmodel m { input x: f32[W]\n output y = act(x) }"
	_, ds := Check("main.te", []byte(bad), Config{ReadFile: read})
	if len(ds) != 1 || ds[0].Code != "undefined" {
		t.Errorf("transitive import: got %v, want one undefined error", ds.Error())
	}
	_, ds = Check("main.te", []byte("import \"x.te\"\nmodel m { input x: f32[1]\n output x }"),
		Config{ReadFile: func(string) ([]byte, error) { return nil, errors.New("disk on fire") }})
	if len(ds) != 1 || ds[0].Code != "import" || !strings.Contains(ds[0].Message, "disk on fire") {
		t.Errorf("unreadable import: got %v", ds.Error())
	}
}

// TestBroadcastHint checks the element-wise definitions that a shape
// mismatch of two named operands suggests, NumPy's broadcasting written out.
func TestBroadcastHint(t *testing.T) {
	tests := []struct {
		a    string
		sa   []int
		b    string
		sb   []int
		want string
	}{
		{"x", []int{4, 6}, "b", []int{6}, "y[i, j] = x[i, j] + b[j]"},
		{"b", []int{6}, "x", []int{4, 6}, "y[i, j] = b[j] + x[i, j]"},
		{"x", []int{4, 6}, "c", []int{4}, "y[i, j] = x[i, j] + c[i]"},
		{"x", []int{4, 6}, "d", []int{1, 6}, "y[i, j] = x[i, j] + d[0, j]"},
		{"x", []int{4, 1}, "d", []int{1, 6}, "y[i, j] = x[i, 0] + d[0, j]"},
		{"x", []int{2, 4, 6}, "b", []int{4, 6}, "y[i, j, k] = x[i, j, k] + b[j, k]"},
		{"x", []int{4, 6}, "b", []int{5}, ""},
		{"x", []int{4, 6}, "i", []int{6}, ""}, // a name the hint would use
		{"x", []int{4, 6}, "(b * 2.0)", []int{6}, ""},
	}
	for _, tt := range tests {
		if got := broadcastHint("y", "+", tt.a, tt.sa, tt.b, tt.sb); got != tt.want {
			t.Errorf("broadcastHint(%s %v, %s %v) = %q, want %q", tt.a, tt.sa, tt.b, tt.sb, got, tt.want)
		}
	}
}

// TestParseDefine checks the values -D accepts and the range errors it
// gives: an overflow to infinity and an underflow to 0 are both errors.
func TestParseDefine(t *testing.T) {
	tests := []struct {
		text string
		want string // the number as the language writes it, or the error
	}{
		{"128", "128"},
		{" -3 ", "-3"},
		{"0.5", "0.5"},
		{"1e-320", "1e-320"}, // subnormal, but not 0
		{"0e-400", "0.0"},
		{"-0.0", "-0.0"},
		{"0x1p-4", "0.0625"},
		{"1e400", "the number 1e400 is too large for a float, which would make it infinite: the largest float is 1.7976931348623157e308"},
		{"-1e400", "the number -1e400 is too large for a float, which would make it infinite: the largest float is 1.7976931348623157e308"},
		{"1e-400", "the number 1e-400 is too small for a float, which would make it 0: the least non-zero float is 4.9e-324"},
		{"0x1p-2000", "the number 0x1p-2000 is too small for a float, which would make it 0: the least non-zero float is 4.9e-324"},
		{"9223372036854775808", "the integer 9223372036854775808 is too large: ints range over ±9223372036854775807"},
		{"inf", "the value is not a number"},
		{"nan", "the value is not a number"},
		{"abc", "the value is not a number"},
	}
	for _, tt := range tests {
		n, err := parseDefine(tt.text)
		got := ""
		if err != nil {
			got = err.Error()
		} else {
			got = n.String()
		}
		if got != tt.want {
			t.Errorf("parseDefine(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}

// TestTooLarge checks that running out of checking steps is explained by
// what used them: loops unrolled, or, with no loop at all, the program's
// own size (a 182,000-statement program was told to reduce its loop trip
// counts; issue 23). Lists doubled by l = l + l use the steps cheaply.
func TestTooLarge(t *testing.T) {
	doubling := strings.Repeat("  l = l + l\n", 24)
	tests := []struct {
		name, body string
		want       string
	}{
		{"no loop", "  l = [x]\n" + doubling,
			"the program is too large: checking it takes more than 2000000 steps (1 tensor made so far, with no loop)"},
		{"in a loop", "  l = [x]\n  for t in 0..24 {\n    l = l + l\n  }\n",
			"the program is too large: unrolling it takes more than 2000000 steps (20 loop iterations so far)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "model m {\n  input x: f32[2]\n" + tt.body + "  output x\n}\n"
			_, ds := Check("m.te", []byte(src), Config{})
			if len(ds) != 1 || ds[0].Message != tt.want || ds[0].Code != "range" {
				t.Fatalf("got %v, want one range error %q", ds, tt.want)
			}
			if tt.name == "no loop" && !strings.Contains(ds[0].Hint, "loops or not") {
				t.Errorf("hint %q does not say that the limit is on the program's size", ds[0].Hint)
			}
		})
	}
}

// TestTooLargeTensors checks that a loop of costly tensors runs out of
// checking steps soon: each conv2d stage builds a padded, bounds-checked
// body, so that tensors cost more steps than statements (tensorCost). At
// 10 steps a tensor this program was refused only after 68,966 iterations,
// 11 s and 550 MB, longer than a fuzz worker is given.
func TestTooLargeTensors(t *testing.T) {
	if testing.Short() {
		t.Skip("checks about 18,000 convolutions")
	}
	src := `model m {
  input x: f32[1, 3, 8, 8]
  h = x
  for s in 0..83648 {
    param w: f32[3, 3, 3, 3]
    h = conv2d(h, w, 1, 1, 1, 1)
  }
  output y = h
}
`
	_, ds := Check("m.te", []byte(src), Config{})
	if len(ds) != 1 || ds[0].Code != "range" {
		t.Fatalf("got %v, want one range error", ds)
	}
	var trips int
	if _, err := fmt.Sscanf(ds[0].Message, "the program is too large: unrolling it takes more than 2000000 steps (%d loop iterations so far)", &trips); err != nil {
		t.Fatalf("message %q: %v", ds[0].Message, err)
	}
	if trips > 20000 {
		t.Errorf("refused after %d loop iterations, want at most 20,000", trips)
	}
}
