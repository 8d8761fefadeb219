// calibrate.cu measures, on the GPU it runs on, the figures the cost model
// takes from its GPU description (gpu.Model) and that no datasheet gives:
//
//   - grid_sync: the cost of one cooperative-groups grid.sync() — what tec's
//     persistent kernels cross between stages (GridSyncCost) — at B blocks of
//     256 threads per SM, as the time of a kernel that crosses 2,000 of
//     them less that of one that crosses none, over 2,000;
//   - dram_read: the rate at which B blocks of 256 threads per SM read a 2 GiB
//     buffer (far past the L2) with 16-byte loads, F of them issued by each
//     thread before it uses any: below the plateau, bytes in flight over the
//     rate is the round trip under load (Little's law; DRAMLatency), and the
//     plateau is the bandwidth a stream reaches (against DRAMBandwidth);
//   - l2_read: the same loads, cached in the L2 only, over a 32 MiB buffer,
//     which stays in the L2, 64 times.
//
// Each figure is the median of 10 timed runs (CUDA events) after 3 warm-ups.
// It prints one JSON object per line, which bench/gpu/run.sh --calibrate
// appends to results.jsonl and bench/gpu/report.py tabulates.
//
//   nvcc -O3 -arch=sm_90 -o calibrate bench/gpu/calibrate.cu && ./calibrate
#include <algorithm>
#include <cooperative_groups.h>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace cg = cooperative_groups;

#define CHECK(call)                                                                      \
  do {                                                                                   \
    cudaError_t err_ = (call);                                                           \
    if (err_ != cudaSuccess) {                                                           \
      fprintf(stderr, "calibrate: %s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(err_)); \
      exit(1);                                                                           \
    }                                                                                    \
  } while (0)

__global__ void grid_syncs(int n) {
  cg::grid_group grid = cg::this_grid();
  for (int i = 0; i < n; i++) grid.sync();
}

// stream reads n 16-byte vectors reps times, F at a time per thread, all
// issued before any is used; out is written only where the sum hits a value
// the data never gives, so that the loads are kept. With L2 they are cached
// in the L2 only (ld.global.cg): a block's share of a 32 MiB buffer would
// otherwise stay in its SM's L1 from one pass to the next. The launch bounds name
// the blocks per SM: without them ptxas fits 8 blocks' registers (32 a
// thread) and adds each vector as it lands, with two or three in flight.
template <int F, int BPS, bool L2>
__global__ void __launch_bounds__(256, BPS) stream(const uint4* __restrict__ p, long long n, int reps, uint4* out) {
  long long tid = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  long long stride = (long long)gridDim.x * blockDim.x;
  uint4 acc = make_uint4(0, 0, 0, 0);
  for (int r = 0; r < reps; r++) {
    for (long long i = tid; i + (F - 1) * stride < n; i += F * stride) {
      uint4 v[F];
#pragma unroll
      for (int f = 0; f < F; f++) v[f] = L2 ? __ldcg(p + i + f * stride) : __ldg(p + i + f * stride);
#pragma unroll
      for (int f = 0; f < F; f++) {
        acc.x += v[f].x;
        acc.y += v[f].y;
        acc.z += v[f].z;
        acc.w += v[f].w;
      }
    }
  }
  if (acc.x == 1u && acc.y == 2u) out[tid] = acc;
}

template <typename Launch>
static float median_ms(Launch launch) {
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < 3; i++) launch();
  std::vector<float> ms;
  for (int i = 0; i < 10; i++) {
    CHECK(cudaEventRecord(start));
    launch();
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    float t;
    CHECK(cudaEventElapsedTime(&t, start, stop));
    ms.push_back(t);
  }
  CHECK(cudaGetLastError());
  std::sort(ms.begin(), ms.end());
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  return (ms[4] + ms[5]) / 2;
}

// read_rate times stream<F, BPS, L2> over n vectors, reps times.
template <int F, int BPS, bool L2>
static void read_rate(const char* what, const uint4* buf, long long n, int reps, uint4* out, int sms) {
  long long threads = (long long)sms * BPS * 256, chunk = F * threads;
  if (chunk > n / 4) return;  // too few steps per thread to time
  float ms = median_ms([&] { stream<F, BPS, L2><<<sms * BPS, 256>>>(buf, n, reps, out); });
  long long left = n % chunk, tail = left - (F - 1) * threads;
  double bytes = (double)reps * ((n - left) + F * std::max(0LL, tail)) * 16;
  double rate = bytes / (ms * 1e-3);
  double inflight = (double)chunk * 16;
  printf("{\"kind\": \"calibrate\", \"what\": \"%s\", \"blocks_per_sm\": %d, \"threads\": 256, "
         "\"loads_in_flight\": %d, \"bytes_in_flight\": %.0f, \"ms\": %.4f, \"tbps\": %.3f, "
         "\"latency_us\": %.3f}\n",
         what, BPS, F, inflight, ms, rate / 1e12, inflight / rate * 1e6);
}

template <int BPS, bool L2>
static void read_rates(const char* what, const uint4* buf, long long n, int reps, uint4* out, int sms) {
  read_rate<1, BPS, L2>(what, buf, n, reps, out, sms);
  read_rate<2, BPS, L2>(what, buf, n, reps, out, sms);
  read_rate<4, BPS, L2>(what, buf, n, reps, out, sms);
  read_rate<8, BPS, L2>(what, buf, n, reps, out, sms);
  read_rate<16, BPS, L2>(what, buf, n, reps, out, sms);
}

template <bool L2>
static void read_rates(const char* what, const uint4* buf, long long n, int reps, uint4* out, int sms) {
  read_rates<1, L2>(what, buf, n, reps, out, sms);
  read_rates<2, L2>(what, buf, n, reps, out, sms);
  read_rates<4, L2>(what, buf, n, reps, out, sms);
  read_rates<8, L2>(what, buf, n, reps, out, sms);
}

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  int sms = prop.multiProcessorCount;
  printf("{\"kind\": \"calibrate\", \"what\": \"device\", \"name\": \"%s\", \"sms\": %d, \"l2_bytes\": %d}\n",
         prop.name, sms, prop.l2CacheSize);

  // One grid.sync() at 1, 2, 4 and 8 blocks of 256 threads per SM.
  for (int bps : {1, 2, 4, 8}) {
    int per_sm = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, grid_syncs, 256, 0));
    if (per_sm < bps) continue;
    int n = 0;
    void* args[] = {&n};
    auto launch = [&] {
      CHECK(cudaLaunchCooperativeKernel((void*)grid_syncs, dim3(sms * bps), dim3(256), args, 0, 0));
    };
    float none = median_ms(launch);
    n = 2000;
    float many = median_ms(launch);
    printf("{\"kind\": \"calibrate\", \"what\": \"grid_sync\", \"blocks_per_sm\": %d, \"threads\": 256, "
           "\"us\": %.3f}\n",
           bps, (many - none) * 1e3 / 2000);
  }

  long long dram_n = (2LL << 30) / 16, l2_n = (32LL << 20) / 16;
  uint4 *buf, *out;
  CHECK(cudaMalloc(&buf, dram_n * 16));
  CHECK(cudaMemset(buf, 0, dram_n * 16));
  CHECK(cudaMalloc(&out, (size_t)sms * 8 * 256 * 16));
  read_rates<false>("dram_read", buf, dram_n, 1, out, sms);
  read_rates<true>("l2_read", buf, l2_n, 64, out, sms);
  CHECK(cudaFree(buf));
  CHECK(cudaFree(out));
  return 0;
}
