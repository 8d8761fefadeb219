package schedule

import (
	"slices"
	"testing"

	"tec/te"
)

// TestPlace checks where a stage's scratch arrays start in their arenas:
// one after another from the start of the arena of their type, each in
// whole 16-byte units.
func TestPlace(t *testing.T) {
	for _, tt := range []struct {
		name    string
		arrays  []Array
		offsets []int
		need    map[te.DType]int
	}{
		{"none", nil, []int{}, map[te.DType]int{}},
		{"one tile", []Array{{te.F32, 64}, {te.F32, 4096}}, []int{0, 64}, map[te.DType]int{te.F32: 4160}},
		// An odd array takes whole 16-byte units, so that the next starts
		// aligned.
		{"odd rows", []Array{{te.F32, 13}, {te.F32, 256}, {te.F32, 1}}, []int{0, 16, 272}, map[te.DType]int{te.F32: 276}},
		{"argmax", []Array{{te.F32, 256}, {te.I32, 256}}, []int{0, 0}, map[te.DType]int{te.F32: 256, te.I32: 256}},
		{"f16 operands", []Array{{te.F16, 7}, {te.F16, 9}, {te.F32, 3}}, []int{0, 8, 0}, map[te.DType]int{te.F16: 24, te.F32: 4}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			offsets, need := Place(tt.arrays)
			if !slices.Equal(offsets, tt.offsets) {
				t.Errorf("offsets %v, want %v", offsets, tt.offsets)
			}
			if len(need) != len(tt.need) {
				t.Errorf("need %v, want %v", need, tt.need)
			}
			for dt, n := range tt.need {
				if need[dt] != n {
					t.Errorf("need %v, want %v", need, tt.need)
				}
			}
		})
	}
}

// TestSharedBytes checks the rule of shared.go: the scratch arrays of a
// kernel's stages share an arena per type, as large as the largest
// stage's arrays of that type, beside the persistent arrays.
func TestSharedBytes(t *testing.T) {
	matVec := []Array{{te.F32, 4 * 512}, {te.F32, 4 * 256}} // 12288 B
	masked := []Array{{te.F32, 16}, {te.F32, 16 * 256}}     // 16448 B
	argmax := []Array{{te.F32, 256}, {te.I32, 256}}         // 1024 B each
	for _, tt := range []struct {
		name       string
		persistent int
		stages     [][]Array
		want       int
	}{
		{"nothing", 0, nil, 0},
		// The kernel of issue 23: the largest stage, not each array's
		// largest size (20480 B).
		{"matvec and masked", 0, [][]Array{matVec, masked}, 16448},
		{"and a cache", 2052, [][]Array{matVec, masked}, 16448 + 2052},
		{"and an argmax", 0, [][]Array{matVec, argmax}, 12288 + 1024},
		{"argmaxes", 0, [][]Array{argmax, argmax}, 2048},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := SharedBytes(tt.persistent, tt.stages...); got != tt.want {
				t.Errorf("SharedBytes = %d, want %d", got, tt.want)
			}
		})
	}
}
