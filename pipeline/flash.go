package pipeline

import (
	"fmt"

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
	// flashMargin is how much faster than the unsplit softmax the
	// cost model must predict a split, so that a split is not made for
	// a gain within the model's error.
	flashMargin = 0.98
)

// splitSoftmax splits p's softmax-weighted reductions across blocks
// (transform.SplitSoftmax, flash-decoding) as opts.FlashChunks says: by
// the cost model when 0, in that many chunks when more than 1 (the flash
// pass runs only then).
func splitSoftmax(p *te.Program, opts Options) (*te.Program, error) {
	if opts.FlashChunks > 1 {
		return transform.SplitSoftmax(p, func(s *transform.SoftmaxSite) int {
			if s.Length%opts.FlashChunks != 0 {
				return 1
			}
			return opts.FlashChunks
		})
	}
	var firstErr error
	chosen := map[string]int{} // by the site's canonical text
	q, err := transform.SplitSoftmax(p, func(s *transform.SoftmaxSite) int {
		if s.Max.NumElements() >= s.Length {
			// more rows than positions (a prompt's, an encoder's
			// attention): its rows fill the GPU, and it is no decode
			return 1
		}
		c, err := FlashChunksFor(s, opts, chosen)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		return c
	})
	if firstErr != nil {
		return nil, firstErr
	}
	return q, err
}

// FlashChunksFor returns the chunk count the cost model predicts fastest
// for site s under opts (1: no split): it partitions the site alone
// (transform.SoftmaxSite.Subprogram), unsplit and split in each of
// s.ChunkCounts(32, 64), with the partitioner's options at opts.Level
// (FlashCandidates), and keeps a split predicted at least 2 % faster. A
// split whose stages need more of an SM than the unsplit site's would
// lower the occupancy of the whole kernel around them, every other
// stage's too (the weights' streaming), which the site alone does not
// show: it must be faster by the launches of a kernel of its own (two
// boundaries), where it costs the rest nothing. The prediction prices what the split
// changes: the partial results' round trip through global memory, the
// merge's stages and grid sync, the occupancy of more, shorter rows and
// of grouped rows' tiles, and the positions past a run-time mask at
// opts.Context skipped in each. cache, when not nil, holds the counts
// chosen for sites of the same text (the layers of a model).
func FlashChunksFor(s *transform.SoftmaxSite, opts Options, cache map[string]int) (int, error) {
	opts = opts.withDefaultGPU()
	sub := s.Subprogram()
	key := canonicalText(sub)
	if c, ok := cache[key]; ok {
		return c, nil
	}
	cands, err := FlashCandidates(s, opts)
	if err != nil {
		return 1, err
	}
	best := cands[0]
	isolate := 2 * opts.GPU.LaunchCost // the site's own kernel: a boundary before and after
	for _, c := range cands[1:] {
		t := c.Time
		if c.BlocksPerSM < cands[0].BlocksPerSM {
			t += isolate
		}
		if t < best.Time*flashMargin {
			best, best.Time = c, t
		}
	}
	if cache != nil {
		cache[key] = best.Chunks
	}
	return best.Chunks, nil
}

// FlashCandidate is the cost model's prediction for a softmax site split
// in Chunks chunks (1: unsplit), priced alone.
type FlashCandidate struct {
	Chunks int
	// Time is the predicted time of the site's kernel, in seconds (with
	// FlashChunksFor's penalty, when it returns it).
	Time float64
	// BlocksPerSM is its kernel's occupancy.
	BlocksPerSM int
}

// FlashCandidates returns the predictions for site s unsplit, then split
// in each of s.ChunkCounts(32, 64), under opts.
func FlashCandidates(s *transform.SoftmaxSite, opts Options) ([]FlashCandidate, error) {
	opts = opts.withDefaultGPU()
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
	for _, c := range sites[0].ChunkCounts(minFlashChunk, maxFlashChunks) {
		q, err := transform.SplitSoftmax(sub, func(*transform.SoftmaxSite) int { return c })
		if err != nil {
			return nil, err
		}
		t, occ, err := subprogramTime(q, opts)
		if err != nil {
			return nil, fmt.Errorf("flash-decoding: pricing %s in %d chunks: %w", s.Max.Name, c, err)
		}
		cands = append(cands, FlashCandidate{Chunks: c, Time: t, BlocksPerSM: occ})
	}
	return cands, nil
}

// subprogramTime returns the predicted time of p through the passes and
// the partitioner (and recomputation) that Build runs at opts.Level, and the least occupancy
// (blocks per SM) of its kernels.
func subprogramTime(p *te.Program, opts Options) (float64, int, error) {
	b := &build{opts: opts, popts: partitionOptions(opts), prog: p}
	if _, err := b.runPasses(func(name string) bool {
		return name == "vertical" || name == "recompute" || name == "plan"
	}, nil); err != nil {
		return 0, 0, err
	}
	pl := b.plan
	_, _, cost := pl.Stats()
	occ := 0
	for i, k := range pl.Kernels {
		if i == 0 || k.BlocksPerSM < occ {
			occ = k.BlocksPerSM
		}
	}
	return cost.Total(), occ, nil
}

// canonicalText returns p's text with its tensors renamed by position and
// their source locations dropped: equal for the same site in every layer.
func canonicalText(p *te.Program) string {
	for i, t := range p.Tensors {
		t.Name = fmt.Sprintf("t%d", i)
		t.Span, t.Scope = te.Span{}, nil
	}
	return p.String()
}
