package te

import (
	"slices"
	"testing"
)

// rewriteFixture holds the tensors and a shared node that the rewriting
// tests build their expressions from.
type rewriteFixture struct {
	x, y, ids *Tensor
	i         Index
	shared    Expr // exp(x[i]), used twice by the expressions below
}

func newRewriteFixture() *rewriteFixture {
	f := &rewriteFixture{
		x:   &Tensor{Name: "x", Kind: Input, DType: F32, Shape: []int{4}},
		y:   &Tensor{Name: "y", Kind: Input, DType: F32, Shape: []int{4}},
		ids: &Tensor{Name: "ids", Kind: Input, DType: I32, Shape: []int{4}},
		i:   VarIndex(NewVar("i", 4)),
	}
	f.shared = un(Exp, ld(f.x, f.i))
	return f
}

// toY redirects the loads of x to y.
func (f *rewriteFixture) toY(e Expr) Expr {
	if l, ok := e.(*Load); ok && l.Tensor == f.x {
		return &Load{Tensor: f.y, Index: l.Index, Gather: l.Gather}
	}
	return e
}

func TestMap(t *testing.T) {
	f := newRewriteFixture()
	gather := &Load{Tensor: f.y, Index: []Index{Const(0)}, Gather: []Expr{ld(f.ids, f.i)}}
	tests := []struct {
		name string
		e    Expr
		fn   func(Expr) Expr
		want string
	}{
		{"identity", bin(Add, f.shared, cf(1)), func(e Expr) Expr { return e }, "exp(x[i]) + 1.0"},
		{"loads redirected", bin(Mul, f.shared, f.shared), f.toY, "exp(y[i]) * exp(y[i])"},
		{"under a reduction and a select", sum1(4, func(k Index) Expr {
			return sel(bin(Lt, ix(k), ci(2)), ld(f.x, k), &Cast{To: BF16, X: ld(f.x, f.i)})
		}), f.toY, "sum(select(k < 2, y[k], bf16(y[i])), axis=[k:4])"},
		{"a gather's indexes are children", gather, func(e Expr) Expr {
			if l, ok := e.(*Load); ok && l.Tensor == f.ids {
				return ci(3)
			}
			return e
		}, "y[3]"},
		{"constants folded bottom-up", bin(Add, bin(Mul, ci(2), ci(3)), ci(1)), func(e Expr) Expr {
			if b, ok := e.(*Binary); ok {
				x, okx := b.X.(*ConstExpr)
				y, oky := b.Y.(*ConstExpr)
				if okx && oky {
					v := x.Value * y.Value
					if b.Op == Add {
						v = x.Value + y.Value
					}
					return ci(int(v))
				}
			}
			return e
		}, "7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FormatExpr(Map(tt.e, tt.fn)); got != tt.want {
				t.Errorf("Map(%s) = %s, want %s", FormatExpr(tt.e), got, tt.want)
			}
		})
	}
}

// TestMapShares checks that Map keeps a node shared in its input one node
// in its output, calls f once for it, and keeps what does not change.
func TestMapShares(t *testing.T) {
	f := newRewriteFixture()
	e := bin(Mul, f.shared, f.shared)
	calls := 0
	got := Map(e, func(x Expr) Expr {
		if _, ok := x.(*Unary); ok { // f.shared, rebuilt over y[i]
			calls++
		}
		return f.toY(x)
	}).(*Binary)
	if got.X != got.Y || calls != 1 {
		t.Errorf("shared node: operands %p and %p, f called %d times; want one node, once", got.X, got.Y, calls)
	}
	if same := Map(e, func(x Expr) Expr { return x }); same != e {
		t.Errorf("Map with the identity rebuilt %s", FormatExpr(e))
	}
}

func TestReplace(t *testing.T) {
	f := newRewriteFixture()
	red := sum1(4, func(k Index) Expr { return bin(Mul, ld(f.x, k), ld(f.y, k)) })
	tests := []struct {
		name string
		e    Expr
		with func(Expr) Expr
		want string
	}{
		{"nothing", bin(Add, f.shared, cf(1)), func(Expr) Expr { return nil }, "exp(x[i]) + 1.0"},
		{"a node by identity", bin(Add, red, un(Tanh, red)), func(e Expr) Expr {
			if e == red {
				return ld(f.y, f.i)
			}
			return nil
		}, "y[i] + tanh(y[i])"},
		{"a replaced node's children are not visited", un(Neg, red), func(e Expr) Expr {
			switch e.(type) {
			case *Reduce:
				return cf(0)
			case *Load:
				return cf(1)
			}
			return nil
		}, "-0.0"},
		{"tensor reads", sel(bin(Gt, ld(f.x, f.i), cf(0)), f.shared, cf(0)), func(e Expr) Expr {
			if l, ok := e.(*Load); ok && l.Tensor == f.x {
				return ld(f.y, f.i)
			}
			return nil
		}, "select(y[i] > 0.0, exp(y[i]), 0.0)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FormatExpr(Replace(tt.e, tt.with)); got != tt.want {
				t.Errorf("Replace(%s) = %s, want %s", FormatExpr(tt.e), got, tt.want)
			}
		})
	}
}

// TestReplaceOccurrences checks that Replace visits a shared node at each
// of its occurrences, so that each may get its own replacement.
func TestReplaceOccurrences(t *testing.T) {
	f := newRewriteFixture()
	n := 0
	got := Replace(bin(Add, f.shared, f.shared), func(e Expr) Expr {
		if e == f.shared {
			n++
			return ci(n)
		}
		return nil
	})
	if s := FormatExpr(got); s != "1 + 2" {
		t.Errorf("Replace = %s, want 1 + 2", s)
	}
}

func TestContains(t *testing.T) {
	f := newRewriteFixture()
	isLoadOf := func(x *Tensor) func(Expr) bool {
		return func(e Expr) bool {
			l, ok := e.(*Load)
			return ok && l.Tensor == x
		}
	}
	gather := &Load{Tensor: f.x, Index: []Index{Const(0)}, Gather: []Expr{ld(f.ids, f.i)}}
	red := sum1(4, func(k Index) Expr { return ld(f.y, k) })
	tests := []struct {
		name      string
		e         Expr
		pred      func(Expr) bool
		want      bool
		hasReduce bool
	}{
		{"constant", cf(1), isLoadOf(f.x), false, false},
		{"load", f.shared, isLoadOf(f.x), true, false},
		{"other tensor", f.shared, isLoadOf(f.y), false, false},
		{"in a gather's index", gather, isLoadOf(f.ids), true, false},
		{"under a reduction", bin(Add, red, cf(1)), isLoadOf(f.y), true, true},
		{"under a select", sel(bin(Lt, ix(f.i), ci(2)), red, f.shared), isLoadOf(f.y), true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Contains(tt.e, tt.pred); got != tt.want {
				t.Errorf("Contains(%s) = %v, want %v", FormatExpr(tt.e), got, tt.want)
			}
			if got := HasReduce(tt.e); got != tt.hasReduce {
				t.Errorf("HasReduce(%s) = %v, want %v", FormatExpr(tt.e), got, tt.hasReduce)
			}
		})
	}
}

// TestContainsVisitsOnce checks that Contains asks about a shared node
// once, and stops at the first node that satisfies the predicate.
func TestContainsVisitsOnce(t *testing.T) {
	f := newRewriteFixture()
	asked := map[Expr]int{}
	Contains(bin(Add, f.shared, f.shared), func(e Expr) bool { asked[e]++; return false })
	if asked[f.shared] != 1 || len(asked) != 3 {
		t.Errorf("asked %v; want each of 3 nodes once", asked)
	}
	n := 0
	Contains(bin(Add, cf(1), cf(2)), func(Expr) bool { n++; return true })
	if n != 1 {
		t.Errorf("asked %d nodes after the first matched", n)
	}
}

func TestTopReduces(t *testing.T) {
	f := newRewriteFixture()
	a := sum1(4, func(k Index) Expr { return ld(f.x, k) })
	b := &Reduce{Op: ReduceMax, Axes: []*Var{NewVar("j", 4)}, Body: a}
	c := sum1(4, func(k Index) Expr { return ld(f.y, k) })
	tests := []struct {
		name string
		e    Expr
		want []*Reduce
	}{
		{"none", f.shared, nil},
		{"in order", bin(Add, c.(*Reduce), a), []*Reduce{c.(*Reduce), a.(*Reduce)}},
		{"not inside another", bin(Add, b, cf(1)), []*Reduce{b}},
		{"not under a select", bin(Add, a, sel(bin(Lt, ix(f.i), ci(2)), c, cf(0))), []*Reduce{a.(*Reduce)}},
		{"shared once", bin(Mul, a, a), []*Reduce{a.(*Reduce)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := TopReduces(tt.e); !slices.Equal(got, tt.want) {
				t.Errorf("TopReduces(%s) = %v, want %v", FormatExpr(tt.e), got, tt.want)
			}
		})
	}
}

func TestCeilDivNextPow2(t *testing.T) {
	for _, tt := range []struct{ a, b, ceil, pow2 int }{
		{0, 4, 0, 1}, {1, 4, 1, 1}, {4, 4, 1, 4}, {5, 4, 2, 8}, {33, 32, 2, 64}, {-5, 4, -1, 1},
	} {
		if got := CeilDiv(tt.a, tt.b); got != tt.ceil {
			t.Errorf("CeilDiv(%d, %d) = %d, want %d", tt.a, tt.b, got, tt.ceil)
		}
		if got := NextPow2(tt.a); got != tt.pow2 {
			t.Errorf("NextPow2(%d) = %d, want %d", tt.a, got, tt.pow2)
		}
	}
}

// TestMapChildren checks that MapChildren replaces the children of each
// kind of node, one level deep, and keeps a node none of whose children
// change.
func TestMapChildren(t *testing.T) {
	f := newRewriteFixture()
	one := func(e Expr) Expr {
		if _, ok := e.(*Load); ok {
			return cf(1)
		}
		return e
	}
	gather := &Load{Tensor: f.y, Index: []Index{Const(0)}, Gather: []Expr{ld(f.ids, f.i)}}
	tests := []struct {
		e    Expr
		want string
	}{
		{f.shared, "exp(1.0)"},
		{bin(Add, ld(f.x, f.i), un(Neg, ld(f.y, f.i))), "1.0 + -y[i]"},
		{sel(bin(Lt, ix(f.i), ci(2)), ld(f.x, f.i), cf(0)), "select(i < 2, 1.0, 0.0)"},
		{&Cast{To: BF16, X: ld(f.x, f.i)}, "bf16(1.0)"},
		{sum1(4, func(k Index) Expr { return ld(f.x, k) }), "sum(1.0, axis=[k:4])"},
		{gather, "y[1.0]"},
	}
	for _, tt := range tests {
		if got := FormatExpr(MapChildren(tt.e, one)); got != tt.want {
			t.Errorf("MapChildren(%s) = %s, want %s", FormatExpr(tt.e), got, tt.want)
		}
	}
	if e := bin(Add, cf(1), ix(f.i)); MapChildren(e, one) != e {
		t.Errorf("MapChildren rebuilt %s, whose children do not change", FormatExpr(e))
	}
}

// TestInvariantReductions checks which reductions nested in a sum may be
// computed once before its loop: one that uses none of the sum's axes
// and loads in bounds, not one that moves with the sum, nor one whose
// loads a select guards (out of bounds where it would not be chosen),
// nor one nested inside another nested reduction (that one's to hoist).
func TestInvariantReductions(t *testing.T) {
	b := newBuilder("inv")
	m := b.input("m", F32, 4, 8)
	i := VarIndex(NewVar("i", 4))
	maxOf := func() Expr { return red(ReduceMax, []int{8}, func(ks []Index) Expr { return ld(m, i, ks[0]) }) }
	for _, tc := range []struct {
		name string
		body func(k Index) (Expr, Expr) // the sum's body, and the reduction expected hoisted (nil: none)
	}{
		{"invariant", func(k Index) (Expr, Expr) {
			n := maxOf()
			return &Binary{Op: Sub, X: ld(m, i, k), Y: n}, n
		}},
		{"moves with the sum", func(k Index) (Expr, Expr) {
			n := red(ReduceMax, []int{8}, func(ks []Index) Expr { return &Binary{Op: Add, X: ld(m, i, ks[0]), Y: ix(k)} })
			return &Binary{Op: Sub, X: ld(m, i, k), Y: n}, nil
		}},
		{"guarded load", func(k Index) (Expr, Expr) {
			n := red(ReduceMax, []int{8}, func(ks []Index) Expr { return ld(m, i.AddConst(1), ks[0]) })
			return &Select{Cond: &Binary{Op: Lt, X: ix(i), Y: ci(3)}, Then: n, Else: cf(0)}, nil
		}},
		{"nested twice", func(k Index) (Expr, Expr) {
			inner := maxOf()
			outer := red(Sum, []int{8}, func(ks []Index) Expr { return &Binary{Op: Add, X: ld(m, i, ks[0]), Y: inner} })
			return &Binary{Op: Mul, X: ld(m, i, k), Y: outer}, outer
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want Expr
			r := sum1(8, func(k Index) Expr {
				e, w := tc.body(k)
				want = w
				return e
			}).(*Reduce)
			got := InvariantReductions(r)
			switch {
			case want == nil && len(got) != 0:
				t.Errorf("hoisted %v; want none", got)
			case want != nil && (len(got) != 1 || got[0] != want):
				t.Errorf("hoisted %v; want [%v]", got, want)
			}
		})
	}
}
