// Package transform holds the semantic-preserving TE→TE rewrites of the
// Souffle pipeline (ASPLOS'24, §6): the horizontal transform, which
// concatenates independent TEs that read a common input into one TE with
// predicates, and the vertical transform, which composes quasi-affine maps
// to inline one-relies-on-one producers into their consumers. Each pass
// takes a program and returns a new one that computes the same outputs;
// the input program is not modified.
package transform
