package schedule

import "fmt"

// LoadPath is how a stage's code moves its operands from global memory,
// as the planner knows backend/lower emits it: the bytes one load
// instruction moves, how many of them a thread has in flight before it
// waits for the first (a round trip), whether the next step's loads are
// in flight while the current one computes, and a tensor-core tile's
// block barriers per k step. The cost model prices a stage's round trips
// from it by Little's law (cost.StageTime); the zero LoadPath, a schedule
// built by hand, is priced by its bytes alone.
type LoadPath struct {
	// Width is the bytes of one load instruction: 16 for vector loads and
	// cp.async, else the element size of a scalar load (2 or 4). A
	// tensor-core tile that stages one operand element by element and the
	// other 16 bytes at a time takes the narrower.
	Width int
	// InFlight is the loads of Width bytes a thread has in flight per
	// round trip, at least 1 (for a tile of mixed staging, its bytes a
	// step over its round trips a step, in loads of Width bytes).
	InFlight int
	// Prefetch says that a tile's next k step's loads are in flight
	// while its warps compute this one (cp.async, a register prefetch).
	Prefetch bool
	// Barriers is a tensor-core tile's block barriers per k step: two
	// where it stages element by element (before the stores, after the
	// MMAs), one with two stages of 16-byte transfers.
	Barriers int
	// Lines is the L1 wavefronts a warp's loads take per 128 bytes they
	// move: 1 where its lanes read consecutive bytes, up to 32 where each
	// lane's load falls in a 128-byte line of its own (a matrix-vector
	// tile whose lanes take columns whose rows lie apart). 0: not known,
	// and left out of the cost model.
	Lines float64
	// Narrow says, for a tensor-core tile whose operands move fewer than
	// 16 bytes a load, which and why (contraction.Operand.Narrow: "X
	// 8-byte loads through registers: its extent ... is not a multiple of
	// 8"); empty where every load moves 16 bytes.
	Narrow string
}

// BytesInFlight returns the bytes a thread has in flight per round trip.
func (l LoadPath) BytesInFlight() int { return l.Width * max(l.InFlight, 1) }

// String formats the path for people: "16-byte loads, 4 in flight per
// thread".
func (l LoadPath) String() string {
	if l.Width == 0 {
		return "loads not described"
	}
	s := fmt.Sprintf("%d-byte loads, %d in flight per thread", l.Width, max(l.InFlight, 1))
	if l.Prefetch {
		s += ", next step prefetched"
	}
	if l.Lines > 1 {
		s += fmt.Sprintf(", %.3g L1 wavefronts per 128 bytes", l.Lines)
	}
	if l.Narrow != "" {
		s += "; " + l.Narrow
	}
	return s
}
