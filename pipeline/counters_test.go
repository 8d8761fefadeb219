package pipeline

import (
	"testing"

	"tec/backend/kir"
	"tec/backend/report"
	"tec/examples"
	"tec/gpu"
	"tec/lang"
	"tec/partition"
)

// TestCountersReplaceGridSyncs checks Options.Counters on the tiny MMoE at
// -O3 on the small GPU, some of whose stages read only some tiles of the
// stages before them: CountersOff keeps every grid sync, and
// CountersWherever replaces some by per-tile counters, whose waits the
// static report counts.
func TestCountersReplaceGridSyncs(t *testing.T) {
	ex, ok := examples.Lookup("mmoe")
	if !ok {
		t.Fatal("no example mmoe")
	}
	p, diags := lang.Check(ex.File(), ex.Source(), lang.Config{Defines: ex.Tiny, Model: ex.Model})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	small, _ := gpu.Builtin("small")
	got := map[partition.CounterMode]kir.Counts{}
	for _, mode := range []partition.CounterMode{partition.CountersOff, partition.CountersWherever} {
		res, err := Build(p, Options{Level: 3, GPU: small, Counters: mode})
		if err != nil {
			t.Fatal(err)
		}
		got[mode] = report.Module(res.Module, report.Config{}).Total
	}
	off, on := got[partition.CountersOff], got[partition.CountersWherever]
	if off.CounterWaits != 0 || on.CounterWaits == 0 || on.GridSyncs >= off.GridSyncs {
		t.Errorf("CountersOff: %d grid syncs, %d counter waits; CountersWherever: %d, %d; want fewer grid syncs and some counter waits",
			off.GridSyncs, off.CounterWaits, on.GridSyncs, on.CounterWaits)
	}
}
