package progfuzz

import (
	"fmt"
	"math"
)

// llmStep writes a whole LLM decode step in small, the shape of
// examples/llama.te's decode model, for the features the fused kernels
// have for it:
//
//   - RMSNorm: a row's sum of squares, then a scale per element;
//   - matrix-vector projections of B = 1..8 rows (weights laid out [out,
//     in] as Llama's proj, or [in, out]), whose consumers may wait on
//     per-tile counters instead of a grid sync;
//   - heads of DH columns (one to four query heads, grouped over as many
//     key/value heads or one), rotary embeddings at run-time positions
//     that read each column's partner ±DH/2 in its head (select(e < DH/2,
//     -q[b, n * DH + e + DH/2], q[b, n * DH + e - DH/2])), a consumer's
//     column range per producer tile;
//   - attention over a key cache and a separate value cache masked at
//     t <= pos[b] with -inf, then exp and a weighted sum over the values:
//     the value-side loads past pos[b] are skipped (the factor is exactly
//     zero there), reading the cache itself or the cache with the new slot
//     selected in;
//   - an output projection with a residual, and SwiGLU on the gate and up
//     slices of one projection and a down projection;
//   - in-place updates of both caches at pos[b], inside the fused kernel.
func (g *gen) llmStep(plant float64) {
	B := g.newDim(1 + g.intn(8))
	// NH query heads of width DH over NKV key/value heads (grouped-query
	// attention: query head n reads key/value head n / GQ)
	DH := g.newDim(pick(g, []int{4, 8, 16}))
	NH := pick(g, []int{1, 1, 2, 4})
	GQ := pick(g, []int{1, NH})
	NKV := NH / GQ
	H := g.newDim(DH.n / 2)
	D := g.newDim(pick(g, []int{16, 24, 32, 48, 64}))
	for D.n*NH*DH.n > maxElems {
		D = g.newDim(D.n / 2)
	}
	EQ, EKV := g.newDim(NH*DH.n), g.newDim(NKV*DH.n)
	F := g.newDim(pick(g, []int{8, 16, 32}))
	for 2*F.n*D.n > maxElems {
		F = g.newDim(F.n / 2)
	}
	T := g.newDim(pick(g, []int{3, 5, 8, 12, 17, 33}))
	for B.n*NKV*T.n*DH.n > maxElems {
		T = g.newDim(T.n / 2)
	}
	NKVd := g.newDim(NKV)
	Df, DHf, Tf := float64(D.n), float64(DH.n), float64(T.n)
	kvHead := "n"
	if GQ > 1 {
		kvHead = fmt.Sprintf("n / %d", GQ)
	}

	pos := g.fresh("pos")
	g.decls = append(g.decls, fmt.Sprintf("input %s: i32[%s]", pos, B.s))
	cacheDT := "f32"
	if g.chance(0.2) {
		cacheDT = pick(g, []string{"f16", "bf16"})
	}
	x := g.placeholder([]dim{B, D}, "f32", false)
	kc := g.placeholder([]dim{B, NKVd, T, DH}, cacheDT, false)
	vc := g.placeholder([]dim{B, NKVd, T, DH}, cacheDT, false)

	// rmsnorm of a [B, D] tensor, with rsqrt of at least 0.5
	rmsnorm := func(in *tensor) *tensor {
		w := g.placeholder([]dim{D}, "f32", true)
		ms := g.fresh("ms")
		// the mean of D squares: each term's error, the sum's, one
		// rounding of the division
		msErr := 2*in.err*in.mag + (Df+1)*in.mag*in.mag + 2
		// |x[d]| / sqrt(mean(x²) + 0.5) is at most √2·|x[d]| and √D
		r := math.Sqrt2
		y := &tensor{name: g.fresh("hn"), dims: []dim{B, D}, dt: "f32", mag: min(in.mag*r, math.Sqrt(Df))}
		y.err = in.err*r + in.mag*(1.5*msErr+4) + 3*y.mag
		return g.define(y, fmt.Sprintf("%s[b] = sum[d](%s[b, d] * %s[b, d]) / %s\n  %s[b, d] = %s[b, d] * rsqrt(%s[b] + 0.5) * %s[d]",
			ms, in.name, in.name, float(Df), y.name, in.name, ms, w.name))
	}
	// proj is a matrix-vector product of in's rows with a [out, in] (or
	// [in, out]) weight
	proj := func(prefix string, in *tensor, K, N dim) *tensor {
		wdims, wread := []dim{N, K}, "%s[n, k]"
		if g.chance(0.3) {
			wdims, wread = []dim{K, N}, "%s[k, n]"
		}
		w := g.placeholder(wdims, "f32", true)
		w.mag = paramMag(w.dims)
		Kf := float64(K.n)
		m := Kf * in.mag * w.mag
		// scaled to at most 2, so that products of projections (SwiGLU)
		// keep their bounds meaningful
		scale, scaled := 1.0, ""
		if m > 2 {
			scale = 1 / math.Ceil(m/2)
			scaled = " * " + float(scale)
		}
		y := &tensor{name: g.fresh(prefix), dims: []dim{B, N}, dt: "f32", mag: m * scale}
		y.err = (Kf*in.err*w.mag+Kf*Kf*in.mag*w.mag+2*m)*scale + 2*y.mag
		return g.define(y, fmt.Sprintf("%s[b, n] = sum[k](%s[b, k] * "+wread+")%s", y.name, in.name, w.name, scaled))
	}

	h := rmsnorm(x)
	q, k, v := proj("q", h, D, EQ), proj("k", h, D, EKV), proj("v", h, D, EKV)

	// rotary embeddings at pos[b]: cos and sin of f32(pos[b]) * freq[e % H]
	freq := g.placeholder([]dim{H}, "f32", true)
	cs, sn := g.fresh("cs"), g.fresh("sn")
	g.body = append(g.body,
		fmt.Sprintf("%s[b, e] = cos(f32(%s[b]) * %s[e %% %s]) where b in 0..%s, e in 0..%s", cs, pos, freq.name, H.paren(), B.s, DH.s),
		fmt.Sprintf("%s[b, e] = sin(f32(%s[b]) * %s[e %% %s]) where b in 0..%s, e in 0..%s", sn, pos, freq.name, H.paren(), B.s, DH.s))
	// heads splits a projection into heads of DH, rotated (reading each
	// column's partner ±DH/2 in the head) or not
	heads := func(in *tensor, nh int, rotate bool) *tensor {
		nhd := g.newDim(nh)
		col := func(off string) string {
			c := "e" + off
			if nh > 1 {
				c = fmt.Sprintf("n * %s + e%s", DH.paren(), off)
			}
			return fmt.Sprintf("%s[b, %s]", in.name, c)
		}
		y := &tensor{name: g.fresh("h" + in.name[:1]), dims: []dim{B, nhd, DH}, dt: "f32", mag: in.mag, err: in.err}
		where := fmt.Sprintf(" where b in 0..%s, n in 0..%s, e in 0..%s", B.s, nhd.s, DH.s)
		if !rotate {
			return g.define(y, fmt.Sprintf("%s[b, n, e] = %s%s", y.name, col(""), where))
		}
		y.mag, y.err = 2*in.mag, 2*in.err+2*in.mag*(Tf+2)+4*in.mag
		return g.define(y, fmt.Sprintf("%s[b, n, e] = %s * %s[b, e] + select(e < %s, -%s, %s) * %s[b, e]%s",
			y.name, col(""), cs, H.paren(), col(" + "+H.paren()), col(" - "+H.paren()), sn, where))
	}
	qr := heads(q, NH, g.chance(0.8))
	kr := heads(k, NKV, g.chance(0.8))
	vh := heads(v, NKV, false)

	// the caches as they are after this step, or as they were (the new
	// slot not attended to)
	cacheMag := func(c *tensor, nw *tensor) (float64, float64) {
		return max(1, nw.mag), nw.err + nw.mag*storageULP[c.dt]
	}
	withSlot := func(c, nw *tensor, p float64) (*tensor, string) {
		if !g.chance(p) {
			return c, c.name + "[b, " + kvHead + ", t, e]"
		}
		m, e := cacheMag(c, nw)
		y := &tensor{name: g.fresh(c.name[:1] + "t"), dims: []dim{B, NKVd, T, DH}, dt: "f32", mag: m, err: e}
		g.define(y, fmt.Sprintf("%s[b, g, t, e] = select(t == %s[b], %s[b, g, e], %s[b, g, t, e]) where t in 0..%s", y.name, pos, nw.name, c.name, T.s))
		return y, y.name + "[b, " + kvHead + ", t, e]"
	}
	kt, kread := withSlot(kc, kr, 0.7)
	vt, vread := withSlot(vc, vh, 0.5)

	// scores masked at t <= pos[b] with -inf, scaled to at most 4
	sm := DHf * qr.mag * kt.mag
	scale := 0.5
	if sm > 4 {
		scale = 1 / math.Ceil(sm/4)
	}
	se := (DHf*qr.err*kt.mag+DHf*kt.err*qr.mag+DHf*DHf*qr.mag*kt.mag)*scale + 2*sm*scale
	sc := &tensor{name: g.fresh("sc"), dims: []dim{B, g.newDim(NH), T}, dt: "f32", mag: sm * scale, err: se}
	g.define(sc, fmt.Sprintf("%s[b, n, t] = select(t <= %s[b], sum[e](%s[b, n, e] * %s) * %s, -inf)", sc.name, pos, qr.name, kread, float(scale)))
	pe := 4*se + 8*Tf + 8 // as softmax's
	ctx := &tensor{name: g.fresh("ctx"), dims: []dim{B, g.newDim(NH), DH}, dt: "f32", mag: vt.mag}
	ctx.err = 4*(Tf*pe*vt.mag+Tf*Tf*vt.mag+Tf*vt.err) + 8*vt.mag
	mx, pr, den := g.fresh("mx"), g.fresh("pr"), g.fresh("den")
	switch g.intn(3) {
	case 0:
		g.define(ctx, fmt.Sprintf("%s[b, n] = max[t](%s[b, n, t])\n  %s[b, n, t] = exp(%s[b, n, t] - %s[b, n])\n  %s[b, n] = sum[t](%s[b, n, t])\n  %s[b, n, e] = sum[t](%s[b, n, t] * %s) / %s[b, n]",
			mx, sc.name, pr, sc.name, mx, den, pr, ctx.name, pr, vread, den))
	case 1:
		// the weights normalised before the weighted sum, as softmax's
		g.define(ctx, fmt.Sprintf("%s[b, n] = max[t](%s[b, n, t])\n  %s[b, n] = sum[t](exp(%s[b, n, t] - %s[b, n]))\n  %s[b, n, t] = exp(%s[b, n, t] - %s[b, n]) / %s[b, n]\n  %s[b, n, e] = sum[t](%s[b, n, t] * %s)",
			mx, sc.name, den, sc.name, mx, pr, sc.name, mx, den, ctx.name, pr, vread))
	default:
		// unnormalised: the weighted sum alone, each weight at most 1
		ctx.mag = Tf * vt.mag
		ctx.err = Tf*pe*vt.mag + Tf*vt.err + Tf*Tf*vt.mag + ctx.mag
		g.define(ctx, fmt.Sprintf("%s[b, n] = max[t](%s[b, n, t])\n  %s[b, n, e] = sum[t](exp(%s[b, n, t] - %s[b, n]) * %s)",
			mx, sc.name, ctx.name, sc.name, mx, vread))
	}
	g.mustOut = append(g.mustOut, ctx)

	// the heads concatenated, the output projection and the residual
	oc := &tensor{name: g.fresh("oc"), dims: []dim{B, EQ}, dt: "f32", mag: ctx.mag, err: ctx.err}
	g.define(oc, fmt.Sprintf("%s[b, c] = %s[b, c / %s, c %% %s] where c in 0..%s", oc.name, ctx.name, DH.paren(), DH.paren(), EQ.s))
	o := proj("o", oc, EQ, D)
	res := &tensor{name: g.fresh("res"), dims: []dim{B, D}, dt: "f32", mag: 1 + o.mag, err: o.err + 1 + o.mag}
	g.define(res, fmt.Sprintf("%s = %s + %s", res.name, x.name, o.name))

	if g.chance(0.6) {
		// SwiGLU on the gate and up slices of one projection, then down,
		// in parallel with the attention (as GPT-J's blocks: the
		// attention's error bound, amplified by a norm of the residual,
		// would leave the FFN's tolerance meaningless)
		h2 := h
		if g.chance(0.5) {
			h2 = rmsnorm(x)
		}
		F2 := g.newDim(2 * F.n)
		gu := proj("gu", h2, D, F2)
		G := gu.mag
		act := &tensor{name: g.fresh("act"), dims: []dim{B, F}, dt: "f32", mag: G * G}
		act.err = gu.err*(2*G+G*G/4) + 4*act.mag
		g.define(act, fmt.Sprintf("%s[b, f] = %s[b, f] * sigmoid(%s[b, f]) * %s[b, f + %s] where b in 0..%s, f in 0..%s",
			act.name, gu.name, gu.name, gu.name, F.paren(), B.s, F.s))
		dn := proj("dn", act, F, D)
		out := &tensor{name: g.fresh("out"), dims: []dim{B, D}, dt: "f32", mag: 1 + dn.mag, err: dn.err + 1 + dn.mag}
		g.define(out, fmt.Sprintf("%s = %s + %s", out.name, x.name, dn.name))
		g.mustOut = append(g.mustOut, out)
	}
	g.mustOut = append(g.mustOut, res)

	// the caches updated in place at pos[b]
	km, ke := cacheMag(kc, kr)
	vm, ve := cacheMag(vc, vh)
	g.body = append(g.body,
		fmt.Sprintf("update %s[b, g, %s[b], e] = %s[b, g, e]", kc.name, pos, kr.name),
		fmt.Sprintf("update %s[b, g, %s[b], e] = %s[b, g, e]", vc.name, pos, vh.name))
	g.updTol[kc.name] = Tolerance(km, ke)
	g.updTol[vc.name] = Tolerance(vm, ve)
	g.feedPositions(pos, B.n, T.n, 0, true, plant)
}
