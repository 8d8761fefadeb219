package sim_test

import (
	"slices"
	"strings"
	"testing"

	"tec/backend/internal/kirtest"
	"tec/backend/kir"
	"tec/backend/lower"
	"tec/backend/sim"
	"tec/te"
)

// TestDeviceGathers runs the gather e[s, d] = wte[ids[s] + 1, d] with ids
// out of range both as the simulator checks it (an error) and as a device
// runs it (clamped, with the first index out of range in the error record
// in the workspace).
func TestDeviceGathers(t *testing.T) {
	for _, ws := range []bool{false, true} {
		m, err := lower.Unfused(kirtest.Programs()["gather"], lower.Options{})
		if err != nil {
			t.Fatal(err)
		}
		m.TempsInWorkspace = ws
		if m.ErrorRecord == nil || len(m.Gathers) != 1 {
			t.Fatalf("lowered gather: error record %v, gathers %v; want a record and one gather", m.ErrorRecord, m.Gathers)
		}
		wte := te.NewArray(te.F32, []int{12, 8})
		for i := range wte.Data {
			wte.Data[i] = float64(i)
		}
		for _, tc := range []struct {
			name   string
			ids    []float64
			record []int32 // nil: none out of range
			msg    string
		}{
			{"in range", []float64{0, 3, 10, 7, 1}, []int32{0, 0, 0, 0}, ""},
			{"one past", []float64{1, 2, 3, 11, 0}, []int32{1, 0, 3, 12}, "gather index from ids[3] = 12 is outside wte's dimension 0 [0, 12)"},
			{"first wins", []float64{4, 50000, 3, -5, 0}, []int32{1, 0, 1, 50001}, "gather index from ids[1] = 50001 is outside wte's dimension 0 [0, 12)"},
		} {
			feeds := map[string]*te.Array{"ids": te.NewArray(te.I32, []int{5}), "wte": wte}
			copy(feeds["ids"].Data, tc.ids)
			_, err := sim.Run(m, feeds, sim.Options{})
			if (err != nil) != (tc.msg != "") || err != nil && !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("%s: checked run: error %v, want %q", tc.name, err, tc.msg)
			}
			res, err := sim.Run(m, feeds, sim.Options{DeviceGathers: true, Race: true})
			if err != nil {
				t.Fatalf("%s: device run: %v", tc.name, err)
			}
			if res.RaceCount > 0 {
				t.Errorf("%s: %d races, the first: %s", tc.name, res.RaceCount, res.Races[0])
			}
			if !slices.Equal(res.ErrorRecord, tc.record) {
				t.Errorf("%s: error record %v, want %v", tc.name, res.ErrorRecord, tc.record)
			}
			if got := errString(res.GatherError); got != tc.msg {
				t.Errorf("%s: gather error %q, want %q", tc.name, got, tc.msg)
			}
			// Each row of e is wte's row ids[s] + 1, clamped into [0, 12).
			for s, id := range tc.ids {
				row := min(max(int(id)+1, 0), 11)
				if got, want := res.Outputs["e"].Data[s*8+5], wte.Data[row*8+5]; got != want {
					t.Errorf("%s: e[%d, 5] = %g, want wte[%d, 5] = %g", tc.name, s, got, row, want)
				}
			}
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestErrorRecordLayout checks that the error record shares its workspace
// bytes with no temporary, whatever their epochs.
func TestErrorRecordLayout(t *testing.T) {
	m, err := lower.Unfused(kirtest.Programs()["gather"], lower.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := &kir.Buffer{Name: "a", Role: kir.Temp, DType: te.F32, Shape: []int{64}}
	m.Buffers = append(m.Buffers, a) // touched by no kernel: live with none
	offsets, size := m.WorkspaceLayout()
	if offsets[a] == offsets[m.ErrorRecord] || size < 2*kir.WorkspaceAlign {
		t.Errorf("a at byte %d, the error record at %d, workspace %d B: want them apart", offsets[a], offsets[m.ErrorRecord], size)
	}
}
