package lower_test

import (
	"fmt"
	"testing"

	"tec/backend/kir"
	"tec/backend/sim"
	"tec/internal/numeric"
	tb "tec/internal/testkit/tebuild"
	"tec/te"
)

// weightsByRows is a decode step's projection: y[r, n] = Σ_k x[r, k]·w[n,
// k] with rows x and a weight laid out [out, in], as Hugging Face's are,
// both of type dt: contiguous along k, 16 bytes at a time.
func weightsByRows(dt te.DType, rows, k, n int) *te.Program {
	b := tb.New(fmt.Sprintf("proj%d", rows))
	x := b.InputOf("x", dt, rows, k)
	w := b.ParamOf("w", dt, n, k)
	y := b.Compute("y", tb.Shape(rows, n), func(ax []te.Index) te.Expr {
		return tb.Reduce(te.Sum, "k", k, func(kk te.Index) te.Expr {
			return tb.Bin(te.Mul, tb.Ld(x, ax[0], kk), tb.Ld(w, ax[1], kk))
		})
	})
	return b.Program(y)
}

// mixedWeights is weightsByRows with rows x in f32 and weights w in bf16:
// the rows staged 4 elements a load, the weights read 8 a load.
func mixedWeights(rows, k, n int) *te.Program {
	b := tb.New("mixed")
	x := b.InputOf("x", te.F32, rows, k)
	w := b.ParamOf("w", te.BF16, n, k)
	y := b.Compute("y", tb.Shape(rows, n), func(ax []te.Index) te.Expr {
		return tb.Reduce(te.Sum, "k", k, func(kk te.Index) te.Expr {
			return tb.Bin(te.Mul, tb.Ld(x, ax[0], kk), tb.Ld(w, ax[1], kk))
		})
	})
	return b.Program(y)
}

// batchedWeights is y[b, n] = Σ_k x[b, k]·w[b, n, k]: a weight per batch
// entry, so that each entry's tiles stage their own row.
func batchedWeights(dt te.DType, batch, k, n int) *te.Program {
	b := tb.New(fmt.Sprintf("batched%d", batch))
	x := b.InputOf("x", dt, batch, k)
	w := b.ParamOf("w", dt, batch, n, k)
	y := b.Compute("y", tb.Shape(batch, n), func(ax []te.Index) te.Expr {
		return tb.Reduce(te.Sum, "k", k, func(kk te.Index) te.Expr {
			return tb.Bin(te.Mul, tb.Ld(x, ax[0], kk), tb.Ld(w, ax[0], ax[1], kk))
		})
	})
	return b.Program(y)
}

// TestMatVecLanes checks the matrix-vector tiles whose column's threads
// are consecutive lanes of a warp (schedule.MatVec.KLanes) on the GPU
// models the decode step is planned for: the plan lays them so, the
// stage has no block barrier in its tile loop but the one before each
// entry's staging (its sums combined by shuffles), its staged rows are
// read and written without a bank conflict, and the module computes the
// reference's answer, race-free, with bf16 and f32 weights (vectors of 8
// and of 4 elements) and with a weight per batch entry (a block's tiles
// cross entries, each staged behind the barrier before it). Where the GPU
// has cp.async the weights stream through a ring (schedule.MatVec.Ring):
// the stage copies them with cp.async and loads none into registers, and
// the simulator's three resident blocks each take many tiles, so that
// each tile's copies of the next one's first vectors are checked too; on
// the T4 they are loaded into registers. A row too long for shared
// memory (8,192 f32 for bf16 weights, an FFN's down projection: staged 4
// elements a load for vectors of 8, each warp's stores to distinct banks)
// is staged and summed in chunks, behind a barrier each (and one before
// each tile), the ring running on across them.
func TestMatVecLanes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		p        *te.Program
		gpu      string
		ring     bool
		chunks   int // of K staged in turn (1: all of it)
		barriers int // in the stage's code
		atol     float64
	}{
		{"bf16", weightsByRows(te.BF16, 1, 512, 4096), "h100", true, 1, 2, 1e-5},
		{"f32", weightsByRows(te.F32, 1, 512, 4096), "h100", true, 1, 2, 1e-5},
		{"bf16 on the a100", weightsByRows(te.BF16, 1, 256, 8192), "a100", true, 1, 2, 1e-5},
		{"batched", batchedWeights(te.BF16, 3, 256, 2048), "h100", true, 1, 2, 1e-5},
		{"f16 on the t4", weightsByRows(te.F16, 1, 512, 4096), "t4", false, 1, 2, 1e-5},
		{"rows in chunks", mixedWeights(1, 8192, 1024), "a100", true, 2, 3, 1e-4}, // sums of 8,192 terms up to 1, in another order; the A100 for half the H100's columns (and memory)
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.p
			m, pl := fusedModule(t, p, tc.gpu, false)
			s := pl.Schedules[p.Outputs[0]]
			if s.MatVec == nil || !s.MatVec.KLanes {
				t.Fatalf("y is not a matrix-vector tile with a column's threads on a warp's lanes:\n%s", pl)
			}
			if got := s.MatVec.Ring > 0; got != tc.ring {
				t.Fatalf("y streams its weights through a ring: %v, want %v:\n%s", got, tc.ring, pl)
			}
			if got := s.K / s.MatVec.StagedK(s.K); got != tc.chunks {
				t.Fatalf("y stages its rows in %d chunks, want %d:\n%s", got, tc.chunks, pl)
			}
			copies, vec, _ := ringCopies(m, "y", "w")
			if tc.ring && (copies == 0 || vec != 0) || !tc.ring && copies != 0 {
				t.Errorf("stage y copies w with %d cp.async and %d 16-byte loads into registers", copies, vec)
			}
			var barriers int
			for _, k := range m.Kernels {
				kir.WalkStmts(k.Body, func(x kir.Stmt) bool {
					if st, ok := x.(*kir.Stage); ok && st.Name == "y" {
						kir.WalkStmts(st.Body, func(y kir.Stmt) bool {
							if _, ok := y.(*kir.SyncThreads); ok {
								barriers++
							}
							return true
						})
						return false
					}
					return true
				})
			}
			if barriers != tc.barriers {
				t.Errorf("stage y has %d block barriers, want %d (before and after each entry's or chunk's staging, and before each tile's where it stages chunks)", barriers, tc.barriers)
			}
			want, res := runRaceFree(t, p, m, randomFeeds(p))
			for i, k := range m.Kernels {
				for name, b := range res.Kernels[i].ArrayBanks {
					if b.Conflicts != 0 {
						t.Errorf("kernel %s, shared %s: %d bank conflicts in %d wavefronts", k.Name, name, b.Conflicts, b.Wavefronts)
					}
				}
			}
			mm, err := numeric.Compare(res.Outputs["y"], want["y"], numeric.Tolerance{Rtol: 1e-4, Atol: tc.atol})
			if err != nil || mm != nil {
				t.Errorf("y: %v %v", err, mm)
			}
		})
	}
}

// ringCopies counts, in the stages of m named stage, the cp.async copies
// of the global buffer input and its 16-byte loads into registers, and
// returns the stage's waits for copies (to plant a fault in).
func ringCopies(m *kir.Module, stage, input string) (copies, vec int, waits []*kir.WaitGroup) {
	for _, k := range m.Kernels {
		kir.WalkStmts(k.Body, func(x kir.Stmt) bool {
			st, ok := x.(*kir.Stage)
			if !ok || st.Name != stage {
				return true
			}
			kir.WalkStmts(st.Body, func(y kir.Stmt) bool {
				switch y := y.(type) {
				case *kir.CopyAsync:
					if y.Src.Name == input {
						copies++
					}
				case *kir.VecCopy:
					if y.Src.Name == input {
						vec++
					}
				case *kir.WaitGroup:
					waits = append(waits, y)
				}
				return true
			})
			return false
		})
	}
	return copies, vec, waits
}

// TestMatVecRingFault checks that the simulator sees a weight ring read
// too early: with each wait for the oldest copy loosened by one group,
// the vector a thread sums is still in flight, and the run reports it.
func TestMatVecRingFault(t *testing.T) {
	p := weightsByRows(te.BF16, 1, 512, 4096)
	m, pl := fusedModule(t, p, "h100", false)
	depth := pl.Schedules[p.Outputs[0]].MatVec.Ring
	_, _, waits := ringCopies(m, "y", "w")
	planted := 0
	for _, w := range waits {
		if w.N == depth-1 {
			w.N = depth
			planted++
		}
	}
	if depth == 0 || planted == 0 {
		t.Fatalf("no ring to plant a fault in (depth %d, %d waits)", depth, len(waits))
	}
	res, err := sim.Run(m, randomFeeds(p), sim.Options{Race: true, ResidentBlocks: 3})
	if err == nil && res.RaceCount == 0 {
		t.Fatal("the simulator ran a ring whose threads read their vectors before waiting for them, and reported nothing")
	}
	if err != nil {
		t.Logf("reported: %v", err)
	} else {
		t.Logf("reported: %d races; first %s", res.RaceCount, res.Races[0])
	}
}
