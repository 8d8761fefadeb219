package lower

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"tec/te"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

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
			got := tt.prog()
			path := filepath.Join("testdata", tt.name+".kir")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("%s differs (run go test -update to accept):\n%s", path, got)
			}
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
