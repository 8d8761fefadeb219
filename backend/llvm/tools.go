package llvm

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"tec/gpu"
)

// FindLLC returns the path of the first llc in $PATH that reaches tg
// (tg.LLC lists the candidates), or an error that says what to install.
func FindLLC(tg gpu.Arch) (string, error) {
	for _, name := range tg.LLC {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("llvm: no llc for %s in $PATH (looked for %s); install LLVM (Debian: llvm, or llvm-16 for sm_90)",
		tg.Name, strings.Join(tg.LLC, ", "))
}

// FindPTXAS returns the path of ptxas, or an error that says what to install.
func FindPTXAS() (string, error) {
	p, err := exec.LookPath("ptxas")
	if err != nil {
		return "", fmt.Errorf("llvm: no ptxas in $PATH; install the CUDA toolkit (Debian: nvidia-cuda-toolkit)")
	}
	return p, nil
}

// PTX compiles LLVM IR text to PTX for tg with llc (as FindLLC finds it).
func PTX(ctx context.Context, ll []byte, tg gpu.Arch) ([]byte, error) {
	llc, err := FindLLC(tg)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, llc, "-O3", "-march=nvptx64", "-mcpu="+tg.Name, "-mattr="+tg.PTX, "-o", "-")
	cmd.Stdin = bytes.NewReader(ll)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("llvm: %s -mcpu=%s: %w\n%s", filepath.Base(llc), tg.Name, err, strings.TrimSpace(stderr.String()))
	}
	return out.Bytes(), nil
}

// Assemble assembles PTX for tg with ptxas, to check it, and returns the
// cubin.
func Assemble(ctx context.Context, ptx []byte, tg gpu.Arch) ([]byte, error) {
	cubin, _, err := assemble(ctx, ptx, tg)
	return cubin, err
}

// AssembleVerbose is Assemble with ptxas -v, and returns also what ptxas
// reports of each function it compiled: registers, spills, stack frames.
func AssembleVerbose(ctx context.Context, ptx []byte, tg gpu.Arch) (cubin, info []byte, err error) {
	return assemble(ctx, ptx, tg, "-v")
}

// assemble runs ptxas for tg with flags on ptx and returns the cubin and
// ptxas's output.
func assemble(ctx context.Context, ptx []byte, tg gpu.Arch, flags ...string) (cubin, info []byte, err error) {
	ptxas, err := FindPTXAS()
	if err != nil {
		return nil, nil, err
	}
	dir, err := os.MkdirTemp("", "tec-ptxas-")
	if err != nil {
		return nil, nil, fmt.Errorf("llvm: %w", err)
	}
	defer os.RemoveAll(dir)
	in, out := filepath.Join(dir, "kernels.ptx"), filepath.Join(dir, "kernels.cubin")
	if err := os.WriteFile(in, ptx, 0o644); err != nil {
		return nil, nil, fmt.Errorf("llvm: %w", err)
	}
	args := append(append([]string{"-arch=" + tg.Name}, flags...), "-o", out, in)
	cmd := exec.CommandContext(ctx, ptxas, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, nil, fmt.Errorf("llvm: ptxas -arch=%s: %w\n%s", tg.Name, err, strings.TrimSpace(stderr.String()))
	}
	cubin, err = os.ReadFile(out)
	if err != nil {
		return nil, nil, fmt.Errorf("llvm: %w", err)
	}
	return cubin, append(stdout.Bytes(), stderr.Bytes()...), nil
}
