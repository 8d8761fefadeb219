package partition

import (
	"container/heap"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"tec/contraction"
	"tec/cost"
	"tec/schedule"
	"tec/te"
)

// Bounds of resident-weight stages.
const (
	residentMaxRows  = 8  // rows of the other factor a tile computes
	residentTileF    = 16 // largest stationary columns per tile
	residentMaxGroup = 8  // batch entries a tile computes for its epilogue
)

// stationary describes a candidate stage for Resident: its dimensions,
// which factor is stationary, and the canonical form of that factor's
// slices for each batch entry.
type stationary struct {
	t      *te.Tensor
	d      contraction.Dims
	which  int
	rows   int // points of the other factor's own axes
	cols   int // points of the stationary factor's own axes
	family []string
}

// stationaryStage reports whether t is a contraction one of whose factors
// loads only params and whose other factor has at most residentMaxRows
// rows, and returns the canonical form of its stationary slices.
func stationaryStage(t *te.Tensor) (*stationary, bool) {
	d, ok := contraction.Of(t)
	if !ok || t.DType != te.F32 || d.Masked {
		return nil, false
	}
	st := &stationary{t: t, d: d}
	fAxes := d.NAxes
	switch {
	case onlyParams(d.Y) && !onlyParams(d.X):
		st.which, st.rows, st.cols = 1, d.M, d.N
	case onlyParams(d.X) && !onlyParams(d.Y):
		st.which, st.rows, st.cols = 0, d.N, d.M
		fAxes = d.MAxes
	default:
		return nil, false
	}
	if st.rows > residentMaxRows || st.cols%tileFOf(st.cols) != 0 || tileFOf(st.cols) < 4 {
		return nil, false
	}
	f := d.Y
	if st.which == 0 {
		f = d.X
	}
	// Free variables are named by their role, so that equal slices of
	// different stages print alike.
	names := map[*te.Var]string{}
	var ext []string
	for i, v := range fAxes {
		names[v] = "f" + strconv.Itoa(i)
		ext = append(ext, strconv.Itoa(v.Extent))
	}
	for i, v := range d.Reduce.Axes {
		names[v] = "k" + strconv.Itoa(i)
		ext = append(ext, strconv.Itoa(v.Extent))
	}
	prefix := strings.Join(ext, ",") + ":"
	env := map[*te.Var]int{}
	for b := range d.Batch {
		rest := b
		for i := len(d.BatchAxes) - 1; i >= 0; i-- {
			v := d.BatchAxes[i]
			env[v] = rest % v.Extent
			rest /= v.Extent
		}
		var sb strings.Builder
		sb.WriteString(prefix)
		if !canon(&sb, f, env, names) {
			return nil, false
		}
		st.family = append(st.family, sb.String())
	}
	return st, true
}

// tileFOf returns the stationary columns per tile for a factor with cols
// columns: the largest power of two up to residentTileF that divides it.
func tileFOf(cols int) int {
	f := residentTileF
	for f > 1 && cols%f != 0 {
		f /= 2
	}
	return f
}

// onlyParams reports whether e loads something and every load is of a
// param.
func onlyParams(e te.Expr) bool {
	loads, ok := 0, true
	te.Walk(e, func(x te.Expr) bool {
		if l, isLoad := x.(*te.Load); isLoad {
			loads++
			ok = ok && l.Tensor.Kind == te.Param
		}
		return ok
	})
	return ok && loads > 0
}

// resident gives the contraction stages of k whose stationary slices some
// other stage of k reads too a shared-memory cache of those slices
// (Resident, WeightCache) unless the cost model predicts the kernel slower
// with it, and returns the kernel to keep.
func (c *coster) resident(k *Kernel) *Kernel {
	var cands []*stationary
	users := map[string]map[*te.Tensor]bool{}
	for _, t := range k.Stages {
		if c.pl.Schedules[t].Kind != schedule.Contraction {
			continue
		}
		st, ok := stationaryStage(t)
		if !ok {
			continue
		}
		cands = append(cands, st)
		for _, f := range st.family {
			if users[f] == nil {
				users[f] = map[*te.Tensor]bool{}
			}
			users[f][t] = true
		}
	}
	// Keep the stages that share a slice family with another stage, and
	// whose slices all have one size (the cache's slots do).
	var keep []*stationary
	type size struct{ k, cols int }
	var first size
	for _, st := range cands {
		shared := slices.ContainsFunc(st.family, func(f string) bool { return len(users[f]) > 1 })
		sz := size{st.d.K, st.cols}
		if !shared || (len(keep) > 0 && sz != first) {
			continue
		}
		first = sz
		keep = append(keep, st)
	}
	if len(keep) == 0 {
		return k
	}
	g := c.pl.GPU
	threads := c.pl.Threads
	tf := tileFOf(first.cols)
	// Element-wise consumers computed in the tiles' epilogues need the
	// batch entries they read in one tile; every stage must group its
	// entries alike, since the slots hold a group's slices.
	group := 0
	epis := make([]*epilogue, len(keep))
	ix := newStageIndex(k)
	for i, st := range keep {
		epis[i] = c.epilogue(k, ix, st)
		if group == 0 || group == epis[i].group {
			group = epis[i].group
		} else {
			group = -1
		}
	}
	if group < 1 {
		group = 1
		for i := range epis {
			epis[i] = &epilogue{group: 1}
		}
	}
	ids := map[string]int{}
	// The kernel's resources with the resident stages' scratch arrays:
	// the rows of the narrow factor and a partial sum per thread and row.
	arrays := map[*te.Tensor][]schedule.Array{}
	res := k.Resources
	for _, st := range keep {
		arrays[st.t] = []schedule.Array{{DType: te.F32, Len: st.rows * st.d.K}, {DType: te.F32, Len: st.rows * threads}}
		scratch := schedule.ArenasOf(arrays[st.t])
		res = mergeRes(res, schedule.Resources{SharedBytes: scratch.Bytes(), Scratch: scratch})
		for i := 0; i < len(st.family); i += group {
			f := strings.Join(st.family[i:i+group], "|")
			if _, ok := ids[f]; !ok {
				ids[f] = len(ids)
			}
		}
	}
	budget := g.SharedPerBlock - res.SharedBytes
	if slices.ContainsFunc(k.Stages, func(t *te.Tensor) bool { return c.pl.Schedules[t].Kind == schedule.RowReduce }) {
		budget -= c.opts.onChipBudget() // room for the row results kept on chip
	}
	if c.opts.ResidentBytes > 0 {
		budget = min(budget, c.opts.ResidentBytes)
	}
	// The columns per tile that keep the largest share of the slices on
	// chip (the widest of those that tie): narrower slices pack the
	// shared memory more tightly.
	var cache *schedule.WeightCache
	for f := tf; f >= 4 && first.cols%f == 0; f /= 2 {
		if threads%f != 0 {
			continue // the block must be Split × TileF threads exactly
		}
		wc, ok := c.weightCache(res, budget, len(ids)*(first.cols/f), group*first.k*f)
		if ok && (cache == nil || float64(wc.Resident())/float64(wc.Keys) > float64(cache.Resident())/float64(cache.Keys)) {
			cache, tf = wc, f
		}
	}
	if cache == nil {
		return k
	}
	keys := cache.Keys
	missed := float64(keys-cache.Resident()) / float64(keys)

	// Price the kernel with the resident schedules.
	saved := map[*te.Tensor]stage{}
	for i, st := range keep {
		s := c.pl.stage(st.t)
		saved[st.t] = s.clone()
		rs := &schedule.Resident{MatVec: schedule.MatVec{Wide: st.which, TileF: tf, NT: st.cols / tf, Split: threads / tf}, Group: group}
		for i := 0; i < len(st.family); i += group {
			rs.Keys = append(rs.Keys, ids[strings.Join(st.family[i:i+group], "|")])
		}
		e := epis[i]
		rs.Epilogue, rs.EpilogueGroup, rs.EpilogueAxes = e.stages, e.groups, e.axes
		for _, u := range e.stages {
			su := c.pl.stage(u)
			saved[u] = su.clone()
			su.EpilogueOf = st.t
		}
		s.Resident, s.MatVec = rs, nil
		s.Threads = threads
		s.TileM, s.TileN, s.TileK, s.RegM, s.RegN = st.rows, tf, st.d.K, 1, 1
		if st.which == 0 {
			s.TileM, s.TileN = tf, st.rows
		}
		s.Tiles = st.d.Batch / group * rs.NT
		s.SetArrays(arrays[st.t]...)
		s.SharedBytes += cache.Bytes() // the cache, which outlives the stage
		s.RegsPerThread = 32 + 2*st.rows
		s.Bytes = cost.ResidentBytes(st.d, st.rows, st.cols, rs.NT, missed, st.t.Bytes())
		cache.Stages = append(cache.Stages, st.t)
	}
	nc := newCoster(c.pl, k.Stages, c.opts)
	nc.a = c.a
	nk := nc.kernel(0, len(k.Stages))
	if nk.Cost.Total() > k.Cost.Total() || nk.BlocksPerSM == 0 {
		for t, s := range saved {
			c.pl.stage(t).set(s)
		}
		return k
	}
	nk.Boundary = k.Boundary
	nk.Cache = cache
	// The coster of the whole plan prices these stages from now on as
	// this one does.
	for j, t := range k.Stages {
		c.own[c.pos[t]] = nc.own[j]
	}
	return nk
}

// epilogue lists the element-wise stages that a resident stage can compute
// in its tiles' epilogue, and the grouping of batch entries that puts what
// each reads in one tile.
type epilogue struct {
	group  int
	stages []*te.Tensor
	groups []int
	axes   []map[*te.Var]*te.Var
}

// epilogue finds the element-wise stages of k after st's stage, the
// stages that the threads writing st's columns can compute right after it
// (the epilogue rule, epilogueScope.admit), and groups batch entries in
// the fewest consecutive runs (a divisor of the batch, at most
// residentMaxGroup) that keep each stage's reads, and those of the stages
// it reads, in one run; it gives up the epilogue unless such a grouping
// exists.
func (c *coster) epilogue(k *Kernel, ix *stageIndex, st *stationary) *epilogue {
	t := st.t
	sc := newEpilogueScope(c.pl, k, ix, t, st.d)
	var cands []*epiCand
	// Only a stage that reads t or an admitted stage can be admitted
	// (epilogueCandidate): visit the readers of t after it, and those of
	// each stage admitted, in the order of k's stages, as a scan of all
	// the stages after t would.
	var next stagePositions
	queued := map[int]bool{}
	enqueue := func(x *te.Tensor, after int) {
		for _, j := range ix.readers[x] {
			if j > after && !queued[j] {
				queued[j] = true
				heap.Push(&next, j)
			}
		}
	}
	enqueue(t, ix.pos[t])
	for next.Len() > 0 {
		j := heap.Pop(&next).(int)
		cd, err := sc.admit(c.pl, j)
		if err != nil {
			continue
		}
		sc.in[cd.u] = cd
		cands = append(cands, cd)
		enqueue(cd.u, j)
	}
	for g := 1; g <= min(st.d.Batch, residentMaxGroup); g++ {
		if st.d.Batch%g != 0 {
			continue
		}
		e := &epilogue{group: g}
		for _, cd := range cands {
			if cd.lo/g == cd.hi/g {
				e.stages = append(e.stages, cd.u)
				e.groups = append(e.groups, cd.lo/g)
				e.axes = append(e.axes, cd.axes)
			}
		}
		if len(e.stages) == len(cands) {
			return e
		}
	}
	return &epilogue{group: 1}
}

// epilogueScope is what the epilogue rule needs to know of a resident
// stage t in its kernel: its batch entries and batch axes, the kernel's
// stages (ix), the position at which t's grid epoch begins, and the stages
// admitted to its epilogue so far.
type epilogueScope struct {
	t     *te.Tensor
	n     int
	batch map[*te.Var]bool
	ix    *stageIndex
	epoch int
	in    map[*te.Tensor]*epiCand
}

// newEpilogueScope returns the scope of resident stage t (dimensions d) of
// k, with no stage admitted yet.
func newEpilogueScope(pl *Plan, k *Kernel, ix *stageIndex, t *te.Tensor, d contraction.Dims) *epilogueScope {
	sc := &epilogueScope{t: t, n: d.Batch, batch: map[*te.Var]bool{}, ix: ix, in: map[*te.Tensor]*epiCand{}}
	for p := ix.pos[t]; p > 0; p-- {
		if k.Sync[p] == GridSync || pl.Schedules[k.Stages[p]].InnerSync() {
			sc.epoch = p
			break
		}
	}
	for _, v := range d.BatchAxes {
		sc.batch[v] = true
	}
	return sc
}

// admit checks stage j of the kernel against the epilogue rule, given the
// stages admitted before it, and returns what it reads if it keeps it, or
// an error saying how it breaks it. The rule: the stage is element-wise
// (f32); it reads the resident stage t only at constant batch entries and,
// on every other axis, at one of its own axes, the same for all its loads,
// so that its axes and t's non-batch axes correspond one to one (with
// equal extents); it reads the stages admitted before it only at its own
// element, through the same correspondence; and it reads nothing else that
// the kernel computes in t's grid epoch or later. Then each of its
// elements depends only on the one element of each batch entry of t (and
// of the earlier epilogue stages) that the thread computing it wrote; a
// stage that reads t at another column (over a reduction axis, or at an
// axis of t that is not one of its own) reads what other threads or
// blocks wrote, and must run after a grid sync.
func (sc *epilogueScope) admit(pl *Plan, j int) (*epiCand, error) {
	u := sc.ix.stages[j]
	if pl.Schedules[u].Kind != schedule.Elementwise || u.DType != te.F32 {
		return nil, fmt.Errorf("epilogue stage %s is not an element-wise f32 stage", u.Name)
	}
	for _, x := range sc.ix.inputs[j] {
		if p, isStage := sc.ix.pos[x]; isStage && p >= sc.epoch && x != sc.t && sc.in[x] == nil {
			return nil, fmt.Errorf("epilogue stage %s reads %s, which other blocks write in the grid epoch of %s", u.Name, x.Name, sc.t.Name)
		}
	}
	cd, err := epilogueCandidate(u, sc.t, sc.n, sc.batch, sc.in)
	if err != nil {
		return nil, err
	}
	if len(cd.axes) != len(u.Axes) || len(u.Axes) != len(sc.t.Axes)-len(sc.batch) {
		return nil, fmt.Errorf("epilogue stage %s: its axes do not correspond one to one to the columns of %s", u.Name, sc.t.Name)
	}
	return cd, nil
}

// stageIndex indexes a kernel's stages: the position of each, the tensors
// each reads (te.Inputs of its body) and, for each tensor, the positions of
// the stages that read it, in order.
type stageIndex struct {
	stages  []*te.Tensor
	pos     map[*te.Tensor]int
	inputs  [][]*te.Tensor
	readers map[*te.Tensor][]int
}

func newStageIndex(k *Kernel) *stageIndex {
	ix := &stageIndex{stages: k.Stages, pos: make(map[*te.Tensor]int, len(k.Stages)), inputs: make([][]*te.Tensor, len(k.Stages)), readers: map[*te.Tensor][]int{}}
	for p, u := range k.Stages {
		ix.pos[u] = p
		ix.inputs[p] = te.Inputs(u.Body)
		for _, x := range ix.inputs[p] {
			ix.readers[x] = append(ix.readers[x], p)
		}
	}
	return ix
}

// stagePositions is a min-heap of stage positions.
type stagePositions []int

func (h stagePositions) Len() int           { return len(h) }
func (h stagePositions) Less(i, j int) bool { return h[i] < h[j] }
func (h stagePositions) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *stagePositions) Push(x any)        { *h = append(*h, x.(int)) }
func (h *stagePositions) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// epiCand is a stage that the epilogue rule admits: the batch entries
// [lo, hi] of the resident stage that it reads (directly or through other
// epilogue stages), and the axis of the resident stage that each of its
// axes corresponds to.
type epiCand struct {
	u      *te.Tensor
	lo, hi int
	axes   map[*te.Var]*te.Var
}

// epilogueCandidate checks u's loads of t (batch axes batch, batch entries
// n) and of the stages admitted before it (in) against the epilogue rule
// (see epilogueScope.admit), and returns what it reads if they keep it, or
// an epilogueRefusal saying which load breaks it. It does not check u's
// other loads.
func epilogueCandidate(u, t *te.Tensor, n int, batch map[*te.Var]bool, in map[*te.Tensor]*epiCand) (*epiCand, error) {
	cd := &epiCand{u: u, lo: n, hi: -1, axes: map[*te.Var]*te.Var{}}
	own := map[*te.Var]bool{}
	for _, v := range u.Axes {
		own[v] = true
	}
	// match makes u's axis v correspond to t's axis a, and reports whether
	// that keeps the correspondence one to one.
	match := func(v, a *te.Var) bool {
		if !own[v] || v.Extent != a.Extent {
			return false
		}
		if w, ok := cd.axes[v]; ok {
			return w == a
		}
		for _, w := range cd.axes {
			if w == a {
				return false
			}
		}
		cd.axes[v] = a
		return true
	}
	var refused *epilogueRefusal
	reads := false
	te.Walk(u.Body, func(x te.Expr) bool {
		l, isLoad := x.(*te.Load)
		if !isLoad || refused != nil {
			return refused == nil
		}
		if l.IsGather() && (l.Tensor == t || in[l.Tensor] != nil) {
			// Read at run-time indexes, not by the stationary tile.
			refused = &epilogueRefusal{u: u, t: t, load: l, gather: true}
			return false
		}
		if l.Tensor == t {
			reads = true
			b, ok := 0, true
			for d, ix := range l.Index {
				a := t.Axes[d]
				if batch[a] {
					e, isConst := ix.IsConst()
					ok = ok && isConst
					b = b*a.Extent + e
					continue
				}
				v, isVar := ix.AsVar()
				ok = ok && isVar && match(v, a)
			}
			cd.lo, cd.hi = min(cd.lo, b), max(cd.hi, b)
			if !ok {
				refused = &epilogueRefusal{u: u, t: t, load: l}
			}
			return ok
		}
		if p := in[l.Tensor]; p != nil {
			reads = true
			ok := identityReads(u, l.Tensor)
			for d, v := range u.Axes {
				ok = ok && match(v, p.axes[l.Tensor.Axes[d]])
			}
			cd.lo, cd.hi = min(cd.lo, p.lo), max(cd.hi, p.hi)
			if !ok {
				refused = &epilogueRefusal{u: u, t: t, load: l}
			}
			return ok
		}
		return true
	})
	switch {
	case refused != nil:
		return nil, refused
	case !reads:
		return nil, &epilogueRefusal{u: u, t: t}
	}
	return cd, nil
}

// epilogueRefusal is why epilogueCandidate refuses stage u for the
// epilogue of t: its load, of t or of an earlier epilogue stage, at
// run-time indexes (gather) or at other columns than its own; or, with no
// load, that it reads neither. It formats its message only when asked,
// since the planner asks of every candidate and reads none.
type epilogueRefusal struct {
	u, t   *te.Tensor
	load   *te.Load
	gather bool
}

func (r *epilogueRefusal) Error() string {
	switch {
	case r.load == nil:
		return fmt.Sprintf("epilogue stage %s reads neither %s nor an earlier epilogue stage", r.u.Name, r.t.Name)
	case r.gather:
		return fmt.Sprintf("epilogue stage %s reads %s at run-time indexes, not at its own columns", r.u.Name, r.load.Tensor.Name)
	case r.load.Tensor == r.t:
		return fmt.Sprintf("epilogue stage %s reads %s as %s, not at its own column of its group's batch entries", r.u.Name, r.t.Name, te.FormatExpr(r.load))
	}
	return fmt.Sprintf("epilogue stage %s reads epilogue stage %s as %s, which another thread computes", r.u.Name, r.load.Tensor.Name, te.FormatExpr(r.load))
}

// weightCache returns the cache of keys slices of slice floats that fits
// in budget bytes of shared memory per block beside a kernel's res: the
// fewest slots that hold every key at the occupancy they allow (the grid,
// and so the virtual blocks, follow from the occupancy). It reports false
// if not one slot fits.
func (c *coster) weightCache(res schedule.Resources, budget, keys, slice int) (*schedule.WeightCache, bool) {
	g := c.pl.GPU
	sliceBytes := 4*slice + 4
	maxSlots := budget / sliceBytes
	slots := 0
	for n := 1; n <= maxSlots; n++ {
		r := res
		r.SharedBytes += n * sliceBytes
		occ, _ := g.BlocksPerSM(r.Block())
		if occ == 0 {
			break
		}
		slots = n
		if n*g.SMs*occ >= keys {
			break
		}
	}
	if slots < 1 {
		return nil, false
	}
	r := res
	r.SharedBytes += slots * sliceBytes
	occ, _ := g.BlocksPerSM(r.Block())
	return &schedule.WeightCache{Keys: keys, Virtual: g.SMs * occ, Slots: slots, SliceFloats: slice}, true
}
