package main

import (
	"context"
	"fmt"

	"tec/driver"
	"tec/gpu"
	"tec/lang"
	"tec/pipeline"
	"tec/te"
)

// check runs the front end on src.
func check(src string, defines map[string]string) (*te.Program, error) {
	return driver.Check("gen.te", []byte(src), lang.Config{Defines: defines})
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
	c, err := driver.CompileSource("gen.te", []byte(src), lang.Config{Defines: defines}, pipeline.Options{Level: level})
	if err != nil {
		return err
	}
	tg, err := gpu.LookupArch(gpu.DefaultArch())
	if err != nil {
		return err
	}
	ctx := context.Background()
	if _, err := driver.Emit(ctx, c, tg, driver.Outputs{CUDA: true}); err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	if _, err := driver.Emit(ctx, c, tg, driver.Outputs{LLVM: true}); err != nil {
		return fmt.Errorf("llvm: %w", err)
	}
	return nil
}
