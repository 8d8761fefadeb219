package te

import (
	"math"
	"testing"
)

// bertLayer builds one BERT encoder layer over a [seq, hidden] input: fused
// QKV projection, per-head scores with a max-subtracted softmax, context,
// output projection, residual and layernorm (two-pass variance), and a GELU
// feed-forward network with its own residual and layernorm.
func bertLayer(seq, hidden, heads, ffn int) *Program {
	dh := hidden / heads
	b := newBuilder("bert_layer")
	x := b.input("x", F32, seq, hidden)
	wqkv := b.param("wqkv", F32, hidden, 3*hidden)
	bqkv := b.param("bqkv", F32, 3*hidden)
	wo := b.param("wo", F32, hidden, hidden)
	bo := b.param("bo", F32, hidden)
	g1 := b.param("ln1_g", F32, hidden)
	b1 := b.param("ln1_b", F32, hidden)
	w1 := b.param("w1", F32, hidden, ffn)
	bf1 := b.param("b1", F32, ffn)
	w2 := b.param("w2", F32, ffn, hidden)
	bf2 := b.param("b2", F32, hidden)
	g2 := b.param("ln2_g", F32, hidden)
	b2 := b.param("ln2_b", F32, hidden)

	linear := func(name string, in *Tensor, w, bias *Tensor, k, n int) *Tensor {
		return b.f32(name, shp(seq, n), func(a []Index) Expr {
			return add(sum1(k, func(kk Index) Expr { return mul(ld(in, a[0], kk), ld(w, kk, a[1])) }), ld(bias, a[1]))
		})
	}
	layernorm := func(name string, in, g, beta *Tensor) *Tensor {
		mean := b.f32(name+"_mean", shp(seq), func(a []Index) Expr {
			return div(sum1(hidden, func(k Index) Expr { return ld(in, a[0], k) }), cf(float64(hidden)))
		})
		xc := b.f32(name+"_xc", shp(seq, hidden), func(a []Index) Expr { return sub(ld(in, a[0], a[1]), ld(mean, a[0])) })
		vr := b.f32(name+"_var", shp(seq), func(a []Index) Expr {
			return div(sum1(hidden, func(k Index) Expr { return mul(ld(xc, a[0], k), ld(xc, a[0], k)) }), cf(float64(hidden)))
		})
		return b.f32(name, shp(seq, hidden), func(a []Index) Expr {
			norm := mul(ld(xc, a[0], a[1]), un(Rsqrt, add(ld(vr, a[0]), cf(1e-12))))
			return add(mul(norm, ld(g, a[1])), ld(beta, a[1]))
		})
	}

	qkv := linear("qkv", x, wqkv, bqkv, hidden, 3*hidden)
	head := func(name string, part int) *Tensor {
		return b.f32(name, shp(heads, seq, dh), func(a []Index) Expr {
			return ld(qkv, a[1], a[0].Scale(dh).Add(a[2]).AddConst(part*hidden))
		})
	}
	q, k, v := head("q", 0), head("k", 1), head("v", 2)
	scores := b.f32("scores", shp(heads, seq, seq), func(a []Index) Expr {
		return mul(sum1(dh, func(e Index) Expr { return mul(ld(q, a[0], a[1], e), ld(k, a[0], a[2], e)) }), cf(1/math.Sqrt(float64(dh))))
	})
	mx := b.f32("smax", shp(heads, seq), func(a []Index) Expr {
		return red(ReduceMax, []int{seq}, func(j []Index) Expr { return ld(scores, a[0], a[1], j[0]) })
	})
	ex := b.f32("sexp", shp(heads, seq, seq), func(a []Index) Expr {
		return un(Exp, sub(ld(scores, a[0], a[1], a[2]), ld(mx, a[0], a[1])))
	})
	ssum := b.f32("ssum", shp(heads, seq), func(a []Index) Expr {
		return sum1(seq, func(j Index) Expr { return ld(ex, a[0], a[1], j) })
	})
	probs := b.f32("probs", shp(heads, seq, seq), func(a []Index) Expr {
		return div(ld(ex, a[0], a[1], a[2]), ld(ssum, a[0], a[1]))
	})
	ctx := b.f32("ctx", shp(heads, seq, dh), func(a []Index) Expr {
		return sum1(seq, func(j Index) Expr { return mul(ld(probs, a[0], a[1], j), ld(v, a[0], j, a[2])) })
	})
	attn := b.f32("attn", shp(seq, hidden), func(a []Index) Expr {
		return add(add(red(Sum, []int{heads, dh}, func(k []Index) Expr {
			return mul(ld(ctx, k[0], a[0], k[1]), ld(wo, k[0].Scale(dh).Add(k[1]), a[1]))
		}), ld(bo, a[1])), ld(x, a[0], a[1]))
	})
	y1 := layernorm("ln1", attn, g1, b1)
	h := linear("ffn1", y1, w1, bf1, hidden, ffn)
	gelu := b.f32("gelu", shp(seq, ffn), func(a []Index) Expr {
		x := ld(h, a[0], a[1])
		return mul(mul(cf(0.5), x), add(cf(1), un(Erf, mul(x, cf(1/math.Sqrt2)))))
	})
	f2 := b.f32("ffn2", shp(seq, hidden), func(a []Index) Expr {
		return add(add(sum1(ffn, func(k Index) Expr { return mul(ld(gelu, a[0], k), ld(w2, k, a[1])) }), ld(bf2, a[1])), ld(y1, a[0], a[1]))
	})
	out := layernorm("out", f2, g2, b2)
	return b.outputs(out)
}

// TestBERTLayerPaths checks that a small BERT layer takes the GEMM fast path
// for its contractions and agrees with the generic path.
func TestBERTLayerPaths(t *testing.T) {
	p := bertLayer(12, 16, 2, 32)
	feeds := randFeeds(p, 11)
	var st evalStats
	fast, err := Evaluate(p, feeds, EvalOptions{stats: &st})
	if err != nil {
		t.Fatal(err)
	}
	if st.gemms < 6 {
		t.Errorf("%d GEMMs, want at least 6 (qkv, scores, ctx, attn, ffn1, ffn2)", st.gemms)
	}
	slow, err := Evaluate(p, feeds, EvalOptions{noGEMM: true})
	if err != nil {
		t.Fatal(err)
	}
	checkClose(t, "out", fast["out"], slow["out"].Data, 1e-12)
}

// BenchmarkEvaluateBERTLayer evaluates one BERT-base encoder layer (seq 384,
// hidden 768, 12 heads, FFN 3072).
func BenchmarkEvaluateBERTLayer(b *testing.B) {
	p := bertLayer(384, 768, 12, 3072)
	feeds := randFeeds(p, 1)
	b.ResetTimer()
	for b.Loop() {
		if _, err := Evaluate(p, feeds, EvalOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
