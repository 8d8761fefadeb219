package kirtest

import (
	"testing"

	"tec/backend/kir"
	"tec/backend/sim"
	"tec/te"
)

// TestFeatures checks that the module verifies and runs on the simulator
// without a fault or a race.
func TestFeatures(t *testing.T) {
	m := Features()
	if err := kir.Verify(m); err != nil {
		t.Fatal(err)
	}
	feeds := map[string]*te.Array{}
	for _, b := range m.Buffers {
		if b.Role.ReadOnly() {
			a := te.NewArray(b.DType, b.Shape)
			for i := range a.Data {
				a.Data[i] = te.Round(b.DType, float64(i%7)/8-0.25)
			}
			feeds[b.Name] = a
		}
	}
	res, err := sim.Run(m, feeds, sim.Options{Race: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Races) > 0 {
		t.Errorf("races: %v", res.Races)
	}
}
