package progfuzz

import (
	"bytes"
	"strings"
	"testing"

	"tec/lang"
	"tec/partition"
)

// TestSmoke is the fuzzer's fixed-seed run in CI: every generated program
// checks, and no configuration of any program fails, apart from the known
// defects F1-F9 of issue 17 (see knownDefects), which are counted and
// logged. With -short it checks fewer programs.
func TestSmoke(t *testing.T) {
	n := 150
	if testing.Short() {
		n = 30
	}
	sum, err := Campaign(CampaignOptions{N: n, Seed: 1, Jobs: 1, Reduce: true, MaxReduceTries: 500})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	sum.WriteTable(&b)
	t.Log(b.String())
	for _, c := range sum.Classes {
		if c.Known != "" {
			continue
		}
		t.Errorf("failure class %s (first seed %d): %s\nreduced program:\n%s", c.Class, c.FirstSeed, c.Example, c.Reduced)
	}
}

// TestGenerateDeterministic checks that a seed gives one program.
func TestGenerateDeterministic(t *testing.T) {
	for s := range uint64(20) {
		if a, b := Generate(s), Generate(s); !bytes.Equal(a.Src, b.Src) {
			t.Fatalf("seed %d: two different programs", s)
		}
	}
}

// TestGenerateChecks checks that every generated program passes the
// checker: one that does not is a generator bug.
func TestGenerateChecks(t *testing.T) {
	n := uint64(2000)
	if testing.Short() {
		n = 300
	}
	for s := range n {
		p := Generate(s)
		if _, ds := lang.Check("gen.te", p.Src, lang.Config{}); ds.HasErrors() {
			t.Fatalf("seed %d does not check:\n%s\n%s", s, p.Src, ds.Error())
		}
	}
}

// TestKnownDefects runs the repro programs at the configurations
// where they failed: each is either right (its fix is merged: delete its
// entry in knownDefects) or a failure of its own class, so that the
// signatures stay exact.
func TestKnownDefects(t *testing.T) {
	g96 := withThreads(96)
	tests := []struct {
		id, src string
		cfg     Config
	}{
		{"F1", "model m {\n  input x: f32[2]\n  y[i] = select(i - 2 >= 0, x[i - 2], 0.0) where i in 0..1\n  output y\n}\n", builtin(0, "a100")},
		{"F2", "model m {\n  input a: f32[5]\n  input b: f32[5]\n  y = sum[k](a[4 - k] * b[k])\n  output y\n}\n", builtin(0, "a100")},
		{"F3", "model m {\n  input a: f32[2, 300]\n  s[i] = sum[k](a[i, k])\n  output s\n}\n", Config{Level: 3, GPUName: "rand-96", GPU: g96}},
		{"F5", "model m {\n  input x: f32[1, 12]\n  param w: f32[12, 12]\n  param u: f32[12, 12]\n  h[n, j] = sum[k](x[n, k] * u[k, j])\n  g[n, j] = sum[k](h[n, k] * u[k, j])\n  y[i, j] = sum[k](w[i, k] * g[j, k])\n  output y\n}\n", builtin(4, "a100")},
		{"F8", "model m {\n  input a: f32[2, 300]\n  s[i] = sum[k](a[i, k])\n  output s\n}\n", Config{Level: 0, GPUName: "rand-96", GPU: g96}},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			for _, f := range Run([]byte(tt.src), Options{Configs: []Config{tt.cfg}}) {
				if f.Known != tt.id {
					t.Errorf("failure %s is known as %q, want %s", f, f.Known, tt.id)
				}
			}
		})
	}
}

// TestReduce checks that the reducer shrinks a failing program to the
// statements the failure needs.
func TestReduce(t *testing.T) {
	src := []byte("model m {\n  input a: f32[5]\n  input b: f32[5]\n  t[i] = a[i] * 2.0 + exp(b[i])\n  u = sum[k](t[k])\n  y = sum[k](a[4 - k] * b[k])\n  output u, y\n}\n")
	fs := Run(src, Options{})
	if len(fs) == 0 {
		t.Skip("F2 is fixed: the program no longer fails")
	}
	got := string(Reduce(src, fs[0], nil, 0))
	want := "model m {\n  input a: f32[2]\n  input b: f32[2]\n  y = sum[k](a[1 - k] * b[k])\n  output y\n}\n"
	if got != want {
		t.Errorf("reduced to\n%s\nwant\n%s", got, want)
	}
}

func builtin(level int, name string) Config {
	for _, c := range Configs(0) {
		if c.GPUName == name && c.Level == level && !c.Deterministic {
			return c
		}
	}
	panic("no configuration " + name)
}

// withThreads returns the small GPU with a limit of n threads per block.
func withThreads(n int) partition.GPU {
	g, _ := partition.BuiltinGPU("small")
	g.MaxThreadsPerBlock, g.MaxThreadsPerSM = n, n
	return g
}
