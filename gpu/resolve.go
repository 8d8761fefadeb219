package gpu

import "fmt"

// DefaultArch returns the name of the architecture a build compiles for
// when it names none: the Default model's.
func DefaultArch() string {
	g, _ := Builtin(Default)
	return g.Arch.Name
}

// Resolve returns the model of a build for the GPU named gpuName (a
// built-in model or a JSON file, as for Lookup) whose code is compiled for
// the architecture named archName, with Arch set to that architecture.
// Either name may be empty. Without a GPU, the model is the first built-in
// one, in the order of Names, whose native architecture is archName (a100
// for sm_80, h100 for sm_90), or Default without either; without an
// architecture, it is the model's own (see WithArch).
func Resolve(gpuName, archName string) (*Model, error) {
	spec := gpuName
	if spec == "" {
		spec = Default
		if archName != "" {
			var err error
			if spec, err = DefaultFor(archName); err != nil {
				return nil, err
			}
		}
	}
	g, err := Lookup(spec)
	if err != nil {
		return nil, err
	}
	return g.WithArch(archName)
}

// DefaultFor returns the name of the built-in model that a build for the
// architecture named archName plans for when it names no GPU: the first,
// in the order of Names, whose native architecture archName is (a100 for
// sm_80, h100 for sm_90), or Default if none is.
func DefaultFor(archName string) (string, error) {
	if _, err := LookupArch(archName); err != nil {
		return "", err
	}
	for _, name := range Names() {
		if g, _ := Builtin(name); g.Arch.Name == archName {
			return name, nil
		}
	}
	return Default, nil
}

// WithArch returns g with Arch set to the architecture named archName, or
// where that is empty, to g's native architecture (NativeArch), or the
// default model's where g has none. An architecture newer than g's
// compute capability is a *MismatchError: no GPU of the model runs its
// code. An older one is allowed: sm_80 code runs on an H100 too.
func (g Model) WithArch(archName string) (*Model, error) {
	if archName == "" {
		a, ok := g.NativeArch()
		if !ok {
			a, _ = LookupArch(DefaultArch())
		}
		g.Arch = a
		return &g, nil
	}
	a, err := LookupArch(archName)
	if err != nil {
		return nil, err
	}
	if major, minor, ok := g.capability(); ok && !a.runsOn(major, minor) {
		return nil, &MismatchError{Arch: a, Model: g}
	}
	g.Arch = a
	return &g, nil
}

// MismatchError is the error of WithArch and Resolve for an architecture
// newer than the GPU model's compute capability.
type MismatchError struct {
	Arch  Arch
	Model Model
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("%s emits code for compute capability %d.%d, which the GPU model %s (compute capability %s) cannot run",
		e.Arch.Name, e.Arch.Major, e.Arch.Minor, e.Model.Name, e.Model.CC)
}
