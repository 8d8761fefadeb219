package te

import (
	"sync"
	"testing"
)

// TestTypeOfCaches checks that TypeOf types a node once: after the root of
// x + x + ... + x is typed, every node under it holds its type, so typing
// each node in turn, as the later stages do, takes linear time (it took
// quadratic time, issue 23).
func TestTypeOfCaches(t *testing.T) {
	x := &Tensor{Name: "x", Kind: Input, DType: I32, Shape: []int{4}}
	f := &Tensor{Name: "f", Kind: Input, DType: F32, Shape: []int{4}}
	i := NewVar("i", 4)
	ld := func(t *Tensor) Expr { return &Load{Tensor: t, Index: []Index{VarIndex(i)}} }
	var chain Expr = ld(x)
	var nodes []*Binary
	for range 10000 {
		b := &Binary{Op: Add, X: chain, Y: ld(x)}
		nodes = append(nodes, b)
		chain = b
	}
	neg := &Unary{Op: Neg, X: chain}
	sel := &Select{Cond: &Binary{Op: Lt, X: neg, Y: ld(x)}, Then: neg, Else: ld(x)}
	red := &Reduce{Op: Sum, Axes: []*Var{NewVar("k", 2)}, Body: sel}
	mixed := &Binary{Op: Mul, X: red, Y: ld(f)}
	tests := []struct {
		e    Expr
		want DType
	}{{mixed, F32}, {red, I32}, {sel, I32}, {neg, I32}, {chain, I32}, {sel.Cond, Bool}}
	for _, tt := range tests {
		if got := TypeOf(tt.e); got != tt.want {
			t.Errorf("TypeOf(%T) = %s, want %s", tt.e, got, tt.want)
		}
	}
	for k, b := range nodes {
		if b.typ.v != uint32(I32)+1 {
			t.Fatalf("node %d of the chain is not typed after its root was: %d", k, b.typ.v)
		}
	}
	// Typed from several goroutines at once (go test -race checks the
	// cache's accesses).
	fresh := &Binary{Op: Add, X: &Binary{Op: Add, X: ld(x), Y: ld(f)}, Y: ld(x)}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if got := TypeOf(fresh); got != F32 {
				t.Errorf("TypeOf = %s, want f32", got)
			}
		})
	}
	wg.Wait()
}
