package lower

import (
	"strings"
	"testing"

	"tec/analysis"
	"tec/backend/sim"
	"tec/gpu"
	"tec/internal/numeric"
	"tec/partition"
	"tec/te"
)

// rowsPastZ is issue 17's F4: mx, a row reduction kept on chip, shares a
// grid epoch with z, an independent stage of 50 tiles, and is read in the
// next epoch by y, which also reads mu at another row.
func rowsPastZ() *te.Program {
	const r, c = 500, 100
	b := newBuilder("f4")
	x := b.input("x", te.F32, r, c)
	w := b.param("w", te.F32, c, 127)
	t := b.f32("t", shp(), func([]te.Index) te.Expr {
		return red(te.ReduceMax, []int{r, c}, func(ks []te.Index) te.Expr { return ld(x, ks...) })
	})
	z := b.f32("z", shp(c, 127), func(ax []te.Index) te.Expr { return sub(ld(w, ax...), ld(t)) })
	mu := b.f32("mu", shp(r), func(ax []te.Index) te.Expr {
		return div(sum1(c, func(k te.Index) te.Expr { return ld(x, ax[0], k) }), cf(c))
	})
	mx := b.f32("mx", shp(r), func(ax []te.Index) te.Expr {
		return red(te.ReduceMax, []int{c}, func(ks []te.Index) te.Expr { return sub(ld(x, ax[0], ks[0]), ld(mu, ax[0])) })
	})
	y := b.f32("y", shp(r, c), func(ax []te.Index) te.Expr {
		return add(sub(ld(x, ax...), ld(mx, ax[0])), ld(mu, ax[0].Scale(-1).AddConst(r-1)))
	})
	return b.outputs(z, y)
}

// TestRotationsKeepOnChipRows checks that the stages writing and reading a
// result kept on chip are not rotated while the independent stages of
// their epoch still are, that checkOnChip rejects a reader rotated
// differently, and that the kernel computes the reference's result.
func TestRotationsKeepOnChipRows(t *testing.T) {
	p := rowsPastZ()
	a, err := analysis.Analyze(p, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a100", "small"} {
		t.Run(name, func(t *testing.T) {
			g, _ := gpu.Builtin(name)
			pl, err := partition.Partition(a, g, partition.Options{Split: true, Reuse: true})
			if err != nil {
				t.Fatal(err)
			}
			pk := pl.Kernels[0]
			if len(pl.Kernels) != 1 || len(pk.OnChip) != 1 || pk.OnChip[0].Name != "mx" {
				t.Fatalf("want one kernel keeping mx on chip:\n%s", pl)
			}
			off, _ := rotations(pk, pl)
			rotated := false
			for j, s := range pk.Stages {
				switch s.Name {
				case "mu", "mx", "y":
					if off[j] != 0 {
						t.Errorf("%s starts at block %d; want 0", s.Name, off[j])
					}
				case "z":
					rotated = off[j] != 0
				}
			}
			if !rotated && 500%pk.Grid != 0 {
				t.Errorf("z starts at block 0; want it after mu's and mx's tiles")
			}
			if err := checkOnChip(pk, pl, off); err != nil {
				t.Errorf("checkOnChip: %v", err)
			}
			bad := append([]int(nil), off...)
			bad[len(bad)-1] = 1 // y
			if err := checkOnChip(pk, pl, bad); err == nil || !strings.Contains(err.Error(), "stage y reads mx") {
				t.Errorf("checkOnChip of y rotated by one block: %v; want an error", err)
			}

			m, err := Fused(p, pl, FusedOptions{})
			if err != nil {
				t.Fatal(err)
			}
			in := randFeeds(p, 1)
			want, err := te.Evaluate(p, in, te.EvalOptions{})
			if err != nil {
				t.Fatal(err)
			}
			out, err := sim.Run(m, in, sim.Options{Race: true, ResidentBlocks: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			if out.RaceCount > 0 {
				t.Errorf("%d races; first: %s", out.RaceCount, out.Races[0])
			}
			mm, err := numeric.Compare(out.Outputs["y"], want["y"], numeric.Tolerance{Rtol: 1e-4, Atol: 1e-5})
			if err != nil || mm != nil {
				t.Errorf("y: %v %v", err, mm)
			}
		})
	}
}
