package target

import "testing"

func TestLookup(t *testing.T) {
	for _, name := range Names() {
		tg, err := Lookup(name)
		if err != nil || tg.Name != name || tg.MaxSharedPerBlock < StaticSharedLimit || len(tg.LLC) == 0 {
			t.Errorf("Lookup(%q) = %+v, %v", name, tg, err)
		}
	}
	if _, err := Lookup("sm_70"); err == nil {
		t.Error("Lookup(sm_70) succeeded")
	}
	if _, err := Lookup(Default); err != nil {
		t.Errorf("the default target: %v", err)
	}
}
