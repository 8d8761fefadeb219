package sim

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"tec/backend/internal/kirtest"
	"tec/backend/kir"
	"tec/backend/report"
	"tec/te"
)

// seq returns an array of dt holding 0, 1, 2, ...
func seq(dt te.DType, n int) *te.Array {
	a := te.NewArray(dt, []int{n})
	for i := range a.Data {
		a.Data[i] = float64(i)
	}
	return a
}

// randArray returns an array of dt and shape with values in [-2, 2).
func randArray(r *rand.Rand, dt te.DType, shape ...int) *te.Array {
	a := te.NewArray(dt, shape)
	for i := range a.Data {
		a.Data[i] = te.Round(dt, 4*r.Float64()-2)
	}
	return a
}

// matmulRef returns c + a·b in float64, a m×k and b k×n row-major, with a
// and b rounded as the tensor cores see them (TF32 for f32 operands).
func matmulRef(a, b, c *te.Array, m, n, k int) (d, mag []float64) {
	in := func(v float64) float64 {
		if a.DType == te.F32 {
			return te.RoundTF32Value(v)
		}
		return v
	}
	d, mag = make([]float64, m*n), make([]float64, m*n)
	for i := range m {
		for j := range n {
			s, abs := c.Data[i*n+j], math.Abs(c.Data[i*n+j])
			for kk := range k {
				p := in(a.Data[i*k+kk]) * in(b.Data[kk*n+j])
				s += p
				abs += math.Abs(p)
			}
			d[i*n+j], mag[i*n+j] = s, abs
		}
	}
	return d, mag
}

// checkMatmul compares got with the float64 reference. The simulator
// sums the exact products in float64 and rounds once to f32, so it is
// within half an f32 ulp of the reference plus float64 rounding: the
// tolerance, 2^-23 of the sum of the terms' magnitudes, is twice that
// with room to spare, and far below the error of a single misplaced
// element (the inputs are of order 1).
func checkMatmul(t *testing.T, got []float64, want, mag []float64) {
	t.Helper()
	bad := 0
	for i := range want {
		if math.Abs(got[i]-want[i]) > mag[i]*0x1p-23 {
			if bad < 3 {
				t.Errorf("d[%d] = %v, want %v", i, got[i], want[i])
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d elements wrong", bad, len(want))
	}
}

// TestMMA runs one tensor-core MMA of each kind with fragments loaded as
// the PTX ISA lays them out, against a float64 reference, and checks that
// the simulator and the static report count it alike; a fragment index
// off by one register gives a wrong result.
func TestMMA(t *testing.T) {
	swapA := func(shape kir.MMAShape, in te.DType, op kir.MMAOperand, g, tt kir.Expr, i int) (kir.Expr, kir.Expr) {
		if op == kir.OperandA {
			i ^= 1 // a lane's two elements of a register exchanged
		}
		return kirtest.ISAFragIndex(shape, in, op, g, tt, i)
	}
	swapB := func(shape kir.MMAShape, in te.DType, op kir.MMAOperand, g, tt kir.Expr, i int) (kir.Expr, kir.Expr) {
		if op == kir.OperandB {
			i = (i + 1) % kir.FragLen(shape, op) // registers rotated
		}
		return kirtest.ISAFragIndex(shape, in, op, g, tt, i)
	}
	for _, tc := range []struct {
		name  string
		shape kir.MMAShape
		in    te.DType
		idx   kirtest.FragIndex
		wrong bool
	}{
		{"f16", kir.M16N8K16, te.F16, kirtest.ISAFragIndex, false},
		{"bf16", kir.M16N8K16, te.BF16, kirtest.ISAFragIndex, false},
		{"tf32", kir.M16N8K8, te.F32, kirtest.ISAFragIndex, false},
		{"f16 k8", kir.M16N8K8, te.F16, kirtest.ISAFragIndex, false},
		{"f16 wrong a index", kir.M16N8K16, te.F16, swapA, true},
		{"bf16 wrong b index", kir.M16N8K16, te.BF16, swapB, true},
		{"tf32 wrong a index", kir.M16N8K8, te.F32, swapA, true},
		{"tf32 wrong b index", kir.M16N8K8, te.F32, swapB, true},
		{"f16 k8 wrong a index", kir.M16N8K8, te.F16, swapA, true},
		{"f16 k8 wrong b index", kir.M16N8K8, te.F16, swapB, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, n, k := tc.shape.Dims()
			r := rand.New(rand.NewPCG(1, uint64(len(tc.name))))
			a, b, c := randArray(r, tc.in, m, k), randArray(r, tc.in, k, n), randArray(r, te.F32, m, n)
			if tc.in == te.F32 {
				// Values with more than TF32's bits: the operands are rounded.
				for i := range a.Data {
					a.Data[i] = float64(float32(a.Data[i] + 1e-5))
				}
			}
			mod := kirtest.MMA(tc.shape, tc.in, tc.idx)
			res, err := Run(mod, map[string]*te.Array{"a": a, "b": b, "c": c}, Options{Race: true})
			if err != nil {
				t.Fatal(err)
			}
			want, mag := matmulRef(a, b, c, m, n, k)
			got := res.Outputs["d"].Data
			if tc.wrong {
				for i := range want {
					if math.Abs(got[i]-want[i]) > mag[i]*0x1p-23 {
						return
					}
				}
				t.Fatal("a wrong fragment index gave the right result")
			}
			checkMatmul(t, got, want, mag)
			if res.RaceCount > 0 {
				t.Errorf("races: %v", res.Races)
			}
			total := res.Total()
			flops := int64(2 * m * n * k)
			if tc.in == te.F32 { // the operands' roundings to TF32
				flops += kir.WarpSize * int64(kir.FragLen(tc.shape, kir.OperandA)+kir.FragLen(tc.shape, kir.OperandB))
			}
			if total.MMAs != 1 || total.FLOPs != flops {
				t.Errorf("counted %d MMAs and %d FLOPs, want 1 and %d", total.MMAs, total.FLOPs, flops)
			}
			rep := report.Module(mod, report.Config{})
			if rep.Total != total {
				t.Errorf("static report counts %v, the simulator %v", rep.Total, total)
			}
		})
	}
}

// TestFragLayouts checks kir.FragElem against the ISA's formulas as
// kirtest writes them: every (row, col) of each operand is held by exactly
// one register of one lane.
func TestFragLayouts(t *testing.T) {
	for _, sh := range []struct {
		shape kir.MMAShape
		in    te.DType
	}{{kir.M16N8K16, te.F16}, {kir.M16N8K8, te.F32}, {kir.M16N8K8, te.F16}} {
		shape, in := sh.shape, sh.in
		m, n, k := shape.Dims()
		for op, dims := range map[kir.MMAOperand][2]int{kir.OperandA: {m, k}, kir.OperandB: {k, n}, kir.OperandC: {m, n}} {
			seen := map[[2]int]bool{}
			for lane := range kir.WarpSize {
				for i := range kir.FragLen(shape, op) {
					row, col := kir.FragElem(shape, in, op, lane, i)
					re, ce := kirtest.ISAFragIndex(shape, in, op, kir.I(lane>>2), kir.I(lane%4), i)
					if wr, wc := evalConst(t, re), evalConst(t, ce); row != wr || col != wc {
						t.Errorf("%s %s operand %d lane %d reg %d: FragElem gives (%d, %d), the ISA (%d, %d)", shape, in, op, lane, i, row, col, wr, wc)
					}
					if row < 0 || row >= dims[0] || col < 0 || col >= dims[1] || seen[[2]int{row, col}] {
						t.Errorf("%s %s operand %d lane %d reg %d: (%d, %d) repeated or out of range", shape, in, op, lane, i, row, col)
					}
					seen[[2]int{row, col}] = true
				}
			}
		}
	}
}

// evalConst evaluates an expression of i32 constants.
func evalConst(t *testing.T, e kir.Expr) int {
	t.Helper()
	switch e := e.(type) {
	case *kir.Const:
		return int(e.Value)
	case *kir.Binary:
		x, y := evalConst(t, e.X), evalConst(t, e.Y)
		switch e.Op {
		case te.Add:
			return x + y
		case te.Mul:
			return x * y
		}
	}
	t.Fatalf("cannot evaluate %T", e)
	return 0
}

// TestPipeline runs the vector copy, cp.async, ldmatrix and mma pipeline
// against a float64 reference, and checks that a missing wait is reported
// with kernel, thread and element, and that a missing barrier after the
// wait is a race.
func TestPipeline(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 3))
	a, b, c := randArray(r, te.F16, 16, 16), randArray(r, te.F16, 16, 8), randArray(r, te.F32, 16, 8)
	feeds := map[string]*te.Array{"a": a, "b": b, "c": c}
	want, mag := matmulRef(a, b, c, 16, 8, 16)
	for _, tc := range []struct {
		name string
		bugs kirtest.PipelineBugs
		race string
	}{
		{"correct", kirtest.PipelineBugs{}, ""},
		{"no wait", kirtest.PipelineBugs{NoWait: true},
			"kernel gemm: read of shared sb[0] by block 0 thread 0 while the cp.async to it by block 0 thread 0 is in flight"},
		{"no barrier", kirtest.PipelineBugs{NoBarrier: true}, "race on shared sa["},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mod := kirtest.Pipeline(tc.bugs)
			res, err := Run(mod, feeds, Options{Race: true, MaxRaces: 1000})
			if err != nil {
				t.Fatal(err)
			}
			if tc.race == "" {
				if res.RaceCount > 0 {
					t.Fatalf("races: %v", res.Races)
				}
				checkMatmul(t, res.Outputs["d"].Data, want, mag)
				rep := report.Module(mod, report.Config{})
				if total := res.Total(); rep.Total != total {
					t.Errorf("static report counts %v, the simulator %v", rep.Total, total)
				}
				return
			}
			for _, race := range res.Races {
				if strings.Contains(race.String(), tc.race) {
					return
				}
			}
			t.Fatalf("no race like %q among %d: %v", tc.race, res.RaceCount, res.Races)
		})
	}
}

// TestWaitGroup checks cp.async.wait_group N: with two groups in flight,
// wait_group 1 completes the older only.
func TestWaitGroup(t *testing.T) {
	x := &kir.Buffer{Name: "x", Role: kir.Input, DType: te.F32, Shape: []int{8}}
	y := &kir.Buffer{Name: "y", Role: kir.Output, DType: te.F32, Shape: []int{2}}
	s := &kir.Buffer{Name: "s", Space: kir.Shared, DType: te.F32, Shape: []int{8}}
	for _, tc := range []struct {
		wait, read int
		race       bool
	}{{1, 0, false}, {1, 4, true}, {0, 4, false}} {
		mod := &kir.Module{Name: "wait", Buffers: []*kir.Buffer{x, y}, Outputs: []*kir.Buffer{y},
			Kernels: []*kir.Kernel{{Name: "k", Grid: kir.Grid{Blocks: 1}, Block: 1, Params: []*kir.Buffer{x, y}, Shared: []*kir.Buffer{s},
				Body: []kir.Stmt{
					&kir.CopyAsync{Dst: s, DstIndex: kir.I(0), Src: x, SrcIndex: kir.I(0)},
					&kir.CommitGroup{},
					&kir.CopyAsync{Dst: s, DstIndex: kir.I(4), Src: x, SrcIndex: kir.I(4)},
					&kir.CommitGroup{},
					&kir.WaitGroup{N: tc.wait},
					&kir.Store{Buf: y, Index: kir.I(0), Value: kir.Ld(s, kir.I(tc.read+1))},
					&kir.WaitGroup{N: 0},
					&kir.Store{Buf: y, Index: kir.I(1), Value: kir.Ld(s, kir.I(7))},
				}}}}
		res, err := Run(mod, map[string]*te.Array{"x": seq(te.F32, 8)}, Options{Race: true})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.RaceCount > 0; got != tc.race {
			t.Errorf("wait_group %d, read of s[%d]: reported %v, want a report %v", tc.wait, tc.read+1, res.Races, tc.race)
		}
		if got := res.Outputs["y"].Data[1]; got != 7 {
			t.Errorf("s[7] = %v after wait_group 0, want 7", got)
		}
	}
}

// TestVectors runs 128-bit vector copies between every pair of spaces and
// checks that a misaligned one is reported.
func TestVectors(t *testing.T) {
	feeds := map[string]*te.Array{"x": seq(te.F32, 64), "h": seq(te.F16, 128)}
	res, err := Run(kirtest.Vectors(0), feeds, Options{Race: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.RaceCount > 0 {
		t.Fatalf("races: %v", res.Races)
	}
	for name, vl := range map[string]int{"y": 4, "h2": 8} {
		out := res.Outputs[name].Data
		for i, v := range out {
			if want := float64((15-i/vl)*vl + i%vl); v != want {
				t.Fatalf("%s[%d] = %v, want %v", name, i, v, want)
			}
		}
	}
	total := res.Total()
	if want := int64(16 * 2 * 16); total.LoadBytes != want || total.StoreBytes != want {
		t.Errorf("counted %d B loaded and %d B stored, want %d each", total.LoadBytes, total.StoreBytes, want)
	}
	rep := report.Module(kirtest.Vectors(0), report.Config{})
	if rep.Total != total {
		t.Errorf("static report counts %v, the simulator %v", rep.Total, total)
	}
	_, err = Run(kirtest.Vectors(2), feeds, Options{})
	if want := "thread 0: misaligned 128-bit store of shared sx[2]: the address is not 16-byte aligned"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("misaligned copy: got %v, want %q", err, want)
	}
}

// TestWarpConvergence checks that an MMA or ldmatrix that a warp executes
// with lanes missing is reported.
func TestWarpConvergence(t *testing.T) {
	diverge := func(m *kir.Module, keep func(kir.Stmt) bool) {
		k := m.Kernels[0]
		for i, s := range k.Body {
			if keep(s) {
				k.Body[i] = &kir.If{Cond: kir.Lt(kir.Tid(), kir.I(16)), Then: []kir.Stmt{s}}
			}
		}
	}
	isMMA := func(s kir.Stmt) bool { _, ok := s.(*kir.MMA); return ok }
	isLd := func(s kir.Stmt) bool { _, ok := s.(*kir.LdMatrix); return ok }
	r := rand.New(rand.NewPCG(4, 5))
	feeds := map[string]*te.Array{"a": randArray(r, te.F16, 16, 16), "b": randArray(r, te.F16, 16, 8), "c": randArray(r, te.F32, 16, 8)}
	for _, tc := range []struct {
		name string
		m    *kir.Module
		keep func(kir.Stmt) bool
		want string
	}{
		{"mma", kirtest.MMA(kir.M16N8K16, te.F16, kirtest.ISAFragIndex), isMMA,
			"thread 0: mma.sync.m16n8k16 executed by lanes 0x0000ffff of warp 0: lane 16 is missing"},
		{"ldmatrix", kirtest.Pipeline(kirtest.PipelineBugs{}), isLd,
			"thread 0: ldmatrix.x4 executed by lanes 0x0000ffff of warp 0: lane 16 is missing"},
	} {
		diverge(tc.m, tc.keep)
		_, err := Run(tc.m, feeds, Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
}

// ldmatrixModule is one warp that loads Num 8×8 matrices of f16 from a
// 16×16 shared array (matrix j is the quadrant at rows 8(j%2), columns
// 8(j/2)) with ldmatrix, every lane giving the row address its lane number
// selects, and stores each lane's 2·Num registers to y[lane][0:2·Num].
func ldmatrixModule(num int, trans bool) *kir.Module {
	x := &kir.Buffer{Name: "x", Role: kir.Input, DType: te.F16, Shape: []int{16, 16}}
	y := &kir.Buffer{Name: "y", Role: kir.Output, DType: te.F16, Shape: []int{32, 8}}
	s := &kir.Buffer{Name: "s", Space: kir.Shared, DType: te.F16, Shape: []int{16, 16}}
	f := &kir.Buffer{Name: "f", Space: kir.Local, DType: te.F16, Shape: []int{8}}
	tid := kir.NewVar("tid", te.I32)
	j, r := kir.Div(kir.Mod(tid, kir.I(8*num)), kir.I(8)), kir.Mod(tid, kir.I(8))
	row := kir.Add(kir.Mul(kir.Mod(j, kir.I(2)), kir.I(8)), r)
	col := kir.Mul(kir.Div(j, kir.I(2)), kir.I(8))
	body := []kir.Stmt{
		&kir.Let{Var: tid, Value: kir.Tid()},
		&kir.VecCopy{Dst: s, DstIndex: kir.Mul(tid, kir.I(8)), Src: x, SrcIndex: kir.Mul(tid, kir.I(8))},
		&kir.SyncThreads{},
		&kir.LdMatrix{Num: num, Trans: trans, Dst: kir.Frag{Buf: f}, Src: s, Index: kir.Add(kir.Mul(row, kir.I(16)), col)},
	}
	for i := range 2 * num {
		body = append(body, &kir.Store{Buf: y, Index: kir.Add(kir.Mul(tid, kir.I(8)), kir.I(i)), Value: kir.Ld(f, kir.I(i))})
	}
	return &kir.Module{Name: "ldmatrix", Buffers: []*kir.Buffer{x, y}, Outputs: []*kir.Buffer{y},
		Kernels: []*kir.Kernel{{Name: "k", Grid: kir.Grid{Blocks: 1}, Block: 32, Params: []*kir.Buffer{x, y},
			Shared: []*kir.Buffer{s}, Locals: []*kir.Buffer{f}, Body: body}}}
}

// TestLdMatrix checks ldmatrix x1, x2 and x4, plain and transposed,
// register by register against the PTX ISA's description: lane l holds,
// of matrix j, in registers 2j and 2j+1, the elements of row l/4 at
// columns 2(l%4) and 2(l%4)+1, or with .trans of column l/4 at those rows.
func TestLdMatrix(t *testing.T) {
	x := seq(te.F16, 256)
	x.Shape = []int{16, 16}
	for _, num := range []int{1, 2, 4} {
		for _, trans := range []bool{false, true} {
			res, err := Run(ldmatrixModule(num, trans), map[string]*te.Array{"x": x}, Options{Race: true})
			if err != nil {
				t.Fatal(err)
			}
			if res.RaceCount > 0 {
				t.Fatalf("races: %v", res.Races)
			}
			y := res.Outputs["y"].Data
			for lane := range 32 {
				for j := range num {
					for h := range 2 {
						r, c := lane/4, 2*(lane%4)+h
						if trans {
							r, c = c, r
						}
						want := float64((8*(j%2)+r)*16 + 8*(j/2) + c)
						if got := y[lane*8+2*j+h]; got != want {
							t.Errorf("x%d trans=%v: lane %d register %d = %v, want x[%v]", num, trans, lane, 2*j+h, got, want)
						}
					}
				}
			}
		}
	}
	m := ldmatrixModule(4, false)
	for _, st := range m.Kernels[0].Body {
		if ld, ok := st.(*kir.LdMatrix); ok {
			ld.Index = kir.Add(ld.Index, kir.I(4)) // rows half a vector off
		}
	}
	_, err := Run(m, map[string]*te.Array{"x": x}, Options{})
	if want := "thread 0: ldmatrix.x4 row address s[4] is not 16-byte aligned"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("misaligned ldmatrix: got %v, want %q", err, want)
	}
}
