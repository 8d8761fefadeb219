package partition

import (
	"math"

	"tec/contraction"
	"tec/cost"
	"tec/schedule"
	"tec/te"
)

// stage is a schedule that the planner is deciding and its price, which
// change together: a tile's shape decides the bytes it loads. The plan
// keeps them apart (Plan.Schedules, Plan.Prices).
type stage struct {
	*schedule.Schedule
	*cost.Price
}

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
