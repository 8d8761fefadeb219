package transform

import (
	"fmt"
	"strings"
	"testing"

	"tec/internal/numeric"
	"tec/te"
)

// groupedConv is a grouped 3×3 convolution (4 groups of 4 output
// channels, each reading its group's 2 input channels, padded, of the
// stride given), its bias and ReLU, and a 1×1 convolution of the result.
func groupedConv(stride int) string {
	return fmt.Sprintf(`
model m {
  input x: f32[1, 8, 6, 6]
  param w: f32[16, 2, 3, 3]
  param b: f32[16]
  param v: f32[8, 16, 1, 1]
  z = conv2d(x, w, %d, 1, 1, 4)
  y[n, o, i, j] = max(z[n, o, i, j] + b[o], 0)
  output out = conv2d(y, v, 1, 0, 1, 1)
}
`, stride)
}

// TestConvGroups checks which tensors are grouped convolutions: a grouped
// convolution is, with its output channels' groups; a convolution of one
// group, a depthwise one (no weights' axis read plainly besides) and an
// element-wise tensor are not.
func TestConvGroups(t *testing.T) {
	for _, tc := range []struct {
		name, src, tensor string
		dim, g            int
	}{
		{"grouped", groupedConv(1), "z", 1, 4},
		{"grouped, stride 2", groupedConv(2), "z", 1, 4},
		{"one group", strings.Replace(groupedConv(1), "conv2d(x, w, 1, 1, 1, 4)", "conv2d(x, w2, 1, 1, 1, 1)", 1) + "", "z", 0, 0},
		{"element-wise", groupedConv(1), "y", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(tc.src, "param w:", "param w2: f32[16, 8, 3, 3]\n  param w:", 1)
			p := checkProgram(t, "conv.te", src)
			dim, g := ConvGroups(p.Lookup(tc.tensor))
			if dim != tc.dim || g != tc.g {
				t.Errorf("ConvGroups(%s) = %d, %d; want %d, %d", tc.tensor, dim, g, tc.dim, tc.g)
			}
		})
	}
}

// TestGroupConvolutions splits a grouped convolution's output channels
// into their groups, and its epilogue's (the bias and ReLU) with them:
// z and y become [n, o / 4, o % 4, i, j], the 1×1 convolution loads y
// there, and the output is the reference's at both strides; a tensor the
// filter refuses, and so its epilogue, stay.
func TestGroupConvolutions(t *testing.T) {
	for _, stride := range []int{1, 2} {
		p := checkProgram(t, "conv.te", groupedConv(stride))
		q, nu := GroupConvolutions(p, func(t *te.Tensor) bool { return t.Name == "z" })
		for _, name := range []string{"z", "y"} {
			if got, want := fmt.Sprint(nu[p.Lookup(name)].Shape), fmt.Sprintf("[1 4 4 %d %d]", 6/stride, 6/stride); got != want {
				t.Errorf("stride %d: %s of shape %s; want %s", stride, name, got, want)
			}
		}
		if text := q.String(); !strings.Contains(text, "y[n, (c / 4), (c % 4), ") {
			t.Errorf("stride %d: the 1×1 convolution does not load y by group in\n%s", stride, text)
		}
		if e := outputError(t, p, q, numeric.SeededFeeds(p, 3), "out"); !(e < 1e-12) {
			t.Errorf("stride %d: relative error %g", stride, e)
		}
		same, _ := GroupConvolutions(p, func(*te.Tensor) bool { return false })
		for _, name := range []string{"z", "y"} {
			if len(same.Lookup(name).Shape) != 4 {
				t.Errorf("stride %d: %s grouped without being asked", stride, name)
			}
		}
	}
}
