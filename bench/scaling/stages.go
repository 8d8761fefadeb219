package main

import (
	"fmt"

	"tec/backend/cuda"
	"tec/backend/llvm"
	"tec/gpu"
	"tec/lang"
	"tec/pipeline"
	"tec/te"
)

// check runs the front end on src.
func check(src string, defines map[string]string) (*te.Program, error) {
	p, diags := lang.Check("gen.te", []byte(src), lang.Config{Defines: defines})
	if diags.HasErrors() {
		return nil, fmt.Errorf("check: %v", diags.Error())
	}
	return p, nil
}

// teText is what "tec te" does: the front end, then the program printed.
func teText(src string, defines map[string]string) (string, error) {
	p, err := check(src, defines)
	if err != nil {
		return "", err
	}
	return p.String(), nil
}

// build is what "tec build --emit cu,ll" does: the front end, the pipeline
// at level and both emitters.
func build(src string, defines map[string]string, level int) error {
	p, err := check(src, defines)
	if err != nil {
		return err
	}
	res, err := pipeline.Build(p, pipeline.Options{Level: level})
	if err != nil {
		return fmt.Errorf("pipeline: %w", err)
	}
	tg, err := gpu.LookupArch(gpu.DefaultArch())
	if err != nil {
		return err
	}
	if _, err := cuda.Emit(res.Module, tg); err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	mod, err := llvm.Emit(res.Module, tg)
	if err != nil {
		return fmt.Errorf("llvm: %w", err)
	}
	_ = mod.String()
	return nil
}
