package gpu

import (
	"strings"
	"testing"
)

func TestLookupArch(t *testing.T) {
	for _, name := range ArchNames() {
		a, err := LookupArch(name)
		if err != nil || a.Name != name || a.PTX == "" || len(a.LLC) == 0 {
			t.Errorf("LookupArch(%q) = %+v, %v", name, a, err)
		}
	}
	for name, why := range map[string]string{
		"sm_70":  `unsupported target "sm_70": Volta`,
		"sm_72":  `unsupported target "sm_72": Volta`,
		"sm_100": `unsupported target "sm_100": the CUDA 11.8 toolchain`,
		"sm_87":  `unknown target "sm_87" (want one of sm_75, sm_80, sm_86, sm_89, sm_90)`,
	} {
		if _, err := LookupArch(name); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("LookupArch(%s) = %v, want an error containing %q", name, err, why)
		}
	}
	if _, err := LookupArch(DefaultArch()); err != nil {
		t.Errorf("the default architecture: %v", err)
	}
}

func TestNativeArch(t *testing.T) {
	for _, tt := range []struct{ cc, want string }{
		{"8.0", "sm_80"},
		{"8.6", "sm_86"},
		{"8.7", "sm_86"},
		{"8.9", "sm_89"},
		{"9.0", "sm_90"},
		{"10.0", "sm_90"},
		{"7.5", "sm_75"},
		{"7.0", ""},
		{"", ""},
	} {
		a, ok := Model{CC: tt.cc}.NativeArch()
		if a.Name != tt.want || ok != (tt.want != "") {
			t.Errorf("NativeArch of compute capability %q = %q, %v; want %q", tt.cc, a.Name, ok, tt.want)
		}
	}
}

func TestCheckShared(t *testing.T) {
	a100, _ := Builtin("a100")
	for _, tt := range []struct {
		need int64
		want string
	}{
		{0, ""},
		{163 << 10, ""},
		{163<<10 + 1, "kernel k needs 166913 B of shared memory per block, more than the 166912 B"},
	} {
		got := ""
		if err := a100.CheckShared("k", tt.need); err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("CheckShared(%d) = %q, want %q", tt.need, got, tt.want)
		}
	}
	if !DynamicShared(StaticSharedLimit+1) || DynamicShared(StaticSharedLimit) {
		t.Error("DynamicShared: wrong side of StaticSharedLimit")
	}
}
