package gpurun

import (
	"bytes"
	"debug/elf"
	"fmt"
	"strconv"
	"strings"

	"tec/backend/kir"
)

// CubinSymbols returns the symbol of each kernel's function in a cubin that
// nvcc compiled from the CUDA C++ of package cuda, where names gives each
// kernel's C++ function name (cuda.KernelNames). The kernels are C++
// functions, so their symbols are mangled: _Z (or _ZL) then the name's
// length and the name, then the parameter types.
func CubinSymbols(cubin []byte, names map[*kir.Kernel]string) (map[*kir.Kernel]string, error) {
	f, err := elf.NewFile(bytes.NewReader(standardVersion(cubin)))
	if err != nil {
		return nil, fmt.Errorf("reading the cubin: %w", err)
	}
	syms, err := f.Symbols()
	if err != nil {
		return nil, fmt.Errorf("reading the cubin's symbols: %w", err)
	}
	out := map[*kir.Kernel]string{}
	for k, name := range names {
		var found []string
		for _, s := range syms {
			if elf.ST_TYPE(s.Info) == elf.STT_FUNC && mangles(s.Name, name) {
				found = append(found, s.Name)
			}
		}
		switch len(found) {
		case 0:
			return nil, fmt.Errorf("the cubin has no function %s for kernel %s", name, k.Name)
		case 1:
			out[k] = found[0]
		default:
			return nil, fmt.Errorf("the cubin has %d functions named %s for kernel %s: %s", len(found), name, k.Name, strings.Join(found, ", "))
		}
	}
	return out, nil
}

// mangles reports whether sym is the symbol of a function called name: name
// itself (extern "C") or its Itanium mangling as a function at namespace
// scope.
func mangles(sym, name string) bool {
	if sym == name {
		return true
	}
	for _, prefix := range []string{"_Z", "_ZL"} {
		head := prefix + strconv.Itoa(len(name)) + name
		if rest, ok := strings.CutPrefix(sym, head); ok && rest != "" && !strings.Contains(sym, "$") {
			return true
		}
	}
	return false
}

// standardVersion returns a copy of an ELF image with its header's
// e_version set to 1, as debug/elf requires: a cubin's holds the version
// of NVIDIA's ELF flavour.
func standardVersion(image []byte) []byte {
	const eVersion = 20 // the offset of e_version, in 32- and 64-bit headers
	out := bytes.Clone(image)
	if len(out) >= eVersion+4 && bytes.HasPrefix(out, []byte(elf.ELFMAG)) && out[elf.EI_DATA] == byte(elf.ELFDATA2LSB) {
		copy(out[eVersion:], []byte{1, 0, 0, 0})
	}
	return out
}
