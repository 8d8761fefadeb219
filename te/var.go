package te

// Var is an iteration variable: an output axis of a compute tensor or a
// reduction axis of a Reduce. It ranges over [0, Extent). Vars are compared by
// identity; Name is for printing only and need not be unique.
type Var struct {
	Name   string
	Extent int
}

// NewVar returns a variable ranging over [0, extent).
func NewVar(name string, extent int) *Var { return &Var{Name: name, Extent: extent} }
