package report

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"

	"tec/backend/internal/sign"
	"tec/backend/kir"
	"tec/te"
)

// dim is one axis of an iteration domain: the values lo, lo+step, ... < hi
// of a loop variable or of the thread or block index.
type dim struct {
	v            *kir.Var       // the loop variable, or nil
	reg          kir.SpecialReg // for v == nil: ThreadIdx or BlockIdx
	lo, hi, step int
	// lanes marks a block- or thread-stride loop's variable, which
	// replaces the thread index: thread (v-lo) mod threads.
	lanes bool
	// start, for a loop from a variable start, is that start, and stride
	// the loop's step: its threads run start + i·stride together in
	// iteration i, which banks.go groups as the GPU does.
	start  kir.Expr
	stride int
}

func (d dim) size() int {
	if d.hi <= d.lo {
		return 0
	}
	return (d.hi - d.lo + d.step - 1) / d.step
}

// cond is a condition on the domain, or its negation.
type cond struct {
	e   kir.Expr
	neg bool
}

// counter walks one kernel.
type counter struct {
	cfg     Config
	grid    int
	threads int
	dims    []dim
	conds   []cond
	defs    map[*kir.Var]kir.Expr // Let definitions without loads
	opaque  map[*kir.Var]bool     // reassigned or loaded variables
	counts  kir.Counts
	traffic map[*kir.Buffer]*Traffic
	exact   bool
	memo    map[string]enumerated // by key
	enums   int                   // enumerations done
	facts   *sign.Facts
	// banks are the shared-memory wavefronts counted (banks.go), exact
	// while banksExact; bankMemo holds them by access and domain.
	banks      kir.Banks
	banksExact bool
	bankMemo   map[string]bankCount
}

func kernel(k *kir.Kernel, cfg Config) Kernel {
	c := newCounter(k, cfg)
	c.stmts(k.Body)
	return Kernel{
		Name: k.Name, Blocks: c.grid, Threads: k.Block, Resident: k.Grid.Resident,
		SharedBytes: k.SharedBytes(), Counts: c.counts, Exact: c.exact,
		Traffic: c.trafficList(k), Banks: c.banks, BanksExact: c.banksExact,
	}
}

// newCounter returns a counter for k, at the start of its body.
func newCounter(k *kir.Kernel, cfg Config) *counter {
	grid := k.Grid.Size(cfg.ResidentBlocks)
	c := &counter{
		cfg: cfg, grid: grid, threads: k.Block, exact: true,
		dims: []dim{
			{reg: kir.BlockIdx, lo: 0, hi: grid, step: 1},
			{reg: kir.ThreadIdx, lo: 0, hi: k.Block, step: 1},
		},
		defs: map[*kir.Var]kir.Expr{}, opaque: map[*kir.Var]bool{},
		traffic: map[*kir.Buffer]*Traffic{}, memo: map[string]enumerated{},
		facts: sign.Analyze(k.Body), banksExact: true, bankMemo: map[string]bankCount{},
	}
	kir.WalkStmts(k.Body, func(s kir.Stmt) bool {
		if a, ok := s.(*kir.Assign); ok {
			c.opaque[a.Var] = true
		}
		return true
	})
	return c
}

func (c *counter) stmts(body []kir.Stmt) {
	for _, s := range body {
		c.stmt(s)
	}
}

func (c *counter) stmt(s kir.Stmt) {
	switch s := s.(type) {
	case *kir.Let:
		c.cost(s.Value)
		if !c.opaque[s.Var] && !loads(s.Value) {
			c.defs[s.Var] = s.Value
		} else {
			c.opaque[s.Var] = true
		}
	case *kir.Assign:
		c.cost(s.Value)
	case *kir.Store:
		c.cost(s.Index)
		c.cost(s.Value)
		c.shared(s.Buf, s.Index, 1)
		if s.Buf.Space == kir.Global {
			n := c.count() * int64(s.Buf.DType.Size())
			c.counts.StoreBytes += n
			c.bufTraffic(s.Buf).Store += n
		}
	case *kir.Atomic:
		c.cost(s.Index)
		c.cost(s.Value)
		n := c.count()
		c.counts.FLOPs += n
		if s.Buf.Space == kir.Global {
			c.counts.StoreBytes += n * int64(s.Buf.DType.Size())
			c.counts.LoadBytes += n * int64(s.Buf.DType.Size())
			t := c.bufTraffic(s.Buf)
			t.Store += n * int64(s.Buf.DType.Size())
			t.Load += n * int64(s.Buf.DType.Size())
		}
	case *kir.If:
		c.cost(s.Cond)
		c.conds = append(c.conds, cond{e: s.Cond})
		c.stmts(s.Then)
		c.conds[len(c.conds)-1].neg = true
		c.stmts(s.Else)
		c.conds = c.conds[:len(c.conds)-1]
	case *kir.For:
		c.loop(s)
	case *kir.SyncThreads:
		c.counts.BlockBarriers += c.count() / int64(c.threads)
	case *kir.GridSync:
		c.counts.GridSyncs += c.count() / (int64(c.threads) * int64(c.grid))
	case *kir.Signal:
		c.cost(s.Index)
		c.counts.CounterSignals += c.count() / int64(c.threads)
	case *kir.Wait:
		c.cost(s.Index)
		c.cost(s.Target)
		c.counts.CounterWaits += c.count() / int64(c.threads)
	case *kir.Prefetch:
		c.cost(s.Index)
	case *kir.Stage:
		if !prefetchesOnly(s.Body) {
			c.stmts(s.Body)
		}
	case *kir.MMA:
		m, n, k := s.Shape.Dims()
		warps := c.count() / kir.WarpSize
		c.counts.MMAs += warps
		c.counts.FLOPs += warps * int64(2*m*n*k)
	case *kir.LdMatrix:
		c.cost(s.Index)
		c.sharedAccess(bankAccess{index: s.Index, size: s.Src.DType.Size(), width: 1, matrices: s.Num})
	case *kir.VecCopy:
		c.cost(s.DstIndex)
		c.cost(s.SrcIndex)
		c.vectorBytes(s.Src, false, s.Size())
		c.vectorBytes(s.Dst, true, s.Size())
		c.shared(s.Src, s.SrcIndex, s.Len())
		c.shared(s.Dst, s.DstIndex, s.Len())
	case *kir.CopyAsync:
		c.cost(s.DstIndex)
		c.cost(s.SrcIndex)
		c.vector(s.Src, false)
		c.shared(s.Dst, s.DstIndex, kir.VecLen(s.Dst.DType))
	}
}

// vector counts a 16-byte access of buf per thread, where buf is global.
func (c *counter) vector(buf *kir.Buffer, store bool) {
	c.vectorBytes(buf, store, kir.VecBytes)
}

// vectorBytes is vector for an access of bytes bytes.
func (c *counter) vectorBytes(buf *kir.Buffer, store bool, bytes int) {
	if buf.Space != kir.Global {
		return
	}
	n := c.count() * int64(bytes)
	t := c.bufTraffic(buf)
	if store {
		c.counts.StoreBytes += n
		t.Store += n
	} else {
		c.counts.LoadBytes += n
		t.Load += n
	}
}

// loop adds the loop's dimension to the domain while walking its body.
func (c *counter) loop(s *kir.For) {
	lo, lok := constInt(s.Lo)
	hi, hok := constInt(s.Hi)
	step := s.Step
	var from kir.Expr
	if !lok && hok && (s.Kind == kir.Serial || s.Kind == kir.Unrolled) && c.facts.NonNeg(s.Lo) {
		// A loop from a variable start, never negative: its values are
		// those of [0, hi) at or after the start and a whole number of
		// steps from it.
		lo, lok, step = 0, true, 1
		from = kir.And(kir.Ge(s.Var, s.Lo), kir.Eq(kir.Mod(kir.Sub(s.Var, s.Lo), kir.I(s.Step)), kir.I(0)))
	}
	if !lok || !hok {
		// Not supported exactly: count one iteration per entry.
		c.exact, c.banksExact = false, false
		lo, hi = 0, 1
	}
	saved := append([]dim(nil), c.dims...)
	d := dim{v: s.Var, lo: lo, hi: hi, step: 1, lanes: s.Kind == kir.BlockStride || s.Kind == kir.ThreadStride}
	drop := func(reg kir.SpecialReg) {
		for i, x := range c.dims {
			if x.v == nil && x.reg == reg {
				c.dims = append(c.dims[:i:i], c.dims[i+1:]...)
				return
			}
		}
		c.exact, c.banksExact = false, false // nested thread loops: not supported exactly
	}
	switch s.Kind {
	case kir.Serial, kir.Unrolled:
		d.step = step
	case kir.GridStride:
		drop(kir.BlockIdx)
	case kir.BlockStride:
		drop(kir.ThreadIdx)
	case kir.ThreadStride:
		drop(kir.BlockIdx)
		drop(kir.ThreadIdx)
	}
	if from != nil {
		d.start, d.stride = s.Lo, s.Step
	}
	c.dims = append(c.dims, d)
	if from != nil {
		c.conds = append(c.conds, cond{e: from})
	}
	c.stmts(s.Body)
	if from != nil {
		c.conds = c.conds[:len(c.conds)-1]
	}
	c.dims = saved
}

func constInt(e kir.Expr) (int, bool) {
	if k, ok := e.(*kir.Const); ok && k.T == te.I32 {
		return int(k.Value), true
	}
	return 0, false
}

func loads(e kir.Expr) bool {
	found := false
	kir.WalkExpr(e, func(x kir.Expr) bool {
		if _, ok := x.(*kir.Load); ok {
			found = true
		}
		return !found
	})
	return found
}

// cost counts the loads and FLOPs of evaluating e at every point of the
// current domain that satisfies the current conditions; only the chosen
// operand of a select is evaluated.
func (c *counter) cost(e kir.Expr) {
	switch e := e.(type) {
	case *kir.Load:
		c.cost(e.Index)
		c.shared(e.Buf, e.Index, 1)
		if e.Buf.Space == kir.Global {
			n := c.count() * int64(e.Buf.DType.Size())
			c.counts.LoadBytes += n
			c.bufTraffic(e.Buf).Load += n
		}
	case *kir.Unary:
		c.cost(e.X)
		if e.X.Type() == te.F32 && e.Op != te.Not {
			c.counts.FLOPs += c.count()
		}
	case *kir.Binary:
		c.cost(e.X)
		c.cost(e.Y)
		if e.X.Type() == te.F32 && !e.Op.IsComparison() && !e.Op.IsLogical() {
			c.counts.FLOPs += c.count()
		}
	case *kir.Cast:
		c.cost(e.X)
	case *kir.Shuffle:
		c.cost(e.X)
		c.cost(e.Mask)
		c.counts.Shuffles += c.count()
	case *kir.Bounded:
		c.cost(e.X)
	case *kir.Select:
		c.cost(e.Cond)
		if !costly(e.Then) && !costly(e.Else) && !loadsShared(e.Then) && !loadsShared(e.Else) {
			return
		}
		c.conds = append(c.conds, cond{e: e.Cond})
		c.cost(e.Then)
		c.conds[len(c.conds)-1].neg = true
		c.cost(e.Else)
		c.conds = c.conds[:len(c.conds)-1]
	}
}

// costly reports whether evaluating e loads from global memory or does
// floating-point arithmetic.
func costly(e kir.Expr) bool {
	found := false
	kir.WalkExpr(e, func(x kir.Expr) bool {
		switch x := x.(type) {
		case *kir.Load:
			found = found || x.Buf.Space == kir.Global
		case *kir.Unary:
			found = found || x.X.Type() == te.F32 && x.Op != te.Not
		case *kir.Binary:
			found = found || x.X.Type() == te.F32 && !x.Op.IsComparison() && !x.Op.IsLogical()
		case *kir.Shuffle:
			found = true
		}
		return !found
	})
	return found
}

// loadsShared reports whether evaluating e loads from shared memory, whose
// wavefronts count (banks.go); nothing else it evaluates is costly.
func loadsShared(e kir.Expr) bool {
	found := false
	kir.WalkExpr(e, func(x kir.Expr) bool {
		if ld, ok := x.(*kir.Load); ok && ld.Buf.Space == kir.Shared {
			found = true
		}
		return !found
	})
	return found
}

// count returns the number of points of the domain that satisfy the
// conditions.
func (c *counter) count() int64 {
	if len(c.conds) == 0 {
		n := int64(1)
		for _, d := range c.dims {
			n *= int64(d.size())
		}
		return n
	}
	key := c.key()
	if m, ok := c.memo[key]; ok {
		c.exact = c.exact && m.exact
		return m.n
	}
	exact := c.exact
	c.exact = true
	n := c.enumerate()
	c.enums++
	c.memo[key] = enumerated{n: n, exact: c.exact}
	c.exact = exact && c.exact
	return n
}

// enumerated is a count that enumerate returned and whether it was exact.
type enumerated struct {
	n     int64
	exact bool
}

// key names the question count answers: the domain's dimensions and the
// conditions, each written as compile reads it (variables by their
// dimension, definitions inlined), so that loops and statements of the same
// shape, as a persistent kernel's stages are, share one enumeration.
func (c *counter) key() string {
	var b strings.Builder
	for _, d := range c.dims {
		if d.v == nil {
			fmt.Fprintf(&b, "r%d", d.reg)
		}
		fmt.Fprintf(&b, "[%d:%d:%d]", d.lo, d.hi, d.step)
	}
	for _, k := range c.conds {
		b.WriteByte(';')
		if k.neg {
			b.WriteByte('!')
		}
		c.canon(&b, k.e)
	}
	return b.String()
}

// canon writes e as compile reads it: variables and special registers by
// their dimension, definitions inlined, constants by value, and '?' for
// what compile cannot read (then the whole condition is data-dependent).
// Two conditions with the same text compile to the same function of the
// domain's points, or both fail to compile.
func (c *counter) canon(b *strings.Builder, e kir.Expr) {
	switch e := e.(type) {
	case *kir.Const:
		fmt.Fprintf(b, "%v", e.Value)
	case *kir.Special:
		switch e.Reg {
		case kir.BlockDim:
			fmt.Fprintf(b, "%d", c.threads)
			return
		case kir.GridDim:
			fmt.Fprintf(b, "%d", c.grid)
			return
		}
		for i, d := range c.dims {
			if d.v == nil && d.reg == e.Reg {
				fmt.Fprintf(b, "d%d", i)
				return
			}
		}
		b.WriteByte('?')
	case *kir.Var:
		for i, d := range c.dims {
			if d.v == e {
				fmt.Fprintf(b, "d%d", i)
				return
			}
		}
		if def, ok := c.defs[e]; ok && !c.opaque[e] {
			c.canon(b, def)
			return
		}
		b.WriteByte('?')
	case *kir.Unary:
		fmt.Fprintf(b, "(u%d ", e.Op)
		c.canon(b, e.X)
		b.WriteByte(')')
	case *kir.Binary:
		if e.X.Type() == te.F32 {
			b.WriteByte('?')
			return
		}
		fmt.Fprintf(b, "(b%d ", e.Op)
		c.canon(b, e.X)
		b.WriteByte(' ')
		c.canon(b, e.Y)
		b.WriteByte(')')
	case *kir.Select:
		b.WriteString("(s ")
		c.canon(b, e.Cond)
		b.WriteByte(' ')
		c.canon(b, e.Then)
		b.WriteByte(' ')
		c.canon(b, e.Else)
		b.WriteByte(')')
	case *kir.Cast:
		if e.X.Type() == te.F32 {
			b.WriteByte('?')
			return
		}
		fmt.Fprintf(b, "(c%t ", e.To == te.Bool)
		c.canon(b, e.X)
		b.WriteByte(')')
	default:
		b.WriteByte('?')
	}
}

// enumerate counts the points that satisfy the conditions: conditions that
// share dimensions form groups, whose dimensions are enumerated together;
// dimensions no condition uses multiply the count.
func (c *counter) enumerate() int64 {
	var cs []condition
	for _, k := range c.conds {
		deps := map[int]bool{}
		f, ok := c.compile(k.e, deps)
		if !ok {
			c.exact = false // data-dependent: assume it holds
			continue
		}
		var ds []int
		for i := range c.dims {
			if deps[i] {
				ds = append(ds, i)
			}
		}
		cs = append(cs, condition{f: f, deps: ds, neg: k.neg})
	}
	// Union-find over dimensions.
	parent := make([]int, len(c.dims))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	used := make([]bool, len(c.dims))
	for _, k := range cs {
		for _, d := range k.deps {
			used[d] = true
			parent[find(d)] = find(k.deps[0])
		}
	}
	total := int64(1)
	for i, d := range c.dims {
		if !used[i] {
			total *= int64(d.size())
		}
	}
	groups := map[int][]int{}
	var roots []int
	for i := range c.dims {
		if used[i] {
			r := find(i)
			if groups[r] == nil {
				roots = append(roots, r)
			}
			groups[r] = append(groups[r], i)
		}
	}
	for _, r := range roots {
		var gc []condition
		for _, k := range cs {
			if len(k.deps) > 0 && find(k.deps[0]) == r {
				gc = append(gc, k)
			}
		}
		hits, seen, size := c.enumerateGroup(groups[r], gc)
		if size == 0 {
			return 0
		}
		if seen == size {
			total *= hits
		} else {
			c.exact = false
			total = int64(math.Round(float64(total) * float64(hits) * float64(size) / float64(seen)))
		}
	}
	return total
}

// condition is a compiled condition: f of a domain point, the dimensions it
// depends on (ascending), and whether it must be false.
type condition struct {
	f    func(p []float64) float64
	deps []int
	neg  bool
}

// enumerateGroup returns how many of the points it visits of the
// dimensions dims (ascending) satisfy every condition of gc, how many it
// visits and how many there are: all of them, or, for a group too large to
// enumerate, EnumLimit points drawn by a fixed generator (regular strides
// would alias with the periodic structure of tiled indexes).
//
// A condition that depends on few of the group's dimensions (fewer points
// than half those visited) is evaluated once per point of its own
// dimensions, into a table the visit then looks up.
func (c *counter) enumerateGroup(dims []int, gc []condition) (hits, seen, size int64) {
	size = 1
	sizes := make([]int64, len(dims))
	slot := make([]int, len(c.dims)) // dimension -> position in dims
	for i, d := range dims {
		sizes[i] = int64(c.dims[d].size())
		size *= sizes[i]
		slot[d] = i
	}
	if size == 0 {
		return 0, 0, 0
	}
	sampled := size > int64(c.cfg.EnumLimit)
	n := size
	if sampled {
		n = int64(c.cfg.EnumLimit)
	}
	point := make([]float64, len(c.dims))
	coord := make([]int64, len(dims))
	// Tabulated conditions first: a point they reject needs no other test.
	// Conditions on the same dimensions share a table.
	var tables []condTable
	var rest []condition
	for _, ks := range byDeps(gc) {
		if t, ok := c.tabulate(ks, slot, sizes, point, n/2); ok {
			tables = append(tables, t)
		} else {
			rest = append(rest, ks...)
		}
	}
	rng := rand.New(rand.NewPCG(1, uint64(size)))
	for j := int64(0); j < n; j++ {
		q := j
		if sampled {
			q = rng.Int64N(size)
		}
		for i := len(dims) - 1; i >= 0; i-- {
			coord[i] = q % sizes[i]
			q /= sizes[i]
		}
		seen++
		if c.satisfies(tables, rest, dims, coord, point) {
			hits++
		}
	}
	return hits, seen, size
}

// satisfies reports whether the point of the group's dimensions dims at
// coordinates coord satisfies the tabulated conditions and the rest; point
// is scratch space.
func (c *counter) satisfies(tables []condTable, rest []condition, dims []int, coord []int64, point []float64) bool {
	for _, t := range tables {
		if !t.holds(coord) {
			return false
		}
	}
	if len(rest) == 0 {
		return true
	}
	for i, d := range dims {
		point[d] = float64(c.dims[d].lo + int(coord[i])*c.dims[d].step)
	}
	for _, k := range rest {
		if (k.f(point) != 0) == k.neg {
			return false
		}
	}
	return true
}

// condTable holds whether conditions on the same dimensions all hold at
// every point of those dimensions, in mixed radix over them.
type condTable struct {
	truth   []bool
	pos     []int   // the condition's dimensions' positions in the group
	strides []int64 // their strides in truth
}

// holds reports whether the conditions hold at the point whose
// coordinates in the group are coord.
func (t condTable) holds(coord []int64) bool {
	var at int64
	for i, p := range t.pos {
		at += coord[p] * t.strides[i]
	}
	return t.truth[at]
}

// byDeps splits conditions by the dimensions they depend on, in order of
// first appearance.
func byDeps(ks []condition) [][]condition {
	var sets [][]condition
	at := map[string]int{}
	for _, k := range ks {
		key := fmt.Sprint(k.deps)
		i, ok := at[key]
		if !ok {
			i = len(sets)
			at[key] = i
			sets = append(sets, nil)
		}
		sets[i] = append(sets[i], k)
	}
	return sets
}

// tabulate evaluates the conditions ks, which depend on the same
// dimensions, at every point of those dimensions when there are at most
// limit of them, and reports whether it did; slot maps a dimension to its
// position in the group, sizes gives the group's dimensions' sizes, point
// is scratch space.
func (c *counter) tabulate(ks []condition, slot []int, sizes []int64, point []float64, limit int64) (condTable, bool) {
	deps := ks[0].deps
	n := int64(1)
	pos := make([]int, len(deps))
	strides := make([]int64, len(deps))
	for i := len(deps) - 1; i >= 0; i-- {
		pos[i] = slot[deps[i]]
		strides[i] = n
		n *= sizes[pos[i]]
	}
	if n > limit {
		return condTable{}, false
	}
	t := condTable{truth: make([]bool, n), pos: pos, strides: strides}
	for at := int64(0); at < n; at++ {
		q := at
		for i := len(deps) - 1; i >= 0; i-- {
			d := c.dims[deps[i]]
			size := sizes[pos[i]]
			point[deps[i]] = float64(d.lo + int(q%size)*d.step)
			q /= size
		}
		t.truth[at] = true
		for _, k := range ks {
			if (k.f(point) != 0) == k.neg {
				t.truth[at] = false
				break
			}
		}
	}
	return t, true
}

// compile turns an index expression into a function of a domain point,
// recording the dimensions it depends on. It fails on loads and on
// variables whose value the domain does not determine.
func (c *counter) compile(e kir.Expr, deps map[int]bool) (func(p []float64) float64, bool) {
	switch e := e.(type) {
	case *kir.Const:
		v := e.Value
		return func([]float64) float64 { return v }, true
	case *kir.Special:
		switch e.Reg {
		case kir.BlockDim:
			v := float64(c.threads)
			return func([]float64) float64 { return v }, true
		case kir.GridDim:
			v := float64(c.grid)
			return func([]float64) float64 { return v }, true
		}
		for i, d := range c.dims {
			if d.v == nil && d.reg == e.Reg {
				deps[i] = true
				return func(p []float64) float64 { return p[i] }, true
			}
		}
		return nil, false
	case *kir.Var:
		for i, d := range c.dims {
			if d.v == e {
				deps[i] = true
				return func(p []float64) float64 { return p[i] }, true
			}
		}
		if def, ok := c.defs[e]; ok && !c.opaque[e] {
			return c.compile(def, deps)
		}
		return nil, false
	case *kir.Unary:
		x, ok := c.compile(e.X, deps)
		if !ok {
			return nil, false
		}
		switch e.Op {
		case te.Neg:
			return func(p []float64) float64 { return -x(p) }, true
		case te.Not:
			return func(p []float64) float64 { return b2f(x(p) == 0) }, true
		case te.Abs:
			return func(p []float64) float64 { return math.Abs(x(p)) }, true
		}
		return nil, false
	case *kir.Binary:
		if e.X.Type() == te.F32 {
			return nil, false
		}
		x, okx := c.compile(e.X, deps)
		y, oky := c.compile(e.Y, deps)
		if !okx || !oky {
			return nil, false
		}
		switch e.Op {
		case te.Add:
			return func(p []float64) float64 { return x(p) + y(p) }, true
		case te.Sub:
			return func(p []float64) float64 { return x(p) - y(p) }, true
		case te.Mul:
			return func(p []float64) float64 { return x(p) * y(p) }, true
		case te.Div:
			return func(p []float64) float64 { return float64(te.FloorDiv(int(x(p)), nz(int(y(p))))) }, true
		case te.Mod:
			return func(p []float64) float64 { return float64(te.FloorMod(int(x(p)), nz(int(y(p))))) }, true
		case te.Max:
			return func(p []float64) float64 { return math.Max(x(p), y(p)) }, true
		case te.Min:
			return func(p []float64) float64 { return math.Min(x(p), y(p)) }, true
		case te.Lt:
			return func(p []float64) float64 { return b2f(x(p) < y(p)) }, true
		case te.Le:
			return func(p []float64) float64 { return b2f(x(p) <= y(p)) }, true
		case te.Gt:
			return func(p []float64) float64 { return b2f(x(p) > y(p)) }, true
		case te.Ge:
			return func(p []float64) float64 { return b2f(x(p) >= y(p)) }, true
		case te.Eq:
			return func(p []float64) float64 { return b2f(x(p) == y(p)) }, true
		case te.Ne:
			return func(p []float64) float64 { return b2f(x(p) != y(p)) }, true
		case te.And:
			return func(p []float64) float64 { return b2f(x(p) != 0 && y(p) != 0) }, true
		case te.Or:
			return func(p []float64) float64 { return b2f(x(p) != 0 || y(p) != 0) }, true
		}
		return nil, false
	case *kir.Select:
		cc, ok1 := c.compile(e.Cond, deps)
		t, ok2 := c.compile(e.Then, deps)
		f, ok3 := c.compile(e.Else, deps)
		if !ok1 || !ok2 || !ok3 {
			return nil, false
		}
		return func(p []float64) float64 {
			if cc(p) != 0 {
				return t(p)
			}
			return f(p)
		}, true
	case *kir.Cast:
		if e.X.Type() == te.F32 {
			return nil, false
		}
		x, ok := c.compile(e.X, deps)
		if !ok {
			return nil, false
		}
		if e.To == te.Bool {
			return func(p []float64) float64 { return b2f(x(p) != 0) }, true
		}
		return x, true
	}
	return nil, false
}

func nz(v int) int {
	if v == 0 {
		return 1
	}
	return v
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func (c *counter) bufTraffic(b *kir.Buffer) *Traffic {
	t := c.traffic[b]
	if t == nil {
		t = &Traffic{Buffer: b}
		c.traffic[b] = t
	}
	return t
}

// trafficList returns the kernel's traffic per global buffer, in the order
// of its parameters (then any other buffer, by name).
func (c *counter) trafficList(k *kir.Kernel) []Traffic {
	var ts []Traffic
	for _, b := range k.Params {
		if t := c.traffic[b]; t != nil {
			ts = append(ts, *t)
			delete(c.traffic, b)
		}
	}
	rest := make([]Traffic, 0, len(c.traffic))
	for _, t := range c.traffic {
		rest = append(rest, *t)
	}
	sort.Slice(rest, func(i, j int) bool { return rest[i].Buffer.Name < rest[j].Buffer.Name })
	return append(ts, rest...)
}

// prefetchesOnly reports whether body does nothing that Counts count: it
// prefetches (kir.Prefetch), in loops and branches over index arithmetic
// without loads, as the stage that prefetches a later stage's weights
// does, whose trip counts depend on the grid launched.
func prefetchesOnly(body []kir.Stmt) bool {
	ok := true
	kir.WalkStmts(body, func(s kir.Stmt) bool {
		switch s := s.(type) {
		case *kir.Let:
			ok = s.Var.T == te.I32
		case *kir.If, *kir.For, *kir.Prefetch:
		default:
			ok = false
		}
		if ok {
			kir.Exprs(s, func(e kir.Expr) {
				kir.WalkExpr(e, func(x kir.Expr) bool {
					if _, load := x.(*kir.Load); load {
						ok = false
					}
					return ok
				})
			})
		}
		return ok
	})
	return ok
}
