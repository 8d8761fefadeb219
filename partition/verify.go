package partition

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"tec/contraction"
	"tec/schedule"
	"tec/te"
)

// Verify checks the promises of the plan's resident stages (-O4) that the
// plan alone decides, by the rules that made them (see the package
// comment): every resident stage is a contraction that agrees with its
// kernel's weight cache and block, and every stage in its epilogue keeps
// the epilogue rule (epilogueScope.admit) at the batch group and the axes
// that the plan records, and says whose epilogue it is in. The lowering
// calls it before it emits a kernel, and fails with its error rather than
// miscompile. The other promise, that a result kept on chip is read by
// the blocks that wrote it, depends on where the lowering starts each
// stage's tiles, and the lowering checks it.
func (pl *Plan) Verify() error {
	for _, k := range pl.Kernels {
		var ix *stageIndex
		for _, t := range k.Stages {
			s := pl.Schedules[t]
			if s == nil {
				continue
			}
			if s.EpilogueOf != nil {
				r := pl.Schedules[s.EpilogueOf]
				if r == nil || r.Resident == nil || !slices.Contains(r.Resident.Epilogue, t) {
					return fmt.Errorf("stage %s: the plan computes it in the epilogue of %s, which does not compute it", t.Name, s.EpilogueOf.Name)
				}
			}
			if s.Resident == nil {
				continue
			}
			if ix == nil {
				ix = newStageIndex(k)
			}
			if err := pl.verifyResident(k, ix, t, s.Resident); err != nil {
				return fmt.Errorf("stage %s: %w", t.Name, err)
			}
		}
	}
	return nil
}

// verifyResident checks resident stage t (rs) of kernel k (ix): see Verify.
func (pl *Plan) verifyResident(k *Kernel, ix *stageIndex, t *te.Tensor, rs *schedule.Resident) error {
	d, ok := contraction.Of(t)
	if !ok {
		return errors.New("the plan keeps its weights on chip, but it is not a resident contraction")
	}
	group, wc := max(rs.Group, 1), k.Cache
	switch {
	case wc == nil:
		return errors.New("the plan keeps its weights on chip, but its kernel has no weight cache")
	case rs.TileF*rs.Split != pl.Threads:
		return fmt.Errorf("the plan's %d × %d threads of a resident tile are not its block of %d", rs.Split, rs.TileF, pl.Threads)
	case d.Batch%group != 0 || len(rs.Keys)*group != d.Batch:
		return fmt.Errorf("the plan's %d slice families of %d batch entries each do not cover its batch of %d", len(rs.Keys), group, d.Batch)
	case wc.SliceFloats != group*d.K*rs.TileF:
		return fmt.Errorf("the weight cache's slices of %d floats are not the %d of %d batch entries × K=%d × %d columns", wc.SliceFloats, group*d.K*rs.TileF, group, d.K, rs.TileF)
	}
	if len(rs.EpilogueAxes) != len(rs.Epilogue) || len(rs.EpilogueGroup) != len(rs.Epilogue) {
		return fmt.Errorf("the plan gives %d stages in its epilogue %d axis maps and %d groups", len(rs.Epilogue), len(rs.EpilogueAxes), len(rs.EpilogueGroup))
	}
	cols := append(append([]*te.Var{}, d.MAxes...), d.NAxes...)
	sc := newEpilogueScope(pl, k, ix, t, d)
	for e, u := range rs.Epilogue {
		axes := rs.EpilogueAxes[e]
		j, inKernel := ix.pos[u]
		switch {
		case !oneToOne(u.Axes, cols, axes):
			return fmt.Errorf("epilogue stage %s: its axes do not correspond one to one to the columns of %s", u.Name, t.Name)
		case !inKernel || j <= ix.pos[t]:
			return fmt.Errorf("epilogue stage %s is not a later stage of its kernel", u.Name)
		case pl.Schedules[u].EpilogueOf != t:
			return fmt.Errorf("epilogue stage %s: the plan does not say it is computed in the epilogue of %s", u.Name, t.Name)
		}
		cd, err := sc.admit(pl, j)
		if err != nil {
			return err
		}
		if !maps.Equal(cd.axes, axes) {
			return fmt.Errorf("epilogue stage %s reads %s at other columns than the plan maps its axes to", u.Name, t.Name)
		}
		if cd.lo/group != rs.EpilogueGroup[e] || cd.hi/group != rs.EpilogueGroup[e] {
			return fmt.Errorf("epilogue stage %s reads batch entries %d to %d of %s, not only those of its group %d", u.Name, cd.lo, cd.hi, t.Name, rs.EpilogueGroup[e])
		}
		sc.in[u] = cd
	}
	return nil
}

// oneToOne reports whether m maps the axes of one tensor one to one onto
// cols, each to an axis of the same extent.
func oneToOne(axes, cols []*te.Var, m map[*te.Var]*te.Var) bool {
	if len(axes) != len(cols) || len(m) != len(axes) {
		return false
	}
	hit := map[*te.Var]bool{}
	for _, v := range axes {
		a, ok := m[v]
		if !ok || hit[a] || !slices.Contains(cols, a) || a.Extent != v.Extent {
			return false
		}
		hit[a] = true
	}
	return true
}
