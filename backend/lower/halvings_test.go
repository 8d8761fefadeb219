package lower

import "testing"

// TestHalvings replays the tree combine of n partials for every block size
// up to the largest CUDA allows: every partial reaches partial 0 exactly
// once, and no step reads past the partials.
func TestHalvings(t *testing.T) {
	for n := 1; n <= 1024; n++ {
		parts := make([]int, n)
		for i := range parts {
			parts[i] = 1 << (i % 30)
		}
		want := 0
		for _, p := range parts {
			want += p
		}
		for _, h := range halvings(n) {
			if h.live+h.stride > n || h.live > h.stride {
				t.Fatalf("n=%d: step %+v reads past the partials", n, h)
			}
			for i := range h.live {
				parts[i] += parts[i+h.stride]
			}
		}
		if parts[0] != want {
			t.Fatalf("n=%d: combined %d, want %d", n, parts[0], want)
		}
	}
}
