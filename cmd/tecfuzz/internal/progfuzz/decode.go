package progfuzz

import (
	"fmt"
	"math"
	"strings"
)

// decode writes one decode step of attention over a key/value cache, the
// shape of an LLM's step: run-time scalars and, with updates, in-place
// updates of the cache.
//
// The positions are an i32 input (or param) pos[b] whose values the program gives in
// a "# feed" line, inside the cache (first, last and any position between),
// so that each is read wherever it is used:
//
//   - in select conditions on output indexes: a masked contraction over the
//     cache (select(t <= pos[b], sum[e](q·k), -inf)) and masked reductions
//     (sum[t](select(t <= pos[b], kc[b, t, e], 0.0)), max with -inf);
//   - in arithmetic: rotary angles f32(pos[b]) * w[e] through sin and cos;
//   - as read indexes: kc[b, pos[b] + c, e] and a position table
//     wp[pos[b], e] (the feeds keep pos[b] + c inside);
//   - as update slots: update kc[b, pos[b], e] = knew[b, e], on a cache of
//     several layers one update per layer (a compile-time index each, in a
//     compile-time loop or as statements, one of them sometimes at a
//     compile-time slot), with reads of the cache before and after the
//     updates in the source, which must see the old values, and the new
//     slot read where it is made: select(t == pos[b], knew[b, e], kc[...]).
//
// With a small probability (plant), one position is planted past the
// cache (past its end or before its start): the program says "# expect
// outside pos", and every run must stop with the "is outside" error
// naming it.
func (g *gen) decode(updates bool, plant float64) {
	B := g.newDim(1 + g.intn(4))
	T := g.newDim(pick(g, []int{2, 3, 5, 8, 12, 17, 33, 64}))
	E := g.newDim(pick(g, []int{2, 3, 4, 6, 8, 16}))
	layers := 0
	if updates && g.chance(0.4) {
		layers = 2 + g.intn(2)
	}
	for max(layers, 1)*B.n*T.n*E.n > maxElems {
		E = g.newDim(E.n / 2)
	}
	// the largest constant added to a position used as an index
	off := 0
	if T.n > 2 && g.chance(0.4) {
		off = 1 + g.intn(2)
	}
	pos := g.fresh("pos")
	kind := "input"
	if g.chance(0.2) {
		kind = "param" // positions may be a param too
	}
	g.decls = append(g.decls, fmt.Sprintf("%s %s: i32[%s]", kind, pos, B.s))
	cacheDT := "f32"
	if g.chance(0.2) {
		cacheDT = pick(g, []string{"f16", "bf16"})
	}
	cdims := []dim{B, T, E}
	if layers > 0 {
		cdims = append([]dim{{layers, fmt.Sprint(layers)}}, cdims...)
	}
	x := g.placeholder([]dim{B, E}, "f32", false)
	kc := g.placeholder(cdims, cacheDT, false)
	// at reads the cache at layer 0 (if it has layers), batch b, slot t.
	at := func(c *tensor, t string) string {
		if layers > 0 {
			return fmt.Sprintf("%s[0, b, %s, e]", c.name, t)
		}
		return fmt.Sprintf("%s[b, %s, e]", c.name, t)
	}
	indexed := false // pos is used as an index

	// the query and the new key: contractions of x with 1/√E weights
	Ef, Tf := float64(E.n), float64(T.n)
	proj := func(prefix string) *tensor {
		w := g.placeholder([]dim{E, E}, "f32", true)
		w.mag = paramMag(w.dims)
		m := Ef * w.mag
		y := &tensor{name: g.fresh(prefix), dims: []dim{B, E}, dt: "f32", mag: m, err: Ef*Ef*w.mag + 2*m}
		return g.define(y, fmt.Sprintf("%s[b, e] = sum[d](%s[b, d] * %s[d, e])", y.name, x.name, w.name))
	}
	q, knew := proj("q"), proj("knew")

	// a run-time scalar in arithmetic: a rotary embedding of the query
	if g.chance(0.5) {
		wr := g.placeholder([]dim{E}, "f32", true)
		a := fmt.Sprintf("f32(%s[b]) * %s[e]", pos, wr.name)
		if g.chance(0.5) {
			a = fmt.Sprintf("f32(%s[b] + 1) * %s[e]", pos, wr.name)
		}
		// the angle is at most T and carries one rounding; sin and cos
		// have derivatives at most 1 and round once more
		r := &tensor{name: g.fresh("qr"), dims: q.dims, dt: "f32", mag: 2 * q.mag}
		r.err = 2*q.err + 2*q.mag*(Tf+2) + 2*r.mag
		g.define(r, fmt.Sprintf("%s[b, e] = %s[b, e] * cos(%s) + %s[b, %s - 1 - e] * sin(%s)", r.name, q.name, a, q.name, E.paren(), a))
		q = r
	}

	// the cache as it is after the step, the new slot read where it is made
	k := kc
	kname := at(kc, "t")
	if g.chance(0.6) {
		k = &tensor{name: g.fresh("k"), dims: []dim{B, T, E}, dt: "f32", mag: max(1, knew.mag), err: knew.err}
		g.define(k, fmt.Sprintf("%s[b, t, e] = select(t == %s[b], %s[b, e], %s) where t in 0..%s", k.name, pos, knew.name, at(kc, "t"), T.s))
		kname = k.name + "[b, t, e]"
	}
	conds := []string{"t <= %[1]s[b]", "t < %[1]s[b] + 1", "!(t > %[1]s[b])",
		fmt.Sprintf("t <= %%[1]s[b] && t + %d > %%[1]s[b]", 1+g.intn(T.n)), "t == %[1]s[b] || t < 1"}
	cond := fmt.Sprintf(pick(g, conds), pos)

	var out *tensor
	if g.chance(0.6) {
		// attention: a masked contraction over the cache, then a softmax
		sm := Ef * q.mag * k.mag
		scale := 0.5
		if sm > 4 {
			scale = 1 / math.Ceil(sm/4)
		}
		se := (Ef*q.err*k.mag+Ef*k.err*q.mag+Ef*Ef*q.mag*k.mag)*scale + 2*sm*scale
		s := &tensor{name: g.fresh("s"), dims: []dim{B, T}, dt: "f32", mag: sm * scale, err: se}
		fill := pick(g, []string{"-inf", "-1e30"})
		g.body = append(g.body, fmt.Sprintf("%s[b, t] = select(%s, sum[e](%s[b, e] * %s) * %s, %s)", s.name, cond, q.name, kname, float(scale), fill))
		pe := 4*se + 8*Tf + 8 // as softmax's
		p, o := g.fresh("p"), &tensor{name: g.fresh("o"), dims: []dim{B, E}, dt: "f32", mag: k.mag}
		o.err = 4*(Tf*pe*k.mag+Tf*Tf*k.mag+Tf*k.err) + 8*k.mag
		if g.chance(0.5) {
			g.define(o, fmt.Sprintf("%s = softmax(%s)\n  %s[b, e] = sum[t](%s[b, t] * %s)", p, s.name, o.name, p, kname))
		} else {
			m := g.fresh("m")
			g.define(o, fmt.Sprintf("%s[b] = max[t](%s[b, t])\n  %s[b, t] = exp(%s[b, t] - %s[b])\n  %s[b, e] = sum[t](%s[b, t] * %s) / sum[t](%s[b, t])",
				m, s.name, p, s.name, m, o.name, p, kname, p))
		}
		out = o
	} else {
		// a masked reduction over the cache
		if g.chance(0.5) {
			out = &tensor{name: g.fresh("r"), dims: []dim{B, E}, dt: "f32", mag: Tf * k.mag, err: Tf*k.err + Tf*Tf*k.mag + Tf*k.mag}
			g.define(out, fmt.Sprintf("%s[b, e] = sum[t](select(%s, %s, 0.0))", out.name, cond, kname))
		} else {
			op, fill := pick(g, []string{"max", "min"}), "-inf"
			if op == "min" {
				fill = "inf"
			}
			out = &tensor{name: g.fresh("r"), dims: []dim{B, E}, dt: "f32", mag: k.mag, err: k.err}
			g.define(out, fmt.Sprintf("%s[b, e] = %s[t](select(%s, %s, %s))", out.name, op, cond, kname, fill))
		}
	}
	g.mustOut = append(g.mustOut, out)

	// run-time scalars as read indexes
	if g.chance(0.6) {
		indexed = true
		c := g.intn(off + 1)
		idx := fmt.Sprintf("%s[b]", pos)
		if c > 0 {
			idx = fmt.Sprintf("%s[b] + %d", pos, c)
		}
		r := &tensor{name: g.fresh("rd"), dims: []dim{B, E}, dt: "f32", mag: 1 + out.mag, err: out.err + 1 + out.mag}
		src := at(kc, idx)
		if g.chance(0.4) {
			wp := g.placeholder([]dim{T, E}, "f32", true)
			src = fmt.Sprintf("%s[%s, e]", wp.name, idx)
		}
		g.define(r, fmt.Sprintf("%s[b, e] = %s + %s[b, e]", r.name, src, out.name))
		g.mustOut = append(g.mustOut, r)
	}

	if updates {
		indexed = true
		g.cacheUpdates(kc, knew, x, pos, layers, off, T, cdims)
	}
	g.feedPositions(pos, B.n, T.n, off, indexed, plant)
}

// cacheUpdates writes the step's updates of the cache kc: the new key at
// pos[b] (plus a constant up to off), once per layer where kc has layers,
// then reads the cache after the updates in the source, where the old
// values must be seen.
func (g *gen) cacheUpdates(kc, knew, x *tensor, pos string, layers, off int, T dim, cdims []dim) {
	slot := fmt.Sprintf("%s[b]", pos)
	if c := g.intn(off + 1); c > 0 {
		slot = fmt.Sprintf("%s[b] + %d", pos, c)
	}
	E := cdims[len(cdims)-1]
	// cache reads the cache at a layer ("" without layers), the slot and
	// the width index ei
	cache := func(layer, slot, ei string) string {
		if layer == "" {
			return fmt.Sprintf("%s[b, %s, %s]", kc.name, slot, ei)
		}
		return fmt.Sprintf("%s[%s, b, %s, %s]", kc.name, layer, slot, ei)
	}
	// the body of the update of a layer at a slot, written from another
	// layer's text other: the new key, or the cache itself read at the
	// slot the update writes (read, modify, write), at the mirrored
	// element of that slot (which another thread's update writes), over
	// the mirrored column (a mean over the slots) or at another layer's
	// slot (which another update writes): every read must see the old
	// values
	kind := g.intn(7)
	if kind == 5 && layers == 0 {
		kind = 3
	}
	body := func(layer, other, slot string) val {
		switch kind {
		case 0:
			return val{s: knew.name + "[b, e]", mag: knew.mag, err: knew.err}
		case 1:
			return val{s: "tanh(" + knew.name + "[b, e])", mag: 1, err: knew.err + 2}
		case 2:
			return val{s: x.name + "[b, e] * 0.5", mag: 0.5}
		case 3:
			m := 0.5 + knew.mag
			return val{s: fmt.Sprintf("%s * 0.5 + %s[b, e]", cache(layer, slot, "e"), knew.name), mag: m, err: knew.err + m}
		case 4:
			m := 1 + knew.mag
			return val{s: fmt.Sprintf("%s + %s[b, e]", cache(layer, slot, fmt.Sprintf("%s - 1 - e", E.paren())), knew.name), mag: m, err: knew.err + m}
		case 6: // a mean over the mirrored column, whose slot another thread's update writes
			Tf := float64(T.n)
			return val{s: fmt.Sprintf("sum[t](%s) / %s", cache(layer, "t", fmt.Sprintf("%s - 1 - e", E.paren())), float(Tf)), mag: 1, err: Tf + 2}
		}
		return val{s: cache(other, slot, "e") + " + 0.5", mag: 1.5, err: 1.5}
	}
	var mag, err float64
	switch {
	case layers == 0:
		v := body("", "", slot)
		mag, err = max(1, v.mag), v.err
		g.body = append(g.body, fmt.Sprintf("update %s[b, %s, e] = %s", kc.name, slot, v.s))
	case g.chance(0.5):
		// one update per layer in a compile-time loop, scaled per layer
		v := body("l", fmt.Sprintf("(l + 1) %% %d", layers), slot)
		g.body = append(g.body, fmt.Sprintf("for l in 0..%d {\n    update %s[l, b, %s, e] = %s * (1.0 + l * 0.5)\n  }", layers, kc.name, slot, paren(v.s)))
		f := 1 + float64(layers-1)*0.5
		mag, err = max(1, v.mag*f), v.err*f+2*v.mag*f
	default:
		// one statement per layer, the last sometimes at a compile-time slot
		for l := range layers {
			s := slot
			if l == layers-1 && g.chance(0.5) {
				s = pick(g, []string{"0", fmt.Sprintf("%s - 1", cdims[2].s)})
			}
			v := body(fmt.Sprint(l), fmt.Sprint((l+1)%layers), s)
			mag, err = max(mag, 1, v.mag), max(err, v.err)
			g.body = append(g.body, fmt.Sprintf("update %s[%d, b, %s, e] = %s", kc.name, l, s, v.s))
		}
	}
	g.updTol[kc.name] = Tolerance(mag, err+mag*storageULP[kc.dt])
	// reads after the updates: the old values
	idx := "b, t, e"
	if layers > 0 {
		idx = fmt.Sprintf("%d, b, t, e", layers-1)
	}
	y := &tensor{name: g.fresh("old"), dims: []dim{cdims[len(cdims)-3], T, cdims[len(cdims)-1]}, dt: "f32", mag: 2}
	g.define(y, fmt.Sprintf("%s[b, t, e] = %s[%s] * 2.0", y.name, kc.name, idx))
	g.mustOut = append(g.mustOut, y)
}

// feedPositions writes the "# feed" line of pos: for each of its n
// elements the first slot, the last slot that pos + off leaves inside a
// cache of T, or any between. Where pos is used as an index, with
// probability plant one element is planted outside the cache instead (T,
// past the end for every use, or -1 - off, before the start for every
// use) and the program expects the "is outside" error.
func (g *gen) feedPositions(pos string, n, T, off int, indexed bool, plant float64) {
	last := T - 1 - off
	vs := make([]string, n)
	for i := range vs {
		v := pick(g, []int{0, last, g.intn(last + 1)})
		vs[i] = fmt.Sprint(v)
	}
	if indexed && g.expect == "" && g.chance(plant) { // one planted position per program
		// past the end, or before the start (pos + c < 0 for every c <= off)
		vs[g.intn(n)] = fmt.Sprint(pick(g, []int{T, -1 - off}))
		g.expect = pos
	}
	g.feeds = append(g.feeds, fmt.Sprintf("# feed %s %s", pos, strings.Join(vs, " ")))
}
