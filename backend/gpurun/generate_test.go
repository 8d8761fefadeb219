package gpurun_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"tec/analysis"
	"tec/backend/gpurun"
	"tec/backend/gpurun/fakegpu"
	"tec/backend/kir"
	"tec/backend/llvm"
	"tec/backend/lower"
	"tec/backend/sim"
	"tec/generate"
	"tec/gpu"
	tb "tec/internal/testkit/tebuild"
	"tec/partition"
	"tec/te"
)

// The toy language model's sizes: batch, prompt length, context, vocabulary
// and width.
const (
	toyB, toyP, toyT, toyV, toyE = 2, 3, 16, 16, 8
)

// toyLM returns a prefill and a decode model in the shape of the
// generation protocol, a toy LM whose next token depends on its cache:
// each token's embedding is appended to the cache kc at its position, and
// the next token is the argmax of (the token's embedding + the cache's
// rows before it, row t weighted by age[t]) · w. A cache that is not kept
// from step to step, or an update that is not in place, gives other
// tokens.
func toyLM() (prefill, decode *te.Program) {
	// prefill: x[b, p, e] = emb[ids[b, p], e], written to kc[b, p, e];
	// h[b, e] = Σp x[b, p, e]·age[p].
	pb := tb.New("prefill")
	ids := pb.InputOf("ids", te.I32, toyB, toyP)
	kc := pb.Input("kc", toyB, toyT, toyE)
	emb, w, age := pb.Param("emb", toyV, toyE), pb.Param("w", toyE, toyV), pb.Param("age", toyT)
	x := pb.Compute("x", tb.Shape(toyB, toyP, toyE), func(ax []te.Index) te.Expr {
		return tb.Gather(emb, []te.Expr{tb.Ld(ids, ax[0], ax[1]), nil}, te.Const(0), ax[2])
	})
	u := pb.Compute("kc/update", tb.Shape(toyB, toyP, toyE), func(ax []te.Index) te.Expr { return tb.Ld(x, ax...) })
	u.Update = &te.Update{Target: kc, Index: []te.Index{te.VarIndex(u.Axes[0]), te.VarIndex(u.Axes[1]), te.VarIndex(u.Axes[2])}}
	h := pb.Compute("h", tb.Shape(toyB, toyE), func(ax []te.Index) te.Expr {
		return tb.Reduce(te.Sum, "p", toyP, func(p te.Index) te.Expr {
			return tb.Bin(te.Mul, tb.Ld(x, ax[0], p, ax[1]), tb.Ld(age, p))
		})
	})
	next, logits := toyNext(pb, h, w)
	prefill = pb.Program(next, kc, logits)

	// decode: x[b, e] = emb[ids[b], e], written to kc[b, pos[b], e];
	// h[b, e] = x[b, e] + Σ(t < pos[b]) kc[b, t, e]·age[t].
	db := tb.New("decode")
	ids = db.InputOf("ids", te.I32, toyB)
	pos := db.InputOf("pos", te.I32, toyB)
	kc = db.Input("kc", toyB, toyT, toyE)
	emb, w, age = db.Param("emb", toyV, toyE), db.Param("w", toyE, toyV), db.Param("age", toyT)
	x = db.Compute("x", tb.Shape(toyB, toyE), func(ax []te.Index) te.Expr {
		return tb.Gather(emb, []te.Expr{tb.Ld(ids, ax[0]), nil}, te.Const(0), ax[1])
	})
	u = db.Compute("kc/update", tb.Shape(toyB, toyE), func(ax []te.Index) te.Expr { return tb.Ld(x, ax...) })
	u.Update = &te.Update{Target: kc, Index: []te.Index{te.VarIndex(u.Axes[0]), {}, te.VarIndex(u.Axes[1])},
		Gather: []te.Expr{nil, tb.Ld(pos, te.VarIndex(u.Axes[0])), nil}}
	h = db.Compute("h", tb.Shape(toyB, toyE), func(ax []te.Index) te.Expr {
		past := tb.Reduce(te.Sum, "t", toyT, func(t te.Index) te.Expr {
			return tb.Sel(tb.Bin(te.Lt, tb.Idx(t), tb.Ld(pos, ax[0])), tb.Bin(te.Mul, tb.Ld(kc, ax[0], t, ax[1]), tb.Ld(age, t)), tb.F(0))
		})
		return tb.Bin(te.Add, tb.Ld(x, ax...), past)
	})
	next, logits = toyNext(db, h, w)
	decode = db.Program(next, kc, logits)
	return prefill, decode
}

// toyNext is next[b] = argmax[v](logits[b, v]), logits[b, v] =
// Σe h[b, e]·w[e, v]; it returns both.
func toyNext(b *tb.Builder, h, w *te.Tensor) (next, logits *te.Tensor) {
	logits = b.Matmul("logits", h, w)
	return b.ComputeOf("next", te.I32, tb.Shape(toyB), func(ax []te.Index) te.Expr {
		return tb.Reduce(te.Argmax, "v", toyV, func(v te.Index) te.Expr { return tb.Ld(logits, ax[0], v) })
	}), logits
}

// lowerToy lowers p a kernel per tensor, or fused into persistent kernels
// on the small GPU with the temporaries in the workspace.
func lowerToy(t *testing.T, p *te.Program, fused bool) *kir.Module {
	t.Helper()
	if !fused {
		m, err := lower.Unfused(p, lower.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	a, err := analysis.Analyze(p, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := gpu.Builtin("small")
	pl, err := partition.Partition(a, g, partition.Options{Split: true, Reuse: true, TempsInWorkspace: true})
	if err != nil {
		t.Fatal(err)
	}
	m, err := lower.Fused(p, pl, lower.FusedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m.TempsInWorkspace = true
	return m
}

// toyParams returns random params of the toy LM and random prompts.
func toyParams() map[string]*te.Array {
	rng := rand.New(rand.NewPCG(7, 11))
	out := map[string]*te.Array{}
	for _, p := range []struct {
		name  string
		shape []int
	}{{"emb", []int{toyV, toyE}}, {"w", []int{toyE, toyV}}, {"age", []int{toyT}}} {
		a := te.NewArray(te.F32, p.shape)
		for i := range a.Data {
			a.Data[i] = te.Round(te.F32, 2*rng.Float64()-1)
		}
		out[p.name] = a
	}
	ids := te.NewArray(te.I32, []int{toyB, toyP})
	for i := range ids.Data {
		ids.Data[i] = float64(rng.IntN(toyV))
	}
	out["ids"] = ids
	return out
}

// hostLoop generates steps tokens per sequence with the simulator on the
// host, the cache carried from run to run in host arrays: each model's
// next, or drawn from its logits as s says. With forget, the cache is
// zeroed before every run: what a runtime that does not keep it on the
// device would compute.
func hostLoop(t *testing.T, pre, dec *kir.Module, feeds map[string]*te.Array, steps int, forget bool, s generate.Sampling) [][]int32 {
	t.Helper()
	kc := te.NewArray(te.F32, []int{toyB, toyT, toyE})
	in := map[string]*te.Array{"emb": feeds["emb"], "w": feeds["w"], "age": feeds["age"], "ids": feeds["ids"], "kc": kc}
	tokens := make([][]int32, toyB)
	run := func(m *kir.Module) {
		if forget {
			in["kc"] = te.NewArray(te.F32, []int{toyB, toyT, toyE})
		}
		res, err := sim.Run(m, in, sim.Options{})
		if err != nil {
			t.Fatal(err)
		}
		in["kc"] = res.Outputs["kc"]
		next := res.Outputs["next"]
		if !s.Greedy() {
			next = te.NewArray(te.I32, []int{toyB})
			for b := range toyB {
				tok, err := s.Sample(res.Outputs["logits"].Data[b*toyV:(b+1)*toyV], b, len(tokens[b]))
				if err != nil {
					t.Fatal(err)
				}
				next.Data[b] = float64(tok)
			}
		}
		for b := range toyB {
			tokens[b] = append(tokens[b], int32(next.Data[b]))
		}
		in["ids"] = next
	}
	run(pre)
	for i := range steps {
		pos := te.NewArray(te.I32, []int{toyB})
		for b := range pos.Data {
			pos.Data[b] = float64(toyP + i)
		}
		in["pos"] = pos
		run(dec)
	}
	return tokens
}

// toyJob returns the generation job of the toy LM, lowered as fused says,
// and a fake GPU that runs its two models.
func toyJob(t *testing.T, fused bool, steps int) (*gpurun.GenerateJob, *fakegpu.GPU, [2]*kir.Module) {
	t.Helper()
	pp, dp := toyLM()
	mods := [2]*kir.Module{lowerToy(t, pp, fused), lowerToy(t, dp, fused)}
	var models [2]gpurun.Model
	var codes []fakegpu.Code
	for i, m := range mods {
		symbols := llvm.KernelNames(m)
		p, err := gpurun.NewPlan(m, m.Layout(), symbols, gpurun.PTX)
		if err != nil {
			t.Fatal(err)
		}
		image := []byte("// PTX of " + m.Name)
		models[i] = gpurun.Model{Plan: p, Image: image}
		codes = append(codes, fakegpu.Code{Module: m, Image: image, Symbols: symbols})
	}
	job := &gpurun.GenerateJob{Prefill: models[0], Decode: models[1], Steps: steps, Feeds: map[string][]byte{}}
	for name, a := range toyParams() {
		p := models[0].Plan
		i := slices.IndexFunc(p.Buffers, func(b gpurun.Buffer) bool { return b.Name == name })
		data, err := gpurun.Encode(a, p.Buffers[i])
		if err != nil {
			t.Fatal(err)
		}
		job.Feeds[name] = data
	}
	return job, fakegpu.NewModules(codes...), mods
}

// TestGenerate runs the toy LM's generation on a fake GPU, which checks
// every driver call and computes with the simulator: the tokens must be
// those of a loop on the host, which a cache not kept between steps would
// not give.
func TestGenerate(t *testing.T) {
	for _, tc := range []struct {
		fused bool
		steps int
	}{{false, 10}, {true, 10}, {true, 0}} {
		fused, steps := tc.fused, tc.steps
		t.Run(fmt.Sprintf("fused=%t,steps=%d", fused, steps), func(t *testing.T) {
			job, gpu, mods := toyJob(t, fused, steps)
			res, err := gpurun.Generate(gpu, job)
			if err != nil {
				t.Fatal(err)
			}
			if err := gpu.Close(); err != nil {
				t.Fatal(err)
			}
			want := hostLoop(t, mods[0], mods[1], toyParams(), steps, false, generate.Sampling{})
			if !reflect.DeepEqual(res.Tokens, want) {
				t.Errorf("tokens %v, want %v", res.Tokens, want)
			}
			if forgot := hostLoop(t, mods[0], mods[1], toyParams(), steps, true, generate.Sampling{}); steps > 1 && reflect.DeepEqual(forgot, want) {
				t.Errorf("the toy LM gives the same tokens %v without its cache: the test cannot tell", want)
			}
			if len(res.StepMS) != steps || res.PrefillMS != float64(len(mods[0].Kernels)) || steps > 0 && res.StepMS[steps-1] != float64(len(mods[1].Kernels)) {
				t.Errorf("prefill %v ms, steps %v ms; want 1 ms per kernel (%d and %d kernels)", res.PrefillMS, res.StepMS, len(mods[0].Kernels), len(mods[1].Kernels))
			}
			if len(res.PrefillLaunches) != len(mods[0].Kernels) || len(res.DecodeLaunches) != len(mods[1].Kernels) {
				t.Errorf("launches %d and %d, want %d and %d", len(res.PrefillLaunches), len(res.DecodeLaunches), len(mods[0].Kernels), len(mods[1].Kernels))
			}
			coop := slices.ContainsFunc(res.DecodeLaunches, func(l gpurun.LaunchInfo) bool { return l.Cooperative })
			if coop != fused {
				t.Errorf("cooperative decode launches: %t, want %t", coop, fused)
			}
		})
	}
}

// traffic counts the bytes and calls of the copies in a fake GPU's calls.
type traffic struct{ up, down, ups, downs int }

func copies(calls []string) traffic {
	var tr traffic
	for _, c := range calls {
		var p uint64
		var n int
		if _, err := fmt.Sscanf(c, "CopyToDevice(%v, %d)", &p, &n); err == nil {
			tr.up += n
			tr.ups++
		} else if _, err := fmt.Sscanf(c, "CopyFromDevice(%v, %d)", &p, &n); err == nil {
			tr.down += n
			tr.downs++
		}
	}
	return tr
}

// TestGenerateCopies: after the prefill, a step copies only its ids and
// pos to the device and its next tokens (and the error record) back.
func TestGenerateCopies(t *testing.T) {
	var tr [2]traffic
	var hasRecord bool
	for i, steps := range []int{2, 7} {
		job, gpu, mods := toyJob(t, true, steps)
		if _, err := gpurun.Generate(gpu, job); err != nil {
			t.Fatal(err)
		}
		tr[i] = copies(gpu.Calls)
		hasRecord = mods[1].ErrorRecord != nil
	}
	if !hasRecord {
		t.Fatal("the toy decode has no error record")
	}
	const record = 4 * kir.ErrorRecordWords
	per := traffic{
		up: (tr[1].up - tr[0].up) / 5, down: (tr[1].down - tr[0].down) / 5,
		ups: (tr[1].ups - tr[0].ups) / 5, downs: (tr[1].downs - tr[0].downs) / 5,
	}
	want := traffic{up: 2 * 4 * toyB, down: 4*toyB + record, ups: 2, downs: 2}
	if per != want || (tr[1].up-tr[0].up)%5 != 0 || (tr[1].down-tr[0].down)%5 != 0 {
		t.Errorf("per step: %+v, want %+v (ids and pos up; next and the error record down)", per, want)
	}
}

// TestGenerateDriverErrors: an error of any driver call fails the
// generation with the call's error and what was being done, the step
// included, and frees all memory.
func TestGenerateDriverErrors(t *testing.T) {
	for _, tc := range []struct {
		call string
		nth  int // fail the nth call (from 0) of that name
		want string
		// launch makes nth a decode step, whose first launch fails.
		launch bool
	}{
		{"Device", 0, "querying the device", false},
		{"Alloc", 0, "allocating 64 bytes for param age", false},
		{"Alloc", 5, "prefill: allocating", false},
		{"CopyToDevice", 0, "copying param age to the device", false},
		{"CopyToDevice", 4, "prefill: copying input ids to the device", false},
		{"LoadModule", 1, "loading the ptx of model decode", false},
		{"Function", 0, "looking up k_", false},
		{"Occupancy", 0, "occupancy", false},
		{"NewEvent", 1, "creating an event", false},
		{"Record", 0, "prefill: recording an event", false},
		{"Launch", 0, "prefill: launching kernel", false},
		{"Synchronize", 0, "prefill: running model prefill", false},
		{"Elapsed", 0, "prefill: timing model prefill", false},
		{"CopyFromDevice", 1, "prefill: copying output next", false},
		{"CopyToDevice", 7, "decode step 0 (position 3): copying ids to the device", false},
		{"CopyToDevice", 10, "decode step 1 (position 4): copying pos to the device", false},
		{"Launch", 2, "decode step 2 (position 5): launching kernel", true},
		{"Synchronize", 3, "decode step 2 (position 5): running model decode", false},
		{"CopyFromDevice", 2, "decode step 0 (position 3): reading the error record", false},
		{"Elapsed", 4, "decode step 3 (position 6): timing model decode", false},
		{"Free", 0, "freeing device memory", false},
	} {
		t.Run(fmt.Sprintf("%s#%d", tc.call, tc.nth), func(t *testing.T) {
			job, gpu, mods := toyJob(t, true, 4)
			if tc.launch {
				tc.nth = len(mods[0].Kernels) + tc.nth*len(mods[1].Kernels)
			}
			injected := errors.New("CUDA_ERROR_INJECTED")
			n := 0
			gpu.Fail = func(call string) error {
				if call == tc.call {
					n++
					if n == tc.nth+1 {
						return injected
					}
				}
				return nil
			}
			_, err := gpurun.Generate(gpu, job)
			if !errors.Is(err, injected) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q and the driver's error", err, tc.want)
			}
			gpu.Fail = nil
			if err := gpu.Close(); err != nil && tc.call != "Free" {
				t.Errorf("after the failure: %v", err)
			}
		})
	}
}

// TestGenerateBadPosition: a step whose position is past the cache is
// reported by the device's error record, with the step.
func TestGenerateBadPosition(t *testing.T) {
	steps := toyT - toyP + 1 // the last step writes position T
	job, gpu, _ := toyJob(t, true, steps)
	_, err := gpurun.Generate(gpu, job)
	want := fmt.Sprintf("decode step %d (position %d): update index pos[0] = %d is outside kc's dimension 1 [0, %d)", steps-1, toyT, toyT, toyT)
	var bi *kir.BadIndexError
	if err == nil || !strings.Contains(err.Error(), want) || !errors.As(err, &bi) {
		t.Fatalf("got %v, want a *kir.BadIndexError %q", err, want)
	}
	if err := gpu.Close(); err != nil {
		t.Error(err)
	}
}

// TestGenerateJobErrors: a job that does not follow the protocol is
// refused before the driver is called.
func TestGenerateJobErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(j *gpurun.GenerateJob)
		want string
	}{
		{"no prompts", func(j *gpurun.GenerateJob) { delete(j.Feeds, "ids") }, "no prompts: no data for input ids i32[2, 3]"},
		{"no param", func(j *gpurun.GenerateJob) { delete(j.Feeds, "w") }, "no data for param w f32[8, 16]"},
		{"short", func(j *gpurun.GenerateJob) { j.Feeds["age"] = j.Feeds["age"][4:] }, "param age f32[16]: 60 bytes of data, want 64"},
		{"cache fed", func(j *gpurun.GenerateJob) { j.Feeds["kc"] = make([]byte, 4*toyB*toyT*toyE) }, "caches start as zeros"},
		{"unknown", func(j *gpurun.GenerateJob) { j.Feeds["bias"] = nil }, "data given for bias, which neither model takes"},
		{"steps", func(j *gpurun.GenerateJob) { j.Steps = -1 }, "-1 decode steps"},
		{"no pos", func(j *gpurun.GenerateJob) { rename(j.Decode.Plan, "pos", "position") }, "model decode has no input pos"},
		{"ids rank", func(j *gpurun.GenerateJob) { j.Prefill, j.Decode = j.Decode, j.Prefill }, "model decode: input ids is i32[2], want i32[B, P]"},
		{"no next", func(j *gpurun.GenerateJob) { rename(j.Prefill.Plan, "next", "token") }, "model prefill has no output next"},
		{"param differs", func(j *gpurun.GenerateJob) { retype(j.Decode.Plan, "age", "f16") }, "param age is param f32[16] in model prefill and param f16[16] in model decode"},
		{"cache of one", func(j *gpurun.GenerateJob) { notInPlace(j.Decode.Plan, "kc") }, "input kc is input f32[2, 16, 8] updated in place in model prefill and input f32[2, 16, 8] in model decode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job, gpu, _ := toyJob(t, false, 3)
			tc.edit(job)
			_, err := gpurun.Generate(gpu, job)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
			if len(gpu.Calls) != 0 {
				t.Errorf("the driver was called: %q", gpu.Calls)
			}
		})
	}
}

func rename(p *gpurun.Plan, from, to string) {
	for i := range p.Buffers {
		if p.Buffers[i].Name == from {
			p.Buffers[i].Name = to
		}
	}
}

func retype(p *gpurun.Plan, name, dtype string) {
	for i := range p.Buffers {
		if b := &p.Buffers[i]; b.Name == name {
			b.DType, b.Bytes = dtype, b.Bytes/2
		}
	}
}

func notInPlace(p *gpurun.Plan, name string) {
	for i := range p.Buffers {
		if b := &p.Buffers[i]; b.Name == name {
			b.InPlace = false
		}
	}
}

// TestGenerateJobRoundTrip: what tec writes for a generation, tec-cuda
// reads back unchanged; the result too; and each reader refuses the other
// kind of job.
func TestGenerateJobRoundTrip(t *testing.T) {
	job, gpu, _ := toyJob(t, true, 3)
	dir := t.TempDir()
	if err := gpurun.WriteGenerateJob(dir, job); err != nil {
		t.Fatal(err)
	}
	if kind, err := gpurun.JobKind(dir); err != nil || kind != gpurun.KindGenerate {
		t.Errorf("JobKind = %q, %v; want %q", kind, err, gpurun.KindGenerate)
	}
	back, err := gpurun.ReadGenerateJob(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, job) {
		t.Errorf("read back %+v\nwant %+v", back, job)
	}
	if _, err := gpurun.ReadJob(dir); err == nil || !strings.Contains(err.Error(), "a generate job, not a run") {
		t.Errorf("ReadJob of a generation: %v", err)
	}
	res, err := gpurun.Generate(gpu, back)
	if err != nil {
		t.Fatal(err)
	}
	if err := gpurun.WriteGenerateResult(dir, res); err != nil {
		t.Fatal(err)
	}
	got, err := gpurun.ReadGenerateResult(dir, job)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, res) {
		t.Errorf("result read back %+v\nwant %+v", got, res)
	}
	job.Steps = 4
	if _, err := gpurun.ReadGenerateResult(dir, job); err == nil || !strings.Contains(err.Error(), "4 tokens of sequence 0, want 5") {
		t.Errorf("result of too few steps: %v", err)
	}

	run := t.TempDir()
	_, ms := modules(t)
	p, _, feeds, _ := setup(t, ms["softmax"])
	if err := gpurun.WriteJob(run, &gpurun.Job{Plan: p, Image: []byte("ptx"), Feeds: feeds}); err != nil {
		t.Fatal(err)
	}
	if kind, err := gpurun.JobKind(run); err != nil || kind != gpurun.KindRun {
		t.Errorf("JobKind of a run = %q, %v", kind, err)
	}
	if _, err := gpurun.ReadGenerateJob(run); err == nil || !strings.Contains(err.Error(), "not a generate job") {
		t.Errorf("ReadGenerateJob of a run: %v", err)
	}
	if err := os.WriteFile(filepath.Join(run, "job.json"), []byte(`{"kind": "train"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := gpurun.JobKind(run); err == nil || !strings.Contains(err.Error(), `unknown kind of job "train"`) {
		t.Errorf("JobKind of an unknown kind: %v", err)
	}
}

// toySampling is the sampling of the GPU tests: hot enough that the
// draws leave the greedy path.
var toySampling = generate.Sampling{Temperature: 2, TopK: 12, TopP: 0.95, Seed: 3}

// TestGenerateSamples runs the toy LM with sampling on the fake GPU: the
// tokens must be those drawn on the host from the simulator's logits,
// not the greedy ones; each run copies its logits back, B·V values, and
// greedy runs do not.
func TestGenerateSamples(t *testing.T) {
	const steps = 6
	for _, fused := range []bool{false, true} {
		t.Run(fmt.Sprintf("fused=%t", fused), func(t *testing.T) {
			job, gpu, mods := toyJob(t, fused, steps)
			job.Sampling, job.Logits = toySampling, [2]string{"logits", "logits"}
			res, err := gpurun.Generate(gpu, job)
			if err != nil {
				t.Fatal(err)
			}
			want := hostLoop(t, mods[0], mods[1], toyParams(), steps, false, toySampling)
			if !reflect.DeepEqual(res.Tokens, want) {
				t.Errorf("tokens %v, want the host's draws %v", res.Tokens, want)
			}
			if greedy := hostLoop(t, mods[0], mods[1], toyParams(), steps, false, generate.Sampling{}); reflect.DeepEqual(greedy, want) {
				t.Errorf("the draws are the greedy tokens %v: the test cannot tell", want)
			}
			if !slices.Equal(res.Finish, []generate.Finish{generate.FinishSteps, generate.FinishSteps}) || len(res.StepMS) != steps {
				t.Errorf("finish %v, %d step times", res.Finish, len(res.StepMS))
			}
		})
	}
	// The copies back per step: next, the error record and the logits.
	var tr [2]traffic
	for i, steps := range []int{2, 7} {
		job, gpu, _ := toyJob(t, true, steps)
		job.Sampling, job.Logits = toySampling, [2]string{"logits", "logits"}
		if _, err := gpurun.Generate(gpu, job); err != nil {
			t.Fatal(err)
		}
		tr[i] = copies(gpu.Calls)
	}
	per := traffic{up: (tr[1].up - tr[0].up) / 5, down: (tr[1].down - tr[0].down) / 5, ups: (tr[1].ups - tr[0].ups) / 5, downs: (tr[1].downs - tr[0].downs) / 5}
	if want := (traffic{up: 2 * 4 * toyB, down: 4*toyB + 4*kir.ErrorRecordWords + 4*toyB*toyV, ups: 2, downs: 3}); per != want {
		t.Errorf("per sampled step: %+v, want %+v (ids and pos up; next, the error record and the logits down)", per, want)
	}
}

// TestGenerateEOS: a sequence ends at its first end-of-sequence token,
// which it keeps; the loop ends when every sequence has, with the times
// of the steps that ran; the result reads back.
func TestGenerateEOS(t *testing.T) {
	const steps = 10
	job, gpu, mods := toyJob(t, true, steps)
	job.Sampling, job.Logits = toySampling, [2]string{"logits", "logits"}
	free := hostLoop(t, mods[0], mods[1], toyParams(), steps, false, toySampling)
	eos := []int{int(free[0][3]), int(free[1][4])}
	job.EOS = eos
	res, err := gpurun.Generate(gpu, job)
	if err != nil {
		t.Fatal(err)
	}
	longest := 0
	for b, toks := range free {
		end := slices.IndexFunc(toks, func(x int32) bool { return slices.Contains(eos, int(x)) })
		if want := toks[:end+1]; !slices.Equal(res.Tokens[b], want) || res.Finish[b] != generate.FinishEOS {
			t.Errorf("sequence %d: %v (%s), want %v (eos)", b, res.Tokens[b], res.Finish[b], want)
		}
		longest = max(longest, end+1)
	}
	if len(res.StepMS) != longest-1 {
		t.Errorf("%d step times, want %d: the loop ends with the last sequence", len(res.StepMS), longest-1)
	}
	dir := t.TempDir()
	if err := gpurun.WriteGenerateJob(dir, job); err != nil {
		t.Fatal(err)
	}
	back, err := gpurun.ReadGenerateJob(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, job) {
		t.Errorf("read back %+v\nwant %+v", back, job)
	}
	if err := gpurun.WriteGenerateResult(dir, res); err != nil {
		t.Fatal(err)
	}
	if got, err := gpurun.ReadGenerateResult(dir, job); err != nil || !reflect.DeepEqual(got, res) {
		t.Errorf("result read back: %v\n%+v\nwant %+v", err, got, res)
	}
	for _, tc := range []struct {
		edit func(r *gpurun.GenerateResult)
		want string
	}{
		{func(r *gpurun.GenerateResult) { r.Tokens[0] = append(r.Tokens[0], 1) }, "sequence 0 goes on past its end-of-sequence token"},
		{func(r *gpurun.GenerateResult) { r.Finish[1] = generate.FinishSteps }, `sequence 1 finished "steps", want "eos"`},
		{func(r *gpurun.GenerateResult) { r.StepMS = append(r.StepMS, 1) }, fmt.Sprintf("times of %d steps, want %d", longest, longest-1)},
	} {
		bad := *res
		bad.Tokens = [][]int32{slices.Clone(res.Tokens[0]), slices.Clone(res.Tokens[1])}
		bad.Finish, bad.StepMS = slices.Clone(res.Finish), slices.Clone(res.StepMS)
		tc.edit(&bad)
		if err := gpurun.WriteGenerateResult(dir, &bad); err != nil {
			t.Fatal(err)
		}
		if _, err := gpurun.ReadGenerateResult(dir, job); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v, want %q", err, tc.want)
		}
	}
}

// TestGenerateSamplingJobErrors: a sampling job without logits to draw
// from, or with a sampling or end token that means nothing, is refused
// before the driver is called.
func TestGenerateSamplingJobErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(j *gpurun.GenerateJob)
		want string
	}{
		{"no logits named", func(j *gpurun.GenerateJob) { j.Logits = [2]string{} }, `model prefill has no output "", the logits to sample from`},
		{"logits of another model", func(j *gpurun.GenerateJob) { j.Logits[1] = "scores" }, `model decode has no output "scores"`},
		{"next as logits", func(j *gpurun.GenerateJob) { j.Logits[0] = "next" }, "model prefill: the logits to sample from, output next, are i32[2], want floating point [2, V]"},
		{"bad top-p", func(j *gpurun.GenerateJob) { j.Sampling.TopP = 1.5 }, "top-p 1.5"},
		{"bad eos", func(j *gpurun.GenerateJob) { j.EOS = []int{-2} }, "end-of-sequence token -2: want 0 or more"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job, gpu, _ := toyJob(t, false, 3)
			job.Sampling, job.Logits = toySampling, [2]string{"logits", "logits"}
			tc.edit(job)
			_, err := gpurun.Generate(gpu, job)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
			if len(gpu.Calls) != 0 {
				t.Errorf("the driver was called: %q", gpu.Calls)
			}
		})
	}
}
