package sim

import "tec/backend/kir"

// A block's local arrays, one per thread, all live for the whole kernel
// in the simulator. A fused kernel's stages are functions of their own in
// CUDA (backend/cuda), each declaring the local arrays it uses, so that no
// local value lives from one stage to the next: an array that only one
// stage uses may take the same storage as the arrays of the other stages.
// The simulator lays them out so (localPlaces), and a resident grid of
// hundreds of blocks holds the local arrays of its largest stage, not of
// all of them (the batched decode step's tensor-core tiles and vector
// epilogues: about 100 words a thread each).

// localPlaces returns the offset of each of k's local arrays (in k.Locals
// order) in a block's storage of them, in elements per thread, and the
// storage's size: the arrays that one stage alone uses from the same
// offset for each stage, after those that several stages or the code
// outside the stages use, each at its own.
func localPlaces(k *kir.Kernel) (offs []int, size int) {
	const shared = -1 // used outside a stage or by several
	owner := map[*kir.Buffer]int{}
	use := func(b *kir.Buffer, stage int) {
		if b == nil || b.Space != kir.Local {
			return
		}
		if o, seen := owner[b]; seen && o != stage {
			stage = shared
		}
		owner[b] = stage
	}
	var walk func(body []kir.Stmt, stage int)
	stages := 0
	walk = func(body []kir.Stmt, stage int) {
		kir.WalkStmts(body, func(s kir.Stmt) bool {
			if st, ok := s.(*kir.Stage); ok && stage == shared {
				walk(st.Body, stages)
				stages++
				return false
			}
			kir.Accesses(s, func(b *kir.Buffer, _ bool) { use(b, stage) })
			kir.Exprs(s, func(e kir.Expr) {
				kir.WalkExpr(e, func(x kir.Expr) bool {
					if ld, ok := x.(*kir.Load); ok {
						use(ld.Buf, stage)
					}
					return true
				})
			})
			return true
		})
	}
	walk(k.Body, shared)
	offs = make([]int, len(k.Locals))
	fixed := 0
	for i, b := range k.Locals {
		if o, ok := owner[b]; !ok || o == shared {
			offs[i] = fixed
			fixed += b.Len()
		}
	}
	ends := make([]int, stages)
	size = fixed
	for i, b := range k.Locals {
		if o, ok := owner[b]; ok && o != shared {
			offs[i] = fixed + ends[o]
			ends[o] += b.Len()
			size = max(size, fixed+ends[o])
		}
	}
	return offs, size
}
