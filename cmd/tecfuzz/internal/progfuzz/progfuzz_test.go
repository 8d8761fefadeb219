package progfuzz

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"tec/gpu"
	"tec/lang"
)

// TestSmoke is the fuzzer's fixed-seed run in CI: every generated program
// checks, and no configuration of any program fails. With -short it checks
// fewer programs. 300 programs take about the CPU time that 400 took before the
// generator wrote decode steps, updates, precisions and tensor-core-sized
// contractions (TestFocusSmoke runs a few programs of each besides).
func TestSmoke(t *testing.T) {
	n := 300
	if testing.Short() {
		n = 40
	}
	sum, err := Campaign(CampaignOptions{N: n, Seed: 1, Jobs: 1, Reduce: true, MaxReduceTries: 500})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	sum.WriteTable(&b)
	t.Log(b.String())
	for _, c := range sum.Classes {
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

// TestGenerateMasked checks that the generator writes masked contractions:
// a select around a sum, with the sum in the then and in the else branch,
// a condition on a run-time scalar, and causal attention.
func TestGenerateMasked(t *testing.T) {
	then := regexp.MustCompile(`= select\([^\n]*, sum\[k\]\([^\n]*\), [^\n]*\)`)
	els := regexp.MustCompile(`= select\(!\([^\n]*\), [^\n]*, sum\[k\]`)
	causal := regexp.MustCompile(`= select\(b <= a, sum\[e\]`)
	runtime := regexp.MustCompile(`= select\(!?\(?[^,\n]*lim\d+\[(0|i)\]`)
	found := map[string]bool{}
	for s := range uint64(300) {
		src := Generate(s).Src
		for name, re := range map[string]*regexp.Regexp{"then": then, "else": els, "causal": causal, "runtime": runtime} {
			if re.Match(src) {
				found[name] = true
			}
		}
	}
	for _, name := range []string{"then", "else", "causal", "runtime"} {
		if !found[name] {
			t.Errorf("no masked contraction of form %q in 300 programs", name)
		}
	}
}

// TestGenerateGathers checks that the generator writes gathers with ids
// read from an input (with and without an offset), argmax and argmin, and
// gathers at a computed index.
func TestGenerateGathers(t *testing.T) {
	forms := map[string]*regexp.Regexp{
		"ids":        regexp.MustCompile(`\[[^\n]*ids\d+\[[a-z, ]+\]\]`),
		"ids offset": regexp.MustCompile(`ids\d+\[[a-z, ]+\] \+ \d\]`),
		"argmax":     regexp.MustCompile(`= argmax\[`),
		"argmin":     regexp.MustCompile(`= argmin\[`),
		"computed":   regexp.MustCompile(`\[[^\n]*a\d+\[[a-z, ]+\]( % \w+)?[,\]]`),
	}
	found := map[string]bool{}
	for s := range uint64(300) {
		src := Generate(s).Src
		for name, re := range forms {
			if re.Match(src) {
				found[name] = true
			}
		}
	}
	for name := range forms {
		if !found[name] {
			t.Errorf("no %s in 300 programs", name)
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

// TestRegressions runs the program of each defect of issue 17 (F1-F9) and
// of each this fuzzer found (N1-N14) at the configuration where it failed,
// both emitters included:
// each must now be right. N2 failed on a GPU with 2 KiB of shared memory
// per block, which gpu.Model.Validate now rejects; it runs at the
// least that Validate allows.
func TestRegressions(t *testing.T) {
	g96 := withThreads(96)
	tests := []struct {
		id, src string
		cfg     Config
	}{
		{"F1", "model m {\n  input x: f32[2]\n  y[i] = select(i - 2 >= 0, x[i - 2], 0.0) where i in 0..1\n  output y\n}\n", builtin(0, "a100")},
		{"F2", "model m {\n  input a: f32[5]\n  input b: f32[5]\n  y = sum[k](a[4 - k] * b[k])\n  output y\n}\n", builtin(0, "a100")},
		{"F3", "model m {\n  input a: f32[2, 300]\n  s[i] = sum[k](a[i, k])\n  output s\n}\n", Config{Level: 3, GPUName: "rand-96", GPU: g96}},
		{"F4", "const R = 500\nmodel m {\n  input x: f32[R, 100]\n  param w: f32[100, 127]\n  t = max[a, b](x[a, b])\n  z = w - t\n" +
			"  mu[p] = sum[q](x[p, q]) / 100\n  mx[p] = max[q](x[p, q] - mu[p])\n  y[p, q] = x[p, q] - mx[p] + mu[R - 1 - p]\n  output z, y\n}\n", builtin(4, "a100")},
		{"F5", "model m {\n  input x: f32[1, 12]\n  param w: f32[12, 12]\n  param u: f32[12, 12]\n  h[n, j] = sum[k](x[n, k] * u[k, j])\n" +
			"  g[n, j] = sum[k](h[n, k] * u[k, j])\n  y[i, j] = sum[k](w[i, k] * g[j, k])\n  output y\n}\n", builtin(4, "a100")},
		{"F6", "model m {\n  input x: f32[1, 8]\n  param u: f32[8, 8]\n  h[n, j] = sum[k](x[n, k] * u[k, j])\n  g[n, j] = sum[k](h[n, k] * u[k, j])\n" +
			"  a[n, j] = tanh(g[n, j])\n  y[j, n] = sum[k](u[k, j] * a[n, k])\n  output y\n}\n", builtin(4, "a100")},
		{"F7", "# tol w 1e-7\n# tol t6 1e-6\nmodel m {\n  input x: f32[13]\n  c = full(f16[13], 0.3)\n  t4[i] = x[i] * 0.5 + c[i]\n" +
			"  t6[i] = sum[k](t4[i + k]) where i in 0..6, k in 0..7\n  w[i] = c[i] * 1.0\n  output t6, w\n}\n", builtin(2, "a100")},
		{"F8", "model m {\n  input a: f32[2, 300]\n  s[i] = sum[k](a[i, k])\n  output s\n}\n", Config{Level: 0, GPUName: "rand-96", GPU: g96}},
		{"F9", "model m {\n  input x: f32[16, 16]\n  param w8: f32[16, 24]\n  param w10: f32[24, 16]\n  param w21: f32[24, 16]\n  param w23: f32[16, 24]\n" +
			"  a = matmul(x, w8)\n  b = matmul(a, w10)\n  t[i, j] = w10[j, i]\n  c = matmul(t, w21)\n  d = matmul(c, w23)\n  output b, d\n}\n", builtin(1, "a100")},
		{"N1", "model m {\n  input a: f32[4, 8]\n  input b: f32[8, 8]\n  y[i, j] = sum[k](a[i, k] * b[k, j])\n  output y\n}\n", Config{Level: 3, GPUName: "rand-33", GPU: withThreads(33)}},
		{"N3", "model m {\n  input h: f32[1, 4]\n  param w: f32[4, 4, 4]\n  g[q, n, j] = sum[k](h[n, k] * w[q, k, j])\n  h2[n, j] = g[1, n, j]\n" +
			"  g2[q, n, j] = sum[k](h2[n, k] * w[q, k, j])\n  y[n, j] = g2[1, n, j]\n  output y\n}\n", Config{Level: 4, GPUName: "rand-33", GPU: withThreads(33)}},
		// N4 (the first 20,000-program campaign after the fixes): the
		// plan sized a grid of 2 blocks from its estimate of shared memory,
		// but the kernel's 9,728 B let only one be resident on the one SM.
		{"N4", "model m {\n  input x4: f32[3, 17]\n  param w5: f32[17, 16]\n  param w6: f32[16]\n  param w7: f32[16, 17]\n" +
			"  t8 = linear(x4, w5, w6)\n  t9 = matmul(t8, w7)\n  output t12 = w5, t14 = t9\n}\n", Config{Level: 3, GPUName: "rand-1sm-16k", GPU: oneSM16K()}},
		// N5 (the first campaign with gathers, seed 700070): ids with a
		// constant added that the front end keeps in the run-time part of
		// the index were filled as if there were none, past their table.
		{"N5", "model m {\n  input x: f32[8, 8]\n  input ids: i32[6, 7]\n  e[i, j, l] = x[l, ids[i, j] + 2]\n  output e\n}\n", builtin(4, "a100")},
		// N6 (the first campaign at --precision, seed 10003): the
		// precision pass copied gelu's argument, a contraction the inlined
		// body reads twice, as two reductions binding one axis, which the
		// reference could not evaluate.
		{"N6", "# precision bf16\nmodel m {\n  input x: f32[1, 1]\n  param w: f32[1, 1]\n  t[i, j] = gelu(sum[k](x[i, k] * w[k, j]))\n  output t\n}\n", builtin(0, "a100")},
		// N7 (go test's TestSmoke after the per-tile counters landed, seed
		// 194): stages with counter signals were outlined into one stage
		// function without the counter among its parameters, and the LLVM
		// emitter crashed on the unbound buffer at -O3/-O4.
		{"N7", "# progfuzz seed 194\n# precision f16\n# tol t23 9.953975768439705e-05\n# tol o13 0.0028555393228089088\n# tol rd15 0.002856016159967112\n# feed pos3 5 7\nconst A = 8\nconst B = 3\nconst C = 2\nconst D = 4\n\nmodel m {\n  input x1: bf16[31]\n  input x2: f16[A, B]\n  input pos3: i32[C]\n  input x4: f32[C, D]\n  input x5: f32[C, A, D]\n  param w6: f32[D, D]\n  param w8: f32[D, D]\n  input x19: f32[D, C, B]\n  param w20: f32[B, B]\n  param w21: f32[B, B]\n  q7[b, e] = sum[d](x4[b, d] * w6[d, e])\n  knew9[b, e] = sum[d](x4[b, d] * w8[d, e])\n  k10[b, t, e] = select(t == pos3[b], knew9[b, e], x5[b, t, e]) where t in 0..A\n  s11[b, t] = select(!(t > pos3[b]), sum[e](q7[b, e] * k10[b, t, e]) * 0.25, -1e30)\n  m14[b] = max[t](s11[b, t])\n  p12[b, t] = exp(s11[b, t] - m14[b])\n  o13[b, e] = sum[t](p12[b, t] * k10[b, t, e]) / sum[t](p12[b, t])\n  rd15[b, e] = x5[b, pos3[b], e] + o13[b, e]\n  t16[i, j] = w8[i, j + 3] where i in 0..D, j in 0..D - 3\n  c17 = full(f16[C, D], 1.5)\n  t18 = rd15 * c17 + rd15\n  h22 = zeros(f32[C, B])\n  for t in 0..D {\n    h22[n, j] = h22[n, j] * sigmoid(sum[k](x19[t, n, k] * w20[k, j])) + tanh(sum[k](h22[n, k] * w21[k, j])) * 0.5\n  }\n  t23 = h22 * 1.0\n  output t23, o13, rd15\n}\n", builtin(4, "a100")},
		// N8 (a -focus precision campaign, seed 424311): the tensor-core
		// tile asked for 24 KiB of shared memory on a GPU with 20 KiB per
		// block, and the build failed instead of using the SIMT tile.
		{"N8", "# precision tf32\nmodel m {\n  input x1: f32[33, 16]\n  param w2: f32[16, 16]\n  t4[i, j] = sum[k](x1[i, k] * w2[k, j])\n  output t4\n}\n", Config{Level: 0, GPUName: "rand-20k", GPU: withShared(20 << 10)}},
		// N9 (a -focus decode campaign with whole decode steps, seed
		// 740035): the fused kernel's stages used shared arrays of
		// different names (a row reduction's, a matrix-vector stage's
		// 16 KiB of partials, a tile's), which the lowering added up
		// past the 20 KiB the plan had kept to by reusing them.
		{"N9", "# feed pos1 21 0 10 32\nmodel m {\n  input pos1: i32[4]\n  input x2: f32[4, 17]\n  input x3: f32[4, 33, 16]\n  input x4: f32[4, 33, 16]\n" +
			"  param w12: f32[16, 17]\n  v13[b, n] = sum[k](x2[b, k] * w12[n, k])\n  sc18[b, t] = sum[e](1.0 * x3[b, t, e])\n" +
			"  update x4[b, pos1[b], e] = v13[b, e]\n  output ctx19 = sc18\n}\n", Config{Level: 3, GPUName: "rand-1024t-3sm-20k-2b", GPU: randGPU(1024, 4096, 3, 20, 40, 2)}},
		// N10 (the same campaign, seed 740299): the matrix-vector tile of
		// q, k and v fused horizontally (8 rows) staged 16 KiB of partials
		// and 2 KiB of rows, past a GPU of 16 KiB per block, and the build
		// stopped instead of taking fewer columns per thread.
		{"N10", "model m {\n  input x2: f32[8, 64]\n  input x4: f32[8, 1, 32]\n  param w8: f32[64, 32]\n  param w10: f32[32, 64]\n  param w12: f32[32, 64]\n" +
			"  q9[b, n] = sum[k](x2[b, k] * w8[k, n])\n  k11[b, n] = sum[k](x2[b, k] * w10[n, k])\n  v13[b, n] = sum[k](x2[b, k] * w12[n, k])\n" +
			"  sc21[b, t] = sum[e](q9[b, e] * (k11[b, e] + x4[b, t, e]))\n  ctx22[b, e] = sum[t](sc21[b, t] * v13[b, e])\n  output ctx22\n}\n",
			Config{Level: 3, GPUName: "rand-512t-3sm-16k-3b", GPU: randGPU(512, 512, 3, 16, 16, 3)}},
		// N11 (CI's campaign, seed 100640, after recomputation landed):
		// the horizontal fusion of two projections with 2 and 1 rows read
		// the second's input at b - 2 under a select; recomputing its
		// RMSNorm-like row sum in every row of the tile loaded x6[-32].
		{"N11", "model m {\n  input x6: f32[1, 16]\n  input x7: f32[2, 2, 17, 16]\n  param w32: f32[16, 16]\n  param w41: f32[16, 16]\n" +
			"  sc26[b, n, t] = sum[e](x7[b, n, t, e])\n  oc31[b, c] = sc26[b, c / 16, 16] where c in 0..16\n  o33[b, n] = sum[k](oc31[b, k] * w32[n, k])\n" +
			"  ms36[b] = sum[d](x6[b, d])\n  hn37[b, d] = x6[b, d] * ms36[b]\n  dn42[b, n] = sum[k](hn37[b, k] * w41[n, k])\n  output out43 = dn42, res34 = o33\n}\n",
			Config{Level: 3, GPUName: "rand-64t-2sm-24k-1b", GPU: randGPU(64, 256, 2, 24, 24, 1)}},
		// N14 (a campaign of issue 25, seed 3100025, as reduced): three
		// projections of a short K (24) concatenated, on a GPU of 96
		// threads a block, took matrix-vector tiles of 64 columns, which
		// 96 threads do not split K among (the widest tile for a short
		// K, twice a warp's share of it, was not made to divide the
		// threads), and the lowering refused the plan.
		{"N14", "# tol t49 6.0796746765845455e-06\n# tol ctx27 0.6183861329957592\n# tol out43 4.555272388315186e-05\n# tol res34 1.154095962597429\n# tol x8 0.006795748630740747\n# tol x9 0.0033960160269089954\n# feed pos6 4 5\n# expect outside pos6\n\nconst E = 24\nconst F = 1\nconst G = 1\n\nmodel m {\n  input pos6: i32[2]\n  input x7: f32[2, E]\n  input x9: f16[2, G, F, 16]\n  param w15: f32[64, E]\n  param w17: f32[E, 64]\n  param w38: f32[64, E]\n  k16[b, n] = sum[k](x7[b, k] * w15[n, k])\n  v18[b, n] = sum[k](x7[b, k] * w17[k, n])\n  hv24[b, n, e] = v18[b, 1] where n in 0..G, e in 0..16\n  hn37[b, d] = x7[b, d]\n  gu39[b, n] = sum[k](hn37[b, k] * w38[n, k])\n  update x9[b, g, pos6[b], e] = hv24[b, g, e]\n  output ctx27 = k16, out43 = gu39\n}\n", Config{Level: 3, GPUName: "rand-96t-6sm-20k-4b", GPU: randGPU(96, 288, 6, 20, 40, 4)}},
		{"N2", "model m {\n  input x: f32[1, 9]\n  param w: f32[9, 21]\n  y[i, j] = sum[k](x[i, k] * w[k, j])\n  output y\n}\n", Config{Level: 0, GPUName: "rand-16k", GPU: withShared(16 << 10)}},
		// Issue 23's campaign, seed 207176: a matrix-vector fit read the
		// column of a rank-0 producer (t6) at its last dimension, which it
		// has none of: index out of range [-1] in partition's pointReads.
		{"N12", "# feed lim21 2\nmodel m {\n  input x3: f32[16, 2]\n  input x9: f32[2, 16]\n  param w11: f32[16, 16]\n  param w20: f32[16, 1]\n" +
			"  input lim21: i32[1]\n  t6 = max[i, j](x3[i, 1]) where j in 0..1\n  t17 = matmul(x9, w11)\n" +
			"  t22[i, j] = select(j >= lim21[0], t6, sum[k](t17[i, k] * w20[k, j]))\n  output t22\n}\n", builtin(3, "a100")},
		// N13 (CI's campaign, seed 101053, issue 25's 16-byte staging):
		// two stages of a TF32 tile (16,384 B) and its bias staged for the
		// epilogue (128 B) passed the 16 KiB per block at -O0 to -O2; the
		// columns now count in the stages' choice and stay unstaged where
		// they do not fit.
		{"N13", "# precision tf32\nmodel m {\n  input x4: f32[16, 8]\n  param w5: f32[8, 16]\n  param w6: f32[16]\n" +
			"  t7[i, j] = sum[k](x4[i, k] * w5[k, j]) + w6[j]\n  output t7\n}\n", Config{Level: 0, GPUName: "rand-16k", GPU: withShared(16 << 10)}},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			if tt.id == "F4" && testing.Short() {
				t.Skip("50,000 elements: seconds in the simulator")
			}
			if err := tt.cfg.GPU.Validate(); err != nil {
				t.Fatal(err)
			}
			for _, f := range Run([]byte(tt.src), Options{Configs: []Config{tt.cfg}, Emit: true}) {
				t.Errorf("%s", f)
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
	got := string(Reduce(src, fs[0], 0))
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

// randGPU returns a GPU as RandomGPU makes them: threads per block and per
// SM, SMs, KiB of shared memory per block and per SM, and blocks per SM.
func randGPU(threads, threadsPerSM, sms, sharedK, sharedSMK, blocks int) gpu.Model {
	return gpu.Model{
		Name: fmt.Sprintf("rand-%dt-%dsm-%dk-%db", threads, sms, sharedK, blocks), CC: "8.0", SMs: sms,
		SharedPerBlock: sharedK << 10, SharedPerSM: sharedSMK << 10,
		RegsPerSM: 64 << 10, MaxRegsPerThread: 255,
		MaxThreadsPerBlock: threads, MaxThreadsPerSM: threadsPerSM, MaxBlocksPerSM: blocks,
		L2Bytes: 1 << 20, DRAMBandwidth: 100e9, FP32Peak: 1e12, FP16Peak: 4e12,
		LaunchCost: 2e-6, GridSyncCost: 1e-6,
	}
}

// withThreads returns the small GPU with a limit of n threads per block.
func withThreads(n int) gpu.Model {
	g, _ := gpu.Builtin("small")
	g.MaxThreadsPerBlock, g.MaxThreadsPerSM = n, n
	return g
}

// withShared returns the small GPU with n bytes of shared memory per block
// and per SM.
// oneSM16K returns a GPU of one SM with 16 KiB of shared memory, 1,024
// threads per block and 4 blocks per SM.
func oneSM16K() gpu.Model {
	g := withShared(16 << 10)
	g.SMs, g.MaxThreadsPerBlock, g.MaxThreadsPerSM, g.MaxBlocksPerSM = 1, 1024, 4096, 4
	return g
}

func withShared(n int) gpu.Model {
	g, _ := gpu.Builtin("small")
	g.SharedPerBlock, g.SharedPerSM = n, n
	return g
}

// TestTally checks that one class counts apart for each known defect its
// failures are instances of, and once per program.
func TestTally(t *testing.T) {
	cfg := builtin(3, "a100")
	f3 := Failure{Kind: KindMismatch, Config: &cfg, Msg: "output y: [0]: got 1, want 2", Known: "F3"}
	f7 := f3
	f7.Known = "F7"
	unknown := f3
	unknown.Known = ""
	tl := newTally()
	tl.add(1, 22, []Failure{f3, f3})
	tl.add(2, 22, []Failure{f7})
	tl.add(3, 22, []Failure{f3, unknown})
	s := tl.summary()
	got := map[string]int{}
	for _, c := range s.Classes {
		got[c.Known] = c.Programs
	}
	want := map[string]int{"F3": 2, "F7": 1, "": 1}
	if len(got) != len(want) || got["F3"] != 2 || got["F7"] != 1 || got[""] != 1 {
		t.Errorf("programs per known defect: %v, want %v", got, want)
	}
	if s.Programs != 3 || s.Runs != 66 || s.Failing != 1 {
		t.Errorf("programs %d, runs %d, failing %d; want 3, 66, 1", s.Programs, s.Runs, s.Failing)
	}
}

// TestGenerateOperators checks that the generator writes the ** operator,
// and sin and cos in element expressions.
func TestGenerateOperators(t *testing.T) {
	forms := map[string]*regexp.Regexp{
		"**":  regexp.MustCompile(`\) \*\* -?\d`),
		"sin": regexp.MustCompile(`[^a-z]sin\(`),
		"cos": regexp.MustCompile(`[^a-z]cos\(`),
	}
	found := map[string]bool{}
	for s := range uint64(300) {
		src := Generate(s).Src
		for name, re := range forms {
			if re.Match(src) {
				found[name] = true
			}
		}
	}
	for name := range forms {
		if !found[name] {
			t.Errorf("no %s in 300 programs", name)
		}
	}
}
