package examples

import (
	"fmt"
	"io/fs"
	"path"
	"testing"

	"tec/lang"
	"tec/te"
)

// swinProbe imports swin.te and applies its index maps to an input, so that
// they can be compared with the reference implementation's roll, window
// partition, attention mask and relative position index.
const swinProbe = `import "swin.te"

const R = 8
const K = 2
const SH = 1
const CH = 3

model probe {
  input x: f32[R * R, CH]
  part = window_partition(x, R, K, SH)
  heads[w, h, t, c] = part[w, t, c] where h in 0..1
  back = window_reverse(heads, R, K, SH)
  mask[w, i, j] = select(region(w, i, R / K, R, K, SH) == region(w, j, R / K, R, K, SH), 0.0, -100.0)
    where w in 0..(R / K) * (R / K), i in 0..K*K, j in 0..K*K
  rel[i, j] = f32(rel_index(i, j, K)) where i in 0..K*K, j in 0..K*K
  output part, back, mask, rel
}
`

// TestSwinIndexMaps checks swin.te's window partition (with the cyclic
// shift), its inverse, the shifted-window mask and the relative position
// index against loops that follow the Swin Transformer's reference code.
func TestSwinIndexMaps(t *testing.T) {
	readFile := func(name string) ([]byte, error) { return fs.ReadFile(FS(), path.Clean(name)) }
	tests := []struct{ r, k, sh int }{{8, 2, 1}, {8, 4, 2}, {6, 3, 1}, {4, 4, 0}, {14, 7, 3}, {6, 2, 0}}
	const ch = 3
	for _, tt := range tests {
		t.Run(fmt.Sprintf("res%d_ws%d_shift%d", tt.r, tt.k, tt.sh), func(t *testing.T) {
			defs := map[string]string{"R": fmt.Sprint(tt.r), "K": fmt.Sprint(tt.k), "SH": fmt.Sprint(tt.sh)}
			p, diags := lang.Check("probe.te", []byte(swinProbe), lang.Config{Defines: defs, Model: "probe", ReadFile: readFile})
			if diags.HasErrors() {
				t.Fatalf("lang.Check:\n%v", diags.Error())
			}
			feeds := randomFeeds(p, 3)
			out, err := te.Evaluate(p, feeds, te.EvalOptions{})
			if err != nil {
				t.Fatal(err)
			}
			x := feeds["x"].Data
			r, k, sh := tt.r, tt.k, tt.sh
			nwr := r / k

			// torch.roll(x, (-sh, -sh)) then window_partition
			shifted := func(row, col, c int) float64 { return x[((row+sh)%r*r+(col+sh)%r)*ch+c] }
			part := out["part"].Data
			for w := 0; w < nwr*nwr; w++ {
				for tk := 0; tk < k*k; tk++ {
					for c := 0; c < ch; c++ {
						row, col := w/nwr*k+tk/k, w%nwr*k+tk%k
						if got, want := part[(w*k*k+tk)*ch+c], shifted(row, col, c); got != want {
							t.Fatalf("part[%d, %d, %d] = %v, want %v", w, tk, c, got, want)
						}
					}
				}
			}
			// window_reverse undoes it
			back := out["back"].Data
			for i := range x {
				if back[i] != x[i] {
					t.Fatalf("back[%d] = %v, want %v", i, back[i], x[i])
				}
			}
			// img_mask: the slices (0, -ws), (-ws, -shift), (-shift, None) of
			// rows and columns, numbered row-slice major; no mask without a shift
			band := func(p int) int {
				switch {
				case p < r-k:
					return 0
				case p < r-sh:
					return 1
				}
				return 2
			}
			label := func(w, tk int) int { return 3*band(w/nwr*k+tk/k) + band(w%nwr*k+tk%k) }
			mask := out["mask"].Data
			for w := 0; w < nwr*nwr; w++ {
				for i := 0; i < k*k; i++ {
					for j := 0; j < k*k; j++ {
						want := 0.0
						if sh > 0 && label(w, i) != label(w, j) {
							want = -100
						}
						if got := mask[(w*k*k+i)*k*k+j]; got != want {
							t.Fatalf("mask[%d, %d, %d] = %v, want %v", w, i, j, got, want)
						}
					}
				}
			}
			// relative_position_index
			rel := out["rel"].Data
			for i := 0; i < k*k; i++ {
				for j := 0; j < k*k; j++ {
					dr, dc := i/k-j/k+k-1, i%k-j%k+k-1
					if got, want := rel[i*k*k+j], float64(dr*(2*k-1)+dc); got != want {
						t.Fatalf("rel[%d, %d] = %v, want %v", i, j, got, want)
					}
				}
			}
		})
	}
}
