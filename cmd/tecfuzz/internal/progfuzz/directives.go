package progfuzz

import (
	"regexp"
	"strconv"
	"strings"

	"tec/precision"
	"tec/te"
)

// Besides "# tol NAME ATOL", a generated program carries its other
// settings in comment lines of its own, so that a reduced or saved program
// reproduces alone:
//
//	# precision f16          build at --precision f16, compare with the reference of the transformed program
//	# feed pos3 2 7 0        the values of an i32 input, in row-major order (the rest as Feeds fills them)
//	# expect outside pos3    every run stops with an "is outside" error naming pos3
var (
	precisionLine = regexp.MustCompile(`(?m)^# precision (\S+)$`)
	feedLine      = regexp.MustCompile(`(?m)^# feed (\S+)((?: -?[0-9]+)+)$`)
	expectLine    = regexp.MustCompile(`(?m)^# expect outside (\S+)$`)
	// directive matches every comment line the generator writes for Run,
	// which the reducer keeps.
	directive = regexp.MustCompile(`^# (tol|precision|feed|expect) `)
)

// programPrecision returns the precision a "# precision" line asks for,
// f32 where there is none or it names no mode.
func programPrecision(src []byte) precision.Mode {
	m := precisionLine.FindSubmatch(src)
	if m == nil {
		return precision.F32
	}
	mode, err := precision.Parse(string(m[1]))
	if err != nil {
		return precision.F32
	}
	return mode
}

// expectedOutside returns the name of the input whose planted value must
// stop every run with an "is outside" error, or "".
func expectedOutside(src []byte) string {
	if m := expectLine.FindSubmatch(src); m != nil {
		return string(m[1])
	}
	return ""
}

// applyFeeds overwrites the elements of the feeds that "# feed" lines
// give: a line for a tensor the program does not have, or values past its
// end (a reduced program's smaller tensor), are left out.
func applyFeeds(src []byte, in map[string]*te.Array) {
	for _, m := range feedLine.FindAllSubmatch(src, -1) {
		a := in[string(m[1])]
		if a == nil {
			continue
		}
		for i, f := range strings.Fields(string(m[2])) {
			v, err := strconv.Atoi(f)
			if err != nil || i >= len(a.Data) {
				break
			}
			a.Data[i] = float64(v)
		}
	}
}
