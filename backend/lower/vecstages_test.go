package lower_test

import (
	"math"
	"testing"

	"tec/backend/kir"
	"tec/backend/lower"
	"tec/backend/sim"
	"tec/internal/numeric"
	tb "tec/internal/testkit/tebuild"
	"tec/te"
)

// TestVectorStages checks the 16-byte load paths of the stages that a
// decode step and BERT have besides their projections, on tiny programs:
// each named stage reads its tensor only with 16-byte vector copies (at
// least want of them, none element by element), and the module, fused or
// not, computes the reference's answer, race-free.
//
//   - RoPE: the halves swapped under a select uniform over each vector
//     (e < 32), in a fused kernel, staged through shared memory
//     (elementwiseStaged: the body takes a sine and a cosine);
//   - a residual add in a fused kernel, a block's chunk at a time
//     (elementwiseChunks);
//   - an RMSNorm's and a LayerNorm's row statistics of halves
//     (blockReduceVector), the variance reading its row's mean once per
//     vector;
//   - a KV-cache update at a run-time slot (updateVector);
//   - a decode step's softmax denominator of bf16 scores, a row sum whose
//     terms past the position are exactly 0 (blockReduceVector under the
//     zero test: a vector read where one of its terms may be nonzero);
//   - a decode step's attention scores, a matrix-vector product whose wide
//     factor selects, by its column, the new bf16 key or the f32 cache
//     (sumVec: the cache 16 bytes at a time, the key 8), at a slot that
//     is neither the first nor the last of its tile;
//   - its attention's weighted sum of the values, a matrix-vector product
//     whose wide factor runs along its columns, not along k, under a k
//     mask (sumColVec: 16 bytes of the f32 cache across a thread's four
//     columns, 8 of the bf16 new value; its scores staged 16 bytes at a
//     time up to the group of the last live slot), at the first, a
//     middle and the last slot.
func TestVectorStages(t *testing.T) {
	for _, tc := range []struct {
		name         string
		build        func() *te.Program
		fused        bool
		stage, input string
		want         int // vector copies of input in the stage, at least
		pos          int // the position fed as pos[0], where the program has one
	}{
		{"cached scores", cachedScores, true, "sc", "kc", 1, 37},
		{"cached scores' new key", cachedScores, true, "sc", "knew", 1, 37},
		{"cached context", cachedContext, true, "ctx", "vc", 1, 37},
		{"cached context's new value", cachedContext, true, "ctx", "vnew", 1, 37},
		{"cached context's scores", cachedContext, true, "ctx", "sc", 1, 37},
		{"cached context at the first slot", cachedContext, true, "ctx", "vc", 1, 0},
		{"cached context at the last slot", cachedContext, true, "ctx", "vc", 1, 255},
		{"softmax sum to a position", maskedDenominator, false, "den", "sc", 1, 37},
		{"softmax sum to the last position", maskedDenominator, false, "den", "sc", 1, 255},
		{"rope", rope, true, "y", "x", 3, 0},
		{"residual add", residual, true, "y", "r", 1, 0},
		{"rms statistic", rmsRow, false, "ms", "x", 1, 0},
		{"layernorm variance", layerNormVar, false, "var", "x", 1, 0},
		{"cache update", cacheUpdate, false, "kc/update", "knew", 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.build()
			var m *kir.Module
			if tc.fused {
				m, _ = fusedModule(t, p, "a100", false)
			} else {
				var err error
				if m, err = lower.Unfused(p, lower.Options{}); err != nil {
					t.Fatal(err)
				}
			}
			vec, scalar, found := stageLoads(m, tc.stage, tc.input)
			if !found {
				t.Fatalf("no stage %s in the module:\n%s", tc.stage, m)
			}
			if vec < tc.want || scalar > 0 {
				t.Errorf("stage %s reads %s with %d vector copies and %d scalar loads, want at least %d and none:\n%s",
					tc.stage, tc.input, vec, scalar, tc.want, m)
			}
			in := randomFeeds(p)
			if pos, ok := in["pos"]; ok {
				pos.Data[0] = float64(tc.pos)
			}
			want, res := runRaceFree(t, p, m, in)
			for name, w := range want {
				mm, err := numeric.Compare(res.Outputs[name], w, numeric.Tolerance{Rtol: 1e-4, Atol: 1e-5})
				if err != nil || mm != nil {
					t.Errorf("output %s: %v %v", name, err, mm)
				}
			}
		})
	}
}

// runRaceFree returns the reference's outputs of p on in, and the
// simulation of m on them, on three resident blocks, failing t where the
// simulator finds a race.
func runRaceFree(t *testing.T, p *te.Program, m *kir.Module, in map[string]*te.Array) (map[string]*te.Array, *sim.Result) {
	t.Helper()
	want, err := te.Evaluate(p, in, te.EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(m, in, sim.Options{Race: true, ResidentBlocks: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.RaceCount > 0 {
		t.Fatalf("%d races; first %s", res.RaceCount, res.Races[0])
	}
	return want, res
}

// stageLoads counts, in the stages of m named stage, the 16-byte copies
// from the global buffer input and its loads element by element.
func stageLoads(m *kir.Module, stage, input string) (vec, scalar int, found bool) {
	for _, k := range m.Kernels {
		kir.WalkStmts(k.Body, func(s kir.Stmt) bool {
			st, ok := s.(*kir.Stage)
			if !ok || st.Name != stage {
				return true
			}
			found = true
			kir.WalkStmts(st.Body, func(x kir.Stmt) bool {
				if c, ok := x.(*kir.VecCopy); ok && c.Src.Name == input && c.Src.Space == kir.Global {
					vec++
				}
				kir.Exprs(x, func(e kir.Expr) {
					kir.WalkExpr(e, func(y kir.Expr) bool {
						if ld, ok := y.(*kir.Load); ok && ld.Buf.Name == input {
							scalar++
						}
						return true
					})
				})
				return true
			})
			return false
		})
	}
	return vec, scalar, found
}

// rope rotates the halves of each head of x, a projection of q, as a
// decode step's RoPE does: y[h, e] = x[h, e]·cos(a) + (e < 32 ? -x[h, e+32]
// : x[h, e-32])·sin(a), a = 3·f[e mod 32]. The projection's staged tiles
// give the kernel the scratch that RoPE's staging takes (elementwiseStaged
// uses only scratch the plan counts).
func rope() *te.Program {
	b := tb.New("rope")
	q, w, f := b.Input("q", 4, 64), b.Param("w", 64, 64), b.Param("f", 32)
	x := b.Compute("x", tb.Shape(4, 64), func(ax []te.Index) te.Expr {
		return tb.Reduce(te.Sum, "k", 64, func(k te.Index) te.Expr { return tb.Bin(te.Mul, tb.Ld(q, ax[0], k), tb.Ld(w, k, ax[1])) })
	})
	y := b.Compute("y", tb.Shape(4, 64), func(ax []te.Index) te.Expr {
		h, e := ax[0], ax[1]
		a := tb.Bin(te.Mul, tb.F(3), tb.Ld(f, e.Mod(32)))
		swap := tb.Sel(tb.Bin(te.Lt, tb.Idx(e), tb.I(32)),
			tb.Un(te.Neg, tb.Ld(x, h, e.AddConst(32))), tb.Ld(x, h, e.AddConst(-32)))
		return tb.Bin(te.Add, tb.Bin(te.Mul, tb.Ld(x, h, e), tb.Un(te.Cos, a)), tb.Bin(te.Mul, swap, tb.Un(te.Sin, a)))
	})
	return b.Program(y)
}

// residual adds r to a sum of x's rows, which a grid sync separates from
// it.
func residual() *te.Program {
	b := tb.New("residual")
	x, r := b.Input("x", 64, 96), b.Input("r", 96)
	s := b.Compute("s", tb.Shape(96), func(ax []te.Index) te.Expr {
		return tb.Reduce(te.Sum, "k", 64, func(k te.Index) te.Expr { return tb.Ld(x, k, ax[0]) })
	})
	y := b.Compute("y", tb.Shape(2, 96), func(ax []te.Index) te.Expr {
		return tb.Bin(te.Add, tb.Ld(r, ax[1]), tb.Ld(s, ax[1]))
	})
	return b.Program(y)
}

// rmsRow is an RMSNorm's statistic of f16 rows.
func rmsRow() *te.Program {
	b := tb.New("rms")
	x := b.InputOf("x", te.F16, 3, 128)
	ms := b.Compute("ms", tb.Shape(3), func(ax []te.Index) te.Expr {
		return tb.Bin(te.Div, tb.Reduce(te.Sum, "k", 128, func(k te.Index) te.Expr {
			return tb.Bin(te.Mul, tb.Ld(x, ax[0], k), tb.Ld(x, ax[0], k))
		}), tb.F(128))
	})
	return b.Program(ms)
}

// layerNormVar is a LayerNorm's mean and variance of f16 rows.
func layerNormVar() *te.Program {
	b := tb.New("lnvar")
	x := b.InputOf("x", te.F16, 3, 96)
	mean := b.Compute("mean", tb.Shape(3), func(ax []te.Index) te.Expr {
		return tb.Bin(te.Div, tb.Reduce(te.Sum, "k", 96, func(k te.Index) te.Expr { return tb.Ld(x, ax[0], k) }), tb.F(96))
	})
	vr := b.Compute("var", tb.Shape(3), func(ax []te.Index) te.Expr {
		return tb.Bin(te.Div, tb.Reduce(te.Sum, "k", 96, func(k te.Index) te.Expr {
			d := tb.Bin(te.Sub, tb.Ld(x, ax[0], k), tb.Ld(mean, ax[0]))
			return tb.Bin(te.Mul, d, d)
		}), tb.F(96))
	})
	return b.Program(vr)
}

// cacheUpdate writes a new f16 row, computed from x, into an f32 cache at
// the slot pos[0]: update kc[pos[0], e] = knew[e].
func cacheUpdate() *te.Program {
	b := tb.New("update")
	pos := b.InputOf("pos", te.I32, 1)
	x := b.Input("x", 64)
	kc := b.Input("kc", 4, 64)
	knew := b.ComputeOf("knew", te.F16, tb.Shape(64), func(ax []te.Index) te.Expr {
		return tb.Bin(te.Mul, tb.Ld(x, ax[0]), tb.F(2))
	})
	u := b.ComputeOf("kc/update", te.F16, tb.Shape(64), func(ax []te.Index) te.Expr { return tb.Ld(knew, ax[0]) })
	u.Update = &te.Update{Target: kc, Index: []te.Index{te.Const(0), te.VarIndex(u.Axes[0])},
		Gather: []te.Expr{tb.Ld(pos, te.Const(0)), nil}}
	return b.Program(knew)
}

// cachedScores is a decode step's attention scores for one head at
// position pos[0]: sc[t] = Σ_k q[k]·kt[t, k], kt[t, k] the new key
// (bf16, computed) at t = pos[0] and the f32 cache kc elsewhere.
func cachedScores() *te.Program {
	b := tb.New("scores")
	pos := b.InputOf("pos", te.I32, 1)
	q, x := b.Input("q", 64), b.Input("x", 64)
	kc := b.Input("kc", 256, 64)
	knew := b.ComputeOf("knew", te.BF16, tb.Shape(64), func(ax []te.Index) te.Expr {
		return tb.Bin(te.Mul, tb.Ld(x, ax[0]), tb.F(2))
	})
	sc := b.Compute("sc", tb.Shape(256), func(ax []te.Index) te.Expr {
		return tb.Reduce(te.Sum, "k", 64, func(k te.Index) te.Expr {
			kt := tb.Sel(tb.Bin(te.Eq, tb.Idx(ax[0]), tb.Ld(pos, te.Const(0))), tb.Ld(knew, k), tb.Ld(kc, ax[0], k))
			return tb.Bin(te.Mul, tb.Ld(q, k), kt)
		})
	})
	return b.Program(sc)
}

// cachedContext is a decode step's attention context for one head at
// position pos[0]: ctx[e] = Σ_t exp(sc[t])·vt[t, e], sc[t] = x[t] for t
// ≤ pos[0] and −∞ past it (a k mask: the products past pos[0] are 0), and
// vt[t, e] the new value (bf16, computed) at t = pos[0] and the f32 cache
// vc elsewhere.
func cachedContext() *te.Program {
	b := tb.New("context")
	pos := b.InputOf("pos", te.I32, 1)
	x, y := b.Input("x", 256), b.Input("y", 64)
	vc := b.Input("vc", 256, 64)
	sc := b.Compute("sc", tb.Shape(256), func(ax []te.Index) te.Expr {
		return tb.Sel(tb.Bin(te.Le, tb.Idx(ax[0]), tb.Ld(pos, te.Const(0))), tb.Ld(x, ax[0]), tb.F(math.Inf(-1)))
	})
	vnew := b.ComputeOf("vnew", te.BF16, tb.Shape(64), func(ax []te.Index) te.Expr {
		return tb.Bin(te.Mul, tb.Ld(y, ax[0]), tb.F(2))
	})
	ctx := b.Compute("ctx", tb.Shape(64), func(ax []te.Index) te.Expr {
		return tb.Reduce(te.Sum, "t", 256, func(t te.Index) te.Expr {
			vt := tb.Sel(tb.Bin(te.Eq, tb.Idx(t), tb.Ld(pos, te.Const(0))), tb.Ld(vnew, ax[0]), tb.Ld(vc, t, ax[0]))
			return tb.Bin(te.Mul, tb.Un(te.Exp, tb.Ld(sc, t)), vt)
		})
	})
	return b.Program(ctx)
}

// maskedDenominator is a decode step's softmax denominator for 4 heads
// at position pos[0]: den[h] = Σ_t exp(sc[h, t] − mx[h]), the bf16 scores
// sc[h, t] = x[h, t] up to pos[0] and −∞ past it.
func maskedDenominator() *te.Program {
	b := tb.New("denominator")
	pos := b.InputOf("pos", te.I32, 1)
	x := b.Input("x", 4, 256)
	sc := b.ComputeOf("sc", te.BF16, tb.Shape(4, 256), func(ax []te.Index) te.Expr {
		return tb.Sel(tb.Bin(te.Le, tb.Idx(ax[1]), tb.Ld(pos, te.Const(0))), tb.Ld(x, ax[0], ax[1]), tb.F(math.Inf(-1)))
	})
	mx := b.Compute("mx", tb.Shape(4), func(ax []te.Index) te.Expr {
		return tb.Reduce(te.ReduceMax, "t", 256, func(t te.Index) te.Expr { return tb.Ld(sc, ax[0], t) })
	})
	den := b.Compute("den", tb.Shape(4), func(ax []te.Index) te.Expr {
		return tb.Reduce(te.Sum, "t", 256, func(t te.Index) te.Expr {
			return tb.Un(te.Exp, tb.Bin(te.Sub, tb.Ld(sc, ax[0], t), tb.Ld(mx, ax[0])))
		})
	})
	return b.Program(den)
}
