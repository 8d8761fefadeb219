// Package transform holds the semantic-preserving TE→TE rewrites of the
// Souffle pipeline (ASPLOS'24, §6): the horizontal transform, which
// concatenates independent TEs that read a common input into one TE with
// predicates, and the vertical transform, which composes quasi-affine maps
// to inline one-relies-on-one producers into their consumers; and those
// tec adds: recomputing cheap producers in their consumers' tiles
// (Recompute), splitting softmax-weighted reductions across blocks
// (flash-decoding, SplitSoftmax), grouping the rows of a contraction
// that share a factor's loads (GroupRows: the query heads of a key head),
// and splitting a grouped convolution's output channels into its groups,
// which makes it a batched contraction (GroupConvolutions).
// Each pass takes a program and returns a new one that computes the same
// outputs; the input program is not modified.
package transform
