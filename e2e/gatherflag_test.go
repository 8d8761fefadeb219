package e2e

import (
	"fmt"
	"testing"

	"tec/backend/kir"
	"tec/backend/sim"
	"tec/gpu"
	"tec/internal/numeric"
	"tec/lang"
	"tec/pipeline"
	"tec/te"
)

// TestGatherDeviceRecord runs the gathers of gatherSource at every level as
// a device does (sim.Options.DeviceGathers): with the ids in range the
// outputs are the checked run's and the error record stays clear; with an
// id past its table the run completes with the index clamped, and the
// record in the workspace holds the first index out of range, the one
// that the checked run stops at.
func TestGatherDeviceRecord(t *testing.T) {
	p, diags := lang.Check("g.te", []byte(gatherSource), lang.Config{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	in := numeric.SeededFeeds(p, 3)
	bad := map[string]*te.Array{"ids": te.NewArray(te.I32, []int{6}), "wte": in["wte"], "w": in["w"]}
	copy(bad["ids"].Data, []float64{1, 2, 3, 8, 0, 0}) // ids[3] + 1 = 9 is past wte's 9 rows
	const wantErr = "gather index from ids[3] = 9 is outside wte's dimension 0 [0, 9)"
	g, _ := gpu.Builtin("a100")
	for level := 0; level <= pipeline.MaxLevel; level++ {
		t.Run(fmt.Sprintf("O%d", level), func(t *testing.T) {
			res, err := pipeline.Build(p, pipeline.Options{Level: level, GPU: g})
			if err != nil {
				t.Fatal(err)
			}
			m := res.Module
			opts := sim.Options{ResidentBlocks: resident, Race: true, DeviceGathers: true}
			checked, err := sim.Run(m, in, sim.Options{ResidentBlocks: resident})
			if err != nil {
				t.Fatal(err)
			}
			good, err := sim.Run(m, in, opts)
			if err != nil {
				t.Fatal(err)
			}
			if good.GatherError != nil || good.RaceCount > 0 || good.ErrorRecord[kir.RecordFlag] != 0 {
				t.Errorf("ids in range: gather error %v, record %v, %d races", good.GatherError, good.ErrorRecord, good.RaceCount)
			}
			for name, a := range checked.Outputs {
				for i, v := range a.Data {
					if good.Outputs[name].Data[i] != v {
						t.Fatalf("%s[%d] = %g on the device path, %g checked", name, i, good.Outputs[name].Data[i], v)
					}
				}
			}
			out, err := sim.Run(m, bad, opts)
			if err != nil {
				t.Fatal(err)
			}
			if out.GatherError == nil || out.GatherError.Error() != wantErr || out.RaceCount > 0 {
				t.Errorf("an id out of range: gather error %v (record %v), %d races; want %q", out.GatherError, out.ErrorRecord, out.RaceCount, wantErr)
			}
		})
	}
}
