package te

import (
	"math"
	"strings"
	"testing"
)

func TestCheckShape(t *testing.T) {
	tests := []struct {
		shape []int
		want  int
		err   string
	}{
		{nil, 1, ""},
		{[]int{2, 3}, 6, ""},
		{[]int{0, math.MaxInt}, 0, ""},
		{[]int{1 << 30}, 1 << 30, ""},
		{[]int{1<<30 + 1}, 0, "more than"},
		{[]int{1 << 15, 1 << 15, 2}, 0, "more than"},
		{[]int{100000, 100000, 100000}, 0, "more than"},
		{[]int{1 << 62, 1 << 62}, 0, "more than"}, // the product wraps to 0 in int64
		{[]int{math.MaxInt, math.MaxInt}, 0, "more than"},
		{[]int{4, -1}, 0, "negative"},
	}
	for _, tt := range tests {
		n, err := CheckShape(tt.shape)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("CheckShape(%v) = %d, %v; want an error containing %q", tt.shape, n, err, tt.err)
			}
			continue
		}
		if err != nil || n != tt.want {
			t.Errorf("CheckShape(%v) = %d, %v; want %d", tt.shape, n, err, tt.want)
		}
	}
}

// TestEvaluateRejectsHugeShapes: a program built by a caller other than the
// front end is not trusted with the element count; Evaluate reports the
// tensor instead of panicking in make.
func TestEvaluateRejectsHugeShapes(t *testing.T) {
	for _, shape := range [][]int{{100000, 100000, 100000}, {1 << 62, 1 << 62}} {
		x := &Tensor{Name: "x", Kind: Input, DType: F32, Shape: shape}
		p := &Program{Name: "m", Tensors: []*Tensor{x}, Outputs: []*Tensor{x}}
		_, err := Evaluate(p, map[string]*Array{"x": {DType: F32, Shape: shape}}, EvalOptions{})
		if err == nil || !strings.Contains(err.Error(), `tensor "x"`) {
			t.Errorf("shape %v: err = %v, want one naming tensor x", shape, err)
		}
	}
}
