package progfuzz

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"tec/gpu"
	"tec/lang"
	"tec/partition"
	"tec/pipeline"
	"tec/schedule"
)

// reach counts, over programs, the -O4 plans with per-tile counters,
// matrix-vector stages, tensor-core stages and K split over blocks.
type reach struct{ programs, counters, matVec, tensorCores, splitK int }

func (r *reach) add(t *testing.T, src []byte, opts pipeline.Options) {
	t.Helper()
	p, ds := lang.Check("gen.te", src, lang.Config{})
	if ds.HasErrors() {
		t.Fatalf("%s\n%s", ds.Error(), src)
	}
	opts.Level, opts.Precision = 4, programPrecision(src)
	res, err := pipeline.Build(p, opts)
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	r.programs++
	for _, k := range res.Plan.Kernels {
		if len(k.Counters) > 0 {
			r.counters++
			break
		}
	}
	var mv, tc, sk bool
	for _, s := range res.Plan.Schedules {
		mv = mv || s.MatVec != nil
		tc = tc || s.TensorCores
		sk = sk || s.KSplit > 1
	}
	for _, c := range []struct {
		ok bool
		n  *int
	}{{mv, &r.matVec}, {tc, &r.tensorCores}, {sk, &r.splitK}} {
		if c.ok {
			*c.n++
		}
	}
}

// TestConfigsReach checks that the configurations include -O3 and -O4 with
// counters wherever they are sound and on SlowGPU, and that under them the
// generated programs reach what those configurations are there for: the
// programs of the precision focus split K over blocks on SlowGPU (16 of
// 150 when this was written; none on the A100, whose grid syncs cost more
// than the fuzzer's small contractions), and wait on counters with
// CountersWherever.
func TestConfigsReach(t *testing.T) {
	var counters, slow int
	for _, c := range Configs(0) {
		if c.Counters == partition.CountersWherever && c.Level >= 3 {
			counters++
		}
		if c.GPUName == SlowGPU().Name && c.Level >= 3 {
			slow++
		}
	}
	if counters < 2 || slow < 2 {
		t.Errorf("%d configurations with counters everywhere and %d on the slow GPU, want -O3 and -O4 of each", counters, slow)
	}
	var onSlow, wherever reach
	for s := range uint64(60) {
		src := GenerateFocus(700+s, FocusPrecision).Src
		onSlow.add(t, src, pipeline.Options{GPU: SlowGPU()})
		a100, _ := gpu.Builtin("a100")
		wherever.add(t, src, pipeline.Options{GPU: a100, Counters: partition.CountersWherever})
	}
	t.Logf("slow GPU: %+v; counters wherever: %+v", onSlow, wherever)
	if onSlow.splitK == 0 || wherever.counters == 0 {
		t.Errorf("no program split K on the slow GPU (%+v) or waited on counters (%+v)", onSlow, wherever)
	}
}

// TestLLMStep checks that the whole decode steps llmStep writes check and
// reach the decode step's kernels: matrix-vector stages of B = 1..8 rows
// and counters after them (by cost, on the A100), the value side of the
// attention masked past pos[b] (exp of a -inf select, weighted over the
// value cache) and updates of both caches; the first three are checked
// at every configuration.
func TestLLMStep(t *testing.T) {
	a100, _ := gpu.Builtin("a100")
	var r reach
	for s := range uint64(40) {
		g := newGen(s, FocusNone)
		g.llmStep(0)
		src := g.finish(s).Src
		text := string(src)
		for _, want := range []string{"-inf)", "rsqrt(", "update ", "cos(f32(pos"} {
			if !strings.Contains(text, want) {
				t.Fatalf("no %q in\n%s", want, text)
			}
		}
		if !strings.Contains(text, "exp(") && !strings.Contains(text, "softmax(") {
			t.Fatalf("no exp or softmax in\n%s", text)
		}
		r.add(t, src, pipeline.Options{GPU: a100})
		if s < 3 {
			// and compute the reference's values at every configuration
			for _, f := range Run(src, Options{Configs: Configs(s)}) {
				t.Errorf("seed %d: %s\n%s", s, f, src)
			}
		}
	}
	t.Logf("%+v", r)
	if r.matVec < r.programs/2 || r.counters < r.programs/2 {
		t.Errorf("matrix-vector stages in %d and counters in %d of %d programs, want half of them at least", r.matVec, r.counters, r.programs)
	}
}

// groupedConv matches a grouped convolution that conv writes, its groups
// the submatch.
var groupedConv = regexp.MustCompile(`conv2d\([^)]*, 1, ([23])\)`)

// TestGroupedConvs checks that conv writes grouped convolutions and that
// the -O4 plans of those of 8 output channels a group (on the A100)
// compute them as a batched contraction, a batch per group (the groups
// pass); some programs are run at every configuration too.
func TestGroupedConvs(t *testing.T) {
	a100, _ := gpu.Builtin("a100")
	grouped, batched, ran := 0, 0, 0
	for s := range uint64(200) {
		g := newGen(s, FocusNone)
		g.conv()
		if len(g.body) == 0 {
			continue // the convolution's output too small to pool
		}
		src := g.finish(s).Src
		m := groupedConv.FindSubmatch(src)
		if m == nil {
			continue
		}
		grouped++
		p, ds := lang.Check("gen.te", src, lang.Config{})
		if ds.HasErrors() {
			t.Fatalf("%s\n%s", ds.Error(), src)
		}
		res, err := pipeline.Build(p, pipeline.Options{Level: 4, GPU: a100, Precision: programPrecision(src)})
		if err != nil {
			t.Fatalf("%v\n%s", err, src)
		}
		for _, sc := range res.Plan.Schedules {
			if sc.Kind == schedule.Contraction && fmt.Sprint(sc.Batch) == string(m[1]) && sc.N == 8 {
				batched++
				break
			}
		}
		if ran < 4 {
			ran++
			for _, f := range Run(src, Options{Configs: Configs(s)}) {
				t.Errorf("seed %d: %s\n%s", s, f, src)
			}
		}
	}
	t.Logf("%d grouped convolutions, %d batched contractions", grouped, batched)
	if grouped == 0 || batched == 0 {
		t.Errorf("%d grouped convolutions, %d of them batched contractions; want some of each", grouped, batched)
	}
}
