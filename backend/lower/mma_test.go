package lower

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"tec/analysis"
	"tec/backend/kir"
	"tec/backend/report"
	"tec/backend/sim"
	"tec/gpu"
	"tec/partition"
	"tec/te"
)

// halfMatmul is y = tanh(x·w + b) + r with x and w of type in (te.F32 for
// TF32: the operands are rounded with round_tf32, as --precision tf32
// writes them), in batches of B.
func halfMatmul(in te.DType, B, M, K, N int) *te.Program {
	b := newBuilder("half_matmul")
	x := b.input("x", in, B, M, K)
	w := b.param("w", in, K, N)
	bias := b.param("b", te.F32, N)
	res := b.input("r", te.F32, B, M, N)
	op := func(e te.Expr) te.Expr {
		if in == te.F32 {
			return un(te.RoundTF32, e)
		}
		return e
	}
	y := b.f32("y", shp(B, M, N), func(a []te.Index) te.Expr {
		s := sum1(K, func(k te.Index) te.Expr { return mul(op(ld(x, a[0], a[1], k)), op(ld(w, k, a[2]))) })
		return add(un(te.Tanh, add(s, ld(bias, a[2]))), ld(res, a[0], a[1], a[2]))
	})
	return b.outputs(y)
}

// TestTensorCoreContraction lowers contractions of f16, bf16 and TF32
// operands with tensor-core MMAs (tiles with and without tails, batches,
// an epilogue of bias, tanh and a residual), runs them in the simulator
// with race detection against the reference evaluator, and checks that
// the static report counts the MMAs as the simulator does. The products
// are exact and the sums are in f32 in another order than the
// reference's float64: the tolerance, 2^-20 relative to the output's
// magnitude, allows K roundings of f32 sums of terms of that magnitude.
// Operands that are loads of half tensors with aligned rows are staged by
// double-buffered cp.async copies. Too small a contraction keeps the SIMT
// code. Where N is even, the epilogue stores a lane's two adjacent
// columns with one 8-byte copy (pairedColumns); where it is odd, each
// element alone.
func TestTensorCoreContraction(t *testing.T) {
	for _, tc := range []struct {
		in         te.DType
		B, M, K, N int
		mma, async bool
		paired     bool
	}{
		{te.F16, 1, 64, 64, 64, true, true, true},
		{te.F16, 2, 40, 48, 24, true, false, true}, // K not a multiple of the staged 32
		{te.BF16, 1, 96, 32, 72, true, true, true}, // tails in M and N
		{te.F16, 2, 100, 96, 200, true, true, true},
		{te.F32, 1, 64, 40, 64, true, false, true},
		{te.F32, 3, 17, 8, 33, true, false, false}, // odd N: rows of odd length
		{te.F16, 1, 8, 64, 64, false, false, false},
		{te.F16, 1, 64, 8, 64, false, false, false},
	} {
		t.Run(fmt.Sprintf("%s/%dx%dx%dx%d", tc.in, tc.B, tc.M, tc.K, tc.N), func(t *testing.T) {
			p := halfMatmul(tc.in, tc.B, tc.M, tc.K, tc.N)
			m, err := Unfused(p, Options{})
			if err != nil {
				t.Fatal(err)
			}
			res := simulateMatmul(t, p, m, uint64(tc.M))
			total := res.Total()
			if (total.MMAs > 0) != tc.mma {
				t.Errorf("%d MMAs, want MMAs %v", total.MMAs, tc.mma)
			}
			if rep := report.Module(m, report.Config{}); rep.Total != total {
				t.Errorf("static report counts %v, the simulator %v", rep.Total, total)
			}
			async := false
			kir.WalkStmts(m.Kernels[0].Body, func(s kir.Stmt) bool {
				_, ok := s.(*kir.CopyAsync)
				async = async || ok
				return true
			})
			if async != tc.async {
				t.Errorf("cp.async staging %v, want %v", async, tc.async)
			}
			paired := false
			kir.WalkStmts(m.Kernels[0].Body, func(s kir.Stmt) bool {
				c, ok := s.(*kir.VecCopy)
				paired = paired || ok && c.Dst.Name == "y" && c.Bytes == 8
				return true
			})
			if paired != tc.paired {
				t.Errorf("paired epilogue stores %v, want %v", paired, tc.paired)
			}
		})
	}
}

// TestTF32DoubleRounding is TestTensorCoreContraction's TF32 contraction
// with seed 40, whose draw for w[24, 39], 0.7019042800353…, lies just
// below a TF32 tie and is that tie, 0x3f33b000, in f32. Fed as a float64,
// the reference rounded it to TF32 down while the simulator, given the
// f32 as a device is, rounded it up (away from zero): a TF32 unit, 2^-11,
// apart, in every row of column 39. simulateMatmul feeds f32 values.
func TestTF32DoubleRounding(t *testing.T) {
	p := halfMatmul(te.F32, 1, 64, 40, 64)
	m, err := Unfused(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	simulateMatmul(t, p, m, 40)
}

// simulateMatmul runs m, the lowering of halfMatmul's p, in the simulator
// with race detection on inputs drawn from seed (f32 values for f32
// inputs, as a device gets them), and checks y against the reference
// evaluator (see TestTensorCoreContraction for the tolerance).
func simulateMatmul(t *testing.T, p *te.Program, m *kir.Module, seed uint64) *sim.Result {
	t.Helper()
	r := rand.New(rand.NewPCG(7, seed))
	feeds := map[string]*te.Array{}
	for _, pt := range p.Placeholders() {
		a := te.NewArray(pt.DType, pt.Shape)
		for i := range a.Data {
			a.Data[i] = te.Round(pt.DType, 2*r.Float64()-1)
			if pt.DType == te.F32 { // f32 values, as the device gets them
				a.Data[i] = float64(float32(a.Data[i]))
			}
		}
		feeds[pt.Name] = a
	}
	want, err := te.Evaluate(p, feeds, te.EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(m, feeds, sim.Options{Race: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.RaceCount > 0 {
		t.Fatalf("%d races; first: %s", res.RaceCount, res.Races[0])
	}
	got, ref := res.Outputs["y"].Data, want["y"].Data
	scale := 0.0
	for _, v := range ref {
		scale = max(scale, math.Abs(v))
	}
	for i := range ref {
		if math.Abs(got[i]-ref[i]) > scale*0x1p-20 {
			t.Fatalf("y[%d] = %v, want %v", i, got[i], ref[i])
		}
	}
	return res
}

// TestTensorCoreBanks lowers tensor-core contractions with their operand
// tiles laid out as "Shared tiles" says and, through the unexported
// flatTiles, row-major, and checks the simulator's bank-conflict counts
// of the tiles xs and ys: none when rotated (ldmatrix, cp.async and
// element stores of f16 and bf16; TF32's element loads and stores), and
// some when row-major, where the 8 rows an ldmatrix phase reads share
// banks (4-way in 64-byte rows, 8-way in rows of 128 bytes or more); the
// static report predicts the kernel's wavefronts exactly.
func TestTensorCoreBanks(t *testing.T) {
	for _, tc := range []struct {
		in         te.DType
		B, M, K, N int
	}{
		{te.F16, 1, 64, 64, 64},  // cp.async, 64-byte rows of xs, 128 of ys
		{te.F16, 2, 40, 48, 24},  // element stores, 64-byte rows of ys
		{te.BF16, 1, 96, 32, 72}, // cp.async, tails in M and N
		{te.F16, 1, 64, 64, 200}, // ys in tiles of 64
		{te.F32, 1, 64, 40, 64},  // TF32: element loads, 256-byte rows of ys
	} {
		for _, flat := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/%dx%dx%dx%d/flat=%v", tc.in, tc.B, tc.M, tc.K, tc.N, flat), func(t *testing.T) {
				p := halfMatmul(tc.in, tc.B, tc.M, tc.K, tc.N)
				m, err := Unfused(p, Options{flatTiles: flat})
				if err != nil {
					t.Fatal(err)
				}
				st := simulateMatmul(t, p, m, uint64(tc.N)).Kernels[0]
				for _, a := range []string{"xs", "ys"} {
					b := st.ArrayBanks[a]
					if b.Wavefronts == 0 || (b.Conflicts > 0) != flat {
						t.Errorf("%s: %d wavefronts, %d bank conflicts", a, b.Wavefronts, b.Conflicts)
					}
				}
				if k := report.Module(m, report.Config{}).Kernels[0]; !k.BanksExact || k.Banks != st.Banks {
					t.Errorf("static report (exact %v): %+v, simulator: %+v", k.BanksExact, k.Banks, st.Banks)
				}
			})
		}
	}
}

// TestTuringTensorCores lowers TestTensorCoreContraction's f16
// contractions for the T4 (sm_75), unfused and fused: every MMA is an
// f16 m16n8k8, two for each m16n8k16 step (sm_75 has no m16n8k16), no
// operand is copied by cp.async (sm_75 has none; what sm_80 copies is a
// 16-byte register prefetch here), and the simulator, which lays out the
// m16n8k8 fragments as the ISA does, matches the reference.
func TestTuringTensorCores(t *testing.T) {
	t4, _ := gpu.Builtin("t4")
	for _, tc := range []struct{ B, M, K, N int }{{1, 64, 64, 64}, {2, 40, 48, 24}, {2, 100, 96, 200}} {
		p := halfMatmul(te.F16, tc.B, tc.M, tc.K, tc.N)
		a, err := analysis.Analyze(p, analysis.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, fused := range []bool{false, true} {
			t.Run(fmt.Sprintf("%dx%dx%dx%d/fused=%v", tc.B, tc.M, tc.K, tc.N, fused), func(t *testing.T) {
				var m *kir.Module
				if fused {
					pl, err := partition.Partition(a, t4, partition.Options{Split: true, Reuse: true})
					if err != nil {
						t.Fatal(err)
					}
					m, err = Fused(p, pl, FusedOptions{})
					if err != nil {
						t.Fatal(err)
					}
				} else {
					pl, err := partition.Partition(a, t4, partition.Options{Strategy: partition.PerTE})
					if err != nil {
						t.Fatal(err)
					}
					if m, err = Unfused(p, Options{Plan: pl}); err != nil {
						t.Fatal(err)
					}
				}
				mmas, wide := 0, 0
				for _, k := range m.Kernels {
					kir.WalkStmts(k.Body, func(s kir.Stmt) bool {
						switch s := s.(type) {
						case *kir.MMA:
							mmas++
							if s.Shape != kir.M16N8K8 || s.In != te.F16 {
								t.Errorf("mma.%s of %s on sm_75", s.Shape, s.In)
							}
						case *kir.CopyAsync, *kir.CommitGroup, *kir.WaitGroup:
							t.Errorf("cp.async on sm_75: %T", s)
						case *kir.VecCopy:
							if s.Dst.Space == kir.Shared && s.Size() == 16 {
								wide++
							}
						}
						return true
					})
				}
				if mmas == 0 || mmas%2 != 0 {
					t.Errorf("%d m16n8k8 MMAs, want an even number above 0", mmas)
				}
				if tc.K%32 == 0 && wide == 0 {
					t.Error("no 16-byte stores of prefetched operands into shared memory")
				}
				res := simulateMatmul(t, p, m, uint64(tc.M))
				if rep := report.Module(m, report.Config{}); rep.Total != res.Total() {
					t.Errorf("static report counts %v, the simulator %v", rep.Total, res.Total())
				}
			})
		}
	}
}
