package kir

import (
	"fmt"
	"strings"

	"tec/te"
)

// The words of a module's error record (Module.ErrorRecord), an i32 array
// in the workspace that the host zeroes before a run. A kernel that finds
// a gather index out of range claims the record by an atomic
// compare-and-swap of RecordFlag from 0 to 1; the thread that succeeds,
// and no other, then writes the other words.
const (
	RecordFlag  = iota // 0: no index was out of range; 1: the record holds one
	RecordSite         // the gather: its position in Module.Gathers
	RecordAt           // the flat position of the index element read, or -1
	RecordValue        // the index's value

	ErrorRecordWords // the record's length in i32 words
)

// ErrorRecordName is the name of the error record's buffer: not a name the
// language allows, so it never meets a tensor's.
const ErrorRecordName = "tec.error"

// NewErrorRecord returns an error record buffer for a module.
func NewErrorRecord() *Buffer {
	return &Buffer{Name: ErrorRecordName, Space: Global, Role: Temp, DType: te.I32, Shape: []int{ErrorRecordWords}}
}

// GatherSite describes a gather of a module for the message of an index out
// of range: "gather index ids[3] = 50000 is outside wte's dimension 0 [0,
// 30522)".
type GatherSite struct {
	// Source is the tensor the index is read from, and SourceShape its
	// shape; "" when the index reads no tensor.
	Source      string `json:"source,omitempty"`
	SourceShape []int  `json:"source_shape,omitempty"`
	// Derived says the index is computed from the element read (ids[s] +
	// 1), so that its value is not the element's.
	Derived bool   `json:"derived,omitempty"`
	Table   string `json:"table"` // the tensor gathered from
	Dim     int    `json:"dim"`   // the dimension the index selects
	N       int    `json:"n"`     // the dimension's size
	// Update says the index is that of a store into an input updated in
	// place (te.Update), which the message calls an update index.
	Update bool `json:"update,omitempty"`
}

// Message describes the index value out of range, read at flat position at
// of the site's index tensor (-1: none), e.g. "gather index ids[3] = 50000
// is outside wte's dimension 0 [0, 30522)".
func (g GatherSite) Message(at, value int) string {
	what := ""
	if g.Source != "" && at >= 0 {
		if g.Derived {
			what = "from "
		}
		what += g.Source + FormatPosition(g.SourceShape, at) + " "
	}
	table := g.Table
	if table == "" {
		table = "the table"
	}
	kind := "gather"
	if g.Update {
		kind = "update"
	}
	return fmt.Sprintf("%s index %s= %d is outside %s's dimension %d [0, %d)", kind, what, value, table, g.Dim, g.N)
}

// FormatPosition writes the flat row-major index i of a buffer of shape as
// "[3]" or "[0, 5]".
func FormatPosition(shape []int, i int) string {
	idx := make([]string, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		idx[d] = fmt.Sprint(i % max(shape[d], 1))
		i /= max(shape[d], 1)
	}
	return "[" + strings.Join(idx, ", ") + "]"
}

// RecordError returns the error that an error record's words report, or
// nil when its flag is clear; sites are the module's Gathers.
func RecordError(words []int32, sites []GatherSite) error {
	if len(words) < ErrorRecordWords {
		return fmt.Errorf("error record of %d words, want %d", len(words), ErrorRecordWords)
	}
	switch words[RecordFlag] {
	case 0:
		return nil
	case 1:
	default:
		return fmt.Errorf("error record corrupted: flag word %d", words[RecordFlag])
	}
	site := int(words[RecordSite])
	if site < 0 || site >= len(sites) {
		return fmt.Errorf("error record names gather %d of %d", site, len(sites))
	}
	return &BadIndexError{Site: sites[site], At: int(words[RecordAt]), Value: int(words[RecordValue])}
}

// BadIndexError is a gather index out of range, as a device reported it.
type BadIndexError struct {
	Site      GatherSite
	At, Value int
}

// Error implements error.
func (e *BadIndexError) Error() string { return e.Site.Message(e.At, e.Value) }

// SiteOf returns the GatherSite of a gather from table's dimension dim of n
// indexes, whose index expression is x: the first global load in x is its
// source (and its index, returned, the position read), derived unless x is
// that load itself.
func SiteOf(x Expr, table *Buffer, dim, n int) (GatherSite, Expr) {
	g := GatherSite{Dim: dim, N: n}
	if table != nil {
		g.Table = table.Name
	}
	var src *Load
	WalkExpr(x, func(y Expr) bool {
		if l, ok := y.(*Load); ok && src == nil && l.Buf.Space == Global {
			src = l
		}
		return src == nil
	})
	if src == nil {
		return g, nil
	}
	g.Source, g.SourceShape, g.Derived = src.Buf.Name, append([]int(nil), src.Buf.Shape...), src != x
	return g, src.Index
}
