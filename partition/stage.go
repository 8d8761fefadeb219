package partition

import (
	"math"

	"tec/contraction"
	"tec/cost"
	"tec/te"
)

// stage is a schedule that the planner is deciding and its price, which
// change together: a tile's shape decides the bytes it loads. The plan
// keeps them apart (Plan.Schedules, Plan.Prices); the cost model reads
// them together (cost.Stage).
type stage cost.Stage

// clone returns a copy of s that shares nothing with it.
func (s stage) clone() stage {
	sc, pc := *s.Schedule, *s.Price
	return stage{&sc, &pc}
}

// set makes s what o is.
func (s stage) set(o stage) {
	*s.Schedule, *s.Price = *o.Schedule, *o.Price
}

// product is contraction.Points.
func product(axes []*te.Var) int { return contraction.Points(axes) }

var inf = math.Inf(1)
