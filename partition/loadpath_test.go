package partition

import (
	"testing"

	"tec/contraction"
	tb "tec/internal/testkit/tebuild"
	"tec/schedule"
	"tec/te"
)

// TestTensorCorePath checks the load paths of a 64×128 tensor-core tile
// staging 32 of K for 256 threads (8 elements of X and 16 of Y a thread
// a step, f16): cp.async and a register prefetch move 16 bytes a load,
// all of a step's in flight at once, the next step's while the warps
// compute (one barrier), and with 3 or 4 stages of cp.async copies the
// next 2 or 3 steps'; element staging one load of 2 bytes (TF32's 4)
// a round trip, two barriers; a tile of one 16-byte operand and one
// staged by elements its step's bytes over its round trips; and one
// stage of shared memory no prefetch.
func TestTensorCorePath(t *testing.T) {
	async := contraction.Operand{Mode: contraction.StageAsync}
	vector := contraction.Operand{Mode: contraction.StageVector, Loads: 1}
	f32src := contraction.Operand{Mode: contraction.StageVector, Loads: 2}
	elems := contraction.Operand{Mode: contraction.StageElements}
	for _, tt := range []struct {
		name   string
		st     contraction.Staging
		stages int
		in     te.DType
		want   schedule.LoadPath
	}{
		{"cp.async", contraction.Staging{X: async, Y: async}, 2, te.F16, schedule.LoadPath{Width: 16, InFlight: 3, Prefetch: true, Barriers: 1}},
		{"cp.async, 3 stages", contraction.Staging{X: async, Y: async}, 3, te.F16, schedule.LoadPath{Width: 16, InFlight: 6, Prefetch: true, Barriers: 1}},
		{"cp.async, 4 stages", contraction.Staging{X: async, Y: async}, 4, te.F16, schedule.LoadPath{Width: 16, InFlight: 9, Prefetch: true, Barriers: 1}},
		{"prefetch", contraction.Staging{X: vector, Y: vector}, 2, te.F16, schedule.LoadPath{Width: 16, InFlight: 3, Prefetch: true, Barriers: 1}},
		{"prefetch of f32 sources", contraction.Staging{X: f32src, Y: f32src}, 2, te.F16, schedule.LoadPath{Width: 16, InFlight: 6, Prefetch: true, Barriers: 1}},
		{"elements", contraction.Staging{X: elems, Y: elems}, 1, te.F16, schedule.LoadPath{Width: 2, InFlight: 1, Barriers: 2}},
		{"TF32 elements", contraction.Staging{X: elems, Y: elems}, 1, te.F32, schedule.LoadPath{Width: 4, InFlight: 1, Barriers: 2}},
		// X's 8 elements, 8 round trips, and Y's 32 bytes, one: 48 bytes
		// over 9 round trips, 2 loads of 2 bytes.
		{"mixed", contraction.Staging{X: elems, Y: vector}, 2, te.F16, schedule.LoadPath{Width: 2, InFlight: 2, Prefetch: true, Barriers: 1}},
		{"one stage", contraction.Staging{X: vector, Y: vector}, 1, te.F16, schedule.LoadPath{Width: 16, InFlight: 3, Barriers: 2}},
	} {
		if got := tensorCorePath(tt.st, tt.stages, 64, 128, 32, tt.in, 256); got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

// TestScalarPath checks the load path of a stage's scalar loop: one
// trip's distinct loads in flight (a load read twice counts once), at
// the widest element it loads; a reduction's loop its body's loads.
func TestScalarPath(t *testing.T) {
	b := tb.New("p")
	x, y := b.InputOf("x", te.F16, 64, 256), b.InputOf("y", te.F32, 64, 256)
	add := b.Compute("add", tb.Shape(64, 256), func(ax []te.Index) te.Expr {
		return tb.Bin(te.Add, tb.Bin(te.Mul, tb.Ld(x, ax...), tb.Ld(x, ax...)), tb.Ld(y, ax...))
	})
	sum := b.ComputeOf("sum", te.F16, tb.Shape(64), func(ax []te.Index) te.Expr {
		return tb.Reduce(te.Sum, "k", 256, func(k te.Index) te.Expr { return tb.Ld(x, ax[0], k) })
	})
	for _, tt := range []struct {
		t    *te.Tensor
		want schedule.LoadPath
	}{
		{add, schedule.LoadPath{Width: 4, InFlight: 2}},
		{sum, schedule.LoadPath{Width: 2, InFlight: 1}},
	} {
		if got := scalarPath(tt.t); got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.t.Name, got, tt.want)
		}
	}
}

// TestUnrolledPath checks the load path of a thread's reduction loop, as
// backend/lower unrolls it (schedule.ReduceUnroll): a 7×7 pool's rows two
// at a time (14 2-byte loads), a softmax's denominator 16 of its scores
// and its row maximum once (36 bytes: 9 loads of the f32 maximum's
// width), a flash-decoding-like merge's 8 chunks whole (two loads each),
// and a sum whose terms nest a sum of their own one point.
func TestUnrolledPath(t *testing.T) {
	b := tb.New("p")
	x := b.InputOf("x", te.F16, 64, 7, 7)
	sc, mx := b.InputOf("sc", te.F16, 64, 49), b.InputOf("mx", te.F32, 64)
	m, l := b.InputOf("m", te.F32, 64, 8), b.InputOf("l", te.F32, 64, 8)
	pool := b.Compute("pool", tb.Shape(64), func(ax []te.Index) te.Expr {
		return tb.ReduceN(te.Sum, []string{"h", "w"}, []int{7, 7}, func(r []te.Index) te.Expr { return tb.Ld(x, ax[0], r[0], r[1]) })
	})
	den := b.Compute("den", tb.Shape(64), func(ax []te.Index) te.Expr {
		return tb.Reduce(te.Sum, "j", 49, func(j te.Index) te.Expr {
			return tb.Un(te.Exp, tb.Bin(te.Sub, tb.Ld(sc, ax[0], j), tb.Ld(mx, ax[0])))
		})
	})
	merge := b.Compute("merge", tb.Shape(64), func(ax []te.Index) te.Expr {
		return tb.Reduce(te.Sum, "c", 8, func(c te.Index) te.Expr { return tb.Bin(te.Mul, tb.Ld(m, ax[0], c), tb.Ld(l, ax[0], c)) })
	})
	nested := b.Compute("nested", tb.Shape(64), func(ax []te.Index) te.Expr {
		return tb.Reduce(te.Sum, "c", 8, func(c te.Index) te.Expr {
			return tb.Reduce(te.ReduceMax, "d", 8, func(d te.Index) te.Expr { return tb.Bin(te.Add, tb.Ld(m, ax[0], c), tb.Ld(l, ax[0], d)) })
		})
	})
	for _, tt := range []struct {
		t    *te.Tensor
		want schedule.LoadPath
	}{
		{pool, schedule.LoadPath{Width: 2, InFlight: 14}},
		{den, schedule.LoadPath{Width: 4, InFlight: 9}},
		{merge, schedule.LoadPath{Width: 4, InFlight: 16}},
		{nested, schedule.LoadPath{Width: 4, InFlight: 1}},
	} {
		if got := unrolledPath(tt.t); got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.t.Name, got, tt.want)
		}
	}
}

// TestElementVectorPath checks the load path of an element loop that
// computes a 16-byte vector per thread: a LayerNorm-like f16 row (its x
// and its weight move along the last axis, the row's mean does not) two
// 16-byte loads in flight, an f32 source of an f16 result two loads of
// its own; none where a load moving along the axis is strided, or the
// last extent is no multiple of the vector.
func TestElementVectorPath(t *testing.T) {
	b := tb.New("p")
	x, w, mu := b.InputOf("x", te.F16, 64, 256), b.ParamOf("w", te.F16, 256), b.InputOf("mu", te.F32, 64)
	x32, odd := b.InputOf("x32", te.F32, 64, 256), b.InputOf("odd", te.F16, 64, 12)
	norm := b.ComputeOf("norm", te.F16, tb.Shape(64, 256), func(ax []te.Index) te.Expr {
		return tb.Bin(te.Mul, tb.Bin(te.Sub, tb.Ld(x, ax...), tb.Ld(mu, ax[0])), tb.Ld(w, ax[1]))
	})
	cast := b.ComputeOf("cast", te.F16, tb.Shape(64, 256), func(ax []te.Index) te.Expr { return tb.Ld(x32, ax...) })
	strided := b.ComputeOf("strided", te.F16, tb.Shape(256, 64), func(ax []te.Index) te.Expr { return tb.Ld(x, ax[1], ax[0]) })
	short := b.ComputeOf("short", te.F16, tb.Shape(64, 12), func(ax []te.Index) te.Expr { return tb.Ld(odd, ax...) })
	for _, tt := range []struct {
		t    *te.Tensor
		want schedule.LoadPath
		ok   bool
	}{
		{norm, schedule.LoadPath{Width: 16, InFlight: 2}, true},
		{cast, schedule.LoadPath{Width: 16, InFlight: 2}, true},
		{strided, schedule.LoadPath{}, false},
		{short, schedule.LoadPath{}, false},
	} {
		if got, ok := elementVectorPath(tt.t); got != tt.want || ok != tt.ok {
			t.Errorf("%s: %+v %v, want %+v %v", tt.t.Name, got, ok, tt.want, tt.ok)
		}
	}
}
