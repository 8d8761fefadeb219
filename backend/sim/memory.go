package sim

import "tec/backend/kir"

// ValueBytes is what one element of a buffer of any dtype costs Run, which
// holds every value as a float64.
const ValueBytes = 8

// raceBytes is what the memory estimate counts for one element's access
// records under race detection (Options.Race): a shadow holds three
// records per element (its last write and two reads, see race.go), at the
// 16 bytes each that the estimate has always counted. A rec is 20 bytes
// now; the estimate, which tec run's --max-memory messages print, keeps its
// figure.
const raceBytes = 48

// Memory is the memory Run holds for a module, estimated before it runs.
type Memory struct {
	// Buffers is the memory of each of the module's buffers, in the
	// order of kir.Module.Buffers: its values and, under race detection,
	// its access records.
	Buffers []int64
	// Blocks is the most that the blocks of one launch hold at once: their
	// shared memory (with its access records under race detection) and
	// their threads' local memory. A fixed grid runs one block at a time;
	// an all-resident grid runs every block it launches together.
	Blocks int64
}

// Total is the sum of the buffers' memory and the blocks'.
func (m Memory) Total() int64 {
	total := m.Blocks
	for _, b := range m.Buffers {
		total += b
	}
	return total
}

// EstimateMemory returns the memory that Run(mod, feeds, opts) holds besides
// the feeds it is given and the outputs it copies out.
func EstimateMemory(mod *kir.Module, opts Options) Memory {
	perElem := int64(ValueBytes)
	if opts.Race {
		perElem += raceBytes
	}
	resident := opts.ResidentBlocks
	if resident == 0 {
		resident = DefaultResidentBlocks
	}
	var m Memory
	for _, b := range mod.Buffers {
		m.Buffers = append(m.Buffers, int64(b.Len())*perElem)
	}
	for _, k := range mod.Kernels {
		var perBlock int64
		for _, b := range k.Shared {
			perBlock += int64(b.Len()) * perElem
		}
		_, locals := localPlaces(k)
		perBlock += int64(locals) * int64(k.Block) * ValueBytes
		n := int64(1)
		if k.Grid.Resident {
			n = int64(k.Grid.Size(resident))
		}
		m.Blocks = max(m.Blocks, n*perBlock)
	}
	return m
}
