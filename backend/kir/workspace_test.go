package kir

import (
	"cmp"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"tec/te"
)

// wsModule builds a module over temporaries of the given sizes (in f32
// elements) from kernels written as strings of steps: "w0" stores temp 0,
// "r1" loads temp 1, "|" is a grid sync, "(" and ")" enclose a serial
// loop. Every access is by one thread at element 0.
func wsModule(sizes []int, kernels ...[]string) *Module {
	m := &Module{Name: "ws", TempsInWorkspace: true}
	for i, n := range sizes {
		m.Buffers = append(m.Buffers, &Buffer{Name: string(rune('a' + i)), Role: Temp, DType: te.F32, Shape: []int{n}})
	}
	for ki, steps := range kernels {
		k := &Kernel{Name: "k" + string(rune('0'+ki)), Grid: Grid{Resident: true}, Block: 32}
		used := map[*Buffer]bool{}
		stack := [][]Stmt{nil}
		push := func(s Stmt) { stack[len(stack)-1] = append(stack[len(stack)-1], s) }
		for _, st := range steps {
			switch st[0] {
			case '|':
				push(&GridSync{})
			case '(':
				stack = append(stack, nil)
			case ')':
				body := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				push(&For{Var: NewVar("i", te.I32), Kind: Serial, Lo: I(0), Hi: I(2), Step: 1, Body: body})
			default:
				b := m.Buffers[st[1]-'0']
				used[b] = true
				if st[0] == 'w' {
					push(&Store{Buf: b, Index: I(0), Value: F(1)})
				} else {
					push(&Let{Var: NewVar("v", te.F32), Value: Ld(b, I(0))})
				}
			}
		}
		k.Body = stack[0]
		for _, b := range m.Buffers {
			if used[b] {
				k.Params = append(k.Params, b)
			}
		}
		m.Kernels = append(m.Kernels, k)
	}
	return m
}

func TestWorkspaceLayout(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sizes   []int
		kernels [][]string
		epochs  []Epochs // per temporary
		share   [][2]int // pairs of temporaries that must share bytes
		size    int64
	}{{
		name:    "chain of kernels",
		sizes:   []int{64, 64, 64},
		kernels: [][]string{{"w0"}, {"r0", "w1"}, {"r1", "w2"}},
		epochs:  []Epochs{{1, 2}, {2, 3}, {3, 3}},
		share:   [][2]int{{0, 2}},
		size:    512,
	}, {
		name:    "grid syncs split a kernel into epochs",
		sizes:   []int{64, 64, 64},
		kernels: [][]string{{"w0", "|", "r0", "w1", "|", "r1", "w2", "|", "r2"}},
		epochs:  []Epochs{{1, 2}, {2, 3}, {3, 4}},
		share:   [][2]int{{0, 2}},
		size:    512,
	}, {
		name:    "a loop with a grid sync spans all its epochs",
		sizes:   []int{64, 64, 64},
		kernels: [][]string{{"(", "w0", "|", "r0", "w1", ")", "|", "r1", "w2"}},
		epochs:  []Epochs{{1, 2}, {1, 3}, {3, 3}},
		share:   [][2]int{{0, 2}},
		size:    512,
	}, {
		name:    "the largest first, a small one in a gap",
		sizes:   []int{256, 64, 64, 128},
		kernels: [][]string{{"w0"}, {"r0", "w1"}, {"r1", "w2", "w3"}, {"r2", "r3"}},
		epochs:  []Epochs{{1, 2}, {2, 3}, {3, 4}, {3, 4}},
		share:   [][2]int{{0, 3}, {0, 2}},
		size:    1280,
	}, {
		name:    "an untouched temporary takes no room",
		sizes:   []int{64, 64},
		kernels: [][]string{{"w0"}},
		epochs:  []Epochs{{1, 1}},
		size:    256,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			m := wsModule(tc.sizes, tc.kernels...)
			spans := m.TempEpochs()
			for i, want := range tc.epochs {
				if got := spans[m.Buffers[i]]; got != want {
					t.Errorf("epochs of %s = %v, want %v", m.Buffers[i].Name, got, want)
				}
			}
			offsets, size := m.WorkspaceLayout()
			if size != tc.size {
				t.Errorf("size = %d, want %d", size, tc.size)
			}
			overlap := func(x, y *Buffer) bool {
				return offsets[x] < offsets[y]+y.Bytes() && offsets[y] < offsets[x]+x.Bytes()
			}
			for _, p := range tc.share {
				if x, y := m.Buffers[p[0]], m.Buffers[p[1]]; !overlap(x, y) {
					t.Errorf("%s at %d and %s at %d do not share bytes", x.Name, offsets[x], y.Name, offsets[y])
				}
			}
			// Whatever else: no two temporaries live together share bytes.
			for i, x := range m.Buffers {
				if offsets[x]%WorkspaceAlign != 0 {
					t.Errorf("%s at %d is not aligned", x.Name, offsets[x])
				}
				for _, y := range m.Buffers[i+1:] {
					sx, okx := spans[x]
					sy, oky := spans[y]
					if okx && oky && sx.Meets(sy) && overlap(x, y) {
						t.Errorf("%s %v at %d and %s %v at %d are live together and overlap", x.Name, sx, offsets[x], y.Name, sy, offsets[y])
					}
				}
			}
		})
	}
}

func TestOverlapping(t *testing.T) {
	m := wsModule([]int{64, 64, 64}, []string{"w0", "|", "r0", "w1", "|", "r1", "w2"}, []string{"r2"})
	offsets, _ := m.WorkspaceLayout()
	a, b, c := m.Buffers[0], m.Buffers[1], m.Buffers[2]
	if offsets[a] != offsets[c] {
		t.Fatalf("a at %d, c at %d: want them to share", offsets[a], offsets[c])
	}
	got := Overlapping(m.Kernels[0], offsets)
	if !got[a] || !got[c] || got[b] || len(got) != 2 {
		t.Errorf("Overlapping(k0) = %v, want a and c", got)
	}
	if got := Overlapping(m.Kernels[1], offsets); len(got) != 0 {
		t.Errorf("Overlapping(k1) = %v, want none", got)
	}
}

// TestPlacedTempsLowestFree checks the indexed search for the lowest free
// offset against a gap search over every placed temporary live with one,
// on random spans and sizes.
func TestPlacedTempsLowestFree(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 1))
	type placed struct {
		live Epochs
		r    byteRange
	}
	for trial := range 100 {
		spans := map[*Buffer]Epochs{}
		var temps []*Buffer
		for range 80 {
			b := &Buffer{Role: Temp, DType: te.F32, Shape: []int{1}}
			first := rng.IntN(40) - 5
			spans[b] = Epochs{first, first + rng.IntN(1+rng.IntN(30))}
			temps = append(temps, b)
		}
		ps := newPlacedTemps(spans)
		var all []placed
		for k, b := range temps {
			e := spans[b]
			n := int64(rng.IntN(4))
			var clash []byteRange
			for _, p := range all {
				if p.live.Meets(e) {
					clash = append(clash, p.r)
				}
			}
			slices.SortFunc(clash, func(x, y byteRange) int { return cmp.Compare(x.lo, y.lo) })
			var want int64
			for _, r := range clash {
				if want+n <= r.lo {
					break
				}
				want = max(want, r.hi)
			}
			if got := ps.lowestFree(e, n); got != want {
				t.Fatalf("trial %d, temporary %d, span %v, %d bytes: offset %d, want %d", trial, k, e, n, got, want)
			}
			if n > 0 {
				// Sometimes somewhere else than the lowest free offset, so
				// that the placed ranges overlap and leave gaps.
				off := want + int64(rng.IntN(2))*int64(rng.IntN(5))
				r := byteRange{off, off + n}
				ps.add(e, r)
				all = append(all, placed{e, r})
			}
		}
	}
}

// TestByteRangesAdd checks the union of byte ranges against a set of bytes.
func TestByteRangesAdd(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 3))
	for trial := range 200 {
		var s byteRanges
		bytes := map[int64]bool{}
		for range 1 + rng.IntN(12) {
			lo := int64(rng.IntN(40))
			r := byteRange{lo, lo + 1 + int64(rng.IntN(6))}
			s = s.add(r)
			for x := r.lo; x < r.hi; x++ {
				bytes[x] = true
			}
		}
		var want byteRanges
		for x := range int64(60) {
			switch {
			case !bytes[x]:
			case len(want) > 0 && want[len(want)-1].hi == x:
				want[len(want)-1].hi++
			default:
				want = append(want, byteRange{x, x + 1})
			}
		}
		if !slices.Equal(s, want) {
			t.Fatalf("trial %d: %v, want %v", trial, s, want)
		}
	}
}

// TestOverlappingSweep checks Overlapping's sweep against a test of every
// pair, on random offsets.
func TestOverlappingSweep(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 2))
	for trial := range 200 {
		k := &Kernel{}
		offsets := map[*Buffer]int64{}
		for range 1 + rng.IntN(12) {
			b := &Buffer{Role: Temp, DType: te.F32, Shape: []int{rng.IntN(5)}}
			offsets[b] = 4 * int64(rng.IntN(12))
			k.Params = append(k.Params, b)
		}
		want := map[*Buffer]bool{}
		for i, x := range k.Params {
			for _, y := range k.Params[i+1:] {
				if x.Bytes() > 0 && y.Bytes() > 0 && offsets[x] < offsets[y]+y.Bytes() && offsets[y] < offsets[x]+x.Bytes() {
					want[x], want[y] = true, true
				}
			}
		}
		if got := Overlapping(k, offsets); !maps.Equal(got, want) {
			t.Fatalf("trial %d: Overlapping gives %d temporaries, want %d", trial, len(got), len(want))
		}
	}
}
