package lang

import (
	"strings"
	"testing"

	"tec/te"
)

// TestUpdate checks what an update statement lowers to: an update tensor
// over its fresh index variables whose slot is the input at the indexes
// written, a run-time part included, and the updated input among the
// outputs under its own name.
func TestUpdate(t *testing.T) {
	tests := []struct {
		name, src string
		dests     []string // each update tensor's name and slot, as printed
		outputs   []string
	}{
		{"append", `
model m {
  input pos: i32[2]
  input x: f32[2, 4]
  input kc: f32[2, 8, 4]
  y[b, d] = x[b, d] + kc[b, pos[b], d]
  update kc[b, pos[b], d] = x[b, d] * 2.0
  output y
}`, []string{"kc/update -> kc[b, pos[b], d]"}, []string{"y", "kc"}},
		{"layers in a loop, a view in a function", `
fn put(c: f32[T, D], p: i32[B], v: f32[D]) {
  update c[p[0] + 1, d] = v[d]
  return v
}

model m {
  input pos: i32[1]
  input x: f32[4]
  input kc: f32[3, 8, 4]
  for l in 0..3 {
    z = put(kc[l], pos, x)
  }
  output kc, x2 = x
}`, []string{"z/c/update -> kc[0, pos[0] + 1, d]", "z/c/update.1 -> kc[1, pos[0] + 1, d]", "z/c/update.2 -> kc[2, pos[0] + 1, d]"},
			[]string{"kc", "x2"}},
		{"static slot", `
model m {
  input c: f32[4, 3]
  input x: f32[3]
  update c[2, j] = x[j] + 1.0
}`, []string{"c/update -> c[2, j]"}, []string{"c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, diags := Check("m.te", []byte(tt.src), Config{})
			if diags.HasErrors() {
				t.Fatal(diags.Error())
			}
			var dests []string
			for _, u := range p.Updates() {
				if u.Update.Target.Kind != te.Input {
					t.Errorf("%s updates %s, a %s", u.Name, u.Update.Target.Name, u.Update.Target.Kind)
				}
				dests = append(dests, u.Name+" -> "+te.FormatExpr(u.Update.Dest()))
			}
			if strings.Join(dests, "; ") != strings.Join(tt.dests, "; ") {
				t.Errorf("updates %q, want %q", dests, tt.dests)
			}
			var outs []string
			for _, o := range p.Outputs {
				outs = append(outs, o.Name)
			}
			if strings.Join(outs, " ") != strings.Join(tt.outputs, " ") {
				t.Errorf("outputs %q, want %q", outs, tt.outputs)
			}
		})
	}
}
