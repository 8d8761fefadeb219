// Package progfuzz is tec's differential program fuzzer.
//
// Generate writes, from a seed, a random .te program: deterministic, well
// typed, every access in bounds. It draws on the whole language: constants
// for dimensions (sizes mostly not powers of two), inputs and params of f32,
// f16, bf16 and i32, element-wise trees over every builtin function (sin, cos and ** included),
// quasi-affine accesses (strides, offsets, reversal, / and % by constants),
// select guards for padding, branches removed by a compile-time condition,
// where ranges, reductions (sum, max, min, prod) over one or several axes,
// gathers (ids read from an input that Feeds keeps inside the table, and
// indexes computed by argmax and argmin over exact data),
// contractions with reversed operand axes, masked contractions (a select
// on output indexes, exact data or a run-time scalar around the sum, in
// either branch), casts, full/zeros/ones, scalar
// and tensor functions with shape symbols, compile-time loops, lists and
// stack, the standard library (softmax, layernorm, linear, matmul,
// transpose, slices and concatenation, convolutions and pooling, gelu...)
// and the motifs of the examples (attention, causal attention, RNN cell steps, MLP,
// layernorm-softmax chains, convolution and pooling), and an LLM's decode
// step (decode.go): run-time positions pos[b] in select conditions on
// output indexes (a masked contraction and masked reductions over a
// key/value cache), in arithmetic (rotary angles through sin and cos) and
// as read indexes (kc[b, pos[b] + c, e], a position table), and in-place
// updates of the cache at run-time and compile-time slots, one per layer,
// with reads before and after the updates that must see the old values
// (the update's own value may read the cache: at the slot it writes, at
// one another thread's update writes, at another layer's). From outside
// testing (outside.go): index arithmetic whose values pass 2^31 and 2^32
// on the way to an index in bounds ((i * 3000000001 + j * 2147483647) % n,
// floored divisions of negative products), which the simulator, computing
// i32 at the emitters' width, catches where the kernels would wrap; params
// declared in a loop; a matrix-vector projection beside masked scores over
// a cache, which meet in one kernel on the small-memory random GPUs; and
// chains of a thousand or more + that every pass must handle in
// linear time.
//
// A program carries its settings in comment lines (directives.go): "# tol"
// (an output's tolerance), "# feed" (the values of an i32 input: the
// positions, inside the cache), "# expect outside" (a position planted
// outside the cache, with a small probability: the reference and every
// configuration must stop with the "is outside" error that names it) and
// "# precision" (a share of the programs is built at --precision f16,
// bf16 or tf32 and compared with the reference of the program the
// precision pass makes, at the tolerance halfCompare justifies; their
// contractions of 16 or more rows, columns and terms run on the
// tensor-core kernels). GenerateFocus draws one of these features in
// every program, for a campaign of it (tecfuzz -focus).
//
// Run is the oracle. It checks the program (a generated program that does
// not check is a generator bug), evaluates the float64 reference, checks
// that tec fmt is idempotent and keeps the program's values bit for bit,
// and for each Config (level, GPU, Deterministic) builds the program,
// checks every kernel's launch against the GPU's block limits, runs both
// emitters, simulates with race detection and compares every output with
// the reference, and every input the program updates in place with the
// reference's updated input. Once per program, at the last configuration
// of the highest level, it does what tec explain --plan does (the
// analysis, a build of the analysed program, the analysis's report),
// which must not fail. Configs are -O0 to -O4 on the built-in GPUs and on a valid
// random GPU (RandomGPU: thread limits such as 33, 96 and 160, little shared
// memory, one to eight SMs, few blocks per SM).
//
// # Tolerances
//
// The generator keeps every value well conditioned instead of loosening
// tolerances: inputs are in [-1, 1), exp and products take arguments
// bounded by 4 (larger values go through tanh or are scaled), log, sqrt,
// rsqrt and pow take abs(v)+0.5 or more, divisions divide by abs(v)+1,
// prod runs over at most 12 factors of magnitude at most 1, conditions on
// data compare only exact values (inputs), layernorm's epsilon is 0.25 or
// 0.5. Along the way it tracks, for every value, a bound m on its magnitude
// and a bound e on its absolute error in units of u = 2^-24 (f32's unit
// roundoff) by first-order propagation: a rounding of a result of magnitude
// m adds m; a sum of L terms of magnitude m adds L·(L-1)·m (sequential
// summation, the worst order); a function with derivative at most d
// multiplies the error by d; a store to f16 or bf16 adds one ulp of that
// format (2^14 or 2^17 u relative), since the reference rounds at the same
// storage points but may round a value that differs by a few u to the
// neighbouring f16 value. An output's absolute tolerance is 2·(e + m)·u
// (written in the program as "# tol NAME ATOL"), and the relative
// tolerance is 4u. Wrong results (a lost partial, a wrong block, NaN) are
// orders of magnitude beyond these bounds.
//
// Reduce shrinks a failing program while the failure's class (kind,
// configuration, message shape, known defect) persists. Campaign runs many programs and
// counts failures by class; cmd/tecfuzz is its command, TestSmoke its
// fixed-seed run in CI. Failure classes that are
// reported but not yet fixed can be named in knownDefects, so that a
// campaign counts them apart; the list is empty while every class found is
// fixed.
package progfuzz
