package kirtest

import (
	"testing"

	"tec/backend/kir"
	"tec/backend/lower"
	"tec/backend/sim"
	"tec/te"
)

// TestFeatures checks that the module verifies and runs on the simulator
// without a fault or a race.
func TestFeatures(t *testing.T) {
	for _, m := range []*kir.Module{Features(), Shuffles()} {
		t.Run(m.Name, func(t *testing.T) { simulate(t, m) })
	}
}

// simulate runs m in the simulator on small feeds and fails on an error or a
// race.
func simulate(t *testing.T, m *kir.Module) {
	t.Helper()
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

// TestPrograms checks that the programs evaluate and lower.
func TestPrograms(t *testing.T) {
	for name, p := range Programs() {
		feeds := map[string]*te.Array{}
		for _, ph := range p.Placeholders() {
			feeds[ph.Name] = te.NewArray(ph.DType, ph.Shape)
		}
		if _, err := te.Evaluate(p, feeds, te.EvalOptions{}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if _, err := lower.Unfused(p, lower.Options{}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestVectorLoads runs VectorLoads in the simulator on weights w[r, j] =
// r + j and x[r, j] = r - j and checks every output.
func TestVectorLoads(t *testing.T) {
	w, x := te.NewArray(te.BF16, []int{16, 8}), te.NewArray(te.F32, []int{16, 4})
	for i := range w.Data {
		w.Data[i] = float64(i/8 + i%8)
	}
	for i := range x.Data {
		x.Data[i] = float64(i/4 - i%4)
	}
	res, err := sim.Run(VectorLoads(), map[string]*te.Array{"w": w, "x": x}, sim.Options{Race: true})
	if err != nil {
		t.Fatal(err)
	}
	for r, got := range res.Outputs["y"].Data {
		want := 0.0
		for j := range 8 {
			want += float64(r+j) * float64(j+1)
		}
		for j := range 4 {
			want += float64(r-j) * float64(j+1)
		}
		if got != want {
			t.Errorf("y[%d] = %v, want %v", r, got, want)
		}
	}
}
