package lower

import (
	"path/filepath"
	"testing"

	"tec/internal/testkit/golden"
	"tec/te"
)

// TestGolden keeps the kernels of a few small programs readable and stable:
// one of each kernel shape (element-wise, block reduction, tiled
// contraction with padding).
func TestGolden(t *testing.T) {
	tests := []struct {
		name string
		prog func() string
	}{
		{"softmax", func() string { return lowerString(t, softmax(4, 100)) }},
		{"matmul_bias", func() string { return lowerString(t, matmulBias(20, 24, 18)) }},
		{"conv2d", func() string { return lowerString(t, conv2d(1, 3, 9, 9, 8, 3, 3, 2, 1, 1)) }},
		{"dtypes", func() string { return lowerString(t, dtypes(4, 3, 2)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			golden.CheckString(t, filepath.Join("testdata", tt.name+".kir"), tt.prog())
		})
	}
}

func lowerString(t *testing.T, p *te.Program) string {
	t.Helper()
	m, err := Unfused(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return m.String()
}
