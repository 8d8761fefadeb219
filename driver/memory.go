package driver

import (
	"cmp"
	"slices"

	"tec/te"
)

// arrayElemBytes is what one element of a te.Array of any dtype costs: the
// arrays hold every value as a float64.
const arrayElemBytes = 8

// Use is the memory that one tensor or buffer of a run takes.
type Use struct {
	Name  string
	Type  string // e.g. "f32[4, 8]"
	Bytes int64
}

// Memory is the memory a run needs: Total, the peak of what it holds at
// once, and Largest, the largest tensors or buffers it holds, at most
// three, largest first.
type Memory struct {
	Total   int64
	Largest []Use
}

// Add counts u and keeps it if it is among the three largest uses.
func (m *Memory) Add(u Use) {
	m.Total += u.Bytes
	m.note(u)
}

// note keeps u if it is among the three largest uses.
func (m *Memory) note(u Use) {
	m.Largest = append(m.Largest, u)
	slices.SortStableFunc(m.Largest, func(a, b Use) int { return cmp.Compare(b.Bytes, a.Bytes) })
	m.Largest = m.Largest[:min(len(m.Largest), 3)]
}

// ArrayBytes is the memory of a te.Array of t's shape.
func ArrayBytes(t *te.Tensor) int64 { return int64(t.NumElements()) * arrayElemBytes }

// tensorUse is the use of perElem bytes for each element of t.
func tensorUse(t *te.Tensor, perElem int64) Use {
	return Use{Name: t.Name, Type: t.TypeString(), Bytes: int64(t.NumElements()) * perElem}
}

// referenceMemory estimates the peak memory of evaluating prog on the
// reference evaluator: every placeholder (the caller holds the feeds), and
// the most the evaluator holds at once of the computed tensors, which it
// frees after their last reader, outputs excepted.
func referenceMemory(prog *te.Program) Memory {
	var m Memory
	pos := make(map[*te.Tensor]int, len(prog.Tensors))
	output := map[*te.Tensor]bool{}
	for _, t := range prog.Outputs {
		output[t] = true
	}
	last := make([]int, len(prog.Tensors))
	for i, t := range prog.Tensors {
		pos[t] = i
		last[i] = -1
		if t.Kind == te.Compute && t.Body != nil {
			for _, u := range te.Inputs(t.Body) {
				if j, ok := pos[u]; ok {
					last[j] = i
				}
			}
		}
	}
	freed := make([][]int, len(prog.Tensors))
	for j, i := range last {
		if t := prog.Tensors[j]; i >= 0 && t.Kind == te.Compute && !output[t] {
			freed[i] = append(freed[i], j)
		}
	}
	var live, peak int64
	for i, t := range prog.Tensors {
		u := tensorUse(t, arrayElemBytes)
		if t.Kind != te.Compute {
			m.Add(u)
			continue
		}
		live += u.Bytes
		peak = max(peak, live)
		m.note(u)
		for _, j := range freed[i] {
			live -= ArrayBytes(prog.Tensors[j])
		}
	}
	m.Total += peak
	return m
}
