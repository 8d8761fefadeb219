package kir

import (
	"path/filepath"
	"strings"
	"testing"

	"tec/internal/testkit/golden"
	"tec/te"
)

// rowSum builds a module whose one kernel sums each row of x[rows, n] with a
// block per row: a block-stride partial sum, a tree reduction in shared
// memory, and a store by thread 0.
func rowSum(rows, n, threads int) *Module {
	x := &Buffer{Name: "x", Role: Input, DType: te.F32, Shape: []int{rows, n}}
	y := &Buffer{Name: "y", Role: Output, DType: te.F32, Shape: []int{rows}}
	red := &Buffer{Name: "red", Space: Shared, DType: te.F32, Shape: []int{threads}}
	r := NewVar("r", te.I32)
	k := NewVar("k", te.I32)
	acc := NewVar("acc", te.F32)
	tid := NewVar("tid", te.I32)
	var tree []Stmt
	for s := threads / 2; s > 0; s /= 2 {
		tree = append(tree,
			&If{Cond: Lt(tid, I(s)), Then: []Stmt{
				&Store{Buf: red, Index: tid, Value: Add(Ld(red, tid), Ld(red, Add(tid, I(s))))},
			}},
			&SyncThreads{})
	}
	body := []Stmt{
		&Let{Var: acc, Value: F(0)},
		&For{Var: k, Kind: BlockStride, Lo: I(0), Hi: I(n), Body: []Stmt{
			&Assign{Var: acc, Value: Add(acc, Ld(x, Add(Mul(r, I(n)), k)))},
		}},
		&Store{Buf: red, Index: tid, Value: acc},
		&SyncThreads{},
	}
	body = append(body, tree...)
	body = append(body, &If{Cond: Eq(tid, I(0)), Then: []Stmt{&Store{Buf: y, Index: r, Value: Ld(red, I(0))}}}, &SyncThreads{})
	return &Module{
		Name:    "rowsum",
		Buffers: []*Buffer{x, y},
		Outputs: []*Buffer{y},
		Kernels: []*Kernel{{
			Name: "y", Grid: Grid{Blocks: 2}, Block: threads,
			Params: []*Buffer{x, y},
			Shared: []*Buffer{red},
			Doc:    "y = sum(x[i, k], axis=[k])",
			Body: []Stmt{
				&Let{Var: tid, Value: Tid()},
				&Stage{Name: "y", Span: te.Span{File: "rowsum.te", Line: 3, Col: 3}, Body: []Stmt{
					&For{Var: r, Kind: GridStride, Lo: I(0), Hi: I(rows), Body: body},
				}},
			},
		}},
	}
}

func TestGolden(t *testing.T) {
	mods := map[string]*Module{"rowsum": rowSum(3, 10, 8), "consts": consts(), "shuffle": warpSum()}
	for name, m := range mods {
		t.Run(name, func(t *testing.T) {
			if err := Verify(m); err != nil {
				t.Fatalf("Verify: %v", err)
			}
			golden.CheckString(t, filepath.Join("testdata", name+".kir"), m.String())
		})
	}
}

// consts exercises the printing of constants, casts and precedences.
func consts() *Module {
	h := &Buffer{Name: "h", Role: Output, DType: te.F16, Shape: []int{4}}
	a := NewVar("a", te.F32)
	i := NewVar("i", te.I32)
	i2 := NewVar("i", te.I32)
	return &Module{
		Name: "consts", Buffers: []*Buffer{h}, Outputs: []*Buffer{h},
		Kernels: []*Kernel{{
			Name: "k", Grid: Grid{Resident: true, Blocks: 4}, Block: 32, Params: []*Buffer{h},
			Body: []Stmt{
				&For{Var: i, Kind: ThreadStride, Lo: I(0), Hi: I(4), Body: []Stmt{
					&Let{Var: a, Value: Mul(Add(F(1), F(0.1)), &Unary{Op: te.Neg, X: F(1e-12)})},
					&For{Var: i2, Kind: Unrolled, Lo: I(0), Hi: I(2), Step: 1, Body: []Stmt{
						&Assign{Var: a, Value: &Select{Cond: And(Lt(i2, I(1)), &Unary{Op: te.Not, X: B(false)}), Then: Bin(te.Max, a, F(-3.5)), Else: &Unary{Op: te.Exp, X: Sub(a, Sub(F(2), F(1)))}}},
					}},
					&Store{Buf: h, Index: Mod(Div(Sub(I(7), i), I(2)), I(4)), Value: &Cast{To: te.F16, X: a}},
				}},
				&GridSync{},
			},
		}},
	}
}

// warpSum builds a module whose one kernel sums x[32] with a warp of 32
// threads: five xor shuffles leave the sum in every lane, and a down
// shuffle over the lower half, with a mask computed per thread, feeds a
// second output.
func warpSum() *Module {
	x := &Buffer{Name: "x", Role: Input, DType: te.F32, Shape: []int{32}}
	y := &Buffer{Name: "y", Role: Output, DType: te.F32, Shape: []int{2}}
	tid := NewVar("tid", te.I32)
	v := NewVar("v", te.F32)
	body := []Stmt{&Let{Var: tid, Value: Tid()}, &Let{Var: v, Value: Ld(x, tid)}}
	for off := WarpSize / 2; off > 0; off /= 2 {
		body = append(body, &Assign{Var: v, Value: Add(v, &Shuffle{Mode: ShuffleXor, X: v, Offset: off, Width: WarpSize, Mask: FullMask()})})
	}
	d := NewVar("d", te.F32)
	body = append(body,
		&If{Cond: Eq(tid, I(0)), Then: []Stmt{&Store{Buf: y, Index: I(0), Value: v}}},
		&If{Cond: Lt(tid, I(16)), Then: []Stmt{
			&Let{Var: d, Value: &Shuffle{Mode: ShuffleDown, X: Ld(x, tid), Offset: 1, Width: 16, Mask: &Select{Cond: Lt(tid, I(16)), Then: LaneMask(16), Else: I(0)}}},
			&If{Cond: Eq(tid, I(0)), Then: []Stmt{&Store{Buf: y, Index: I(1), Value: d}}},
		}})
	return &Module{
		Name: "shuffle", Buffers: []*Buffer{x, y}, Outputs: []*Buffer{y},
		Kernels: []*Kernel{{Name: "k", Grid: Grid{Blocks: 1}, Block: 32, Params: []*Buffer{x, y}, Body: body}},
	}
}

func TestVerifyRejects(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(m *Module)
		want   string
	}{
		{"barrier under divergent if", func(m *Module) {
			k := m.Kernels[0]
			k.Body = append(k.Body, &If{Cond: Lt(Tid(), I(4)), Then: []Stmt{&SyncThreads{}}})
		}, "kernel y: syncthreads under thread-divergent control flow"},
		{"barrier in block-stride loop", func(m *Module) {
			k := m.Kernels[0]
			k.Body = append(k.Body, &For{Var: NewVar("j", te.I32), Kind: BlockStride, Lo: I(0), Hi: I(8), Body: []Stmt{&SyncThreads{}}})
		}, "syncthreads under thread-divergent control flow"},
		{"barrier under var assigned from tid", func(m *Module) {
			k := m.Kernels[0]
			n := NewVar("n", te.I32)
			k.Body = append(k.Body, &Let{Var: n, Value: I(0)}, &Assign{Var: n, Value: Tid()},
				&If{Cond: Lt(n, I(4)), Then: []Stmt{&SyncThreads{}}})
		}, "syncthreads under thread-divergent control flow"},
		{"barrier under var raised after its use in a loop", func(m *Module) {
			// n is read before it is assigned threadIdx: only a second
			// walk of the loop sees it varying.
			k := m.Kernels[0]
			n := NewVar("n", te.I32)
			k.Body = append(k.Body, &Let{Var: n, Value: I(0)},
				&For{Var: NewVar("j", te.I32), Kind: Serial, Lo: I(0), Hi: I(8), Step: 1, Body: []Stmt{
					&If{Cond: Lt(n, I(4)), Then: []Stmt{&SyncThreads{}}},
					&Assign{Var: n, Value: Tid()},
				}})
		}, "syncthreads under thread-divergent control flow"},
		{"nil statement", func(m *Module) {
			m.Kernels[0].Body = append(m.Kernels[0].Body, nil)
		}, "kir: kernel y: nil statement"},
		{"grid sync in fixed grid", func(m *Module) {
			m.Kernels[0].Body = append(m.Kernels[0].Body, &GridSync{})
		}, "kernel y: grid sync in a kernel launched with a fixed grid(2), not all-resident"},
		{"grid sync in grid-stride loop", func(m *Module) {
			k := m.Kernels[0]
			k.Grid = Grid{Resident: true}
			f := k.Body[1].(*Stage).Body[0].(*For)
			f.Body = append(f.Body, &GridSync{})
		}, "kernel y, stage y: gridsync under control flow that differs between blocks or threads"},
		{"undeclared buffer", func(m *Module) {
			m.Kernels[0].Shared = nil
		}, "buffer red is not declared in the kernel: red[tid] = acc"},
		{"store to input", func(m *Module) {
			k := m.Kernels[0]
			k.Body = append(k.Body, &Store{Buf: m.Buffers[0], Index: I(0), Value: F(1)})
		}, "store to input x: x[0] = 1.0"},
		{"type mismatch in store", func(m *Module) {
			k := m.Kernels[0]
			k.Body = append(k.Body, &Store{Buf: m.Buffers[1], Index: I(0), Value: I(1)})
		}, "type mismatch: i32 value stored to f32 buffer y: y[0] = 1"},
		{"type mismatch in binary", func(m *Module) {
			k := m.Kernels[0]
			k.Body = append(k.Body, &Store{Buf: m.Buffers[1], Index: I(0), Value: Add(F(1), I(1))})
		}, "type mismatch: f32 + i32: y[0] = 1.0 + 1"},
		{"float index", func(m *Module) {
			k := m.Kernels[0]
			k.Body = append(k.Body, &Store{Buf: m.Buffers[1], Index: F(0), Value: F(1)})
		}, "type mismatch: index is f32, want i32: y[0.0] = 1.0"},
		{"constant index out of bounds", func(m *Module) {
			k := m.Kernels[0]
			k.Body = append(k.Body, &Store{Buf: m.Buffers[1], Index: I(3), Value: F(1)})
		}, "index 3 out of bounds of y f32[3]"},
		{"undefined variable", func(m *Module) {
			k := m.Kernels[0]
			k.Body = append(k.Body, &Store{Buf: m.Buffers[1], Index: NewVar("q", te.I32), Value: F(1)})
		}, "variable q used before its definition: y[q] = 1.0"},
		{"variable out of scope", func(m *Module) {
			k := m.Kernels[0]
			f := k.Body[1].(*Stage).Body[0].(*For)
			k.Body = append(k.Body, &Store{Buf: m.Buffers[1], Index: f.Var, Value: F(1)})
		}, "variable r used outside its scope: y[r] = 1.0"},
		{"assign to loop variable", func(m *Module) {
			f := m.Kernels[0].Body[1].(*Stage).Body[0].(*For)
			f.Body = append(f.Body, &Assign{Var: f.Var, Value: I(0)})
		}, "assignment to loop variable r: r = 0"},
		{"atomic on param", func(m *Module) {
			k := m.Kernels[0]
			k.Body = append(k.Body, &Atomic{Op: AtomicAdd, Buf: m.Buffers[0], Index: I(0), Value: F(1)})
		}, "atomic update of input x: atomic.add(x[0], 1.0)"},
		{"block too large", func(m *Module) { m.Kernels[0].Block = 2048 }, "block of 2048 threads (want 1 to 1024)"},
		{"parameter not in module", func(m *Module) {
			m.Kernels[0].Params = append(m.Kernels[0].Params, &Buffer{Name: "z", DType: te.F32})
		}, "parameter z is not a buffer of the module"},
		{"select branches differ", func(m *Module) {
			k := m.Kernels[0]
			k.Body = append(k.Body, &Store{Buf: m.Buffers[1], Index: I(0), Value: &Select{Cond: B(true), Then: F(1), Else: I(0)}})
		}, "type mismatch: select of f32 and i32"},
		{"zero step", func(m *Module) {
			k := m.Kernels[0]
			k.Body = append(k.Body, &For{Var: NewVar("j", te.I32), Kind: Serial, Lo: I(0), Hi: I(8)})
		}, "loop step 0 (want > 0): for j = serial(0, 8, 0)"},
		{"shuffle of bool", func(m *Module) {
			k := m.Kernels[0]
			k.Body = append(k.Body, &Let{Var: NewVar("s", te.Bool), Value: &Shuffle{Mode: ShuffleXor, X: B(true), Offset: 1, Width: 32, Mask: FullMask()}})
		}, "type mismatch: shuffle of bool (want f32 or i32)"},
		{"shuffle mask not i32", func(m *Module) {
			k := m.Kernels[0]
			k.Body = append(k.Body, &Let{Var: NewVar("s", te.F32), Value: &Shuffle{Mode: ShuffleXor, X: F(1), Offset: 1, Width: 32, Mask: F(-1)}})
		}, "type mismatch: shuffle mask is f32, want i32"},
		{"shuffle width not a power of two", func(m *Module) {
			k := m.Kernels[0]
			k.Body = append(k.Body, &Let{Var: NewVar("s", te.F32), Value: &Shuffle{Mode: ShuffleDown, X: F(1), Offset: 1, Width: 24, Mask: FullMask()}})
		}, "shuffle width 24 (want a power of two from 1 to 32): let s: f32 = shfl.down(1.0, 1, 24, 0xffffffff)"},
		{"shuffle offset past the warp", func(m *Module) {
			k := m.Kernels[0]
			k.Body = append(k.Body, &Let{Var: NewVar("s", te.I32), Value: &Shuffle{Mode: ShuffleXor, X: I(1), Offset: 32, Width: 32, Mask: FullMask()}})
		}, "shuffle offset 32 (want 0 to 31)"},
		{"barrier under a shuffled value", func(m *Module) {
			k := m.Kernels[0]
			s := NewVar("s", te.I32)
			k.Body = append(k.Body, &Let{Var: s, Value: &Shuffle{Mode: ShuffleXor, X: I(1), Offset: 1, Width: 32, Mask: FullMask()}},
				&If{Cond: Lt(s, I(4)), Then: []Stmt{&SyncThreads{}}})
		}, "syncthreads under thread-divergent control flow"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := rowSum(3, 10, 8)
			if err := Verify(m); err != nil {
				t.Fatalf("the unbroken module fails: %v", err)
			}
			tt.mutate(m)
			err := Verify(m)
			if err == nil {
				t.Fatalf("Verify accepted the module, want %q", tt.want)
			}
			if n := strings.Count(err.Error(), tt.want); n != 1 {
				t.Errorf("Verify: %v\nwant one message containing %q, got %d", err, tt.want, n)
			}
		})
	}
}

// TestStoreCopied checks which stores copy a 16-bit element unchanged: a
// load of the buffer's own f16 or bf16 type, not an f32 one, another
// half type, or a computed value.
func TestStoreCopied(t *testing.T) {
	buf := func(dt te.DType) *Buffer { return &Buffer{Name: "b", DType: dt, Shape: []int{8}} }
	bf, h, f := buf(te.BF16), buf(te.F16), buf(te.F32)
	for _, tc := range []struct {
		name string
		s    *Store
		want bool
	}{
		{"bf16 from bf16", &Store{Buf: bf, Index: I(0), Value: Ld(buf(te.BF16), I(1))}, true},
		{"f16 from f16", &Store{Buf: h, Index: I(0), Value: Ld(buf(te.F16), I(1))}, true},
		{"f32 from f32", &Store{Buf: f, Index: I(0), Value: Ld(buf(te.F32), I(1))}, false},
		{"bf16 from f16", &Store{Buf: bf, Index: I(0), Value: Ld(buf(te.F16), I(1))}, false},
		{"bf16 from f32", &Store{Buf: bf, Index: I(0), Value: Ld(buf(te.F32), I(1))}, false},
		{"bf16 computed", &Store{Buf: bf, Index: I(0), Value: Add(Ld(buf(te.BF16), I(1)), F(0))}, false},
	} {
		if _, got := tc.s.Copied(); got != tc.want {
			t.Errorf("%s: Copied %v, want %v", tc.name, got, tc.want)
		}
	}
}
