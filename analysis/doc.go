// Package analysis is the global analysis of a whole TE program (Souffle,
// ASPLOS'24, §5): the data that the partitioner, the transforms, the language
// server and the user read.
//
// It works at two levels. At the tensor level, Graph is the tensor-dependency
// graph: producers and consumers of every tensor, a topological order,
// topological levels (antichains of mutually independent tensors),
// reachability and independence queries, immediate dominators and live ranges;
// Reuse records every tensor read by several TEs, split into spatial reuse
// (readers with no path between them) and temporal reuse (readers that depend
// on one another). At the element level, every access (every te.Load) of every
// TE gets a Map: a quasi-affine relation from the TE's iteration space (its
// output axes, and the reduction axes around the access) to the data space of
// the tensor it reads, with floor-division and modulo by constants kept
// exactly. An access, and a TE, is one-relies-on-one when no reduction
// variable appears in its indexes and one-relies-on-many otherwise; Compose
// chains the maps of one-relies-on-one TEs (f_{i+1} ∘ f_i) for the vertical
// transform. Intensity counts the arithmetic operations of a TE per element it
// reads and writes, and classifies it as compute- or memory-intensive against
// a threshold (3 by default, as in the paper).
//
// Analyze runs everything; Report turns the result into plain data with a
// stable JSON form, the one `tec explain --json` prints.
//
// The package imports only te. Analyses are values: an Analysis and its Graph
// are safe for concurrent reads once built.
package analysis
