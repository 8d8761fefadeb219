package te

import "fmt"

// Namer gives distinct variables distinct printed names. A variable keeps its
// own name unless an earlier variable, or a reserved name, took it; then it
// gets the first free suffix: i, i_1, i_2, ... Printers of TEs and of the
// relations derived from them use one Namer per printed unit.
type Namer struct {
	names map[*Var]string
	used  map[string]bool
	// taken is a set of names no variable gets, shared with other Namers
	// and never written: a program's printer reserves its tensors' names in
	// every tensor's Namer without copying them, which would make printing
	// quadratic in the number of tensors.
	taken map[string]bool
	// next is, for a base name, the least suffix not known to be used, so
	// that many variables of one name do not each probe from 1.
	next map[string]int
}

// NewNamer returns a Namer with no names given out.
func NewNamer() *Namer { return &Namer{names: map[*Var]string{}, used: map[string]bool{}} }

// newNamerAvoiding returns a Namer that gives no variable a name in taken.
// The Namer only reads taken.
func newNamerAvoiding(taken map[string]bool) *Namer {
	n := NewNamer()
	n.taken = taken
	return n
}

// Reserve marks names as taken, so that no variable is printed as one of them
// (for example the tensors' names).
func (n *Namer) Reserve(names ...string) {
	for _, s := range names {
		n.used[s] = true
	}
}

// Name returns v's printed name, choosing one on first sight.
func (n *Namer) Name(v *Var) string {
	if s, ok := n.names[v]; ok {
		return s
	}
	base := v.Name
	if base == "" {
		base = "v"
	}
	s := base
	if n.used[s] || n.taken[s] {
		if n.next == nil {
			n.next = map[string]int{}
		}
		i := max(n.next[base], 1)
		for s = fmt.Sprintf("%s_%d", base, i); n.used[s] || n.taken[s]; s = fmt.Sprintf("%s_%d", base, i) {
			i++
		}
		n.next[base] = i + 1
	}
	n.names[v], n.used[s] = s, true
	return s
}
