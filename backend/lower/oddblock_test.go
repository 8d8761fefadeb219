package lower_test

import (
	"fmt"
	"testing"

	"tec/backend/lower"
	"tec/backend/sim"
	"tec/gpu"
	"tec/internal/numeric"
	tb "tec/internal/testkit/tebuild"
	"tec/pipeline"
	"tec/te"
)

// rowSums is issue 17's F3: s[i] = sum[k](a[i, k]) over rows of 300, a
// block per row, whose partials a tree combines in shared memory.
func rowSums() *te.Program {
	b := tb.New("rowsums")
	a := b.Input("a", 2, 300)
	s := b.Compute("s", tb.Shape(2), func(ax []te.Index) te.Expr {
		return tb.Reduce(te.Sum, "k", 300, func(k te.Index) te.Expr { return tb.Ld(a, ax[0], k) })
	})
	return b.Program(s)
}

// matVecRows is a matrix-vector product of two rows, whose threads split
// K and combine their sums by a tree over the split.
func matVecRows() *te.Program {
	b := tb.New("matvec")
	x := b.Input("x", 2, 64)
	w := b.Param("w", 64, 48)
	return b.Program(b.Matmul("y", x, w))
}

// matmulTiles is a matmul with tiles along both sides and tails.
func matmulTiles() *te.Program {
	b := tb.New("matmul")
	x := b.Input("x", 20, 24)
	w := b.Param("w", 24, 40)
	return b.Program(b.Matmul("y", x, w))
}

// oddGPU returns the small GPU model allowing at most threads threads per
// block.
func oddGPU(threads int) gpu.Model {
	g, _ := gpu.Builtin("small")
	g.Name = fmt.Sprintf("odd%d", threads)
	g.MaxThreadsPerBlock, g.MaxThreadsPerSM, g.MaxBlocksPerSM = threads, 2048, 32
	return g
}

// TestOddBlockSizes checks that every level computes the reference's
// result on GPUs whose block limit is not a power of two, so that block
// tree reductions, split matrix-vector sums and contraction tiles run on
// blocks of 96, 160, 192, 48 or 33 threads (issue 17, F3: the halving
// 48, 24, 12, 6, 3, 1 dropped partial 2), and that the kernels of -O0 to
// -O2 keep to the GPU's block limit too (F8: 16 threads allowed, 256
// used).
func TestOddBlockSizes(t *testing.T) {
	programs := []*te.Program{rowSums(), rowStats(), matVecRows(), matmulTiles()}
	for _, p := range programs {
		in := randomFeeds(p)
		want, err := te.Evaluate(p, in, te.EvalOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, threads := range []int{96, 160, 192, 48, 33, 16} {
			for level := 0; level <= pipeline.MaxLevel; level++ {
				t.Run(fmt.Sprintf("%s/%d/O%d", p.Name, threads, level), func(t *testing.T) {
					g := oddGPU(threads)
					res, err := pipeline.Build(p, pipeline.Options{Level: level, GPU: g})
					if err != nil {
						t.Fatal(err)
					}
					// F8: the kernels of every level keep to the GPU's limits.
					for _, k := range res.Module.Kernels {
						if k.Block > threads || k.SharedBytes() > int64(g.SharedPerBlock) {
							t.Errorf("kernel %s: %d threads and %d B shared memory per block, over %s's %d and %d B",
								k.Name, k.Block, k.SharedBytes(), g.Name, threads, g.SharedPerBlock)
						}
					}
					out, err := sim.Run(res.Module, in, sim.Options{Race: true})
					if err != nil {
						t.Fatal(err)
					}
					if out.RaceCount > 0 {
						t.Errorf("%d races; first %s", out.RaceCount, out.Races[0])
					}
					for _, o := range p.Outputs {
						mm, err := numeric.Compare(out.Outputs[o.Name], want[o.Name], numeric.Tolerance{Rtol: 1e-4, Atol: 1e-5})
						if err != nil || mm != nil {
							t.Errorf("output %s: %v %v", o.Name, err, mm)
						}
					}
				})
			}
		}
	}
}

// TestLaunchCheckCatchesF8 shows that the simulator's launch check finds
// issue 17's F8 by itself: per-TE kernels lowered without the plan use
// 256-thread blocks, which a GPU allowing 16 refuses; lowered with the
// plan, they run.
func TestLaunchCheckCatchesF8(t *testing.T) {
	p := rowSums()
	in := randomFeeds(p)
	g := oddGPU(16)
	m, err := lower.Unfused(p, lower.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m.GPU = &g
	const want = "sim: kernel s: launch of 256 threads per block, more than the 16 of GPU odd16"
	if _, err := sim.Run(m, in, sim.Options{}); err == nil || err.Error() != want {
		t.Errorf("without the plan: err = %v, want %s", err, want)
	}
	res, err := pipeline.Build(p, pipeline.Options{Level: 0, GPU: g})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(res.Module, in, sim.Options{}); err != nil {
		t.Errorf("with the plan: %v", err)
	}
}

// TestShuffledCombines checks that a block-per-row reduction and a
// matrix-vector product's split sums are combined with warp shuffles at
// -O4 on blocks of whole warps (96 and 256 threads), and still equal the
// reference, race-free, in the simulator.
func TestShuffledCombines(t *testing.T) {
	for _, p := range []*te.Program{rowSums(), matVecRows()} {
		in := randomFeeds(p)
		want, err := te.Evaluate(p, in, te.EvalOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, threads := range []int{96, 256} {
			t.Run(fmt.Sprintf("%s/%d", p.Name, threads), func(t *testing.T) {
				res, err := pipeline.Build(p, pipeline.Options{Level: pipeline.MaxLevel, GPU: oddGPU(threads)})
				if err != nil {
					t.Fatal(err)
				}
				out, err := sim.Run(res.Module, in, sim.Options{Race: true})
				if err != nil {
					t.Fatal(err)
				}
				if out.RaceCount > 0 {
					t.Errorf("%d races; first %s", out.RaceCount, out.Races[0])
				}
				if out.Total().Shuffles == 0 {
					t.Errorf("no shuffles:\n%s", res.Module)
				}
				for _, o := range p.Outputs {
					mm, err := numeric.Compare(out.Outputs[o.Name], want[o.Name], numeric.Tolerance{Rtol: 1e-4, Atol: 1e-5})
					if err != nil || mm != nil {
						t.Errorf("output %s: %v %v", o.Name, err, mm)
					}
				}
			})
		}
	}
}
