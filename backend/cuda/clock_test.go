package cuda

import (
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"tec/backend/internal/dedup"
	"tec/backend/internal/kirtest"
	"tec/backend/kir"
)

// TestStageClock checks the stage clock's segments: which stages each
// segment of each launch holds, and that every kernel function carries
// one mark per grid sync that ends a segment (clock.go).
func TestStageClock(t *testing.T) {
	ms := modules(t)
	inner := kirtest.RepeatedStages() // a grid sync inside each shared stage function
	inner.Name = "inner"
	for _, st := range inner.Kernels[0].Body {
		if s, ok := st.(*kir.Stage); ok {
			s.Body = append([]kir.Stmt{&kir.GridSync{}}, s.Body...)
		}
	}
	single := kirtest.RepeatedStages() // ... and inside a stage written inline
	single.Name = "single"
	k := single.Kernels[0]
	k.Body = k.Body[len(k.Body)-1:]
	last := k.Body[0].(*kir.Stage)
	last.Body = append(last.Body[:2:2], append([]kir.Stmt{&kir.GridSync{}}, last.Body[2:]...)...)
	ms["inner"], ms["single"] = inner, single
	for _, tc := range []struct {
		module string
		want   [][][]string
	}{
		{"features", [][][]string{{{"init"}, {"acc"}, {"y"}}, {{"misc"}}}},
		{"stages", [][][]string{{{"t0"}, {"t1"}, {"y"}}}},
		{"inner", [][][]string{{{"t0"}, {"t1"}, {"y"}}}},
		{"single", [][][]string{{{"y"}, {"y"}}}},
		{"counters", [][][]string{{{"counters"}, {"y", "z"}}}},
		{"softmax", [][][]string{{{"m"}}, {{"e"}}, {{"s"}}, {{"y"}}}},
	} {
		m := ms[tc.module]
		files, err := Emit(m, sm80(t))
		if err != nil {
			t.Fatalf("%s: %v", tc.module, err)
		}
		n := newNames(m, m.Layout())
		groups := dedup.GroupsLaidOut(m, n.offsets)
		n.stages = outline(m, groups, n)
		if got := newClockPlan(m, groups, n).segments; !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: segments %q, want %q", tc.module, got, tc.want)
		}
		checkMarks(t, tc.module, string(files.Source.Data))
	}
	for name, m := range ms {
		files, err := Emit(m, sm80(t))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		checkMarks(t, name, string(files.Source.Data))
		if !strings.Contains(string(files.Header.Data), "_clock_read(double *ns, int *passes, cudaStream_t stream);") {
			t.Errorf("%s: the header does not declare the stage clock's functions", name)
		}
	}
}

var (
	kernelStart = regexp.MustCompile(`(?m)^static __global__ `)
	clockMark   = regexp.MustCompile(`TEC_CLOCK_MARK\((\d+)\);`)
	clockCounts = regexp.MustCompile(`tec_clock_counts\[\] = \{([0-9, ]*)\}`)
)

// checkMarks checks that each kernel function of the source src starts
// and ends the clock once and numbers its marks 0, 1, ... up to one less
// than the segments its launch has, as tec_clock_counts gives them.
func checkMarks(t *testing.T, module, src string) {
	t.Helper()
	counts := clockCounts.FindStringSubmatch(src)
	if counts == nil {
		t.Errorf("%s: no tec_clock_counts", module)
		return
	}
	segs := map[int]bool{}
	for _, c := range strings.Split(counts[1], ", ") {
		n, err := strconv.Atoi(c)
		if err != nil {
			t.Fatalf("%s: tec_clock_counts %q: %v", module, counts[1], err)
		}
		segs[n] = true
	}
	host := strings.Index(src, "// ---- Host side")
	starts := kernelStart.FindAllStringIndex(src[:host], -1)
	if len(starts) == 0 {
		t.Errorf("%s: no kernels", module)
	}
	for i, s := range starts {
		end := host
		if i+1 < len(starts) {
			end = starts[i+1][0]
		}
		body := src[s[0]:end]
		if strings.Count(body, "TEC_CLOCK_START();") != 1 || strings.Count(body, "TEC_CLOCK_END();") != 1 {
			t.Errorf("%s: kernel %d does not start and end the clock once", module, i)
		}
		marks := clockMark.FindAllStringSubmatch(body, -1)
		for j, mk := range marks {
			if mk[1] != strconv.Itoa(j) {
				t.Errorf("%s: kernel %d: mark %d is numbered %s", module, i, j, mk[1])
			}
		}
		if !segs[len(marks)+1] {
			t.Errorf("%s: kernel %d has %d marks; no launch has %d segments (%s)", module, i, len(marks), len(marks)+1, counts[1])
		}
	}
}
