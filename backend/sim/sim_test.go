package sim

import (
	"slices"
	"strings"
	"testing"

	"tec/backend/kir"
	"tec/gpu"
	"tec/te"
)

// rowSum is a block-per-row sum of x[rows, n] with a shared-memory tree
// reduction; barrier says whether the tree's barriers are there.
func rowSum(rows, n, threads int, barrier bool) *kir.Module {
	x := &kir.Buffer{Name: "x", Role: kir.Input, DType: te.F32, Shape: []int{rows, n}}
	y := &kir.Buffer{Name: "y", Role: kir.Output, DType: te.F32, Shape: []int{rows}}
	red := &kir.Buffer{Name: "red", Space: kir.Shared, DType: te.F32, Shape: []int{threads}}
	r, k := kir.NewVar("r", te.I32), kir.NewVar("k", te.I32)
	acc, tid := kir.NewVar("acc", te.F32), kir.NewVar("tid", te.I32)
	sync := func() []kir.Stmt {
		if barrier {
			return []kir.Stmt{&kir.SyncThreads{}}
		}
		return nil
	}
	body := []kir.Stmt{
		&kir.Let{Var: acc, Value: kir.F(0)},
		&kir.For{Var: k, Kind: kir.BlockStride, Lo: kir.I(0), Hi: kir.I(n), Body: []kir.Stmt{
			&kir.Assign{Var: acc, Value: kir.Add(acc, kir.Ld(x, kir.Add(kir.Mul(r, kir.I(n)), k)))},
		}},
		&kir.Store{Buf: red, Index: tid, Value: acc},
		&kir.SyncThreads{},
	}
	for s := threads / 2; s > 0; s /= 2 {
		body = append(body, &kir.If{Cond: kir.Lt(tid, kir.I(s)), Then: []kir.Stmt{
			&kir.Store{Buf: red, Index: tid, Value: kir.Add(kir.Ld(red, tid), kir.Ld(red, kir.Add(tid, kir.I(s))))},
		}})
		body = append(body, sync()...)
	}
	body = append(body, &kir.If{Cond: kir.Eq(tid, kir.I(0)), Then: []kir.Stmt{&kir.Store{Buf: y, Index: r, Value: kir.Ld(red, kir.I(0))}}})
	body = append(body, &kir.SyncThreads{})
	return &kir.Module{
		Name: "rowsum", Buffers: []*kir.Buffer{x, y}, Outputs: []*kir.Buffer{y},
		Kernels: []*kir.Kernel{{
			Name: "y", Grid: kir.Grid{Blocks: 2}, Block: threads,
			Params: []*kir.Buffer{x, y}, Shared: []*kir.Buffer{red},
			Body: []kir.Stmt{
				&kir.Let{Var: tid, Value: kir.Tid()},
				&kir.Stage{Name: "y", Body: []kir.Stmt{
					&kir.For{Var: r, Kind: kir.GridStride, Lo: kir.I(0), Hi: kir.I(rows), Body: body},
				}},
			},
		}},
	}
}

// twoStage is a persistent kernel: stage a writes a[i] = x[i] * 2, stage b
// reads b[i] = a[i] + a[n-1-i], written by another block; sync says whether
// a grid sync separates them.
func twoStage(n int, sync bool) *kir.Module {
	x := &kir.Buffer{Name: "x", Role: kir.Input, DType: te.F32, Shape: []int{n}}
	a := &kir.Buffer{Name: "a", Role: kir.Temp, DType: te.F32, Shape: []int{n}}
	out := &kir.Buffer{Name: "b", Role: kir.Output, DType: te.F32, Shape: []int{n}}
	i, j := kir.NewVar("i", te.I32), kir.NewVar("i", te.I32)
	body := []kir.Stmt{
		&kir.Stage{Name: "a", Body: []kir.Stmt{
			&kir.For{Var: i, Kind: kir.ThreadStride, Lo: kir.I(0), Hi: kir.I(n), Body: []kir.Stmt{
				&kir.Store{Buf: a, Index: i, Value: kir.Mul(kir.Ld(x, i), kir.F(2))},
			}},
		}},
	}
	if sync {
		body = append(body, &kir.GridSync{})
	}
	body = append(body, &kir.Stage{Name: "b", Body: []kir.Stmt{
		&kir.For{Var: j, Kind: kir.ThreadStride, Lo: kir.I(0), Hi: kir.I(n), Body: []kir.Stmt{
			&kir.Store{Buf: out, Index: j, Value: kir.Add(kir.Ld(a, j), kir.Ld(a, kir.Sub(kir.I(n-1), j)))},
		}},
	}})
	return &kir.Module{
		Name: "twostage", Buffers: []*kir.Buffer{x, a, out}, Outputs: []*kir.Buffer{out},
		Kernels: []*kir.Kernel{{Name: "fused", Grid: kir.Grid{Resident: true}, Block: 4, Params: []*kir.Buffer{x, a, out}, Body: body}},
	}
}

// inPlace reads an input updated in place, b[j] = x[n-1-j], and then
// writes it, x[i] = i, in a later stage of the same persistent kernel,
// with or without a grid sync between the read and the write.
func inPlace(n int, sync bool) *kir.Module {
	x := &kir.Buffer{Name: "x", Role: kir.Input, DType: te.F32, Shape: []int{n}, InPlace: true}
	out := &kir.Buffer{Name: "b", Role: kir.Output, DType: te.F32, Shape: []int{n}}
	i, j := kir.NewVar("i", te.I32), kir.NewVar("j", te.I32)
	body := []kir.Stmt{&kir.Stage{Name: "b", Body: []kir.Stmt{
		&kir.For{Var: j, Kind: kir.ThreadStride, Lo: kir.I(0), Hi: kir.I(n), Body: []kir.Stmt{
			&kir.Store{Buf: out, Index: j, Value: kir.Ld(x, kir.Sub(kir.I(n-1), j))},
		}},
	}}}
	if sync {
		body = append(body, &kir.GridSync{})
	}
	body = append(body, &kir.Stage{Name: "x/update", Body: []kir.Stmt{
		&kir.For{Var: i, Kind: kir.ThreadStride, Lo: kir.I(0), Hi: kir.I(n), Body: []kir.Stmt{
			&kir.Store{Buf: x, Index: i, Value: &kir.Cast{To: te.F32, X: i}},
		}},
	}})
	return &kir.Module{
		Name: "inplace", Buffers: []*kir.Buffer{x, out}, Outputs: []*kir.Buffer{x, out},
		Kernels: []*kir.Kernel{{Name: "fused", Grid: kir.Grid{Resident: true}, Block: 4, Params: []*kir.Buffer{x, out}, Body: body}},
	}
}

// total sums x[n] into y[0] by every thread, atomically or not.
func total(n int, atomic bool) *kir.Module {
	x := &kir.Buffer{Name: "x", Role: kir.Input, DType: te.F32, Shape: []int{n}}
	y := &kir.Buffer{Name: "y", Role: kir.Output, DType: te.F32, Shape: []int{1}}
	i := kir.NewVar("i", te.I32)
	var acc kir.Stmt = &kir.Store{Buf: y, Index: kir.I(0), Value: kir.Add(kir.Ld(y, kir.I(0)), kir.Ld(x, i))}
	if atomic {
		acc = &kir.Atomic{Op: kir.AtomicAdd, Buf: y, Index: kir.I(0), Value: kir.Ld(x, i)}
	}
	tid := kir.NewVar("t", te.I32)
	return &kir.Module{
		Name: "total", Buffers: []*kir.Buffer{x, y}, Outputs: []*kir.Buffer{y},
		Kernels: []*kir.Kernel{{
			Name: "sum", Grid: kir.Grid{Resident: true}, Block: 8, Params: []*kir.Buffer{x, y},
			Body: []kir.Stmt{
				&kir.Stage{Name: "zero", Body: []kir.Stmt{
					&kir.Let{Var: tid, Value: kir.Add(kir.Mul(kir.Bid(), kir.Bdim()), kir.Tid())},
					&kir.If{Cond: kir.Eq(tid, kir.I(0)), Then: []kir.Stmt{&kir.Store{Buf: y, Index: kir.I(0), Value: kir.F(0)}}},
				}},
				&kir.GridSync{},
				&kir.Stage{Name: "y", Body: []kir.Stmt{
					&kir.For{Var: i, Kind: kir.ThreadStride, Lo: kir.I(0), Hi: kir.I(n), Body: []kir.Stmt{acc}},
				}},
			},
		}},
	}
}

// partialShared is a kernel of 4 threads in which threads 0 to 2 fill
// red[tid] and every thread then reads red[tid]: thread 3 reads an element
// nobody wrote.
func partialShared() *kir.Module {
	x := &kir.Buffer{Name: "x", Role: kir.Input, DType: te.F32, Shape: []int{4}}
	y := &kir.Buffer{Name: "y", Role: kir.Output, DType: te.F32, Shape: []int{4}}
	red := &kir.Buffer{Name: "red", Space: kir.Shared, DType: te.F32, Shape: []int{4}}
	tid := kir.NewVar("tid", te.I32)
	return &kir.Module{
		Name: "partial", Buffers: []*kir.Buffer{x, y}, Outputs: []*kir.Buffer{y},
		Kernels: []*kir.Kernel{{
			Name: "y", Grid: kir.Grid{Blocks: 1}, Block: 4, Params: []*kir.Buffer{x, y}, Shared: []*kir.Buffer{red},
			Body: []kir.Stmt{
				&kir.Let{Var: tid, Value: kir.Tid()},
				&kir.Stage{Name: "y", Body: []kir.Stmt{
					&kir.If{Cond: kir.Lt(tid, kir.I(3)), Then: []kir.Stmt{&kir.Store{Buf: red, Index: tid, Value: kir.Ld(x, tid)}}},
					&kir.SyncThreads{},
					&kir.Store{Buf: y, Index: tid, Value: kir.Ld(red, tid)},
				}},
			},
		}},
	}
}

// halfWritten is twoStage with a grid sync whose stage a writes only the
// first half of its temporary: stage b reads the other half unwritten.
func halfWritten(n int) *kir.Module {
	m := twoStage(n, true)
	st := m.Kernels[0].Body[0].(*kir.Stage)
	st.Body[0].(*kir.For).Hi = kir.I(n / 2)
	return m
}

func iota(dt te.DType, shape ...int) *te.Array {
	a := te.NewArray(dt, shape)
	for i := range a.Data {
		a.Data[i] = float64(i%7) - 2
	}
	return a
}

func TestRaces(t *testing.T) {
	tests := []struct {
		name  string
		m     *kir.Module
		feeds map[string]*te.Array
		want  string // "" for no race
		out   []float64
	}{
		{"rowsum", rowSum(3, 10, 8, true), map[string]*te.Array{"x": iota(te.F32, 3, 10)}, "", []float64{4, 13, 8}},
		{"rowsum without barrier", rowSum(3, 10, 8, false), map[string]*te.Array{"x": iota(te.F32, 3, 10)},
			"kernel y, stage y: race on shared red[", nil},
		{"two stages", twoStage(64, true), map[string]*te.Array{"x": iota(te.F32, 64)}, "", nil},
		{"two stages without grid sync", twoStage(64, false), map[string]*te.Array{"x": iota(te.F32, 64)},
			"kernel fused, stage a: race on global a[8]: read by block 1 thread 3 (stage b), then write by block 2 thread 0", nil},
		{"in place after a grid sync", inPlace(64, true), map[string]*te.Array{"x": iota(te.F32, 64)}, "", []float64{0, 1, 2, 3}},
		{"in place without grid sync", inPlace(64, false), map[string]*te.Array{"x": iota(te.F32, 64)},
			"kernel fused, stage x/update: race on global x[", nil},
		{"atomic sum", total(100, true), map[string]*te.Array{"x": iota(te.F32, 100)}, "", []float64{sumIota(100)}},
		{"non-atomic sum", total(100, false), map[string]*te.Array{"x": iota(te.F32, 100)},
			"kernel sum, stage y: race on global y[0]: read by block 0 thread 7, then write by block 0 thread 0", nil},
		{"uninitialised shared read", partialShared(), map[string]*te.Array{"x": iota(te.F32, 4)},
			"kernel y, stage y: uninitialised read of shared red[3] by block 0 thread 3: no thread of the block has written it", nil},
		{"uninitialised workspace read", halfWritten(64), map[string]*te.Array{"x": iota(te.F32, 64)},
			"kernel fused, stage b: uninitialised read of workspace a[32] by block 0 thread 0: no thread of the run has written it", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Run(tt.m, tt.feeds, Options{Race: true, MaxRaces: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			found := slices.ContainsFunc(res.Races, func(r Race) bool { return strings.Contains(r.String(), tt.want) })
			switch {
			case tt.want == "" && res.RaceCount > 0:
				t.Errorf("%d races, first: %s", res.RaceCount, res.Races[0])
			case tt.want != "" && res.RaceCount == 0:
				t.Errorf("no race found, want %q", tt.want)
			case tt.want != "" && !found:
				t.Errorf("races %q\nwant one containing %q", res.Races, tt.want)
			}
			if tt.out != nil {
				got := res.Outputs[tt.m.Outputs[0].Name].Data
				for i, w := range tt.out {
					if got[i] != w {
						t.Errorf("output[%d] = %v, want %v", i, got[i], w)
					}
				}
			}
		})
	}
}

func TestFaults(t *testing.T) {
	m := rowSum(3, 10, 8, true)
	m.Kernels[0].Params[1].Shape = []int{2} // y too small for row 2
	_, err := Run(m, map[string]*te.Array{"x": iota(te.F32, 3, 10)}, Options{})
	want := "sim: kernel y, stage y, block 0: thread 0: store of y[2] out of bounds of f32[2]"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %s", err, want)
	}
}

func sumIota(n int) float64 {
	s := 0.0
	for _, v := range iota(te.F32, n).Data {
		s += v
	}
	return s
}

// TestLaunchLimits checks launches against the module's GPU: a block or
// shared memory over its limits, or more cooperative blocks than fit at
// once, is an error; an all-resident grid with the default ResidentBlocks
// gets the blocks that fit.
func TestLaunchLimits(t *testing.T) {
	model := func(threads, shared, sms int) *gpu.Model {
		g, _ := gpu.Builtin("small")
		g.Name, g.MaxThreadsPerBlock, g.SharedPerBlock, g.SMs = "tiny", threads, shared, sms
		return &g
	}
	rows := map[string]*te.Array{"x": iota(te.F32, 3, 10)}
	xs := map[string]*te.Array{"x": iota(te.F32, 64)}
	tests := []struct {
		name     string
		m        *kir.Module
		g        *gpu.Model
		feeds    map[string]*te.Array
		resident int
		want     string // "" for no error
	}{
		{"fits", rowSum(3, 10, 8, true), model(8, 32, 4), rows, 0, ""},
		{"threads", rowSum(3, 10, 8, true), model(4, 1024, 4), rows, 0,
			"sim: kernel y: launch of 8 threads per block, more than the 4 of GPU tiny"},
		{"shared memory", rowSum(3, 10, 8, true), model(8, 16, 4), rows, 0,
			"sim: kernel y: launch with 32 B of shared memory per block, more than the 16 B of GPU tiny"},
		{"cooperative", twoStage(64, true), model(256, 1024, 2), xs, 4,
			"sim: kernel fused: cooperative launch of 4 blocks of 4 threads and 0 B shared memory, but only 2 fit on GPU tiny at once (2 SMs)"},
		{"cooperative, default grid", twoStage(64, true), model(256, 1024, 2), xs, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.m.GPU = tt.g
			res, err := Run(tt.m, tt.feeds, Options{Race: true, ResidentBlocks: tt.resident})
			switch {
			case tt.want == "" && err != nil:
				t.Fatal(err)
			case tt.want != "" && (err == nil || err.Error() != tt.want):
				t.Fatalf("err = %v\nwant %s", err, tt.want)
			case tt.want == "" && res.RaceCount > 0:
				t.Errorf("%d races, first: %s", res.RaceCount, res.Races[0])
			case tt.want == "" && tt.m.Kernels[0].Grid.Resident && res.Kernels[0].Blocks != 2:
				t.Errorf("all-resident grid of %d blocks, want the 2 that fit", res.Kernels[0].Blocks)
			}
		})
	}
}

// TestProgress checks that Options.Progress reports work that only grows,
// once per block of a fixed grid and once per grid sync, and ends at the
// run's total.
func TestProgress(t *testing.T) {
	tests := []struct {
		name  string
		m     *kir.Module
		feeds map[string]*te.Array
		calls int // at least
	}{
		{"fixed grid", rowSum(6, 40, 8, true), map[string]*te.Array{"x": iota(te.F32, 6, 40)}, 2},
		{"resident grid", twoStage(64, true), map[string]*te.Array{"x": iota(te.F32, 64)}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen []kir.Counts
			r, err := Run(tt.m, tt.feeds, Options{Progress: func(c kir.Counts) { seen = append(seen, c) }})
			if err != nil {
				t.Fatal(err)
			}
			if len(seen) < tt.calls {
				t.Fatalf("Progress called %d times, want at least %d", len(seen), tt.calls)
			}
			for i := 1; i < len(seen); i++ {
				p, c := seen[i-1], seen[i]
				if c.FLOPs < p.FLOPs || c.LoadBytes < p.LoadBytes || c.StoreBytes < p.StoreBytes {
					t.Errorf("call %d: %v after %v: the work done shrank", i, c, p)
				}
			}
			if last, total := seen[len(seen)-1], r.Total(); last.FLOPs != total.FLOPs || last.LoadBytes != total.LoadBytes || last.StoreBytes != total.StoreBytes {
				t.Errorf("last report %v, want the run's total %v", last, total)
			}
			if seen[0] == seen[len(seen)-1] {
				t.Errorf("every report is %v: no progress reported before the end", seen[0])
			}
		})
	}
}
