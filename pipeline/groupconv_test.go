package pipeline

import (
	"fmt"
	"testing"

	"tec/lang"
	"tec/precision"
)

// TestGroupConvolutions checks which grouped convolutions the groups pass
// splits into their groups, as the cost model prices them: one of 16
// groups of 16 output channels at 14×14 pixels (ResNeXt's third stage at
// half its width: a batched contraction, predicted faster than point by
// point), in f32 and f16, with its epilogue; the same at 4×4 pixels and 8
// groups (predicted slower: too little of it to fill the tiles), and one
// of 2 output channels a group (no contraction once grouped), stay as they
// are.
func TestGroupConvolutions(t *testing.T) {
	const src = `
model m {
  input x: f32[1, %[1]d, %[2]d, %[2]d]
  param w: f32[%[3]d, 8, 3, 3]
  param b: f32[%[3]d]
  z = conv2d(x, w, 1, 1, 1, %[4]d)
  y[n, o, i, j] = max(z[n, o, i, j] + b[o], 0)
  out[n] = sum[o, i, j](y[n, o, i, j]) where n in 0..1
  output out
}
`
	for _, tc := range []struct {
		channels, pixels, out, groups int
		mode                          precision.Mode
		grouped                       bool
	}{
		{128, 14, 256, 16, precision.F32, true},
		{128, 14, 256, 16, precision.F16, true},
		{64, 4, 128, 8, precision.F16, false},
		{128, 14, 32, 16, precision.F16, false},
	} {
		name := fmt.Sprintf("%d groups of %d channels at %d×%d, %s", tc.groups, tc.out/tc.groups, tc.pixels, tc.pixels, tc.mode)
		p, diags := lang.Check("conv.te", []byte(fmt.Sprintf(src, tc.channels, tc.pixels, tc.out, tc.groups)), lang.Config{})
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		q, choices, err := groupConvolutions(precision.Apply(p, tc.mode), Options{Level: MaxLevel})
		if err != nil {
			t.Fatal(err)
		}
		if tc.out/tc.groups >= 4 && (len(choices) != 1 || choices[0].Conv != "z" || choices[0].Grouped != tc.grouped ||
			choices[0].Groups != tc.groups || choices[0].Channels != tc.out/tc.groups || !(choices[0].Time > 0 && choices[0].AsIs > 0)) {
			t.Errorf("%s: choices %v; want z's, grouped %v", name, choices, tc.grouped)
		}
		for _, tensor := range []string{"z", "y"} {
			if got := len(q.Lookup(tensor).Shape) == 5; got != tc.grouped {
				t.Errorf("%s: %s grouped %v, want %v", name, tensor, got, tc.grouped)
			}
		}
	}
}
