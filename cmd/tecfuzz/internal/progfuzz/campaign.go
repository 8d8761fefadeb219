package progfuzz

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"tec/internal/tensorio"
	"tec/lang"
	"tec/partition"
	"tec/precision"
	"tec/te"
)

// CampaignOptions configure a campaign.
type CampaignOptions struct {
	N    int    // programs
	Seed uint64 // the first program's seed; program i has seed Seed+i
	// Focus draws one feature in every program (GenerateFocus).
	Focus Focus
	Jobs  int // programs checked at once
	// Out, if set, receives one directory per new failure class: the
	// original and the reduced program and the failing configuration.
	Out string
	// Reduce shrinks the first program of each failure class not known;
	// ReduceKnown also those of the known defects.
	Reduce, ReduceKnown bool
	// MaxReduceTries bounds the candidates the reducer tries per failure.
	MaxReduceTries int
	// NoEmit and NoFmt skip the emitters and the formatter's checks.
	NoEmit, NoFmt bool
	// Progress, if set, receives a line every ProgressEvery.
	Progress      io.Writer
	ProgressEvery time.Duration
}

// ClassStats count one failure class over a campaign.
type ClassStats struct {
	Class     string
	Known     string
	Programs  int // programs with at least one failure of the class
	FirstSeed uint64
	Example   Failure
	Reduced   []byte
}

// Summary is a campaign's result.
type Summary struct {
	Programs int
	Runs     int // configurations checked
	Failing  int // programs with a failure not known
	Classes  []*ClassStats
	Elapsed  time.Duration
}

// Campaign generates and checks o.N programs, counts their failures by
// class, and reduces and saves the first failure of each root class (a
// class without its configuration).
func Campaign(o CampaignOptions) (*Summary, error) {
	if o.Jobs < 1 {
		o.Jobs = 1
	}
	if o.Out != "" {
		if err := os.MkdirAll(o.Out, 0o755); err != nil {
			return nil, fmt.Errorf("campaign: %w", err)
		}
	}
	start := time.Now()
	type result struct {
		seed  uint64
		src   []byte
		fails []Failure
		runs  int
	}
	seeds := make(chan uint64)
	results := make(chan result)
	var wg sync.WaitGroup
	for range o.Jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range seeds {
				p := GenerateFocus(s, o.Focus)
				cs := Configs(s)
				fs := Run(p.Src, Options{Configs: cs, Emit: !o.NoEmit, Fmt: !o.NoFmt})
				results <- result{s, p.Src, fs, len(cs)}
			}
		}()
	}
	go func() {
		for i := range o.N {
			seeds <- o.Seed + uint64(i)
		}
		close(seeds)
		wg.Wait()
		close(results)
	}()
	t := newTally()
	saved := 0
	last := time.Now()
	for r := range results {
		for _, st := range t.add(r.seed, r.runs, r.fails) {
			// the first failure of its root: reduce and save it
			if o.Reduce && (st.Known == "" || o.ReduceKnown) {
				st.Reduced = Reduce(r.src, st.Example, o.MaxReduceTries)
			}
			saved++
			if err := save(o.Out, saved, r.seed, r.src, st); err != nil {
				return nil, err
			}
		}
		if o.Progress != nil && time.Since(last) >= o.ProgressEvery {
			last = time.Now()
			fmt.Fprintf(o.Progress, "%d/%d programs, %d runs, %d failing (new), %d classes, %v\n",
				t.sum.Programs, o.N, t.sum.Runs, t.sum.Failing, len(t.byClass), time.Since(start).Round(time.Second))
		}
	}
	sum := t.summary()
	sum.Elapsed = time.Since(start)
	return sum, nil
}

// tally counts a campaign's failures.
type tally struct {
	sum     Summary
	byClass map[string]*ClassStats // by known defect and class
	roots   map[string]bool        // the known defects and roots seen
}

func newTally() *tally {
	return &tally{byClass: map[string]*ClassStats{}, roots: map[string]bool{}}
}

// add counts the failures of one program and returns the classes whose
// root (known defect, kind and message) it is the first to hit. A class
// counts apart for each known defect its failures are instances of.
func (t *tally) add(seed uint64, runs int, fails []Failure) []*ClassStats {
	t.sum.Programs++
	t.sum.Runs += runs
	var first []*ClassStats
	seen := map[string]bool{}
	unknown := false
	for _, f := range fails {
		if f.Known == "" {
			unknown = true
		}
		key := f.Known + "|" + f.Class()
		if seen[key] {
			continue
		}
		seen[key] = true
		st := t.byClass[key]
		if st == nil {
			st = &ClassStats{Class: f.Class(), Known: f.Known, FirstSeed: seed, Example: f}
			t.byClass[key] = st
			if root := f.Known + "|" + f.Root(); !t.roots[root] {
				t.roots[root] = true
				first = append(first, st)
			}
		}
		st.Programs++
	}
	if unknown {
		t.sum.Failing++
	}
	return first
}

// summary returns the counts, the classes sorted by known defect and
// class.
func (t *tally) summary() *Summary {
	sum := t.sum
	for _, st := range t.byClass {
		sum.Classes = append(sum.Classes, st)
	}
	sort.Slice(sum.Classes, func(i, j int) bool {
		a, b := sum.Classes[i], sum.Classes[j]
		if a.Known != b.Known {
			return a.Known < b.Known
		}
		return a.Class < b.Class
	})
	return &sum
}

// save writes a failure class's first program into dir/NNN-KIND.
func save(dir string, n int, seed uint64, src []byte, st *ClassStats) error {
	if dir == "" {
		return nil
	}
	d := filepath.Join(dir, fmt.Sprintf("%03d-%s", n, st.Example.Kind))
	if st.Known != "" {
		d += "-" + st.Known
	}
	if err := os.MkdirAll(d, 0o755); err != nil {
		return fmt.Errorf("campaign: %w", err)
	}
	f := st.Example
	var b strings.Builder
	fmt.Fprintf(&b, "seed: %d\nclass: %s\nknown: %s\nfailure: %s\n", seed, st.Class, st.Known, f)
	if f.Config != nil {
		prog := "orig.te"
		if st.Reduced != nil {
			prog = "reduced.te"
		}
		det := ""
		if f.Config.Deterministic {
			det = " --deterministic"
		}
		counters := ""
		if f.Config.Counters == partition.CountersWherever {
			counters = " --counters everywhere" // tec run has no --counters: tecfuzz's -repro sets them
		}
		prec := ""
		if f.Config.Precision != precision.F32 {
			prec = " --precision " + f.Config.Precision.String()
		}
		inputs := ""
		if fed := fedArrays(src); len(fed) > 0 {
			// the positions of the "# feed" lines, which --fill random does not know
			if err := tensorio.WriteNPZ(filepath.Join(d, "feeds.npz"), fed); err != nil {
				return fmt.Errorf("campaign: %w", err)
			}
			inputs = " --inputs feeds.npz"
		}
		if counters == "" {
			fmt.Fprintf(&b, "reproduce: tec run %s%s --fill random --device sim -O%d --gpu gpu.json%s%s\n", prog, inputs, f.Config.Level, det, prec)
		}
		fmt.Fprintf(&b, "           go run ./cmd/tecfuzz -repro %s -O %d -gpu %s%s\n",
			filepath.Join(d, prog), f.Config.Level, filepath.Join(d, "gpu.json"), strings.ReplaceAll(det+counters, "--", "-"))
	}
	if f.Stack != "" {
		fmt.Fprintf(&b, "\nstack:\n%s\n", f.Stack)
	}
	files := map[string][]byte{"orig.te": src, "failure.txt": []byte(b.String())}
	if st.Reduced != nil {
		files["reduced.te"] = st.Reduced
	}
	if f.Config != nil {
		g, err := json.MarshalIndent(f.Config.GPU, "", "  ")
		if err != nil {
			return fmt.Errorf("campaign: %w", err)
		}
		files["gpu.json"] = g
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(d, name), data, 0o644); err != nil {
			return fmt.Errorf("campaign: %w", err)
		}
	}
	return nil
}

// WriteTable prints the summary: one line per failure class with the
// known defect it is, the programs it failed and the first seed.
func (s *Summary) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "%d programs, %d configurations run, %d with failures not known, in %v\n",
		s.Programs, s.Runs, s.Failing, s.Elapsed.Round(time.Second))
	if len(s.Classes) == 0 {
		fmt.Fprintln(w, "no failures")
		return
	}
	fmt.Fprintf(w, "%-5s %8s %10s  %s\n", "known", "programs", "first seed", "class (kind|level gpu|message)")
	for _, c := range s.Classes {
		k := c.Known
		if k == "" {
			k = "NEW"
		}
		fmt.Fprintf(w, "%-5s %8d %10d  %s\n", k, c.Programs, c.FirstSeed, c.Class)
	}
}

// fedArrays returns the inputs of src that its "# feed" lines give, filled
// as Run fills them, or nil (src does not check, or has no such line).
func fedArrays(src []byte) map[string]*te.Array {
	lines := feedLine.FindAllSubmatch(src, -1)
	if len(lines) == 0 {
		return nil
	}
	p, ds := lang.Check("prog.te", src, lang.Config{})
	if ds.HasErrors() {
		return nil
	}
	in := Feeds(p)
	applyFeeds(src, in)
	out := map[string]*te.Array{}
	for _, m := range lines {
		if a := in[string(m[1])]; a != nil {
			out[string(m[1])] = a
		}
	}
	return out
}
