// Package report computes, from kernel IR alone, what each kernel of a module
// does when it runs: its launch shape and shared memory, and the global bytes
// it loads and stores, its FLOPs and its barriers (kir.Counts). It needs no
// data and no execution, so it works for models too large to simulate; on
// small ones its counts equal those the simulator measures. It predicts the
// wavefronts of the kernels' shared-memory accesses and their bank
// conflicts too (kir.Banks, banks.go).
//
// Counts are exact when every loop has constant bounds and every condition
// (If, Select) depends only on indexes, not on loaded data: the report counts
// the points of each statement's iteration domain that satisfy its
// conditions. The domain of a statement is the product of its enclosing
// loops' ranges with the block and thread indexes; a grid-stride loop
// replaces the block index (over the grid, it visits each tile once), a
// block-stride loop the thread index, a thread-stride loop both. Conditions
// are grouped by the loop variables they depend on and each group's
// variables are enumerated; a group too large to enumerate is sampled, and
// the report says it is not exact. A domain and conditions of the same
// shape as ones already counted (a persistent kernel's stages) are not
// enumerated again, and a condition on few of its group's variables is
// evaluated once per point of those, into a table.
package report

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"tec/backend/kir"
)

// DefaultEnumLimit bounds the points enumerated for one group of conditions.
const DefaultEnumLimit = 1 << 18

// Config controls the report.
type Config struct {
	// ResidentBlocks is the number of blocks an all-resident grid gets on
	// the target (SM count × blocks per SM); 0 means 4, as in package sim.
	ResidentBlocks int
	// EnumLimit bounds the points enumerated per group of conditions; 0
	// means DefaultEnumLimit.
	EnumLimit int
}

// Kernel is the static report of one kernel.
type Kernel struct {
	Name        string
	Blocks      int
	Threads     int
	Resident    bool
	SharedBytes int64
	kir.Counts
	// Exact is false when a count had to be estimated (a data-dependent
	// condition, a loop with non-constant bounds, a sampled domain).
	Exact bool
	// Traffic is the kernel's global traffic per buffer.
	Traffic []Traffic
	// Banks are the wavefronts of the kernel's shared-memory accesses
	// and their bank conflicts (kir.Banks), exact where BanksExact: every
	// index and condition of a shared access depends only on indexes, and
	// no domain was sampled.
	Banks      kir.Banks
	BanksExact bool
}

// Traffic is the global traffic of one kernel to one buffer.
type Traffic struct {
	Buffer      *kir.Buffer
	Load, Store int64 // bytes
}

// Report is the static report of a module.
type Report struct {
	Module         string
	Kernels        []Kernel
	Total          kir.Counts
	WorkspaceBytes int64
	Exact          bool
	// Workspace holds the temporaries' byte offsets in the workspace
	// (kir.Module.WorkspaceLayout): temporaries that share bytes share
	// lines of L2.
	Workspace map[*kir.Buffer]int64
}

// Module computes the report of m, which should be verified.
func Module(m *kir.Module, cfg Config) *Report {
	if cfg.ResidentBlocks <= 0 {
		cfg.ResidentBlocks = 4
	}
	if cfg.EnumLimit <= 0 {
		cfg.EnumLimit = DefaultEnumLimit
	}
	offsets, size := m.WorkspaceLayout()
	r := &Report{Module: m.Name, WorkspaceBytes: size, Workspace: offsets, Exact: true}
	for _, k := range m.Kernels {
		kr := kernel(k, cfg)
		r.Kernels = append(r.Kernels, kr)
		r.Total.Add(kr.Counts)
		r.Exact = r.Exact && kr.Exact
	}
	return r
}

// Fprint writes the report as a table; the counts of counter signals and
// waits (kir.Signal, kir.Wait) have columns where some kernel has them.
func (r *Report) Fprint(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', tabwriter.AlignRight)
	counters := r.Total.CounterSignals > 0 || r.Total.CounterWaits > 0
	head := "kernel\tgrid\tblock\tshared B\tload B\tstore B\tFLOPs\tbarriers\tgrid syncs\tshuffles\tmma\t"
	if counters {
		head += "signals\twaits\t"
	}
	fmt.Fprintf(tw, "%s\n", head)
	row := func(name, grid string, block string, k Kernel) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t", name, grid, block, k.SharedBytes,
			k.LoadBytes, k.StoreBytes, k.FLOPs, k.BlockBarriers, k.GridSyncs, k.Shuffles, k.MMAs)
		if counters {
			fmt.Fprintf(tw, "%d\t%d\t", k.CounterSignals, k.CounterWaits)
		}
		fmt.Fprintln(tw)
	}
	for _, k := range r.Kernels {
		grid := fmt.Sprint(k.Blocks)
		if k.Resident {
			grid += "*"
		}
		name := k.Name
		if !k.Exact {
			name += " ~"
		}
		row(name, grid, fmt.Sprint(k.Threads), k)
	}
	row("total", "", "", Kernel{Counts: r.Total})
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	var notes []string
	if !r.Exact {
		notes = append(notes, "~ marks estimated counts")
	}
	notes = append(notes, "* marks all-resident grids", fmt.Sprintf("workspace %d B", r.WorkspaceBytes))
	_, err := fmt.Fprintf(w, "%s\n", strings.Join(notes, "; "))
	return err
}

// DRAMBytes estimates the bytes that the module moves between the GPU and
// its DRAM when the GPU has an L2 cache of l2 bytes. It is a model, not a
// count. Each kernel touches a footprint of each global buffer (what
// footprint(k, b) returns for kernel index k, at most the buffer's size;
// nil means the whole buffer). A buffer's accesses within one kernel hit in
// L2 when the kernel's whole footprint fits in L2 or, when it does not,
// when the buffer's footprint is no larger than an eighth of L2: then the
// buffer moves at most its footprint each way, and a buffer the kernel
// stores is not read back from DRAM at all (L2 is write-back: the kernel's
// loads of what it wrote find the lines it wrote). Other accesses all go
// to DRAM. In a kernel whose footprint fits in L2, temporaries that share
// workspace bytes (r.Workspace) share lines: the lines a later temporary
// overwrites were never written back, so the kernel's stores to the
// workspace move at most the bytes of the union of the ranges it stores
// to. Nothing is assumed to stay in L2 from one kernel to the next, and
// everything a kernel stored is written back when it ends.
func (r *Report) DRAMBytes(l2 int64, footprint func(k int, b *kir.Buffer) int64) int64 {
	var total int64
	for i, k := range r.Kernels {
		foot := make([]int64, len(k.Traffic))
		var sum int64
		for j, t := range k.Traffic {
			foot[j] = t.Buffer.Bytes()
			if footprint != nil {
				foot[j] = min(foot[j], footprint(i, t.Buffer))
			}
			sum += foot[j]
		}
		fits := sum <= l2
		var ranges [][2]int64 // workspace bytes stored, in a kernel that fits
		var each int64        // the same stores counted buffer by buffer
		for j, t := range k.Traffic {
			off, inWorkspace := r.Workspace[t.Buffer]
			switch {
			case !fits && 8*foot[j] > l2:
				total += t.Load + t.Store
			case t.Store > 0 && fits && inWorkspace:
				ranges = append(ranges, [2]int64{off, off + t.Buffer.Bytes()})
				each += min(t.Store, foot[j])
			case t.Store > 0:
				total += min(t.Store, foot[j])
			default:
				total += min(t.Load, foot[j])
			}
		}
		total += min(union(ranges), each)
	}
	return total
}

// union returns the number of bytes that the half-open ranges cover.
func union(ranges [][2]int64) int64 {
	slices.SortFunc(ranges, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	var n, end int64
	for _, r := range ranges {
		lo := max(r[0], end)
		if r[1] > lo {
			n += r[1] - lo
			end = r[1]
		}
	}
	return n
}
