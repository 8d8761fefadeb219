package lower_test

import (
	"testing"

	"tec/backend/kir"
	"tec/internal/numeric"
	"tec/te"
)

// TestMatVecMMA checks the matrix-vector tiles of a few rows on tensor
// cores (schedule.MatVec.MMA) on the GPUs a batched decode step is planned
// for: the plan tiles the products so, the stage's code has MMAs and
// 16-byte loads of the weights, its staged rows are read without a bank
// conflict, and the module computes the reference's answer, race-free:
// rows zero-padded to 16 (fewer than 8, 8, and more than 8), bf16 and
// f16, rows staged whole and in chunks, and a k of nine steps (rounds of
// three).
func TestMatVecMMA(t *testing.T) {
	for _, tc := range []struct {
		name   string
		p      *te.Program
		gpu    string
		chunks bool
	}{
		{"8 rows bf16", weightsByRows(te.BF16, 8, 512, 1024), "h100", false},
		{"3 rows f16", weightsByRows(te.F16, 3, 512, 1024), "a100", false},
		{"12 rows bf16", weightsByRows(te.BF16, 12, 256, 512), "h100", false},
		{"10 rows f16", weightsByRows(te.F16, 10, 256, 512), "a100", false},
		{"8 rows in chunks", weightsByRows(te.BF16, 8, 4096, 256), "h100", true},
		{"k of nine steps", weightsByRows(te.BF16, 8, 2304, 256), "h100", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.p
			m, pl := fusedModule(t, p, tc.gpu, false)
			s := pl.Schedules[p.Outputs[0]]
			if s.MatVec == nil || !s.MatVec.MMA {
				t.Fatalf("y is not a matrix-vector tile on tensor cores:\n%s", pl)
			}
			if got := s.MatVec.Chunk > 0; got != tc.chunks {
				t.Errorf("y stages its rows in chunks: %v, want %v:\n%s", got, tc.chunks, pl)
			}
			mmas, vec := 0, 0
			for _, k := range m.Kernels {
				kir.WalkStmts(k.Body, func(x kir.Stmt) bool {
					switch x := x.(type) {
					case *kir.MMA:
						mmas++
					case *kir.VecCopy:
						if x.Src.Name == "w" {
							vec++
						}
					}
					return true
				})
			}
			if mmas == 0 || vec == 0 {
				t.Errorf("stage y has %d MMAs and %d 16-byte loads of w, want both", mmas, vec)
			}
			want, res := runRaceFree(t, p, m, randomFeeds(p))
			for i, k := range m.Kernels {
				for name, b := range res.Kernels[i].ArrayBanks {
					if b.Conflicts != 0 {
						t.Errorf("kernel %s, shared %s: %d bank conflicts in %d wavefronts", k.Name, name, b.Conflicts, b.Wavefronts)
					}
				}
			}
			mm, err := numeric.Compare(res.Outputs["y"], want["y"], numeric.Tolerance{Rtol: 1e-4, Atol: 1e-4})
			if err != nil || mm != nil {
				t.Errorf("y: %v %v", err, mm)
			}
		})
	}
}
