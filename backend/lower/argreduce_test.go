package lower

import (
	"fmt"
	"math"
	"testing"

	"tec/analysis"
	"tec/backend/kir"
	"tec/backend/sim"
	"tec/gpu"
	"tec/partition"
	"tec/schedule"
	"tec/te"
)

// argProgram is best[r] = argmax[k](x[r, k]) and worst[r] = argmin[k](x[r,
// k]) over rows of n values of type dt, reduced with a 2-D axis (k over [a,
// b], a × b = n) when split, to check row-major positions.
func argProgram(rows, n int, dt te.DType, split int) *te.Program {
	p := &te.Program{Name: "arg"}
	x := &te.Tensor{Name: "x", Kind: te.Input, DType: dt, Shape: []int{rows, n}, ID: 0}
	p.Tensors = append(p.Tensors, x)
	for i, op := range []te.ReduceOp{te.Argmax, te.Argmin} {
		t := &te.Tensor{Name: []string{"best", "worst"}[i], Kind: te.Compute, DType: te.I32, Shape: []int{rows}, ID: i + 1}
		r := te.NewVar("r", rows)
		t.Axes = []*te.Var{r}
		var body te.Expr
		if split > 1 {
			a, b := te.NewVar("a", n/split), te.NewVar("b", split)
			k := te.VarIndex(a).Scale(split).Add(te.VarIndex(b))
			body = &te.Reduce{Op: op, Axes: []*te.Var{a, b}, Body: &te.Load{Tensor: x, Index: []te.Index{te.VarIndex(r), k}}}
		} else {
			k := te.NewVar("k", n)
			body = &te.Reduce{Op: op, Axes: []*te.Var{k}, Body: &te.Load{Tensor: x, Index: []te.Index{te.VarIndex(r), te.VarIndex(k)}}}
		}
		t.Body = body
		t.Span = te.Span{File: "arg.te", Line: 2 + i, Col: 3}
		p.Tensors = append(p.Tensors, t)
		p.Outputs = append(p.Outputs, t)
	}
	return p
}

// argModule lowers p's compute tensors a block per output, as a fused
// kernel's stage of threads threads (any number) does.
func argModule(t *testing.T, p *te.Program, threads int) *kir.Module {
	t.Helper()
	l := newLowerer(p, Options{BlockSize: 256})
	l.threads = threads
	for _, x := range p.Tensors {
		if x.Kind == te.Compute {
			l.m.Kernels = append(l.m.Kernels, l.tensor(x))
		}
	}
	if err := kir.Verify(l.m); err != nil {
		t.Fatal(err)
	}
	return l.m
}

// argWant is the serial rule: the first value that is not NaN, then only
// strictly better ones; 0 when every value is NaN.
func argWant(row []float64, less bool) int {
	at, found := 0, false
	for i, v := range row {
		if math.IsNaN(v) {
			continue
		}
		if !found || less && v < row[at] || !less && v > row[at] {
			at, found = i, true
		}
	}
	return at
}

// TestArgBlockReduce checks the block-parallel argmax and argmin against
// the serial rule for blocks in one warp, with a partial warp and in many
// warps (sizes that are not powers of two among them), with ties inside a
// thread, across warps and across the threads of a block, NaNs, rows all
// NaN and rows of -inf, without races.
func TestArgBlockReduce(t *testing.T) {
	const rows = 7
	for _, n := range []int{64, 100, 1000, 4099} {
		for _, block := range []int{16, 32, 48, 96, 100, 256, 1024} {
			for _, dt := range []te.DType{te.F32, te.I32} {
				split := 1
				if n%4 == 0 {
					split = 4
				}
				t.Run(fmt.Sprintf("n%d/block%d/%v", n, block, dt), func(t *testing.T) {
					m := argModule(t, argProgram(rows, n, dt, split), block)
					for _, k := range m.Kernels {
						if k.Block != block || len(k.Shared) == 0 {
							t.Fatalf("kernel %s: %d threads, shared %v: not the block reduction", k.Name, k.Block, k.Shared)
						}
					}
					x := argRows(rows, n, dt)
					res, err := sim.Run(m, map[string]*te.Array{"x": x}, sim.Options{Race: true})
					if err != nil {
						t.Fatal(err)
					}
					if res.RaceCount > 0 {
						t.Fatalf("%d races, the first: %s", res.RaceCount, res.Races[0])
					}
					if res.Total().Shuffles == 0 && m.Kernels[0].Block >= 32 {
						t.Errorf("no shuffles with %d threads", m.Kernels[0].Block)
					}
					checkArgs(t, res, x)
				})
			}
		}
	}
}

// argRows returns the 7 rows of n values of type dt that the tests of
// argmax and argmin read: ties everywhere, ties across warps, blocks and
// chunks, the best at the last position alone, and for f32 NaNs, a row
// of NaNs and a row of -inf after two NaNs.
func argRows(rows, n int, dt te.DType) *te.Array {
	x := te.NewArray(dt, []int{rows, n})
	row := func(r int) []float64 { return x.Data[r*n : (r+1)*n] }
	for i := range row(0) {
		row(0)[i] = 5 // ties everywhere: 0
		row(1)[i] = float64(i % 3)
		row(2)[i] = float64((i * 7919) % 13) // ties across warps and blocks
		row(3)[i] = -float64(i % 5)
		row(4)[i] = 0
	}
	row(1)[n-1] = 9 // the last position alone
	row(4)[n/2], row(4)[n-3], row(4)[33] = -2, -2, 7
	if dt == te.F32 {
		for i := range row(5) {
			row(5)[i] = math.NaN()
			row(6)[i] = math.Inf(-1)
		}
		row(6)[0], row(6)[1] = math.NaN(), math.NaN() // the first -inf is at 2
		row(2)[0], row(2)[40] = math.NaN(), math.NaN()
		row(4)[n-2] = math.NaN()
	}
	return x
}

// checkArgs compares the outputs best and worst of argProgram, computed
// from x, with the serial rule.
func checkArgs(t *testing.T, res *sim.Result, x *te.Array) {
	t.Helper()
	rows, n := x.Shape[0], x.Shape[1]
	for i, name := range []string{"best", "worst"} {
		for r := range rows {
			want := argWant(x.Data[r*n:(r+1)*n], i == 1)
			if got := int(res.Outputs[name].Data[r]); got != want {
				t.Errorf("%s[%d] = %d, want %d", name, r, got, want)
			}
		}
	}
}

// TestArgSplitReduce checks argmax and argmin split across blocks (rows
// too few to fill an H100, long enough that the split pays): f32 and i32
// values read with 16-byte loads, and a position at a time where they
// cannot be (a length that is not a multiple of 4, a 2-D axis, a block
// whose 16-byte pass would leave chunks empty), against the serial rule
// with ties inside a chunk and across chunks, NaNs, rows all NaN and rows
// of -inf, race-free, on grids that give a block one tile, several, or
// all of them, and the same result on every grid.
func TestArgSplitReduce(t *testing.T) {
	for _, tt := range []struct {
		n, split int
		dt       te.DType
		vec      bool
	}{
		{20000, 1, te.F32, true},
		{20000, 1, te.I32, true},
		{20001, 1, te.F32, false},
		{20000, 4, te.F32, false},
	} {
		t.Run(fmt.Sprintf("n%d/split%d/%v", tt.n, tt.split, tt.dt), func(t *testing.T) {
			const rows = 7
			p := argProgram(rows, tt.n, tt.dt, tt.split)
			a, err := analysis.Analyze(p, analysis.Options{})
			if err != nil {
				t.Fatal(err)
			}
			g, _ := gpu.Builtin("h100")
			pl, err := partition.Partition(a, g, partition.Options{Split: true, Reuse: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"best", "worst"} {
				if s := pl.Schedules[p.Lookup(name)]; s.Kind != schedule.SplitReduce {
					t.Fatalf("%s: %s, want a split reduction", name, s)
				}
			}
			m, err := Fused(p, pl, FusedOptions{})
			if err != nil {
				t.Fatal(err)
			}
			vecs, atomics := 0, 0
			for _, k := range m.Kernels {
				kir.WalkStmts(k.Body, func(s kir.Stmt) bool {
					switch s.(type) {
					case *kir.VecCopy:
						vecs++
					case *kir.Atomic:
						atomics++
					}
					return true
				})
			}
			if (vecs > 0) != tt.vec || atomics > 0 {
				t.Errorf("%d 16-byte loads, %d atomics; want loads %v, no atomics", vecs, atomics, tt.vec)
			}
			x := argRows(rows, tt.n, tt.dt)
			for _, blocks := range []int{1, 5, 1 << 20} {
				res, err := sim.Run(m, map[string]*te.Array{"x": x}, sim.Options{Race: true, ResidentBlocks: blocks})
				if err != nil {
					t.Fatal(err)
				}
				if res.RaceCount > 0 {
					t.Fatalf("%d blocks: %d races, the first: %s", blocks, res.RaceCount, res.Races[0])
				}
				checkArgs(t, res, x)
			}
		})
	}
}
