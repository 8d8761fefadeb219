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
//   - rotary embeddings at run-time positions that read the partner column
//     ±E/2 of the projection (select(e < E/2, -q[b, e + E/2], q[b, e -
//     E/2])), a consumer's column range per producer tile;
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
	E := g.newDim(pick(g, []int{4, 8, 16, 32}))
	H := g.newDim(E.n / 2)
	D := g.newDim(pick(g, []int{16, 24, 32, 48, 64}))
	F := g.newDim(pick(g, []int{8, 16, 32}))
	for 2*F.n*D.n > maxElems {
		F = g.newDim(F.n / 2)
	}
	T := g.newDim(pick(g, []int{3, 5, 8, 12, 17, 33}))
	for B.n*T.n*E.n > maxElems {
		T = g.newDim(T.n / 2)
	}
	Df, Ef, Tf := float64(D.n), float64(E.n), float64(T.n)

	pos := g.fresh("pos")
	g.decls = append(g.decls, fmt.Sprintf("input %s: i32[%s]", pos, B.s))
	cacheDT := "f32"
	if g.chance(0.2) {
		cacheDT = pick(g, []string{"f16", "bf16"})
	}
	x := g.placeholder([]dim{B, D}, "f32", false)
	kc := g.placeholder([]dim{B, T, E}, cacheDT, false)
	vc := g.placeholder([]dim{B, T, E}, cacheDT, false)

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
	q, k, v := proj("q", h, D, E), proj("k", h, D, E), proj("v", h, D, E)

	// rotary embeddings at pos[b]: cos and sin of f32(pos[b]) * freq[e % H]
	freq := g.placeholder([]dim{H}, "f32", true)
	cs, sn := g.fresh("cs"), g.fresh("sn")
	g.body = append(g.body,
		fmt.Sprintf("%s[b, e] = cos(f32(%s[b]) * %s[e %% %s]) where b in 0..%s, e in 0..%s", cs, pos, freq.name, H.paren(), B.s, E.s),
		fmt.Sprintf("%s[b, e] = sin(f32(%s[b]) * %s[e %% %s]) where b in 0..%s, e in 0..%s", sn, pos, freq.name, H.paren(), B.s, E.s))
	rope := func(in *tensor) *tensor {
		y := &tensor{name: g.fresh("r" + in.name[:1]), dims: in.dims, dt: "f32", mag: 2 * in.mag}
		y.err = 2*in.err + 2*in.mag*(Tf+2) + 2*y.mag
		return g.define(y, fmt.Sprintf("%[1]s[b, e] = %[2]s[b, e] * %[3]s[b, e] + select(e < %[5]s, -%[2]s[b, e + %[5]s], %[2]s[b, e - %[5]s]) * %[4]s[b, e] where b in 0..%[6]s, e in 0..%[7]s",
			y.name, in.name, cs, sn, H.paren(), B.s, E.s))
	}
	qr := q
	if g.chance(0.8) {
		qr = rope(q)
	}
	kr := k
	if g.chance(0.8) {
		kr = rope(k)
	}

	// the caches as they are after this step, or as they were (the new
	// slot not attended to)
	cacheMag := func(c *tensor, nw *tensor) (float64, float64) {
		return max(1, nw.mag), nw.err + nw.mag*storageULP[c.dt]
	}
	kt, kread := kc, kc.name+"[b, t, e]"
	if g.chance(0.7) {
		m, e := cacheMag(kc, kr)
		kt = &tensor{name: g.fresh("kt"), dims: []dim{B, T, E}, dt: "f32", mag: m, err: e}
		g.define(kt, fmt.Sprintf("%s[b, t, e] = select(t == %s[b], %s[b, e], %s[b, t, e]) where t in 0..%s", kt.name, pos, kr.name, kc.name, T.s))
		kread = kt.name + "[b, t, e]"
	}
	vt, vread := vc, vc.name+"[b, t, e]"
	if g.chance(0.5) {
		m, e := cacheMag(vc, v)
		vt = &tensor{name: g.fresh("vt"), dims: []dim{B, T, E}, dt: "f32", mag: m, err: e}
		g.define(vt, fmt.Sprintf("%s[b, t, e] = select(t == %s[b], %s[b, e], %s[b, t, e]) where t in 0..%s", vt.name, pos, v.name, vc.name, T.s))
		vread = vt.name + "[b, t, e]"
	}

	// scores masked at t <= pos[b] with -inf, scaled to at most 4
	sm := Ef * qr.mag * kt.mag
	scale := 0.5
	if sm > 4 {
		scale = 1 / math.Ceil(sm/4)
	}
	se := (Ef*qr.err*kt.mag+Ef*kt.err*qr.mag+Ef*Ef*qr.mag*kt.mag)*scale + 2*sm*scale
	sc := &tensor{name: g.fresh("sc"), dims: []dim{B, T}, dt: "f32", mag: sm * scale, err: se}
	g.define(sc, fmt.Sprintf("%s[b, t] = select(t <= %s[b], sum[e](%s[b, e] * %s) * %s, -inf)", sc.name, pos, qr.name, kread, float(scale)))
	pe := 4*se + 8*Tf + 8 // as softmax's
	ctx := &tensor{name: g.fresh("ctx"), dims: []dim{B, E}, dt: "f32", mag: vt.mag}
	ctx.err = 4*(Tf*pe*vt.mag+Tf*Tf*vt.mag+Tf*vt.err) + 8*vt.mag
	mx, pr, den := g.fresh("mx"), g.fresh("pr"), g.fresh("den")
	switch g.intn(3) {
	case 0:
		g.define(ctx, fmt.Sprintf("%s = softmax(%s)\n  %s[b, e] = sum[t](%s[b, t] * %s)", pr, sc.name, ctx.name, pr, vread))
	case 1:
		g.define(ctx, fmt.Sprintf("%s[b] = max[t](%s[b, t])\n  %s[b, t] = exp(%s[b, t] - %s[b])\n  %s[b] = sum[t](%s[b, t])\n  %s[b, e] = sum[t](%s[b, t] * %s) / %s[b]",
			mx, sc.name, pr, sc.name, mx, den, pr, ctx.name, pr, vread, den))
	default:
		// unnormalised: the weighted sum alone, each weight at most 1
		ctx.mag = Tf * vt.mag
		ctx.err = Tf*pe*vt.mag + Tf*vt.err + Tf*Tf*vt.mag + ctx.mag
		g.define(ctx, fmt.Sprintf("%s[b] = max[t](%s[b, t])\n  %s[b, e] = sum[t](exp(%s[b, t] - %s[b]) * %s)",
			mx, sc.name, ctx.name, sc.name, mx, vread))
	}
	g.mustOut = append(g.mustOut, ctx)

	// the output projection and the residual
	o := proj("o", ctx, E, D)
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
	vm, ve := cacheMag(vc, v)
	g.body = append(g.body,
		fmt.Sprintf("update %s[b, %s[b], e] = %s[b, e]", kc.name, pos, kr.name),
		fmt.Sprintf("update %s[b, %s[b], e] = %s[b, e]", vc.name, pos, v.name))
	g.updTol[kc.name] = Tolerance(km, ke)
	g.updTol[vc.name] = Tolerance(vm, ve)
	g.feedPositions(pos, B.n, T.n, 0, true, plant)
}
