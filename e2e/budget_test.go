package e2e

import (
	"sync"
	"testing"
	"time"

	"tec/backend/kir"
	"tec/backend/sim"
	"tec/te"
)

// simBudget is the memory, in bytes as simBytes estimates them, that the
// simulations of parallel subtests may hold at once. go test runs as many
// parallel subtests as GOMAXPROCS, which on a machine of many cores would
// otherwise put as many of the largest simulations (a persistent kernel of
// hundreds of resident blocks, each with shared memory and its shadow)
// side by side; see "Test suite memory" in docs/testing.md.
const simBudget = 256 << 20

// simMemory is the package's one budget, shared by every test that
// simulates.
var simMemory = newMemBudget(simBudget)

// memBudget is a weighted semaphore of bytes.
type memBudget struct {
	mu    sync.Mutex
	freed sync.Cond
	free  int64
	total int64
}

func newMemBudget(total int64) *memBudget {
	b := &memBudget{free: total, total: total}
	b.freed.L = &b.mu
	return b
}

// acquire waits until n bytes are free and takes them; a request larger
// than the whole budget waits for all of it, and so runs alone.
func (b *memBudget) acquire(n int64) {
	n = min(n, b.total)
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.free < n {
		b.freed.Wait()
	}
	b.free -= n
}

// release returns n bytes taken by acquire.
func (b *memBudget) release(n int64) {
	n = min(n, b.total)
	b.mu.Lock()
	b.free += n
	b.mu.Unlock()
	b.freed.Broadcast()
}

// simBytes estimates the memory sim.Run with race detection takes for m
// launched with the given resident blocks: the simulator's own estimate
// (sim.EstimateMemory: values and access records of every buffer, and the
// shared and local arrays of the blocks alive at once) and, for the kernel
// with most, one lane vector per expression node.
func simBytes(m *kir.Module, resident int) int64 {
	var lanes int64
	for _, k := range m.Kernels {
		lanes = max(lanes, exprNodes(k.Body)*int64(k.Block)*sim.ValueBytes)
	}
	return sim.EstimateMemory(m, sim.Options{Race: true, ResidentBlocks: resident}).Total() + lanes
}

// exprNodes counts the expression nodes of a kernel body.
func exprNodes(body []kir.Stmt) int64 {
	var n int64
	kir.WalkStmts(body, func(s kir.Stmt) bool {
		kir.Exprs(s, func(e kir.Expr) {
			kir.WalkExpr(e, func(kir.Expr) bool { n++; return true })
		})
		return true
	})
	return n
}

// simulate runs m in the simulator within simMemory.
func simulate(t *testing.T, m *kir.Module, in map[string]*te.Array, opts sim.Options) *sim.Result {
	t.Helper()
	resident := opts.ResidentBlocks
	if resident <= 0 {
		resident = sim.DefaultResidentBlocks
	}
	n := simBytes(m, resident)
	simMemory.acquire(n)
	defer simMemory.release(n)
	out, err := sim.Run(m, in, opts)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMemBudget checks that a request waits while the budget is taken and
// goes on when it is released, and that one larger than the budget runs
// once nothing else holds any.
func TestMemBudget(t *testing.T) {
	b := newMemBudget(100)
	b.acquire(60)
	done := make(chan struct{})
	go func() {
		b.acquire(60)
		close(done)
	}()
	select {
	case <-done:
		t.Fatal("acquired 60 of a budget of 100 with 60 taken")
	case <-time.After(50 * time.Millisecond):
	}
	b.release(60)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("still waiting after the release")
	}
	b.release(60)
	b.acquire(500) // more than the whole budget: waits for all of it
	if b.free != 0 {
		t.Errorf("%d bytes free while the oversized request holds the budget, want 0", b.free)
	}
	b.release(500)
	if b.free != b.total {
		t.Errorf("%d bytes free after every release, want %d", b.free, b.total)
	}
}

// TestSimBytes checks the estimate on a persistent kernel of 4 threads
// with a shared array of 8 elements, launched with 3 blocks and with 5.
func TestSimBytes(t *testing.T) {
	x := &kir.Buffer{Name: "x", Role: kir.Input, DType: te.F32, Shape: []int{16}}
	red := &kir.Buffer{Name: "red", Space: kir.Shared, DType: te.F32, Shape: []int{8}}
	i := kir.NewVar("i", te.I32)
	m := &kir.Module{
		Name: "m", Buffers: []*kir.Buffer{x},
		Kernels: []*kir.Kernel{{
			Name: "k", Grid: kir.Grid{Resident: true, Blocks: 5}, Block: 4, Params: []*kir.Buffer{x}, Shared: []*kir.Buffer{red},
			Body: []kir.Stmt{
				&kir.Let{Var: i, Value: kir.Tid()}, // 1 node
				&kir.GridSync{},
				&kir.Store{Buf: red, Index: i, Value: kir.Ld(x, i)}, // 3 nodes
			},
		}},
	}
	const elem = 8 + 48 // a value and its three 16-byte access records
	for _, tt := range []struct{ resident, blocks int }{{3, 3}, {1 << 20, 5}} {
		want := int64(16*elem + tt.blocks*8*elem + 4*4*8)
		if got := simBytes(m, tt.resident); got != want {
			t.Errorf("simBytes(m, %d) = %d, want %d", tt.resident, got, want)
		}
	}
}
