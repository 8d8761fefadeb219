package partition

import (
	"fmt"

	"tec/schedule"
	"tec/te"
)

// TileDep is the dependence of a stage's tiles on a producer stage of its
// kernel. Consumer tile r computes the consumer's elements [r·Tile,
// min((r+1)·Tile, N)) of its flat index, and reads the producer only at
// the elements whose first axes are those elements' first axes: producer
// elements [p·Span, (p+1)·Span) for each p from first/Prefix to
// last/Prefix. Producer tile t writes its elements [t·Width,
// (t+1)·Width). Chunked marks a producer (ProducerChunks) or consumer
// (Chunks) whose tiles are an element-wise stage's blocks' worth of
// elements, which the lowering takes in a grid-stride loop over chunks
// rather than a thread-stride loop.
//
// Offset shifts the producer elements read (Offset + p·Span, a slice of
// a concatenated projection). Group, when above 1, makes Group
// consecutive producer tiles share one counter, which each of them
// signals (a matrix-vector producer's narrow tiles): a consumer tile
// then waits for every tile of each group its range touches, which is
// sound (it waits for more than it reads) and takes one wait per group
// instead of one per tile.
//
// Div, when above 1, makes Div consecutive prefixes read one run of
// Span producer elements: prefix p reads [Offset + (p/Div)·Span,
// Offset + (p/Div+1)·Span), as the Div query heads of a grouped-query
// attention read the one key/value head they share.
//
// Row, when above 0, is the consumer elements per row of a producer of
// several rows whose tiles are column runs of every row (a matrix-vector
// stage of a few rows): the producer "elements" are then its columns,
// and consumer elements count within their row, a tile that spans rows
// reading the columns of every prefix of a row.
type TileDep struct {
	Producer                     *te.Tensor
	Tile, N, Prefix, Span, Width int
	Offset, Group, Tiles, Row    int
	Div                          int
	Chunks, ProducerChunks       bool
}

// elements returns the first and last consumer elements of tile r, within
// their row where Row is set (a whole row where the tile spans rows).
func (d TileDep) elements(r int) (first, last int) {
	first = r * d.Tile
	last = min(first+d.Tile, d.N) - 1
	if d.Row > 0 {
		if first/d.Row != last/d.Row {
			return 0, d.Row - 1
		}
		return first % d.Row, last % d.Row
	}
	return first, last
}

// Range returns the producer tiles [lo, hi) whose elements consumer tile r
// reads.
func (d TileDep) Range(r int) (lo, hi int) {
	first, last := d.elements(r)
	return (d.Offset + first/d.Prefix/d.div()*d.Span) / d.Width, te.CeilDiv(d.Offset+(last/d.Prefix/d.div()+1)*d.Span, d.Width)
}

// div returns the prefixes that share a run of producer elements, at
// least 1.
func (d TileDep) div() int { return max(d.Div, 1) }

// group returns the producer tiles per counter, at least 1.
func (d TileDep) group() int { return max(d.Group, 1) }

// Waits returns the counters [lo, hi) that consumer tile r waits on: the
// groups of the producer tiles it reads.
func (d TileDep) Waits(r int) (lo, hi int) {
	lo, hi = d.Range(r)
	return lo / d.group(), te.CeilDiv(hi, d.group())
}

// Target returns the signals counter g receives: the producer tiles of its
// group.
func (d TileDep) Target(g int) int {
	if d.Tiles <= 0 {
		return d.group()
	}
	return min(d.group(), d.Tiles-g*d.group())
}

// Single reports whether every consumer tile waits on exactly one counter.
func (d TileDep) Single() bool {
	for r := range te.CeilDiv(d.N, d.Tile) {
		if lo, hi := d.Waits(r); hi-lo != 1 {
			return false
		}
	}
	return true
}

// Most returns the most counters that a consumer tile waits on.
func (d TileDep) Most() int {
	most := 0
	for r := range te.CeilDiv(d.N, d.Tile) {
		lo, hi := d.Waits(r)
		most = max(most, hi-lo)
	}
	return most
}

// MaxWaits bounds the producer tiles one consumer tile may wait for: a
// stage whose tiles each read more is nearer an all-to-all dependence,
// which a grid sync serves better.
const MaxWaits = 8

// String formats the dependence for plans, e.g. "mu (at most 1 tile per
// tile)".
func (d TileDep) String() string {
	if d.group() > 1 {
		return fmt.Sprintf("%s (at most %d counters of %d tiles per tile)", d.Producer.Name, d.Most(), d.group())
	}
	return fmt.Sprintf("%s (at most %d tiles per tile)", d.Producer.Name, d.Most())
}

// tiling returns how stage t's tiles cover its elements under schedule s
// with blocks of threads: the elements of a tile, and whether tiles are
// chunks of an element-wise stage; false if its tiles are not runs of
// elements (contractions, split reductions, epilogues).
func tiling(t *te.Tensor, s *schedule.Schedule, threads int) (width int, chunks, ok bool) {
	if s.EpilogueOf != nil {
		return 0, false, false
	}
	switch s.Kind {
	case schedule.RowReduce:
		return 1, false, true
	case schedule.Rows:
		return product(t.Axes[s.RowAxes:]), false, true
	case schedule.Elementwise:
		return threads, true, true
	case schedule.Contraction:
		if l := contractionRows(t, s); l > 0 { // blocklocal.go
			return product(t.Axes[l:]), false, true
		}
	}
	return 0, false, false
}

// fitKey names a matVecFit: the reading stage and the producer under
// their schedules.
type fitKey struct {
	y, u   *te.Tensor
	sy, su *schedule.Schedule
}

// fitResult is a matVecFit's answer.
type fitResult struct {
	deps []TileDep
	ok   bool
}

// A read is one load of the producer at one consumer point: the consumer
// element's flat index, the least and greatest producer elements it reads
// there (one, or the corners of the reductions around it), and the load.
type read struct {
	at, lo, hi int
	load       *te.Load
}

// readKey names the reads of one consumer, as readPoints records them.
type readKey struct {
	y                *te.Tensor
	byColumn, ranges bool
}

// readSet is every read of one consumer's points, by producer: ok is false
// where the consumer has too many points, and bad holds the producers
// whose reads fail (see readPoints).
type readSet struct {
	reads map[*te.Tensor][]read
	bad   map[*te.Tensor]bool
	ok    bool
}
