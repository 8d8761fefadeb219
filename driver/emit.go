package driver

import (
	"context"

	"tec/backend/cuda"
	"tec/backend/llvm"
	"tec/gpu"
)

// Outputs says what Emit makes of a compiled program.
type Outputs struct {
	// CUDA is MODEL.cu and MODEL.h: the kernels in CUDA C++ and their C
	// interface.
	CUDA bool
	// Runner is main.cu, a standalone runner of the model.
	Runner bool
	// LLVM is MODEL.ll, the kernels as NVPTX LLVM IR.
	LLVM bool
	// PTX is MODEL.ptx, that IR compiled by llc.
	PTX bool
	// DumpCUDA and DumpLLVM pass the CUDA source ("cu") and the LLVM IR
	// ("ll") to Dump as they are emitted, whether or not they are among
	// the files.
	DumpCUDA, DumpLLVM bool
	Dump               func(pass, text string)
}

// PTXError is an error of llc compiling the LLVM IR to PTX; its message
// is llc's error's.
type PTXError struct{ Err error }

func (e *PTXError) Error() string { return e.Err.Error() }

func (e *PTXError) Unwrap() error { return e.Err }

// Emit returns the files that out asks for, for target tg, in the order
// MODEL.cu, MODEL.h, main.cu, MODEL.ll, MODEL.ptx. An error of llc is a
// *PTXError.
func Emit(ctx context.Context, c *Compiled, tg gpu.Arch, out Outputs) ([]cuda.File, error) {
	m := c.Module
	var files []cuda.File
	if out.CUDA || out.Runner || out.DumpCUDA {
		cu, err := cuda.EmitWith(m, tg, cuda.Options{Layout: c.Layout(), Verified: true})
		if err != nil {
			return nil, err
		}
		if out.DumpCUDA {
			out.Dump("cu", string(cu.Source.Data))
		}
		if out.CUDA {
			files = append(files, cu.Source, cu.Header)
		}
		if out.Runner {
			files = append(files, cu.Runner)
		}
	}
	if out.LLVM || out.PTX || out.DumpLLVM {
		mod, err := llvm.EmitWith(m, tg, llvm.Options{Layout: c.Layout(), Verified: true})
		if err != nil {
			return nil, err
		}
		ll := mod.String()
		if out.DumpLLVM {
			out.Dump("ll", ll)
		}
		base := cuda.BaseName(m)
		if out.LLVM {
			files = append(files, cuda.File{Name: base + ".ll", Data: []byte(ll)})
		}
		if out.PTX {
			ptx, err := llvm.PTX(ctx, []byte(ll), tg)
			if err != nil {
				return nil, &PTXError{err}
			}
			files = append(files, cuda.File{Name: base + ".ptx", Data: ptx})
		}
	}
	return files, nil
}
