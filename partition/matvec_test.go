package partition

import (
	"testing"

	tb "tec/internal/testkit/tebuild"
	"tec/schedule"
	"tec/te"
)

// concatProgram is a horizontally concatenated matrix-vector product, as
// transform.Horizontal makes the q/k/v projections: y[0, n] = sum over k
// of x[0, k] times wa[n, k], wb[n-A, k] or wc[n-A-B, k] by n, the weights
// of type dt laid out [out, in].
func concatProgram(dt te.DType, k int, parts ...int) *te.Program {
	b := tb.New("concat")
	x := b.Input("x", 1, k)
	ws := make([]*te.Tensor, len(parts))
	for i, n := range parts {
		ws[i] = b.ParamOf(string(rune('a'+i))+"w", dt, n, k)
	}
	total := 0
	for _, n := range parts {
		total += n
	}
	y := b.Compute("y", tb.Shape(1, total), func(ax []te.Index) te.Expr {
		return tb.Reduce(te.Sum, "k", k, func(kk te.Index) te.Expr {
			// The last part, then a select for each earlier one.
			at := total - parts[len(parts)-1]
			w := tb.Ld(ws[len(ws)-1], ax[1].AddConst(-at), kk)
			for i := len(parts) - 2; i >= 0; i-- {
				at -= parts[i]
				w = tb.Sel(tb.Bin(te.Lt, tb.Idx(ax[1]), tb.I(at+parts[i])), tb.Ld(ws[i], ax[1].AddConst(-at), kk), w)
			}
			return tb.Bin(te.Mul, tb.Ld(x, ax[0], kk), w)
		})
	})
	return b.Program(y)
}

// TestMatVecParts checks that the tiles of a horizontally concatenated
// matrix-vector product do not straddle its parts, each part reading one
// tensor, and that the wide factor is loaded 16 bytes at a time where
// its parts allow it: where tiles within the parts would be narrower than
// across them, the tiles read through the selects, without parts.
func TestMatVecParts(t *testing.T) {
	for _, c := range []struct {
		name  string
		dt    te.DType
		k     int
		parts []int
		split bool // tiles within the parts
		vec   int
	}{
		{"qkv", te.BF16, 2048, []int{2048, 512, 512}, true, 8},
		{"gate-up", te.F16, 512, []int{1024, 1024}, true, 8},
		{"f32", te.F32, 256, []int{256, 64, 64}, true, 4},
		{"narrow-part", te.BF16, 256, []int{48, 8, 8}, true, 8},
		{"odd-k", te.BF16, 100, []int{256, 256}, true, 0},
		{"one-column", te.F32, 256, []int{1, 255}, false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := concatProgram(c.dt, c.k, c.parts...)
			pl := plan(t, p, "h100", Options{Strategy: CostModel})
			var y *te.Tensor
			for _, x := range p.Tensors {
				if x.Name == "y" {
					y = x
				}
			}
			mv := pl.Schedules[y].MatVec
			if mv == nil {
				t.Fatalf("y is not a matrix-vector stage: %s", pl.Schedules[y])
			}
			if !c.split {
				if mv.Parts != nil || mv.Vec != 0 {
					t.Errorf("parts %v, vec %d: want the tiles across the parts, scalar loads", mv.Parts, mv.Vec)
				}
				return
			}
			if len(mv.Parts) != len(c.parts) {
				t.Fatalf("%d parts, want %d: %s", len(mv.Parts), len(c.parts), pl.Schedules[y])
			}
			col := 0
			for i, part := range mv.Parts {
				if part.Tile*mv.Width() != col {
					t.Errorf("part %d begins at tile %d of %d columns, want column %d", i, part.Tile, mv.Width(), col)
				}
				if c.parts[i]%mv.Width() != 0 {
					t.Errorf("part %d of %d columns: tiles of %d straddle it", i, c.parts[i], mv.Width())
				}
				if ld, ok := part.F.(*te.Load); !ok || ld.Tensor.Name != string(rune('a'+i))+"w" {
					t.Errorf("part %d reads %v, want a load of %cw", i, part.F, 'a'+i)
				}
				col += c.parts[i]
			}
			if mv.Vec != c.vec {
				t.Errorf("vectors of %d, want %d", mv.Vec, c.vec)
			}
			if mv.Vec > 0 && (mv.InFlight < 1 || mv.InFlight > maxInFlight) {
				t.Errorf("%d loads in flight, want 1 to %d", mv.InFlight, maxInFlight)
			}
		})
	}
}

// TestWarpLines checks the L1 wavefronts per 128 bytes of a warp's loads
// of a matrix-vector tile's wide factor (schedule.LoadPath.Lines) against
// counts by hand: 128 bytes a line, 32 lanes, lane l at column l mod
// TileF and k-vector l / TileF.
func TestWarpLines(t *testing.T) {
	n, k, e := te.NewVar("n", 2048), te.NewVar("k", 2048), te.NewVar("e", 64)
	tt := te.NewVar("t", 1024)
	w := &te.Tensor{Name: "w", DType: te.BF16, Shape: []int{2048, 2048}} // [out, in]
	kc := &te.Tensor{Name: "kc", DType: te.F32, Shape: []int{1024, 64}}  // a key cache [t, e]
	ids := &te.Tensor{Name: "ids", DType: te.I32, Shape: []int{2048}}    // a gather's indices
	v := func(x *te.Var) te.Index { return te.VarIndex(x) }
	tests := []struct {
		name      string
		f         te.Expr
		cols      []*te.Var
		k         *te.Var
		mv        schedule.MatVec
		vec, size int
		want      float64
	}{
		// 16 columns of 16 lanes, 16-byte vectors along k: lanes 0-15
		// and 16-31 share their column's line, 16 lines for 512 bytes.
		{"weights, 16 threads a column", &te.Load{Tensor: w, Index: []te.Index{v(n), v(k)}}, []*te.Var{n}, k,
			schedule.MatVec{TileF: 16, Split: 16, Vec: 8}, 8, 16, 4},
		// 8 columns of 32 lanes: 8 lines for 512 bytes.
		{"weights, 32 threads a column", &te.Load{Tensor: w, Index: []te.Index{v(n), v(k)}}, []*te.Var{n}, k,
			schedule.MatVec{TileF: 8, Split: 32, Vec: 8}, 8, 16, 2},
		// A thread per key: 32 keys 256 bytes apart, 4 bytes each.
		{"a thread per key", &te.Load{Tensor: kc, Index: []te.Index{v(tt), v(e)}}, []*te.Var{tt}, e,
			schedule.MatVec{TileF: 256, Split: 1}, 1, 0, 32},
		// Column vectors across e: 8 lanes cover 32 floats of a row, one
		// line; 4 rows of t.
		{"column vectors", &te.Load{Tensor: kc, Index: []te.Index{v(tt), v(e)}}, []*te.Var{e}, tt,
			schedule.MatVec{TileF: 8, Split: 32, Cols: 4, ColVec: 4}, 1, 16, 1},
		{"a gather", &te.Load{Tensor: w, Index: []te.Index{v(n), {}}, Gather: []te.Expr{nil, &te.Load{Tensor: ids, Index: []te.Index{v(k)}}}},
			[]*te.Var{n}, k, schedule.MatVec{TileF: 16, Split: 16}, 1, 0, 0},
	}
	for _, tc := range tests {
		if got := warpLines(tc.f, tc.cols, tc.k, &tc.mv, tc.vec, tc.size); got != tc.want {
			t.Errorf("%s: %v wavefronts per 128 bytes, want %v", tc.name, got, tc.want)
		}
	}
}

// groupedScores is a decode step's scores with the query heads of a
// key head as rows (transform.GroupRows): y[g, h, t] = Σ_e q[g·rows + h,
// e]·key(g, t, e), the key the new one at pos[0] and the cache's
// elsewhere, bf16, heads of 64.
func groupedScores(groups, rows, t int) *te.Program {
	const dh = 64
	b := tb.New("grouped")
	pos := b.InputOf("pos", te.I32, 1)
	q := b.InputOf("q", te.BF16, groups*rows, dh)
	k := b.InputOf("k", te.BF16, groups, dh)
	kc := b.InputOf("kc", te.BF16, groups, t, dh)
	y := b.Compute("y", tb.Shape(groups, rows, t), func(ax []te.Index) te.Expr {
		g, h, p := ax[0], ax[1], ax[2]
		return tb.Reduce(te.Sum, "e", dh, func(e te.Index) te.Expr {
			key := tb.Sel(tb.Bin(te.Eq, tb.Idx(p), tb.Ld(pos, te.Const(0))), tb.Ld(k, g, e), tb.Ld(kc, g, p, e))
			return tb.Bin(te.Mul, tb.Ld(q, g.Scale(rows).Add(h), e), key)
		})
	})
	return b.Program(y)
}

// TestGroupedScoresOnLanes checks the tiles of grouped scores: several
// columns a thread would read the select of the new key and the cache a
// scalar at a time, so the planner takes one column a thread, the
// column's threads on a warp's lanes with 16-byte loads of the keys, the
// group's rows staged for them, and, with K a head's 64, 4 lanes a key.
func TestGroupedScoresOnLanes(t *testing.T) {
	for _, rows := range []int{2, 4, 8} {
		p := groupedScores(16, rows, 1024)
		pl := plan(t, p, "h100", Options{Split: true, Reuse: true})
		s := pl.Schedules[p.Outputs[0]]
		mv := s.MatVec
		if mv == nil || !mv.KLanes || mv.Cols > 1 || mv.Vec != 8 || s.TileM != rows || mv.Split != 4 {
			t.Errorf("%d rows: %s; want a tile of the %d rows, a column a thread on 4 lanes, 16-byte loads", rows, s, rows)
		}
	}
}
