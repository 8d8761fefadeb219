package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"tec/backend/kir"
	"tec/driver"
	"tec/lang/syntax"
	"tec/te"
)

// defaultLongRun is the estimated time above which tec run states its
// estimate before it starts and, on a terminal, shows a progress bar.
const defaultLongRun = 3 * time.Second

// progressInterval is the least time between two redraws of the bar.
const progressInterval = 200 * time.Millisecond

// longRun returns the estimated time above which a run is long.
func (e *env) longRunThreshold() time.Duration {
	if e.longRun > 0 {
		return e.longRun
	}
	return defaultLongRun
}

// terminal reports whether w is a terminal.
func (e *env) terminal(w io.Writer) bool {
	if e.isTerminal != nil {
		return e.isTerminal(w)
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// workOf measures the simulator's work in one number: operations and
// elements (4 bytes) moved to and from global memory.
func workOf(c kir.Counts) float64 {
	return float64(c.FLOPs) + float64(c.LoadBytes+c.StoreBytes)/4
}

// progressBar draws, on a terminal, how far a simulation has got against
// the static count of its work (backend/report).
type progressBar struct {
	w           io.Writer
	label       string
	total       float64
	start, last time.Time
	now         func() time.Time
}

func newProgressBar(w io.Writer, label string, total kir.Counts, now func() time.Time) *progressBar {
	t := now()
	p := &progressBar{w: w, label: label, total: workOf(total), start: t, last: t, now: now}
	p.draw(0, 0)
	return p
}

// update redraws the bar for the work done, at most every
// progressInterval; it is the simulator's progress callback.
func (p *progressBar) update(done kir.Counts) {
	t := p.now()
	if t.Sub(p.last) < progressInterval {
		return
	}
	p.last = t
	frac := 0.0
	if p.total > 0 {
		// The static count can miss work a data-dependent condition
		// adds: the bar stops short of full until the run ends.
		frac = min(workOf(done)/p.total, 0.99)
	}
	p.draw(frac, t.Sub(p.start))
}

// draw writes the bar over the current line.
func (p *progressBar) draw(frac float64, elapsed time.Duration) {
	const width = 30
	n := int(frac * width)
	eta := ""
	if frac > 0.01 && elapsed > time.Second {
		left := time.Duration(float64(elapsed) * (1 - frac) / frac)
		eta = ", about " + formatClock(left) + " left"
	}
	fmt.Fprintf(p.w, "\r%s [%s%s] %3.0f%%  %s elapsed%s\x1b[K", p.label, strings.Repeat("#", n), strings.Repeat("-", width-n), frac*100, formatClock(elapsed), eta)
}

// finish clears the bar's line.
func (p *progressBar) finish() {
	fmt.Fprint(p.w, "\r\x1b[K")
}

// formatClock formats a duration as m:ss or h:mm:ss.
func formatClock(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// checkWork returns the estimated seconds of running prog (comp, its
// kernels, on sim and cuda) on dev, and refuses a run estimated to take
// longer than --max-time. The hint offers -D only where the file the
// program came from has constants to set: an imported model has none.
func (e *env) checkWork(dev driver.Device, prog *te.Program, comp *driver.Compiled, rf *runFlags) (float64, error) {
	secs := dev.Seconds(prog, comp)
	if rf.maxTime == 0 || secs <= rf.maxTime.Seconds() {
		return secs, nil
	}
	more := "allow it more time with --max-time " + suggestMaxTime(secs) + " (0: no limit)"
	hint := "use smaller sizes (-D NAME=VALUE), or " + more
	if !e.hasConstants() {
		hint = "the file has no constants to make the model smaller: " + more
	}
	return secs, fmt.Errorf("model %s takes about %.2g operations, some %s on %s; refusing a run estimated over %v"+hintSep+"%s",
		prog.Name, prog.Work().Total(), formatSeconds(secs), rf.device, rf.maxTime, hint)
}

// suggestMaxTime returns a --max-time that admits a run estimated at secs:
// half as long again, rounded up to a whole minute or hour.
func suggestMaxTime(secs float64) string {
	d := time.Duration(math.Min(secs*1.5, 1e6*3600) * float64(time.Second))
	if d > 2*time.Hour {
		return fmt.Sprintf("%dh", int64(math.Ceil(d.Hours())))
	}
	return fmt.Sprintf("%dm", int64(math.Ceil(d.Minutes())))
}

// hasConstants reports whether the last file compiled declares a constant
// that -D could set; true where that cannot be told.
func (e *env) hasConstants() bool {
	if e.source.src == nil {
		return true
	}
	f, err := syntax.Parse(e.source.file, e.source.src)
	if err != nil {
		return true
	}
	for _, d := range f.Decls {
		if _, ok := d.(*syntax.ConstDecl); ok {
			return true
		}
	}
	return false
}

// formatSeconds formats an estimate of seconds in the unit that suits it.
func formatSeconds(s float64) string {
	switch {
	case s < 120:
		return fmt.Sprintf("%.0f seconds", s)
	case s < 2*3600:
		return fmt.Sprintf("%.0f minutes", s/60)
	case s < 2*86400:
		return fmt.Sprintf("%.0f hours", s/3600)
	case s < 2*365*86400:
		return fmt.Sprintf("%.0f days", s/86400)
	}
	return fmt.Sprintf("%.2g years", s/(365*86400))
}
