package schedule

import "tec/te"

// This file is the one place where a fused kernel's shared memory is laid
// out, for the plan, which counts it (occupancy, the grid, the cost
// model, whether a kernel fits), and for backend/lower, which declares it.
//
// The rule: a kernel's shared memory is its persistent arrays (the slots
// of results kept on chip, the weight cache), which live for the whole
// kernel, plus one scratch arena per element type. Each stage places its
// own scratch arrays (staged tiles, partial sums, a block reduction's
// slots) one after another from the start of the arena of their type
// (Place), each taking a whole number of 16-byte units, so that 16-byte
// accesses (cp.async, ldmatrix, vector copies) stay aligned; stages that
// use shared memory are separated by block barriers, so they reuse the
// same bytes, and an arena is as large as the most that any one stage
// places in it. With every scratch array f32, as in most kernels, the
// kernel's scratch memory is that of its largest stage. The kernel IR
// types its arrays, so arrays of different element types cannot share
// bytes; an argmax's i32 positions or a tensor-core stage's f16 operands
// take arenas of their own.

// Array is a scratch array of a stage in shared memory: its element type
// and number of elements.
type Array struct {
	DType te.DType
	Len   int
}

// sharedUnit is the granule of a scratch arena: every array starts at a
// multiple of it.
const sharedUnit = 16

// units returns the elements of type dt in the 16-byte units that n
// elements take.
func units(n int, dt te.DType) int {
	per := sharedUnit / dt.Size()
	return (n + per - 1) / per * per
}

// Place lays a stage's scratch arrays out in the kernel's arenas: it
// returns each array's offset in elements in the arena of its type, and
// the elements each arena needs for the stage. Arrays of a type follow one
// another in the order given, each rounded up to whole 16-byte units.
func Place(arrays []Array) (offsets []int, need map[te.DType]int) {
	offsets = make([]int, len(arrays))
	need = map[te.DType]int{}
	for i, a := range arrays {
		offsets[i] = need[a.DType]
		need[a.DType] += units(a.Len, a.DType)
	}
	return offsets, need
}

// Arenas is the size in bytes of each element type's scratch arena of a
// kernel (or of one stage): te.DType indexes it.
type Arenas [te.I64 + 1]int

// ArenasOf returns the arenas that one stage's arrays need.
func ArenasOf(arrays []Array) Arenas {
	var a Arenas
	_, need := Place(arrays)
	for dt, n := range need {
		a[dt] = n * dt.Size()
	}
	return a
}

// Merge returns the arenas of a kernel that runs stages needing a and b:
// for each type the larger.
func (a Arenas) Merge(b Arenas) Arenas {
	for i := range a {
		a[i] = max(a[i], b[i])
	}
	return a
}

// Holds reports whether arenas a have room for b: for each type at least
// as many bytes.
func (a Arenas) Holds(b Arenas) bool {
	for i := range a {
		if b[i] > a[i] {
			return false
		}
	}
	return true
}

// Bytes returns the arenas' shared memory per block.
func (a Arenas) Bytes() int {
	n := 0
	for _, b := range a {
		n += b
	}
	return n
}

// SharedBytes returns a fused kernel's shared memory per block as
// backend/lower declares it: its persistent arrays (persistent bytes) and
// the arenas of its stages' scratch arrays (stages[j] for stage j).
func SharedBytes(persistent int, stages ...[]Array) int {
	var a Arenas
	for _, s := range stages {
		a = a.Merge(ArenasOf(s))
	}
	return persistent + a.Bytes()
}
