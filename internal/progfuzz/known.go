package progfuzz

import (
	"regexp"
	"strings"
)

// knownDefects are the failure classes of issue 17's defects F1 to F9,
// which are being fixed on other branches. Each matches that defect's
// signature exactly as the issue describes it; a failure matched here is
// counted apart and does not fail the smoke test. Delete an entry when its
// fix is merged. The entries whose discriminating rerun explains a failure
// (F4, F6, F7) come before F3, which goes by the GPU alone.
var knownDefects = []struct {
	id, defect string
	match      func(src []byte, f Failure) bool
}{
	{"F1", "a valid program rejected by the lowering: an out-of-bounds index in a branch a compile-time condition removes",
		func(_ []byte, f Failure) bool {
			return f.Kind == KindBuild && regexp.MustCompile(`^lower: kir: .*index -?[0-9]+ out of bounds of`).MatchString(f.Msg)
		}},
	{"F2", "the reference evaluator panics on a contraction with a reversed operand axis",
		func(_ []byte, f Failure) bool {
			return f.Kind == KindRefPanic && strings.Contains(f.Stack, "te/eval_gemm.go")
		}},
	{"F4", "-O4: an on-chip row result read by the wrong block",
		func(_ []byte, f Failure) bool {
			return f.Kind == KindMismatch && f.Config.Level == 4 && f.OnChipCause
		}},
	{"F5", "-O4 internal error after weight-resident matrix-vector stages (nil expression)",
		func(_ []byte, f Failure) bool {
			return f.Kind == KindBuild && f.Config.Level == 4 && strings.Contains(f.Msg, "nil expression")
		}},
	{"F6", "-O4: a contraction in the epilogue of a weight-resident matrix-vector product races",
		func(_ []byte, f Failure) bool {
			return (f.Kind == KindRace || f.Kind == KindMismatch) && f.Config.Level == 4 && f.ResidentCause
		}},
	{"F7", "f16/bf16 rounding of a full() constant lost from -O2",
		func(_ []byte, f Failure) bool {
			return f.Kind == KindMismatch && f.Config.Level >= 2 && f.HalfFullCause
		}},
	{"F3", "block tree reductions lose partials when the block is not a power of two",
		func(_ []byte, f Failure) bool {
			return (f.Kind == KindMismatch || f.Kind == KindRace) && f.Config.Level >= 3 && !isPow2(f.Config.GPU.MaxThreadsPerBlock)
		}},
	{"F8", "-O0...-O2 kernels ignore the GPU's block limits",
		func(_ []byte, f Failure) bool {
			return f.Kind == KindLaunch && f.Config.Level <= 2
		}},
	{"F9", "duplicate names from horizontal fusion",
		func(_ []byte, f Failure) bool {
			return f.Kind == KindBuild && f.Config.Level >= 1 &&
				(strings.Contains(f.Msg, "two kernels are named") || strings.Contains(f.Msg, "two buffers are named") ||
					strings.Contains(f.Msg, "already declares a buffer of that name"))
		}},
}

// foundDefects are the failure classes this fuzzer found beyond F1-F9
// (reported on issue 17 with their minimal programs), matched the same way.
// They keep the smoke test green until they are fixed; delete an entry when
// its fix is merged.
var foundDefects = []struct {
	id, defect string
	match      func(src []byte, f Failure) bool
}{
	// N1: model m { input a: f32[4, 8]  input b: f32[8, 8]
	//       y[i, j] = sum[k](a[i, k] * b[k, j])  output y }
	// at -O3 with 33 threads per block: the 4×8 GEMM tile gives one
	// output to each of 32 threads, and thread 32 runs unguarded: it reads
	// shared xs[32] of f32[4, 8] and writes y[32].
	{"N1", "-O3/-O4 GEMM tiles on a block that is not a power of two: the threads beyond the tile read and write out of bounds",
		func(_ []byte, f Failure) bool {
			return f.Kind == KindSim && f.Config.Level >= 3 && !isPow2(f.Config.GPU.MaxThreadsPerBlock) &&
				regexp.MustCompile(`thread [0-9]+: (load|store) of .* out of bounds of`).MatchString(f.Msg)
		}},
	// N2: model m { input x: f32[1, 9]  param w: f32[9, 21]
	//       y[i, j] = sum[k](x[i, k] * w[k, j])  output y }
	// on a valid GPU with 2 KiB of shared memory per block, at every level:
	// "stage y does not fit ...: 2816 B shared memory per block > 2048; use
	// a smaller block" (the same at 32 threads: 2112 B), or at -O3/-O4
	// "lower: kernel ... needs 2944 B of shared memory per block".
	{"N2", "a valid GPU with little shared memory (2-4 KiB per block) is rejected: the partitioner has no smaller tile to fall back on",
		func(_ []byte, f Failure) bool {
			return f.Kind == KindBuild && f.Config.GPU.SharedPerBlock <= 8<<10 &&
				(strings.Contains(f.Msg, "B shared memory per block >") || strings.Contains(f.Msg, "B of shared memory per block, more than"))
		}},
	// N3: model m { input h: f32[1, 4]  param w: f32[4, 4, 4]
	//       g[q, n, j] = sum[k](h[n, k] * w[q, k, j])  h2[n, j] = g[1, n, j]
	//       g2[q, n, j] = sum[k](h2[n, k] * w[q, k, j])  y[n, j] = g2[1, n, j]
	//       output y }
	// at -O4 with 33 threads per block: "lower: stage g: the plan keeps its
	// weights on chip, but it is not a resident contraction" (right on the
	// A100, the small GPU and at 32 or 64 threads).
	{"N3", "-O4 on a 33-thread block: the plan keeps a weight on chip for a stage the lowering does not make a resident contraction",
		func(_ []byte, f Failure) bool {
			return f.Kind == KindBuild && f.Config.Level == 4 && strings.Contains(f.Msg, "the plan keeps its weights on chip, but it is not a resident contraction")
		}},
}

// knownDefect returns the id of the known defect f is an instance of, or "".
func knownDefect(src []byte, f Failure) string {
	for _, k := range append(knownDefects, foundDefects...) {
		if k.match(src, f) {
			return k.id
		}
	}
	return ""
}
