package gpu

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestBuiltinArchs: every built-in model has a native architecture, the
// one its compute capability names.
func TestBuiltinArchs(t *testing.T) {
	want := map[string]string{
		"a100": "sm_80", "a100-80gb": "sm_80", "small": "sm_80",
		"a10": "sm_86", "rtx3090": "sm_86",
		"l4": "sm_89", "l40s": "sm_89", "rtx4090": "sm_89",
		"h100": "sm_90", "h100-pcie": "sm_90", "h100-nvl": "sm_90", "h200": "sm_90",
		"t4": "sm_75",
	}
	for _, name := range Names() {
		g, _ := Builtin(name)
		if g.Arch.Name != want[name] {
			t.Errorf("Builtin(%s).Arch = %q, want %q", name, g.Arch.Name, want[name])
		}
		if native, ok := g.NativeArch(); !ok || !reflect.DeepEqual(native, g.Arch) {
			t.Errorf("%s: NativeArch() = %+v, %v; Arch %+v", name, native, ok, g.Arch)
		}
	}
	if got := DefaultArch(); got != "sm_80" {
		t.Errorf("DefaultArch() = %s, want sm_80, the architecture of %s", got, Default)
	}
	for arch, want := range map[string]string{"sm_75": "t4", "sm_80": "a100", "sm_86": "a10", "sm_89": "l4", "sm_90": "h100"} {
		if got, err := DefaultFor(arch); got != want || err != nil {
			t.Errorf("DefaultFor(%s) = %s, %v; want %s", arch, got, err, want)
		}
	}
	if got, _ := DefaultFor(DefaultArch()); got != Default {
		t.Errorf("the default architecture's model is %s, not the default model %s", got, Default)
	}
}

func TestResolve(t *testing.T) {
	for _, tt := range []struct {
		gpu, arch string
		model     string // the built-in model's name
		wantArch  string
		err       string
	}{
		{"", "", "a100", "sm_80", ""},
		{"", "sm_80", "a100", "sm_80", ""},
		{"", "sm_90", "h100", "sm_90", ""},
		{"a100", "", "a100", "sm_80", ""},
		{"A100", "sm_80", "a100", "sm_80", ""},
		{"a100", "sm_90", "", "", "sm_90 emits code for compute capability 9.0, which the GPU model A100-SXM4-40GB (compute capability 8.0) cannot run"},
		{"h100", "", "h100", "sm_90", ""},
		{"h100", "sm_80", "h100", "sm_80", ""},
		{"h200", "sm_90", "h200", "sm_90", ""},
		{"small", "", "small", "sm_80", ""},
		{"small", "sm_90", "", "", "cannot run"},
		{"v100", "", "", "", `unknown GPU "v100"`},
		{"", "sm_70", "", "", `unsupported target "sm_70"`},
		{"a100", "sm_71", "", "", `unknown target "sm_71" (want one of sm_75, sm_80, sm_86, sm_89, sm_90)`},
		{"", "sm_89", "l4", "sm_89", ""},
		{"l4", "", "l4", "sm_89", ""},
		{"l4", "sm_86", "l4", "sm_86", ""},
		{"l4", "sm_90", "", "", "sm_90 emits code for compute capability 9.0, which the GPU model L4-24GB (compute capability 8.9) cannot run"},
		{"a10", "sm_89", "", "", "cannot run"},
		{"rtx4090", "sm_80", "rtx4090", "sm_80", ""},
		{"", "sm_75", "t4", "sm_75", ""},
		{"t4", "", "t4", "sm_75", ""},
		{"t4", "sm_80", "", "", "sm_80 emits code for compute capability 8.0, which the GPU model T4-16GB (compute capability 7.5) cannot run"},
		{"a100", "sm_75", "a100", "sm_75", ""},
	} {
		g, err := Resolve(tt.gpu, tt.arch)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Resolve(%q, %q) = %v, want an error containing %q", tt.gpu, tt.arch, err, tt.err)
			}
			continue
		}
		want, _ := Builtin(tt.model)
		want.Arch, _ = LookupArch(tt.wantArch)
		if err != nil || !reflect.DeepEqual(*g, want) {
			t.Errorf("Resolve(%q, %q) = %s on %s, %v; want %s on %s", tt.gpu, tt.arch, g.Name, g.Arch.Name, err, want.Name, tt.wantArch)
		}
	}
}

// TestResolvePairs checks every pair of a built-in model (or none) and an
// architecture (or none) against the table: the model is the one named,
// or the first whose native architecture is the one named; the
// architecture is the one named, or the model's; an architecture newer
// than the model's is a *MismatchError, and only that.
func TestResolvePairs(t *testing.T) {
	for _, name := range append([]string{""}, Names()...) {
		for _, arch := range append([]string{""}, ArchNames()...) {
			g, err := Resolve(name, arch)
			wantModel := name
			switch {
			case name == "" && arch == "":
				wantModel = Default
			case name == "":
				for _, n := range Names() {
					if b, _ := Builtin(n); b.Arch.Name == arch {
						wantModel = n
						break
					}
				}
			}
			b, _ := Builtin(wantModel)
			wantArch := b.Arch
			if arch != "" {
				wantArch, _ = LookupArch(arch)
			}
			if wantArch.Major > b.Arch.Major || wantArch.Major == b.Arch.Major && wantArch.Minor > b.Arch.Minor {
				var mm *MismatchError
				if !errors.As(err, &mm) || mm.Arch.Name != arch || mm.Model.Name != b.Name {
					t.Errorf("Resolve(%q, %q) = %v, want a MismatchError", name, arch, err)
				}
				continue
			}
			if err != nil {
				t.Errorf("Resolve(%q, %q): %v", name, arch, err)
				continue
			}
			if g.Name != b.Name || !reflect.DeepEqual(g.Arch, wantArch) {
				t.Errorf("Resolve(%q, %q) = %s on %s, want %s on %s", name, arch, g.Name, g.Arch.Name, b.Name, wantArch.Name)
			}
		}
	}
}

// TestFileRoundTrip: each built-in model written as a GPU file reads back
// as the same model, with the same native architecture.
func TestFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	for _, name := range Names() {
		want, _ := Resolve(name, "")
		data, err := json.MarshalIndent(want, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name+".json")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := Resolve(path, "")
		if err != nil {
			t.Errorf("%s: %v\n%s", name, err, data)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s read back as %+v, want %+v", name, got, want)
		}
	}
}
