package gpurun

import (
	"errors"
	"fmt"

	"tec/backend/kir"
	"tec/gpu"
	"tec/te"
)

// The formats of a module's code.
const (
	PTX   = "ptx"   // PTX text from the LLVM path, compiled by the driver at load
	Cubin = "cubin" // a cubin that nvcc compiled from the CUDA C++
)

// WorkspaceArg is the argument index (Kernel.Args) of the workspace.
const WorkspaceArg = -1

// Plan is what the runtime needs to know of a module to run it: its global
// buffers, its workspace and its kernels in launch order. It is plain data,
// written as JSON into a Job.
type Plan struct {
	Model  string `json:"model"`
	Format string `json:"format"` // PTX or Cubin
	// Target is the architecture the code was compiled for ("sm_80"), if
	// known: a cubin runs only on its own major version.
	Target string `json:"target,omitempty"`
	// Buffers are the module's global buffers, in the order of
	// kir.Module.Buffers.
	Buffers []Buffer `json:"buffers"`
	// Workspace is the size of the workspace that holds the temporaries.
	Workspace int64    `json:"workspace"`
	Kernels   []Kernel `json:"kernels"`
	// Outputs are the buffer index of each output of the module, in order;
	// an output may be an input, a param or another output.
	Outputs []int `json:"outputs"`
	// ErrorRecord is the buffer index plus one of the module's error
	// record (kir.Module.ErrorRecord), 0 without one; Gathers describe the
	// gathers that report to it. Run clears the record before the
	// launches and reports the index out of range it holds after them.
	ErrorRecord int              `json:"error_record,omitempty"`
	Gathers     []kir.GatherSite `json:"gathers,omitempty"`
}

// Buffer is a global buffer of a module.
type Buffer struct {
	Name  string `json:"name"`
	Role  string `json:"role"` // input, param, output or temp (kir.Role)
	DType string `json:"dtype"`
	Shape []int  `json:"shape"`
	Bytes int64  `json:"bytes"`
	// Offset is a temporary's place in the workspace.
	Offset int64 `json:"offset,omitempty"`
	// InPlace marks an input that the module updates in place
	// (kir.Buffer.InPlace): it is also an output, at the same address.
	InPlace bool `json:"in_place,omitempty"`
}

// Fed reports whether the caller supplies the buffer's data.
func (b Buffer) Fed() bool { return b.Role == kir.Input.String() || b.Role == kir.Param.String() }

// Type formats the buffer's type as the language does, e.g. "f32[2, 3]".
func (b Buffer) Type() string { return entry(b).Type() }

// Kernel is one kernel launch of a module.
type Kernel struct {
	Name string `json:"name"` // the kernel's name in the kernel IR
	// Symbol is the name of its function in the module's code.
	Symbol string `json:"symbol"`
	// Blocks is the grid of a fixed grid, or the cap (0: none) of an
	// all-resident one.
	Blocks   int  `json:"blocks"`
	Resident bool `json:"resident"`
	Block    int  `json:"block"`
	// Shared is the dynamic shared memory the kernel is launched with: its
	// shared arrays when they exceed the static limit, else 0.
	Shared int `json:"shared"`
	// Args are the buffer index of each argument, WorkspaceArg for the
	// workspace.
	Args []int `json:"args"`
}

// NewPlan returns the plan of module m, whose code is in format and names
// each kernel's function as symbols says (llvm.KernelNames for PTX; for a
// cubin, the symbols that CubinSymbols finds). layout is m's workspace
// layout.
func NewPlan(m *kir.Module, layout *kir.Layout, symbols map[*kir.Kernel]string, format string) (*Plan, error) {
	if format != PTX && format != Cubin {
		return nil, fmt.Errorf("gpurun: unknown code format %q (want %s or %s)", format, PTX, Cubin)
	}
	p := &Plan{Model: m.Name, Format: format, Workspace: layout.Bytes}
	index := map[*kir.Buffer]int{}
	for i, b := range m.Buffers {
		index[b] = i
		p.Buffers = append(p.Buffers, Buffer{Name: b.Name, Role: b.Role.String(), DType: b.DType.String(),
			Shape: append([]int{}, b.Shape...), Bytes: b.Bytes(), Offset: layout.Offsets[b], InPlace: b.InPlace})
	}
	if r := m.ErrorRecord; r != nil {
		i, ok := index[r]
		if !ok {
			return nil, fmt.Errorf("gpurun: error record %s is not a buffer of module %s", r.Name, m.Name)
		}
		p.ErrorRecord, p.Gathers = i+1, m.Gathers
	}
	for _, b := range m.Outputs {
		i, ok := index[b]
		if !ok {
			return nil, fmt.Errorf("gpurun: output %s is not a buffer of module %s", b.Name, m.Name)
		}
		p.Outputs = append(p.Outputs, i)
	}
	for _, k := range m.Kernels {
		sym := symbols[k]
		if sym == "" {
			return nil, fmt.Errorf("gpurun: no symbol for kernel %s", k.Name)
		}
		bufs, ws := m.KernelArgs(k)
		args := make([]int, 0, len(bufs)+1)
		for _, b := range bufs {
			args = append(args, index[b])
		}
		if ws {
			args = append(args, WorkspaceArg)
		}
		pk := Kernel{Name: k.Name, Symbol: sym, Blocks: k.Grid.Blocks, Resident: k.Grid.Resident, Block: k.Block, Args: args}
		if gpu.DynamicShared(k.SharedBytes()) {
			pk.Shared = int(DynamicShared(k))
		}
		p.Kernels = append(p.Kernels, pk)
	}
	return p, p.Check()
}

// DynamicShared returns the dynamic shared memory that k's shared arrays
// take when each starts at a multiple of 16 bytes, as both emitters carve
// them.
func DynamicShared(k *kir.Kernel) int64 {
	var off int64
	for _, s := range k.Shared {
		off = (off+15)&^15 + s.Bytes()
	}
	return off
}

// Check reports the first inconsistency of a plan (read from a file, say):
// an index out of range, a buffer whose size does not match its type, a
// temporary outside the workspace.
func (p *Plan) Check() error {
	if p.Format != PTX && p.Format != Cubin {
		return fmt.Errorf("plan: unknown code format %q", p.Format)
	}
	if p.Workspace < 0 {
		return errors.New("plan: negative workspace size")
	}
	for i, b := range p.Buffers {
		dt, ok := te.ParseDType(b.DType)
		if !ok {
			return fmt.Errorf("plan: buffer %d (%s): unknown dtype %q", i, b.Name, b.DType)
		}
		n := int64(dt.Size())
		for _, d := range b.Shape {
			if d < 0 {
				return fmt.Errorf("plan: buffer %d (%s): negative dimension", i, b.Name)
			}
			n *= int64(d)
		}
		if n != b.Bytes {
			return fmt.Errorf("plan: buffer %d (%s %s) has %d bytes, want %d", i, b.Name, b.Type(), b.Bytes, n)
		}
		switch b.Role {
		case "temp":
			if b.Offset < 0 || b.Offset%kir.WorkspaceAlign != 0 || b.Offset+b.Bytes > p.Workspace {
				return fmt.Errorf("plan: temporary %s (%d bytes at offset %d) is not %d-aligned within the %d-byte workspace",
					b.Name, b.Bytes, b.Offset, kir.WorkspaceAlign, p.Workspace)
			}
		case "input", "param", "output":
		default:
			return fmt.Errorf("plan: buffer %d (%s): unknown role %q", i, b.Name, b.Role)
		}
		if b.InPlace && b.Role != "input" {
			return fmt.Errorf("plan: buffer %d (%s): a %s updated in place (only inputs are)", i, b.Name, b.Role)
		}
	}
	for _, o := range p.Outputs {
		if o < 0 || o >= len(p.Buffers) || p.Buffers[o].Role == "temp" {
			return fmt.Errorf("plan: output index %d names no input, param or output buffer", o)
		}
	}
	if r := p.ErrorRecord - 1; r >= 0 {
		if r >= len(p.Buffers) || p.Buffers[r].Role != "temp" || p.Buffers[r].DType != te.I32.String() ||
			p.Buffers[r].Bytes != 4*kir.ErrorRecordWords {
			return fmt.Errorf("plan: error record %d names no temporary i32[%d]", r, kir.ErrorRecordWords)
		}
	}
	for _, k := range p.Kernels {
		if k.Symbol == "" || k.Block < 1 || k.Shared < 0 || k.Blocks < 0 || (!k.Resident && k.Blocks < 1) {
			return fmt.Errorf("plan: kernel %s: bad symbol, block, grid or shared memory", k.Name)
		}
		for _, a := range k.Args {
			if a != WorkspaceArg && (a < 0 || a >= len(p.Buffers)) {
				return fmt.Errorf("plan: kernel %s: argument index %d out of range", k.Name, a)
			}
		}
	}
	return nil
}
