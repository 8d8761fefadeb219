package partition

import (
	"testing"

	tb "tec/internal/testkit/tebuild"
	"tec/schedule"
	"tec/te"
)

// TestSerialReduceSchedule checks when a reduction of 72 terms (at least
// rowReduceMin) is computed a thread per output: a grouped convolution
// of 8 channels a group by 3×3 over 256×28×28 outputs (ResNeXt's), whose
// input moves one element along the output's width and whose weight
// stays, with many outputs — also at stride 2; but a block per output
// where adjacent outputs read rows apart (a row sum), at a stride of 4,
// and where the outputs are too few to keep the GPU's threads busy.
func TestSerialReduceSchedule(t *testing.T) {
	const c, k = 8, 3
	conv := func(outC, hw, stride int) func(b *tb.Builder) *te.Tensor {
		return func(b *tb.Builder) *te.Tensor {
			x := b.Input("x", outC, stride*hw+k-1, stride*hw+k-1)
			w := b.Param("w", outC, c, k, k)
			return b.Compute("y", tb.Shape(outC, hw, hw), func(ax []te.Index) te.Expr {
				return tb.ReduceN(te.Sum, []string{"c", "kh", "kw"}, []int{c, k, k}, func(r []te.Index) te.Expr {
					return tb.Bin(te.Mul,
						tb.Ld(x, ax[0].Div(c).Scale(c).Add(r[0]), ax[1].Scale(stride).Add(r[1]), ax[2].Scale(stride).Add(r[2])),
						tb.Ld(w, ax[0], r[0], r[1], r[2]))
				})
			})
		}
	}
	for _, tt := range []struct {
		name  string
		build func(b *tb.Builder) *te.Tensor
		want  schedule.Kind
	}{
		{"convolution", conv(256, 28, 1), schedule.Elementwise},
		{"convolution at stride 2", conv(256, 28, 2), schedule.Elementwise},
		{"convolution at stride 4", conv(256, 28, 4), schedule.RowReduce},
		{"few outputs", conv(4, 4, 1), schedule.RowReduce},
		{"row sums", func(b *tb.Builder) *te.Tensor {
			x := b.Input("x", 200704, 72)
			return b.Compute("y", tb.Shape(200704), func(ax []te.Index) te.Expr {
				return tb.Reduce(te.Sum, "k", 72, func(k te.Index) te.Expr { return tb.Ld(x, ax[0], k) })
			})
		}, schedule.RowReduce},
	} {
		b := tb.New("serial")
		y := tt.build(b)
		pl := plan(t, b.Program(y), "h100", Options{Reuse: true})
		if s := pl.Schedules[y]; s.Kind != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, s, tt.want)
		}
	}
}
