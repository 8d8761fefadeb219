package progfuzz

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"tec/backend/kir"
	"tec/gpu"
	"tec/internal/tensorio"
	"tec/lang"
	"tec/pipeline"
)

// TestGenerateDecode checks that the generator writes the forms of a
// decode step: run-time positions in select conditions (a masked
// contraction and masked reductions over a cache), in arithmetic, as read
// indexes with and without a constant added, in-place updates at run-time
// and compile-time slots (in a compile-time loop and as one statement per
// layer), the new slot read where it is made, updates whose value reads
// the cache (at the slot written, at a slot another thread's update
// writes, over a column holding such a slot, at another layer's slot), reads of the cache after its updates,
// the positions' feeds and a planted position.
func TestGenerateDecode(t *testing.T) {
	forms := map[string]*regexp.Regexp{
		"masked contraction":  regexp.MustCompile(`= select\(t <=? pos\d+\[b\][^\n]*, sum\[e\]`),
		"masked reduction":    regexp.MustCompile(`= (sum|max|min)\[t\]\(select\([^\n]*pos\d+\[b\]`),
		"arithmetic":          regexp.MustCompile(`f32\(pos\d+\[b\]( \+ 1)?\) \* w\d+\[e\]`),
		"read index":          regexp.MustCompile(`\[(0, )?b, pos\d+\[b\], e\] \+`),
		"read index offset":   regexp.MustCompile(`\[(0, )?b, pos\d+\[b\] \+ \d, e\]`),
		"table read":          regexp.MustCompile(`w\d+\[pos\d+\[b\]( \+ \d)?, e\]`),
		"update":              regexp.MustCompile(`update x\d+\[b, pos\d+\[b\]( \+ \d)?, e\] =`),
		"update loop":         regexp.MustCompile(`for l in 0\.\.\d \{\n +update x\d+\[l, b, pos`),
		"update layers":       regexp.MustCompile(`update x\d+\[1, b, pos\d+\[b\]`),
		"compile-time slot":   regexp.MustCompile(`update x\d+\[\d, b, (0|\w+ - 1), e\]`),
		"new slot":            regexp.MustCompile(`select\(t == pos\d+\[b\], knew\d+\[b, e\]`),
		"update reads slot":   regexp.MustCompile(`update x(\d+)\[[^\n]*\] = \(?x\d+\[[^\n]*pos\d+\[b\]( \+ \d)?, e\] \* 0\.5`),
		"update reads mirror": regexp.MustCompile(`update x\d+\[[^\n]*\] = \(?x\d+\[[^\n]*, \w+ - 1 - e\] \+`),
		"update reads column": regexp.MustCompile(`update x\d+\[[^\n]*\] = \(?sum\[t\]\(x\d+\[[^\n]*, \w+ - 1 - e\]\)`),
		"update reads layer":  regexp.MustCompile(`update x\d+\[(l|\d), [^\n]*\] = \(?x\d+\[(\(l \+ 1\) % \d|\d), b, `),
		"read after update":   regexp.MustCompile(`(?s)update x(\d+)\[.*\n  old\d+\[b, t, e\] = x(\d+)\[`),
		"feed":                regexp.MustCompile(`(?m)^# feed pos\d+( \d+)+$`),
		"param positions":     regexp.MustCompile(`(?m)^  param pos\d+: i32\[`),
		"planted":             regexp.MustCompile(`(?m)^# expect outside pos\d+$`),
		"precision":           regexp.MustCompile(`(?m)^# precision (f16|bf16|tf32)$`),
	}
	found := map[string]bool{}
	for s := range uint64(300) {
		for _, focus := range []Focus{FocusDecode, FocusUpdate} {
			src := GenerateFocus(s, focus).Src
			for name, re := range forms {
				if re.Match(src) {
					found[name] = true
				}
			}
		}
	}
	for name := range forms {
		if !found[name] {
			t.Errorf("no %s in 300 decode and 300 update programs", name)
		}
	}
}

// TestGenerateFocusChecks checks that the programs of every focus check.
func TestGenerateFocusChecks(t *testing.T) {
	n := uint64(300)
	if testing.Short() {
		n = 60
	}
	for _, focus := range []Focus{FocusDecode, FocusUpdate, FocusPrecision} {
		for s := range n {
			p := GenerateFocus(s, focus)
			if _, ds := lang.Check("gen.te", p.Src, lang.Config{}); ds.HasErrors() {
				t.Fatalf("%s seed %d does not check:\n%s\n%s", focus, s, p.Src, ds.Error())
			}
		}
	}
}

// TestFocusSmoke runs a few programs of each focus at every configuration:
// none may fail, a planted position included (every run must stop with the
// "is outside" error).
func TestFocusSmoke(t *testing.T) {
	n := 4
	if testing.Short() {
		n = 2
	}
	for _, focus := range []Focus{FocusDecode, FocusUpdate, FocusPrecision} {
		t.Run(string(focus), func(t *testing.T) {
			sum, err := Campaign(CampaignOptions{N: n, Seed: 7000, Focus: focus, Jobs: 1, Reduce: true, MaxReduceTries: 300})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range sum.Classes {
				t.Errorf("failure class %s (first seed %d): %s\nreduced program:\n%s", c.Class, c.FirstSeed, c.Example, c.Reduced)
			}
		})
	}
}

// TestPrecisionTensorCores checks that programs of the precision focus
// reach the tensor-core kernels: some build, at -O0 on the A100, has an
// mma.sync (13 of them when this was written).
func TestPrecisionTensorCores(t *testing.T) {
	g, _ := gpu.Builtin("a100")
	mma := 0
	for s := range uint64(20) {
		src := GenerateFocus(s, FocusPrecision).Src
		p, ds := lang.Check("gen.te", src, lang.Config{})
		if ds.HasErrors() {
			t.Fatal(ds.Error())
		}
		res, err := pipeline.Build(p, pipeline.Options{Level: 0, GPU: g, Precision: programPrecision(src)})
		if err != nil {
			t.Fatal(err)
		}
		if hasMMA(res.Module) {
			mma++
		}
	}
	if mma < 5 {
		t.Errorf("%d of 20 programs of the precision focus have a tensor-core kernel, want at least 5", mma)
	}
	t.Logf("%d of 20 programs have a tensor-core kernel at -O0", mma)
}

func hasMMA(m *kir.Module) bool {
	found := false
	for _, k := range m.Kernels {
		kir.WalkStmts(k.Body, func(s kir.Stmt) bool {
			if _, ok := s.(*kir.MMA); ok {
				found = true
			}
			return !found
		})
	}
	return found
}

// TestPlanted checks the oracle of a planted position: a program whose
// position is inside the cache is a failure when it says it expects one
// outside, and the same program with the position planted past the cache
// passes (the reference and every level stop with the error).
func TestPlanted(t *testing.T) {
	const prog = "# feed pos %s\n# expect outside pos\nmodel m {\n  input pos: i32[2]\n  input x: f32[2, 3]\n  input kc: f32[2, 4, 3]\n" +
		"  r[b, e] = kc[b, pos[b], e] + x[b, e]\n  update kc[b, pos[b] + 1, e] = x[b, e]\n  output r\n}\n"
	cfgs := []Config{builtin(0, "a100"), builtin(3, "small"), builtin(4, "a100")}
	if fs := Run([]byte(strings.Replace(prog, "%s", "0 3", 1)), Options{Configs: cfgs}); len(fs) != 0 {
		t.Errorf("position planted past the cache: %v", fs)
	}
	fs := Run([]byte(strings.Replace(prog, "%s", "0 2", 1)), Options{Configs: cfgs})
	if len(fs) != 1 || fs[0].Kind != KindExpect {
		t.Errorf("positions inside the cache, expecting an error: %v, want one %s failure", fs, KindExpect)
	}
}

// TestOnePlant checks that a program plants one position at most: the
// oracle expects the error of one input, and a second decode step's plant
// made the reference stop at the first's (campaign seed 60028 of the
// update focus).
func TestOnePlant(t *testing.T) {
	g := &gen{r: rand.New(rand.NewPCG(1, 2))}
	g.feedPositions("p1", 3, 8, 0, true, 1)
	g.feedPositions("p2", 3, 8, 0, true, 1)
	if g.expect != "p1" {
		t.Errorf("planted in %q, want p1 only", g.expect)
	}
	for _, f := range strings.Fields(strings.TrimPrefix(g.feeds[1], "# feed p2 ")) {
		if v, err := strconv.Atoi(f); err != nil || v < 0 || v >= 8 {
			t.Errorf("p2's feed %q: %q is not a slot of 8", g.feeds[1], f)
		}
	}
}

// TestSaveFeeds checks that a saved failure of a program with "# feed"
// lines writes them to feeds.npz, and that its tec run line passes them
// and the program's precision.
func TestSaveFeeds(t *testing.T) {
	dir := t.TempDir()
	src := []byte("# precision f16\n# feed pos 3 1\nmodel m {\n  input pos: i32[2]\n  input kc: f32[2, 4]\n  r[b] = kc[b, pos[b]]\n  output r\n}\n")
	cfg := builtin(2, "a100")
	cfg.Precision = programPrecision(src)
	st := &ClassStats{Class: "c", Example: Failure{Kind: KindMismatch, Config: &cfg, Msg: "output r: x"}}
	if err := save(dir, 1, 9, src, st); err != nil {
		t.Fatal(err)
	}
	d := filepath.Join(dir, "001-mismatch")
	fed, err := tensorio.ReadNPZ(filepath.Join(d, "feeds.npz"))
	if err != nil {
		t.Fatal(err)
	}
	if pos := fed["pos"]; pos == nil || pos.Data[0] != 3 || pos.Data[1] != 1 {
		t.Errorf("feeds.npz: pos %v, want [3 1]", pos)
	}
	txt, err := os.ReadFile(filepath.Join(d, "failure.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "tec run orig.te --inputs feeds.npz --fill random --device sim -O2 --gpu gpu.json --precision f16"; !strings.Contains(string(txt), want) {
		t.Errorf("failure.txt:\n%s\nwant it to contain %q", txt, want)
	}
}
