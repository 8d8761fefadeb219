package pipeline

import (
	"fmt"

	"tec/partition"
	"tec/te"
	"tec/transform"
)

// The chunk counts the cost model tries for flash-decoding: up to
// maxFlashChunks chunks of at least minFlashChunk positions each (a
// chunk shorter than a warp's worth of positions leaves its block's
// threads idle, and more chunks than this only add merge terms).
const (
	minFlashChunk  = 32
	maxFlashChunks = 64
)

// rewriteMargin is how much faster than the program as it is the cost
// model must predict a rewrite that a pass prices (a softmax split, a
// convolution grouped), so that none is made for a gain within the
// model's error.
const rewriteMargin = 0.98

// splitSoftmax splits p's softmax-weighted reductions across blocks
// (transform.SplitSoftmax, flash-decoding) as opts.FlashChunks says: by
// the cost model when 0, in that many chunks when more than 1 (the flash
// pass runs only then), the scores split with them or not as the cost
// model predicts faster.
func splitSoftmax(p *te.Program, opts Options) (*te.Program, []FlashChoice, error) {
	var firstErr error
	chosen := map[string]flashChoice{} // by the site's canonical text
	var choices []FlashChoice
	q, err := transform.SplitSoftmax(p, func(s *transform.SoftmaxSite) transform.Split {
		var counts []int
		switch {
		case opts.FlashChunks > 1 && s.Length%opts.FlashChunks != 0:
			return transform.Split{Chunks: 1}
		case opts.FlashChunks > 1:
			counts = []int{opts.FlashChunks}
		case s.Max.NumElements() >= s.Length:
			// more rows than positions (a prompt's, an encoder's
			// attention): its rows fill the GPU, and it is no decode
			return transform.Split{Chunks: 1}
		}
		c, err := flashChoiceFor(s, opts, chosen, counts)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		choices = append(choices, FlashChoice{Max: s.Max.Name, Positions: s.Length, Split: c.split, Time: c.time, Unsplit: c.unsplit})
		return c.split
	})
	if firstErr != nil {
		return nil, nil, firstErr
	}
	return q, choices, err
}

// FlashChoice is what the flash pass chose for one softmax site that the
// cost model priced: the site's max (Max names the tensor), the positions
// it reduces, the split, and the predictions, in seconds, of the site
// alone as split (Time) and unsplit (Unsplit).
type FlashChoice struct {
	Max           string
	Positions     int
	Split         transform.Split
	Time, Unsplit float64
}

// String describes the choice in words, as tec explain --plan prints it.
func (c FlashChoice) String() string {
	var what string
	switch sp := c.Split; {
	case sp.Chunks <= 1 && sp.Group:
		what = "unsplit, the query heads of a key head grouped"
	case sp.Chunks <= 1:
		what = "unsplit"
	case sp.Scores:
		what = fmt.Sprintf("%d chunks, the scores split with them", sp.Chunks)
	case sp.Group:
		what = fmt.Sprintf("%d chunks, the scores whole, the query heads of a key head grouped", sp.Chunks)
	default:
		what = fmt.Sprintf("%d chunks, the scores whole", sp.Chunks)
	}
	return fmt.Sprintf("%s over %d positions: %s (predicted alone %.2f µs; unsplit %.2f µs)", c.Max, c.Positions, what, c.Time*1e6, c.Unsplit*1e6)
}

// flashChoice is a site's split and the predictions of it and of the
// site unsplit.
type flashChoice struct {
	split         transform.Split
	time, unsplit float64
}

// FlashSplitFor returns the split the cost model predicts fastest for
// site s under opts (Chunks 1: none): it partitions the site alone
// (transform.SoftmaxSite.Subprogram), unsplit and split in each of
// s.ChunkCounts(32, 64), its scores split with the chunks and not, with
// the partitioner's options at opts.Level (FlashCandidates), and keeps a
// split predicted at least 2 % faster. A
// split whose stages need more of an SM than the unsplit site's would
// lower the occupancy of the whole kernel around them, every other
// stage's too (the weights' streaming), which the site alone does not
// show: it must be faster by the launches of a kernel of its own (two
// boundaries), where it costs the rest nothing. The prediction prices what the split
// changes: the partial results' round trip through global memory, the
// merge's stages and grid sync, the occupancy of more, shorter rows and
// of grouped rows' tiles, and the positions past a run-time mask at
// opts.Context skipped in each.
func FlashSplitFor(s *transform.SoftmaxSite, opts Options) (transform.Split, error) {
	c, err := flashChoiceFor(s, opts, nil, nil)
	return c.split, err
}

// flashChoiceFor is FlashSplitFor over the chunk counts counts (nil: all
// of s.ChunkCounts), with the predictions: with one count, the split in
// that many chunks that the cost model prefers, whether or not it beats
// the unsplit site. cache, when not nil, holds the choices made for sites
// of the same text (the layers of a model).
func flashChoiceFor(s *transform.SoftmaxSite, opts Options, cache map[string]flashChoice, counts []int) (flashChoice, error) {
	opts = opts.withDefaultGPU()
	key := canonicalText(s.Subprogram())
	if c, ok := cache[key]; ok {
		return c, nil
	}
	cands, err := flashCandidates(s, opts, counts)
	if err != nil {
		return flashChoice{split: transform.Split{Chunks: 1}}, err
	}
	best := cands[0]
	forced := len(counts) == 1
	isolate := 2 * opts.GPU.LaunchCost // the site's own kernel: a boundary before and after
	for _, c := range cands[1:] {
		if forced && c.Chunks != counts[0] {
			continue
		}
		t := c.Time
		if c.BlocksPerSM < cands[0].BlocksPerSM {
			t += isolate
		}
		if forced && best.Chunks != c.Chunks || t < best.Time*rewriteMargin {
			best, best.Time = c, t
		}
	}
	c := flashChoice{split: transform.Split{Chunks: best.Chunks, Scores: best.Scores, Group: best.Group},
		time: best.Time, unsplit: cands[0].Time}
	if cache != nil {
		cache[key] = c
	}
	return c, nil
}

// FlashCandidate is the cost model's prediction for a softmax site split
// in Chunks chunks (1: unsplit), its scores too where Scores, its scores'
// rows grouped where Group (transform.Split), priced alone.
type FlashCandidate struct {
	Chunks        int
	Scores, Group bool
	// Time is the predicted time of the site's kernel, in seconds (with
	// FlashSplitFor's penalty, when it returns it).
	Time float64
	// BlocksPerSM is its kernel's occupancy.
	BlocksPerSM int
}

// FlashCandidates returns the predictions for site s unsplit, then split
// in each of s.ChunkCounts(32, 64), first with the scores whole and then,
// where the site owns them (transform.SoftmaxSite.OwnScores), split too,
// under opts. Where the scores' rows may be grouped
// (transform.SoftmaxSite.Groupable), each candidate with whole scores is
// followed by the same with them grouped.
func FlashCandidates(s *transform.SoftmaxSite, opts Options) ([]FlashCandidate, error) {
	return flashCandidates(s, opts.withDefaultGPU(), nil)
}

// flashCandidates is FlashCandidates over the chunk counts counts (nil:
// all of s.ChunkCounts).
func flashCandidates(s *transform.SoftmaxSite, opts Options, counts []int) ([]FlashCandidate, error) {
	sub := s.Subprogram()
	t, occ, err := subprogramTime(sub, opts)
	if err != nil {
		return nil, fmt.Errorf("flash-decoding: pricing %s: %w", s.Max.Name, err)
	}
	cands := []FlashCandidate{{Chunks: 1, Time: t, BlocksPerSM: occ}}
	sites := transform.SoftmaxSites(sub)
	if len(sites) != 1 {
		return cands, nil
	}
	site := sites[0]
	splits := []transform.Split{}
	if site.Groupable() {
		splits = append(splits, transform.Split{Chunks: 1, Group: true})
	}
	if counts == nil {
		counts = site.ChunkCounts(minFlashChunk, maxFlashChunks)
	}
	for _, c := range counts {
		splits = append(splits, transform.Split{Chunks: c})
		if site.Groupable() {
			splits = append(splits, transform.Split{Chunks: c, Group: true})
		}
		if site.OwnScores {
			splits = append(splits, transform.Split{Chunks: c, Scores: true})
		}
	}
	for _, sp := range splits {
		q, err := transform.SplitSoftmax(sub, func(*transform.SoftmaxSite) transform.Split { return sp })
		if err != nil {
			return nil, err
		}
		t, occ, err := subprogramTime(q, opts)
		if err != nil {
			return nil, fmt.Errorf("flash-decoding: pricing %s as %+v: %w", s.Max.Name, sp, err)
		}
		cands = append(cands, FlashCandidate{Chunks: sp.Chunks, Scores: sp.Scores, Group: sp.Group, Time: t, BlocksPerSM: occ})
	}
	return cands, nil
}

// subprogramTime returns the predicted time of p through the passes and
// the partitioner (and recomputation) that Build runs at opts.Level, and the least occupancy
// (blocks per SM) of its kernels.
func subprogramTime(p *te.Program, opts Options) (float64, int, error) {
	pl, err := planSubprogram(p, opts)
	if err != nil {
		return 0, 0, err
	}
	_, _, cost := pl.Stats()
	occ := 0
	for i, k := range pl.Kernels {
		if i == 0 || k.BlocksPerSM < occ {
			occ = k.BlocksPerSM
		}
	}
	return cost.Total(), occ, nil
}

// planSubprogram returns the plan of p after the passes and the
// partitioner (and recomputation) that Build runs at opts.Level.
func planSubprogram(p *te.Program, opts Options) (*partition.Plan, error) {
	popts := partitionOptions(opts)
	// Counters are left out: they change a candidate's few grid syncs
	// by a fraction of a microsecond, and finding them fits every point
	// of the site's stages to the tiles they read, the most of the
	// pricing's time.
	popts.Counters = partition.CountersOff
	b := &build{opts: opts, popts: popts, prog: p}
	if _, err := b.runPasses(func(name string) bool {
		return name == "vertical" || name == "recompute" || name == "plan"
	}, nil); err != nil {
		return nil, err
	}
	return b.plan, nil
}

// canonicalText returns p's text with p and its tensors renamed (the
// tensors by position) and their source locations dropped: equal for the
// same site in every layer. It renames them in p.
func canonicalText(p *te.Program) string {
	p.Name = "site"
	for i, t := range p.Tensors {
		t.Name = fmt.Sprintf("t%d", i)
		t.Span, t.Scope = te.Span{}, nil
	}
	return p.String()
}
