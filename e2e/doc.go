// Package e2e holds the end-to-end tests of the compiler: every example,
// from source through the front end, the transforms, the partitioner and
// the lowering, executed by the kernel-IR simulator and compared with the
// reference evaluator. It has no code of its own; it exists so that the
// back end's own tests need not import the front end.
package e2e
