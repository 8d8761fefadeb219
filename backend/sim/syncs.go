package sim

import "tec/backend/kir"

// A block's vectors (registers, expression temporaries, lists of active
// lanes) are either its own or common to the blocks of a launch. The
// blocks of an all-resident grid run one at a time and hand over only at
// a grid sync, so a vector that no block holds across a grid sync can be
// shared by all of them: a block writes it and reads it back within one
// stretch between grid syncs, before any other block runs. The vectors
// held across a grid sync are the variables in scope at one (the
// verifier's lexical scopes guarantee that a variable read after a grid
// sync was in scope at it, or was defined again since), the lane lists of
// an If or a For whose body holds one, and a loop bound kept over such a
// body. Without this a grid of hundreds of blocks of a large kernel held
// one copy of every temporary per block: gigabytes where megabytes do.

// syncInfo says which variables and statements of a kernel span a grid
// sync.
type syncInfo struct {
	// live holds the variables in scope at some grid sync.
	live map[*kir.Var]bool
	// spans holds the If and For statements whose bodies reach a grid
	// sync.
	spans map[kir.Stmt]bool
}

// findSyncs walks a kernel body for its grid syncs.
func findSyncs(body []kir.Stmt) *syncInfo {
	si := &syncInfo{live: map[*kir.Var]bool{}, spans: map[kir.Stmt]bool{}}
	si.stmts(body, nil)
	return si
}

// stmts walks a statement list with the variables in scope on entry and
// reports whether it reaches a grid sync.
func (si *syncInfo) stmts(body []kir.Stmt, scope []*kir.Var) bool {
	scope = scope[:len(scope):len(scope)] // appends below must not leak out
	found := false
	for _, s := range body {
		if si.stmt(s, scope) {
			found = true
		}
		if l, ok := s.(*kir.Let); ok {
			scope = append(scope, l.Var)
		}
	}
	return found
}

func (si *syncInfo) stmt(s kir.Stmt, scope []*kir.Var) bool {
	found := false
	switch s := s.(type) {
	case *kir.GridSync, *kir.Wait:
		// A block also hands over at a counter wait not yet satisfied.
		for _, v := range scope {
			si.live[v] = true
		}
		return true
	case *kir.If:
		t := si.stmts(s.Then, scope)
		e := si.stmts(s.Else, scope)
		found = t || e
	case *kir.For:
		found = si.stmts(s.Body, append(scope[:len(scope):len(scope)], s.Var))
	case *kir.Stage:
		return si.stmts(s.Body, scope)
	default:
		return false
	}
	if found {
		si.spans[s] = true
	}
	return found
}
