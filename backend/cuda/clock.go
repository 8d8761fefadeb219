package cuda

import (
	"fmt"
	"strconv"
	"strings"

	"tec/backend/kir"
)

// The stage clock times a model's kernels stage by stage on the GPU, where
// a profiler sees only whole kernels and a persistent kernel runs the
// whole model. The emitted code carries it behind TEC_STAGE_CLOCK: built
// without that macro, every mark is empty and the kernels are as before;
// built with -DTEC_STAGE_CLOCK, thread 0 of block 0 reads the GPU's
// global nanosecond timer (%globaltimer) at the start of each kernel and
// after each of its grid syncs, and thread 0 of every block at its end.
//
// A segment is what a kernel runs between two of those readings: from its
// start or a grid sync to the next grid sync, and from its last grid sync
// to the end of its last block. Block 0 passes a grid sync when every
// block has reached it, so a segment's time is that of its slowest block
// plus the sync. Grid syncs inside a stage written as a shared function
// (outline.go) do not end a segment. A segment inside a loop is timed on
// every pass and its passes counted; a segment's stages are those written
// between its two marks. Between kernels, a launch segment is the time
// from one kernel's last block to the next kernel's first reading.
//
// MODEL_clock_segments, MODEL_clock_kernel, MODEL_clock_stages,
// MODEL_clock_reset and MODEL_clock_read (the header documents them) give
// the segments and their times to the host; the runner's --stage-clock
// writes them as JSON (docs/gpu.md, "The stage clock").

// clockPlan is the segments of every launch of a module.
type clockPlan struct {
	// segments[i] are the stage names of launch i's segments, in order;
	// the last ends at the kernel's end.
	segments [][][]string
	// width is the most segments of any launch.
	width int
}

// newClockPlan returns the segments of m's launches, where groups maps
// each kernel to the one whose function it launches and n.stages says
// which stages are shared functions.
func newClockPlan(m *kir.Module, groups map[*kir.Kernel]*kir.Kernel, n *names) *clockPlan {
	p := &clockPlan{}
	for _, k := range m.Kernels {
		leader := k
		if f := groups[k]; f != nil {
			leader = f
		}
		c := &segmenter{stages: n.stages, segs: [][]string{nil}}
		c.walk(k.Body, leader.Body, "")
		p.segments = append(p.segments, c.segs)
		p.width = max(p.width, len(c.segs))
	}
	return p
}

// segmenter splits a kernel's stages into the stage clock's segments.
type segmenter struct {
	stages *outlined
	segs   [][]string
}

// add puts stage name in the current segment, once.
func (c *segmenter) add(name string) {
	cur := &c.segs[len(c.segs)-1]
	for _, s := range *cur {
		if s == name {
			return
		}
	}
	*cur = append(*cur, name)
}

// walk visits body, the statements of a kernel, beside written, the same
// statements of the kernel whose function is written for it (identical
// code, perhaps other names): a grid sync ends a segment unless it is in
// a stage that written calls as a shared function. stage is the stage
// that encloses body, if any.
func (c *segmenter) walk(body, written []kir.Stmt, stage string) {
	for i, s := range body {
		var w kir.Stmt = s
		if len(written) == len(body) {
			w = written[i]
		}
		switch s := s.(type) {
		case *kir.Stage:
			c.add(s.Name)
			ws, ok := w.(*kir.Stage)
			if !ok {
				ws = s
			}
			if c.stages.call(ws) == nil {
				c.walk(s.Body, ws.Body, s.Name)
			}
		case *kir.GridSync:
			c.segs = append(c.segs, nil)
			if stage != "" {
				c.add(stage)
			}
		case *kir.If:
			wi, ok := w.(*kir.If)
			if !ok {
				wi = s
			}
			c.walk(s.Then, wi.Then, stage)
			c.walk(s.Else, wi.Else, stage)
		case *kir.For:
			wf, ok := w.(*kir.For)
			if !ok {
				wf = s
			}
			c.walk(s.Body, wf.Body, stage)
		}
	}
}

// clockDevice is the device side of the stage clock: its arrays and the
// marks the kernels carry, empty unless TEC_STAGE_CLOCK is defined.
func (p *clockPlan) device() string {
	launches, width := max(len(p.segments), 1), max(p.width, 1)
	return fmt.Sprintf(`
// The stage clock (-DTEC_STAGE_CLOCK; docs/gpu.md): thread 0 of block 0
// reads the global timer at each kernel's start and after each grid sync,
// thread 0 of every block at the block's end. Without the macro the marks
// are empty.
#ifdef TEC_STAGE_CLOCK
static __device__ int tec_clock_launch;  // the launch running, set before each
static __device__ unsigned long long tec_clock_ns[%[1]d][%[2]d];  // per launch and segment, summed over passes
static __device__ unsigned int tec_clock_passes[%[1]d][%[2]d];
static __device__ unsigned long long tec_clock_start[%[1]d], tec_clock_last[%[1]d], tec_clock_end[%[1]d];

static __device__ __forceinline__ unsigned long long tec_clock_now() {
  unsigned long long t;
  asm volatile("mov.u64 %%0, %%%%globaltimer;" : "=l"(t));
  return t;
}
#define TEC_CLOCK_START()                                    \
  const int tec_clock_l = tec_clock_launch;                  \
  unsigned long long tec_clock_t = tec_clock_now();          \
  if (blockIdx.x == 0 && threadIdx.x == 0) tec_clock_start[tec_clock_l] = tec_clock_t
#define TEC_CLOCK_MARK(j)                                    \
  if (blockIdx.x == 0 && threadIdx.x == 0) {                 \
    unsigned long long tec_clock_now_ = tec_clock_now();     \
    tec_clock_ns[tec_clock_l][j] += tec_clock_now_ - tec_clock_t; \
    tec_clock_passes[tec_clock_l][j]++;                      \
    tec_clock_t = tec_clock_now_;                            \
  }
#define TEC_CLOCK_END()                                      \
  __syncthreads();                                           \
  if (threadIdx.x == 0) {                                    \
    atomicMax(&tec_clock_end[tec_clock_l], tec_clock_now()); \
    if (blockIdx.x == 0) tec_clock_last[tec_clock_l] = tec_clock_t; \
  }
#else
#define TEC_CLOCK_START()
#define TEC_CLOCK_MARK(j)
#define TEC_CLOCK_END()
#endif
`, launches, width)
}

// host writes the stage clock's C interface (header documents it) and
// the launch hook MODEL_run calls, for m's launches named by kernels.
func (p *clockPlan) host(b *strings.Builder, prefix string, kernels []string) {
	var names, stages []string
	for i, segs := range p.segments {
		for j, s := range segs {
			if i > 0 && j == 0 {
				names, stages = append(names, strconv.Quote(kernels[i])), append(stages, `""`)
			}
			names, stages = append(names, strconv.Quote(kernels[i])), append(stages, strconv.Quote(strings.Join(s, ",")))
		}
	}
	count := len(names)
	if count == 0 {
		names, stages = []string{`""`}, []string{`""`}
	}
	fmt.Fprintf(b, `#ifdef TEC_STAGE_CLOCK
// The stage clock's segments, in launch order: each launch's segments,
// preceded (after the first) by the launch segment before it, whose
// stages are "".
static const char* const tec_clock_kernels[] = {%[2]s};
static const char* const tec_clock_stages[] = {%[3]s};
static const int tec_clock_counts[] = {%[5]s};

static cudaError_t tec_clock_launching(int launch, cudaStream_t stream) {
  static int launches[%[6]d];
  launches[launch] = launch;
  return cudaMemcpyToSymbolAsync(tec_clock_launch, &launches[launch], sizeof(int), 0, cudaMemcpyHostToDevice, stream);
}

extern "C" int %[1]s_clock_segments(void) { return %[4]d; }
extern "C" const char* %[1]s_clock_kernel(int i) { return i >= 0 && i < %[4]d ? tec_clock_kernels[i] : nullptr; }
extern "C" const char* %[1]s_clock_stages(int i) { return i >= 0 && i < %[4]d ? tec_clock_stages[i] : nullptr; }

extern "C" cudaError_t %[1]s_clock_reset(cudaStream_t stream) {
  void* p;
  TEC_CHECK(cudaGetSymbolAddress(&p, tec_clock_ns), "the stage clock");
  TEC_CHECK(cudaMemsetAsync(p, 0, sizeof tec_clock_ns, stream), "clearing the stage clock");
  TEC_CHECK(cudaGetSymbolAddress(&p, tec_clock_passes), "the stage clock");
  TEC_CHECK(cudaMemsetAsync(p, 0, sizeof tec_clock_passes, stream), "clearing the stage clock");
  TEC_CHECK(cudaGetSymbolAddress(&p, tec_clock_end), "the stage clock");
  TEC_CHECK(cudaMemsetAsync(p, 0, sizeof tec_clock_end, stream), "clearing the stage clock");
  return cudaSuccess;
}

extern "C" cudaError_t %[1]s_clock_read(double* ns, int* passes, cudaStream_t stream) {
  static unsigned long long t[%[6]d][%[7]d], start[%[6]d], last[%[6]d], end[%[6]d];
  static unsigned int n[%[6]d][%[7]d];
  TEC_CHECK(cudaStreamSynchronize(stream), "running the kernels");
  TEC_CHECK(cudaMemcpyFromSymbol(t, tec_clock_ns, sizeof t), "reading the stage clock");
  TEC_CHECK(cudaMemcpyFromSymbol(n, tec_clock_passes, sizeof n), "reading the stage clock");
  TEC_CHECK(cudaMemcpyFromSymbol(start, tec_clock_start, sizeof start), "reading the stage clock");
  TEC_CHECK(cudaMemcpyFromSymbol(last, tec_clock_last, sizeof last), "reading the stage clock");
  TEC_CHECK(cudaMemcpyFromSymbol(end, tec_clock_end, sizeof end), "reading the stage clock");
  int s = 0;
  for (int l = 0; l < %[6]d; l++) {
    if (l > 0) {
      ns[s] = (double)(long long)(start[l] - end[l - 1]);
      passes[s++] = 1;
    }
    for (int j = 0; j + 1 < tec_clock_counts[l]; j++) {
      ns[s] = (double)t[l][j];
      passes[s++] = (int)n[l][j];
    }
    ns[s] = (double)(long long)(end[l] - last[l]);
    passes[s++] = 1;
  }
  return cudaSuccess;
}
#endif

`, prefix, strings.Join(names, ", "), strings.Join(stages, ", "), count, counts(p.segments), max(len(p.segments), 1), max(p.width, 1))
}

// counts returns the number of segments of each launch, comma-separated.
func counts(segments [][][]string) string {
	out := make([]string, len(segments))
	for i, s := range segments {
		out[i] = strconv.Itoa(len(s))
	}
	if len(out) == 0 {
		return "0"
	}
	return strings.Join(out, ", ")
}
