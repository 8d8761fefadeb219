package sim

import (
	"strings"
	"testing"

	"tec/backend/kir"
	"tec/te"
)

func TestCheckWorkspace(t *testing.T) {
	a := &kir.Buffer{Name: "a", Role: kir.Temp, DType: te.F32, Shape: []int{64}}
	b := &kir.Buffer{Name: "b", Role: kir.Temp, DType: te.F32, Shape: []int{64}}
	for _, tc := range []struct {
		name    string
		offB    int64
		spanA   [2]int32
		spanB   [2]int32
		wantErr string
	}{
		{"apart in memory", 256, [2]int32{2, 3}, [2]int32{3, 4}, ""},
		{"apart in time", 0, [2]int32{2, 3}, [2]int32{4, 5}, ""},
		{"b untouched", 0, [2]int32{2, 3}, [2]int32{0, 0}, ""},
		{"overlap in the last epoch of a", 0, [2]int32{2, 3}, [2]int32{3, 4}, "temporaries a (bytes 0-256) and b (bytes 0-256) overlap but are both accessed in grid epoch 3"},
		{"partial overlap", 128, [2]int32{2, 5}, [2]int32{3, 4}, "a (bytes 0-256) and b (bytes 128-384)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &machine{mem: map[*kir.Buffer]*memory{
				a: {buf: a, first: tc.spanA[0], last: tc.spanA[1]},
				b: {buf: b, first: tc.spanB[0], last: tc.spanB[1]},
			}}
			err := s.checkWorkspace(map[*kir.Buffer]int64{a: 0, b: tc.offB})
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
