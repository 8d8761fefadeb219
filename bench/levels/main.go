// Command levels prints the pipeline's figures for the six Souffle models at
// full size, one row per optimisation level, on the A100 and H100 models: the
// kernels, grid syncs, global bytes and FLOPs of the static report, the
// compulsory bytes, and the cost model's predicted time, beside Souffle's
// published numbers (ASPLOS'24, Tables 4 and 5). It writes Markdown for
// docs/benchmarks.md.
//
// Usage:
//
//	go run ./bench/levels [-gpu a100,h100] [-models bert,lstm,...] [-precision bf16]
//
// Any example may be named (llama too); the Souffle columns are filled for
// the six models only.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"strings"
	"time"

	"tec/analysis"
	"tec/backend/report"
	"tec/driver"
	"tec/examples"
	"tec/gpu"
	"tec/lang"
	"tec/partition"
	"tec/pipeline"
	"tec/precision"
)

// souffle holds Souffle's published A100 numbers: kernels and global
// memory transfer (Table 5), time at V0..V4 (Table 4).
var souffle = map[string]struct {
	kernels int
	mbytes  float64
	ms      [5]float64
}{
	"bert":         {24, 226.8, [5]float64{3.1, 2.12, 1.53, 1.41, 1.22}},
	"resnext":      {105, 470.2, [5]float64{29.0, 5.90, 4.43, 4.43, 4.43}},
	"lstm":         {1, 10.6, [5]float64{6.78, 1.60, 1.21, 0.8, 0.8}},
	"efficientnet": {66, 86.6, [5]float64{4.2, 4.2, 0.72, 0.63, 0.63}},
	"swin":         {53, 282.9, [5]float64{5.81, 4.88, 2.09, 1.78, 1.55}},
	"mmoe":         {1, 0.058, [5]float64{0.05, 0.019, 0.016, 0.014, 0.014}},
}

func main() {
	gpus := flag.String("gpu", "a100,h100", "comma-separated GPU models")
	models := flag.String("models", "bert,resnext,lstm,efficientnet,swin,mmoe", "comma-separated examples")
	prec := flag.String("precision", "f32", "the arithmetic precision, as tec build's --precision")
	flag.Parse()
	log.SetFlags(0)
	mode, err := precision.Parse(*prec)
	if err != nil {
		log.Fatal(err)
	}
	if err := run(os.Stdout, strings.Split(*gpus, ","), strings.Split(*models, ","), mode); err != nil {
		log.Fatal(err)
	}
}

func run(w io.Writer, gpus, models []string, mode precision.Mode) error {
	for _, gname := range gpus {
		g, err := gpu.Lookup(gname)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "\n### %s (%d SMs, %.0f GB/s, %.1f TFLOP/s FP32)\n\n", g.Name, g.SMs, g.DRAMBandwidth/1e9, g.FP32Peak/1e12)
		fmt.Fprintln(w, "| model | level | kernels | grid syncs | global MB | DRAM MB (L2 model) | compulsory MB | DRAM / compulsory | workspace MB | GFLOP | predicted ms | compile s | Souffle kernels | Souffle MB | Souffle ms (A100, measured) |")
		fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
		for _, name := range models {
			ex, ok := examples.Lookup(name)
			if !ok {
				return fmt.Errorf("no example %q", name)
			}
			p, diags := lang.Check(ex.File(), ex.Source(), lang.Config{Model: ex.Model})
			if diags.HasErrors() {
				return fmt.Errorf("%s: %v", name, diags.Error())
			}
			a, err := analysis.Analyze(precision.Apply(p, mode), analysis.Options{})
			if err != nil {
				return err
			}
			comp := a.Summary().CompulsoryBytes
			type row struct {
				label string
				opts  pipeline.Options
			}
			var rows []row
			for level := 0; level <= pipeline.MaxLevel; level++ {
				rows = append(rows, row{fmt.Sprintf("-O%d", level), pipeline.Options{Level: level, GPU: g, Precision: mode}})
			}
			rows = append(rows, row{"-O4 greedy (Alg. 1)", pipeline.Options{Level: pipeline.MaxLevel, GPU: g, Strategy: partition.Greedy, Precision: mode}})
			for i, rw := range rows {
				start := time.Now()
				res, err := driver.Compile(p, rw.opts)
				if err != nil {
					return fmt.Errorf("%s %s: %w", name, rw.label, err)
				}
				took := time.Since(start)
				rep := report.Module(res.Module, report.Config{ResidentBlocks: 1 << 30})
				_, _, cost := res.Plan.Stats()
				bytes := rep.Total.LoadBytes + rep.Total.StoreBytes
				dram := rep.DRAMBytes(int64(g.L2Bytes), res.Footprint())
				s, published := souffle[name]
				sk, smb, sms := "", "", ""
				if published && i == pipeline.MaxLevel {
					sk, smb = fmt.Sprint(s.kernels), fmt.Sprint(s.mbytes)
				}
				if published && gname == "a100" && i <= pipeline.MaxLevel {
					sms = fmt.Sprint(s.ms[i])
				}
				fmt.Fprintf(w, "| %s | %s | %d | %d | %s | %s | %s | %.2f | %s | %.3g | %.3f | %.2f | %s | %s | %s |\n",
					name, rw.label, len(res.Module.Kernels), rep.Total.GridSyncs, mb(bytes), mb(dram), mb(comp), float64(dram)/float64(comp), mb(rep.WorkspaceBytes),
					float64(rep.Total.FLOPs)/1e9, cost.Total()*1e3, took.Seconds(), sk, smb, sms)
			}
		}
	}
	return nil
}

// mb formats n bytes in MB: one decimal, or three significant digits
// below 10 MB.
func mb(n int64) string {
	v := float64(n) / 1e6
	if v >= 10 {
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.3g", v)
}
