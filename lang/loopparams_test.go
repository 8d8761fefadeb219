package lang

import (
	"fmt"
	"strings"
	"testing"
)

// TestLoopParams checks the inputs and params that declarations in loops
// make: one per iteration, named after the loop variables, each with the
// shape of its own iteration, in declaration order.
func TestLoopParams(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string // name dtype[shape] of each placeholder, in order
	}{{
		name: "one loop, shapes from the loop variable",
		src: `model m {
  input x: f32[2, 4]
  h = x
  for l in 0..3 {
    param w: f32[4, 2 * (l + 1)]
    param v: f32[2 * (l + 1), 4]
    h = h + matmul(matmul(h, w), v)
  }
  output h
}`,
		want: "x f32[2 4], w.0 f32[4 2], v.0 f32[2 4], w.1 f32[4 4], v.1 f32[4 4], w.2 f32[4 6], v.2 f32[6 4]",
	}, {
		name: "nested loops and a range not from 0",
		src: `model m {
  input x: f32[3]
  h = x
  for s in 1..3 {
    for b in 0..2 {
      param w: bf16[3]
      h = h * w
    }
  }
  output h
}`,
		want: "x f32[3], w.1.0 bf16[3], w.1.1 bf16[3], w.2.0 bf16[3], w.2.1 bf16[3]",
	}, {
		name: "inputs too, beside a top-level param of the same stem",
		src: `model m {
  param w_0: f32[2]
  h = w_0
  for t in 0..2 {
    input x: f32[2]
    h = h + x
  }
  output h
}`,
		want: "w_0 f32[2], x.0 f32[2], x.1 f32[2]",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, ds := Check("m.te", []byte(tc.src), Config{})
			if ds.HasErrors() {
				t.Fatalf("check failed:\n%s", render("m.te", []byte(tc.src), ds))
			}
			var got []string
			for _, ph := range p.Placeholders() {
				got = append(got, fmt.Sprintf("%s %s%v", ph.Name, ph.DType, ph.Shape))
			}
			if g := strings.Join(got, ", "); g != tc.want {
				t.Errorf("placeholders:\n got %s\nwant %s", g, tc.want)
			}
		})
	}
}
