package partition

import (
	"math/rand/v2"
	"testing"

	tb "tec/internal/testkit/tebuild"
	"tec/te"
)

// TestTileDepRange checks TileDep.Range against the tiles found element by
// element: for each consumer tile, the producer tiles that write an
// element sharing the leading index of one of the tile's elements.
func TestTileDepRange(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		prefixes := 1 + rng.IntN(12)
		q, span := 1+rng.IntN(9), 1+rng.IntN(9)
		d := TileDep{Tile: 1 + rng.IntN(20), N: prefixes * q, Prefix: q, Span: span, Width: 1 + rng.IntN(20)}
		most := 0
		for r := range te.CeilDiv(d.N, d.Tile) {
			want := map[int]bool{}
			for e := r * d.Tile; e < min((r+1)*d.Tile, d.N); e++ {
				p := e / d.Prefix
				for x := p * span; x < (p+1)*span; x++ {
					want[x/d.Width] = true
				}
			}
			lo, hi := d.Range(r)
			if hi-lo != len(want) {
				t.Fatalf("%+v: tile %d: range [%d, %d), want %d tiles", d, r, lo, hi, len(want))
			}
			for p := lo; p < hi; p++ {
				if !want[p] {
					t.Fatalf("%+v: tile %d: range [%d, %d) holds %d, which it does not read", d, r, lo, hi, p)
				}
			}
			most = max(most, hi-lo)
		}
		if d.Most() != most || d.Single() != (most == 1) {
			t.Fatalf("%+v: Most %d, Single %v; want %d", d, d.Most(), d.Single(), most)
		}
	}
}

// projNorm is a projection h = x·w followed by layer normalisation of h's
// rows: mean and variance (row reductions) and the normalised rows
// (element-wise).
func projNorm(m, k, n int) *te.Program {
	b := tb.New("projnorm")
	x, w := b.Input("x", m, k), b.Param("w", k, n)
	h := b.Matmul("h", x, w)
	mean := b.Compute("mean", tb.Shape(m), func(ax []te.Index) te.Expr {
		return tb.Bin(te.Div, tb.Reduce(te.Sum, "j", n, func(j te.Index) te.Expr { return tb.Ld(h, ax[0], j) }), tb.F(float64(n)))
	})
	vr := b.Compute("var", tb.Shape(m), func(ax []te.Index) te.Expr {
		return tb.Reduce(te.Sum, "j", n, func(j te.Index) te.Expr {
			d := tb.Bin(te.Sub, tb.Ld(h, ax[0], j), tb.Ld(mean, ax[0]))
			return tb.Bin(te.Mul, d, d)
		})
	})
	y := b.Compute("y", tb.Shape(m, n), func(ax []te.Index) te.Expr {
		return tb.Bin(te.Mul, tb.Bin(te.Sub, tb.Ld(h, ax...), tb.Ld(mean, ax[0])), tb.Un(te.Rsqrt, tb.Ld(vr, ax[0])))
	})
	return b.Program(y)
}

// TestPlaceCounters checks which grid syncs of projNorm's one kernel
// counters replace: never the one before mean, whose rows need every
// tile of the contraction's columns, nor where a stage reads what the
// epoch computed before the sync it does not wait for; var's after mean
// and y's after var (y waits for var's tiles alone: the block that
// signals var's row r computed mean's row r before it, impliedBy) where
// they are allowed everywhere, or by cost where
// each block has a tile of each stage (64 rows on the A100's hundreds of
// blocks), and none where it has many (64 rows on the small GPU's 4
// blocks), or with counters off.
func TestPlaceCounters(t *testing.T) {
	tests := []struct {
		name string
		gpu  string
		m    int
		mode CounterMode
		want string // stage: dependences, for each replaced sync
	}{
		{"everywhere", "small", 64, CountersWherever, "var: mean (at most 1 tiles per tile); y: var (at most 1 tiles per tile); "},
		{"by cost, few rows", "a100", 64, CountersByCost, "var: mean (at most 1 tiles per tile); y: var (at most 1 tiles per tile); "},
		{"by cost, many rows", "small", 64, CountersByCost, ""},
		{"off", "a100", 64, CountersOff, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl := plan(t, projNorm(tt.m, 64, 256), tt.gpu, Options{Strategy: CostModel, Split: true, Counters: tt.mode})
			got := ""
			for _, k := range pl.Kernels {
				syncs := 0
				for j, s := range k.Stages {
					if k.Sync[j] == GridSync {
						syncs++
					}
					if deps := k.Counters[j]; deps != nil {
						got += s.Name + ": "
						for i, d := range deps {
							if i > 0 {
								got += ", "
							}
							got += d.String()
						}
						got += "; "
					}
				}
				if k.GridSyncs != syncs-len(k.Counters) {
					t.Errorf("GridSyncs %d, want %d grid syncs less %d replaced", k.GridSyncs, syncs, len(k.Counters))
				}
			}
			if got != tt.want {
				t.Errorf("counters %q, want %q\n%s", got, tt.want, pl)
			}
		})
	}
}
