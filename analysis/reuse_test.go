package analysis

import (
	"fmt"
	"slices"
	"testing"

	"tec/te"
)

func TestAttentionQKVSpatialReuse(t *testing.T) {
	m := newModel("attn")
	x := m.input("x", 8, 16)
	out, q, k, v := m.attention(x, 2)
	res := m.add2(out, x)
	a := mustAnalyze(t, m.outputs(res))
	r := a.ReuseOf(x)
	if r == nil {
		t.Fatal("x is not reused")
	}
	want := [][]*te.Tensor{{q, k, v}}
	if !slices.EqualFunc(r.Spatial, want, slices.Equal) {
		t.Errorf("spatial reuse of x: %v, want [[%s %s %s]]", groupNames(r.Spatial), q.Name, k.Name, v.Name)
	}
	// The residual reads x after the attention, which depends on q, k, v.
	if !slices.Equal(r.Temporal, []*te.Tensor{q, k, v, res}) {
		t.Errorf("temporal reuse of x: %v", names(r.Temporal))
	}
	// The softmax's exp is read by the sum (a reduction) and the division
	// that depends on it: temporal reuse of an element-wise result.
	var exp *te.Tensor
	for _, tt := range a.Program.Tensors {
		if len(tt.Name) > 3 && tt.Name[:3] == "exp" {
			exp = tt
		}
	}
	re := a.ReuseOf(exp)
	if re == nil || len(re.Readers) != 2 || !slices.Equal(re.Temporal, re.Readers) || re.IsSpatial() {
		t.Errorf("reuse of %s: %+v", exp.Name, re)
	}
	if got := a.TE(exp).Dependence; got != OneToOne {
		t.Errorf("%s is %v", exp.Name, got)
	}
}

func TestLSTMWeightTemporalReuse(t *testing.T) {
	const T, L = 4, 3
	for _, apart := range []bool{false, true} {
		t.Run(fmt.Sprintf("gates apart %v", apart), func(t *testing.T) {
			p := lstm(T, L, 8, apart)
			a := mustAnalyze(t, p)
			gates := 1
			if apart {
				gates = 4
			}
			for _, w := range []string{"W", "U", "b"} {
				r := a.ReuseOf(p.Lookup(w))
				if r == nil {
					t.Fatalf("%s is not reused", w)
				}
				if len(r.Readers) != T*L*gates || !slices.Equal(r.Temporal, r.Readers) {
					t.Errorf("%s: %d readers, %d temporal; want %d, all", w, len(r.Readers), len(r.Temporal), T*L*gates)
				}
				// Cells on one diagonal wavefront (t + l constant) are
				// independent: T+L-1 wavefronts, of which the first and
				// the last hold one cell, whose gates are independent
				// only when they are apart.
				want := T + L - 3
				if apart {
					want = T + L - 1
				}
				if got := len(r.Spatial); got != want {
					t.Errorf("%s: %d spatial groups %v, want %d", w, got, groupNames(r.Spatial), want)
				}
			}
			if apart {
				// The four gates of the first cell read h and x together.
				h0 := a.Graph.Consumers(p.Lookup("xs"))[:4]
				r := a.ReuseOf(p.Lookup("xs"))
				if !slices.Equal(r.Spatial[0][:4], h0) {
					t.Errorf("xs: spatial %v", groupNames(r.Spatial))
				}
			}
		})
	}
}

func groupNames(gs [][]*te.Tensor) [][]string {
	var out [][]string
	for _, g := range gs {
		out = append(out, names(g))
	}
	return out
}
