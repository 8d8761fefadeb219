// Standalone runner: reads the model's inputs and params from .npy files,
// runs the model on the GPU, writes its outputs as .npy files and, with
// --bench N, times it.
//
// usage: run [--inputs DIR] [--params DIR] [--outputs DIR] [--fill zeros|ones|random]
//            [--bench N] [--warmup N] [--device N] [--stage-clock FILE]
//
// Each input and param NAME is read from DIR/NAME.npy (float32, float16,
// int32 or bool, C order; float32 data is rounded for f16 and bf16 tensors);
// with --fill, missing files are filled instead. Each output NAME is written
// to DIR/NAME.npy (bf16 as float32). --bench N runs --warmup times, then N
// times, each timed with CUDA events, and prints the median, min and max.
// --stage-clock FILE, in a runner built with -DTEC_STAGE_CLOCK, then runs
// the model max(N, 5) more times with the stage clock cleared before each
// (docs/gpu.md, "The stage clock"), prints the segments that took the most
// time, and writes every segment's median time to FILE as JSON.
#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

// CHECK exits with a message naming the call if a CUDA call fails.
#define CHECK(call)                                                                        \
  do {                                                                                     \
    cudaError_t err_ = (call);                                                             \
    if (err_ != cudaSuccess) {                                                             \
      fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__, #call,            \
              cudaGetErrorName(err_), cudaGetErrorString(err_));                           \
      exit(1);                                                                             \
    }                                                                                      \
  } while (0)

// die prints "run: " and the message, and exits with status 1.
__attribute__((format(printf, 1, 2), noreturn)) static void die(const char* format, ...) {
  va_list args;
  va_start(args, format);
  fprintf(stderr, "run: ");
  vfprintf(stderr, format, args);
  fprintf(stderr, "\n");
  va_end(args);
  exit(1);
}

static const char* dtype_name(tec_dtype dt) {
  switch (dt) {
    case TEC_F32: return "f32";
    case TEC_F16: return "f16";
    case TEC_BF16: return "bf16";
    case TEC_I32: return "i32";
    case TEC_BOOL: return "bool";
  }
  return "?";
}

static std::string type_string(const tec_tensor_desc& t) {
  std::string s = dtype_name(t.dtype);
  s += "[";
  for (int i = 0; i < t.rank; i++) {
    if (i > 0) s += ", ";
    s += std::to_string(t.shape[i]);
  }
  return s + "]";
}

static size_t num_elements(const tec_tensor_desc& t) {
  size_t n = 1;
  for (int i = 0; i < t.rank; i++) n *= (size_t)t.shape[i];
  return n;
}

// ---- .npy files (NumPy format versions 1.0 to 3.0, little-endian, C order) ----

struct Npy {
  std::string descr;              // "<f4", "<f2", "<i4", "|b1"
  std::vector<long long> shape;
  std::vector<unsigned char> data;
};

// header_value returns the text after 'key': in a .npy header dictionary.
static std::string header_value(const std::string& h, const std::string& key, const std::string& path) {
  size_t k = h.find("'" + key + "'");
  if (k == std::string::npos) die("%s: the .npy header has no '%s'", path.c_str(), key.c_str());
  size_t colon = h.find(':', k);
  if (colon == std::string::npos) die("%s: malformed .npy header near '%s'", path.c_str(), key.c_str());
  size_t i = colon + 1;
  while (i < h.size() && h[i] == ' ') i++;
  return h.substr(i);
}

static Npy read_npy(const std::string& path) {
  FILE* f = fopen(path.c_str(), "rb");
  if (!f) die("cannot open %s: %s", path.c_str(), strerror(errno));
  unsigned char pre[8];
  if (fread(pre, 1, 8, f) != 8 || memcmp(pre, "\x93NUMPY", 6) != 0) die("%s: not a .npy file", path.c_str());
  uint32_t hlen = 0;
  if (pre[6] == 1) {
    unsigned char b[2];
    if (fread(b, 1, 2, f) != 2) die("%s: truncated header", path.c_str());
    hlen = b[0] | (b[1] << 8);
  } else if (pre[6] == 2 || pre[6] == 3) {
    unsigned char b[4];
    if (fread(b, 1, 4, f) != 4) die("%s: truncated header", path.c_str());
    hlen = b[0] | (b[1] << 8) | (b[2] << 16) | ((uint32_t)b[3] << 24);
  } else {
    die("%s: unsupported .npy format version %d", path.c_str(), pre[6]);
  }
  std::string h(hlen, '\0');
  if (fread(&h[0], 1, hlen, f) != hlen) die("%s: truncated header", path.c_str());
  Npy a;
  std::string d = header_value(h, "descr", path);
  if (d.size() < 5 || d[0] != '\'') die("%s: malformed descr in %s", path.c_str(), h.c_str());
  a.descr = d.substr(1, d.find('\'', 1) - 1);
  if (header_value(h, "fortran_order", path).compare(0, 4, "True") == 0) {
    die("%s: Fortran order is not supported; save a C-ordered array (np.ascontiguousarray)", path.c_str());
  }
  std::string s = header_value(h, "shape", path);
  if (s.empty() || s[0] != '(') die("%s: malformed shape in %s", path.c_str(), h.c_str());
  size_t i = 1;
  while (i < s.size() && s[i] != ')') {
    if (s[i] == ' ' || s[i] == ',') {
      i++;
      continue;
    }
    char* end = nullptr;
    long long v = strtoll(s.c_str() + i, &end, 10);
    if (end == s.c_str() + i || v < 0) die("%s: malformed shape in %s", path.c_str(), h.c_str());
    a.shape.push_back(v);
    i = end - s.c_str();
  }
  size_t size = 0;
  if (a.descr == "<f4" || a.descr == "<i4") size = 4;
  else if (a.descr == "<f2") size = 2;
  else if (a.descr == "|b1" || a.descr == "<b1") size = 1;
  else die("%s: unsupported dtype %s (want float32, float16, int32 or bool)", path.c_str(), a.descr.c_str());
  size_t n = 1;
  for (long long v : a.shape) n *= (size_t)v;
  a.data.resize(n * size);
  if (fread(a.data.data(), 1, a.data.size(), f) != a.data.size()) die("%s: truncated data", path.c_str());
  fclose(f);
  return a;
}

static void write_npy(const std::string& path, const char* descr, const tec_tensor_desc& t, const void* data, size_t bytes) {
  std::string h = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (";
  for (int i = 0; i < t.rank; i++) h += std::to_string(t.shape[i]) + (t.rank == 1 ? ",)" : i + 1 < t.rank ? ", " : ")");
  if (t.rank == 0) h += ")";
  h += ", }";
  size_t total = 10 + h.size() + 1;
  h.append((64 - total % 64) % 64, ' ');
  h += '\n';
  FILE* f = fopen(path.c_str(), "wb");
  if (!f) die("cannot create %s: %s", path.c_str(), strerror(errno));
  unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(h.size() & 0xff), (unsigned char)(h.size() >> 8)};
  if (fwrite(pre, 1, 10, f) != 10 || fwrite(h.data(), 1, h.size(), f) != h.size() ||
      fwrite(data, 1, bytes, f) != bytes || fclose(f) != 0) {
    die("writing %s: %s", path.c_str(), strerror(errno));
  }
}

// host_data returns t's data from a .npy file, converted to t's dtype.
static std::vector<unsigned char> host_data(const tec_tensor_desc& t, const Npy& a, const std::string& path) {
  if ((int)a.shape.size() != t.rank || !std::equal(a.shape.begin(), a.shape.end(), t.shape)) {
    std::string got = "[";
    for (size_t i = 0; i < a.shape.size(); i++) got += (i ? ", " : "") + std::to_string(a.shape[i]);
    die("%s: shape %s], want %s for %s", path.c_str(), got.c_str(), type_string(t).c_str(), t.name);
  }
  size_t n = num_elements(t);
  bool f32 = a.descr == "<f4";
  switch (t.dtype) {
    case TEC_F32:
      if (f32) return a.data;
      break;
    case TEC_I32:
      if (a.descr == "<i4") return a.data;
      break;
    case TEC_BOOL:
      if (a.descr == "|b1" || a.descr == "<b1") return a.data;
      break;
    case TEC_F16:
      if (a.descr == "<f2") return a.data;
      if (f32) {
        std::vector<unsigned char> out(n * 2);
        const float* src = reinterpret_cast<const float*>(a.data.data());
        __half* dst = reinterpret_cast<__half*>(out.data());
        for (size_t i = 0; i < n; i++) dst[i] = __float2half_rn(src[i]);
        return out;
      }
      break;
    case TEC_BF16:
      if (f32) {
        std::vector<unsigned char> out(n * 2);
        const float* src = reinterpret_cast<const float*>(a.data.data());
        __nv_bfloat16* dst = reinterpret_cast<__nv_bfloat16*>(out.data());
        for (size_t i = 0; i < n; i++) dst[i] = __float2bfloat16_rn(src[i]);
        return out;
      }
      break;
  }
  die("%s: dtype %s does not fit %s %s", path.c_str(), a.descr.c_str(), t.name, type_string(t).c_str());
}

// fill_data returns t's data filled with zeros, ones or uniform random values
// in [-1, 1) from a fixed seed.
static std::vector<unsigned char> fill_data(const tec_tensor_desc& t, const std::string& how, uint64_t seed) {
  size_t n = num_elements(t);
  std::vector<unsigned char> out(t.bytes);
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < n; i++) {
    float v = how == "ones" ? 1.0f : 0.0f;
    if (how == "random") {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      v = (float)((state >> 40) * (1.0 / (1ull << 24))) * 2.0f - 1.0f;
    }
    switch (t.dtype) {
      case TEC_F32: reinterpret_cast<float*>(out.data())[i] = v; break;
      case TEC_F16: reinterpret_cast<__half*>(out.data())[i] = __float2half_rn(v); break;
      case TEC_BF16: reinterpret_cast<__nv_bfloat16*>(out.data())[i] = __float2bfloat16_rn(v); break;
      case TEC_I32: reinterpret_cast<int*>(out.data())[i] = how == "ones" ? 1 : 0; break;
      case TEC_BOOL: out[i] = how == "ones" ? 1 : 0; break;
    }
  }
  return out;
}

static bool exists(const std::string& path) {
  FILE* f = fopen(path.c_str(), "rb");
  if (f) fclose(f);
  return f != nullptr;
}

// load returns the host data of each tensor: from DIR/NAME.npy, or filled.
static std::vector<std::vector<unsigned char>> load(const char* kind, const tec_tensor_desc* ts, int n,
                                                    const std::string& dir, const std::string& fill, uint64_t seed) {
  std::vector<std::vector<unsigned char>> out;
  for (int i = 0; i < n; i++) {
    const tec_tensor_desc& t = ts[i];
    std::string path = dir + "/" + t.name + ".npy";
    if (exists(path)) {
      out.push_back(host_data(t, read_npy(path), path));
    } else if (!fill.empty()) {
      out.push_back(fill_data(t, fill, seed * 1000003 + (uint64_t)i));
    } else {
      die("no file %s for the %s %s %s (or pass --fill)", path.c_str(), kind, t.name, type_string(t).c_str());
    }
  }
  return out;
}

// upload copies host data to new device memory.
static std::vector<void*> upload(const std::vector<std::vector<unsigned char>>& data) {
  std::vector<void*> ptrs;
  for (const auto& d : data) {
    void* p = nullptr;
    CHECK(cudaMalloc(&p, std::max<size_t>(d.size(), 1)));
    CHECK(cudaMemcpy(p, d.data(), d.size(), cudaMemcpyHostToDevice));
    ptrs.push_back(p);
  }
  return ptrs;
}

static void run_model(const std::vector<void*>& in, const std::vector<void*>& par, const std::vector<void*>& out,
                      void* ws, cudaStream_t stream) {
  std::vector<const void*> cin(in.begin(), in.end()), cpar(par.begin(), par.end());
  cudaError_t err = TEC_MODEL(run)(cin.data(), cpar.data(), out.data(), ws, stream);
  if (err != cudaSuccess) {
    fprintf(stderr, "run: %s\n", TEC_MODEL(error_message)());
    exit(1);
  }
}

#ifdef TEC_STAGE_CLOCK
// json_string returns s as a JSON string (names are identifiers, dots,
// slashes and commas; quotes and backslashes are escaped all the same).
static std::string json_string(const char* s) {
  std::string out = "\"";
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') out += '\\';
    out += *s;
  }
  return out + "\"";
}

// median returns the median of v, which it sorts.
static double median(std::vector<double>& v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// stage_clock runs the model runs times with the stage clock and writes
// each segment's median time to path.
static void stage_clock(const std::string& path, int runs, const std::vector<void*>& in, const std::vector<void*>& par,
                        const std::vector<void*>& out, void* ws, cudaStream_t stream) {
  int n = TEC_MODEL(clock_segments)();
  std::vector<std::vector<double>> times(n);
  std::vector<double> totals;
  std::vector<int> passes(n);
  for (int r = 0; r < runs; r++) {
    std::vector<double> ns(n);
    if (TEC_MODEL(clock_reset)(stream) != cudaSuccess) die("%s", TEC_MODEL(error_message)());
    run_model(in, par, out, ws, stream);
    if (TEC_MODEL(clock_read)(ns.data(), passes.data(), stream) != cudaSuccess) die("%s", TEC_MODEL(error_message)());
    double total = 0;
    for (int i = 0; i < n; i++) {
      times[i].push_back(ns[i]);
      total += ns[i];
    }
    totals.push_back(total);
  }
  std::vector<double> med(n);
  for (int i = 0; i < n; i++) med[i] = median(times[i]);
  FILE* f = fopen(path.c_str(), "w");
  if (!f) die("--stage-clock %s: %s", path.c_str(), strerror(errno));
  fprintf(f, "{\"runs\": %d, \"total_us\": %.3f, \"segments\": [", runs, median(totals) / 1e3);
  for (int i = 0; i < n; i++) {
    fprintf(f, "%s\n  {\"kernel\": %s, \"stages\": %s, \"us\": %.3f, \"passes\": %d}", i ? "," : "",
            json_string(TEC_MODEL(clock_kernel)(i)).c_str(), json_string(TEC_MODEL(clock_stages)(i)).c_str(),
            med[i] / 1e3, passes[i]);
  }
  fprintf(f, "\n]}\n");
  if (fclose(f) != 0) die("--stage-clock %s: %s", path.c_str(), strerror(errno));
  std::vector<int> order(n);
  for (int i = 0; i < n; i++) order[i] = i;
  std::sort(order.begin(), order.end(), [&](int a, int b) { return med[a] > med[b]; });
  printf("stage clock: %.4f ms over %d segments (median of %d runs); the longest:\n", median(totals) / 1e6, n, runs);
  for (int i = 0; i < n && i < 10; i++) {
    const char* stages = TEC_MODEL(clock_stages)(order[i]);
    printf("  %9.2f us  %s: %s\n", med[order[i]] / 1e3, TEC_MODEL(clock_kernel)(order[i]), *stages ? stages : "(launch)");
  }
  printf("wrote %s\n", path.c_str());
}
#endif

int main(int argc, char** argv) {
  std::string in_dir = ".", par_dir = ".", out_dir = ".", fill, clock_path;
  int bench = 0, warmup = 3, device = 0;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) die("%s needs a value", a.c_str());
      return argv[++i];
    };
    if (a == "--inputs") in_dir = value();
    else if (a == "--params") par_dir = value();
    else if (a == "--outputs") out_dir = value();
    else if (a == "--fill") fill = value();
    else if (a == "--bench") bench = atoi(value().c_str());
    else if (a == "--warmup") warmup = atoi(value().c_str());
    else if (a == "--device") device = atoi(value().c_str());
    else if (a == "--stage-clock") clock_path = value();
    else if (a == "-h" || a == "--help") {
      printf("usage: %s [--inputs DIR] [--params DIR] [--outputs DIR] [--fill zeros|ones|random]\n"
             "          [--bench N] [--warmup N] [--device N] [--stage-clock FILE]\n", argv[0]);
      return 0;
    } else die("unknown argument %s (see --help)", a.c_str());
  }
  if (!fill.empty() && fill != "zeros" && fill != "ones" && fill != "random") die("--fill %s: want zeros, ones or random", fill.c_str());
  if (bench < 0 || warmup < 0) die("--bench and --warmup must not be negative");
#ifndef TEC_STAGE_CLOCK
  if (!clock_path.empty()) die("--stage-clock: this runner has no stage clock; build it with nvcc -DTEC_STAGE_CLOCK");
#endif

  // Read every file before touching the GPU, so that bad data fails fast.
  int n_in = 0, n_par = 0, n_out = 0;
  const tec_tensor_desc* ins = TEC_MODEL(inputs)(&n_in);
  const tec_tensor_desc* pars = TEC_MODEL(params)(&n_par);
  const tec_tensor_desc* outs = TEC_MODEL(outputs)(&n_out);
  std::vector<std::vector<unsigned char>> in_data = load("input", ins, n_in, in_dir, fill, 1);
  std::vector<std::vector<unsigned char>> par_data = load("param", pars, n_par, par_dir, fill, 2);

  CHECK(cudaSetDevice(device));
  std::vector<void*> in = upload(in_data);
  std::vector<void*> par = upload(par_data);
  // An output named as an input (an input updated in place, such as a KV
  // cache) is given the input's own memory, as a caller that donates the
  // buffer does: the model then writes only the updated elements and copies
  // nothing, which is what --bench should time. (An input passed through
  // as an output unchanged is aliased too: its copy is then onto itself.)
  std::vector<void*> out;
  std::vector<bool> owned;
  for (int i = 0; i < n_out; i++) {
    void* p = nullptr;
    for (int j = 0; j < n_in && !p; j++) {
      if (strcmp(ins[j].name, outs[i].name) == 0 && ins[j].dtype == outs[i].dtype && ins[j].bytes == outs[i].bytes)
        p = in[j];
    }
    owned.push_back(!p);
    if (!p) CHECK(cudaMalloc(&p, std::max<size_t>(outs[i].bytes, 1)));
    out.push_back(p);
  }
  void* ws = nullptr;
  if (size_t n = TEC_MODEL(workspace_size)()) CHECK(cudaMalloc(&ws, n));
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));

  run_model(in, par, out, ws, stream);
  CHECK(cudaStreamSynchronize(stream));
  for (int i = 0; i < n_out; i++) {
    const tec_tensor_desc& t = outs[i];
    std::vector<unsigned char> host(t.bytes);
    CHECK(cudaMemcpy(host.data(), out[i], t.bytes, cudaMemcpyDeviceToHost));
    std::string path = out_dir + "/" + t.name + ".npy";
    switch (t.dtype) {
      case TEC_F32: write_npy(path, "<f4", t, host.data(), t.bytes); break;
      case TEC_F16: write_npy(path, "<f2", t, host.data(), t.bytes); break;
      case TEC_I32: write_npy(path, "<i4", t, host.data(), t.bytes); break;
      case TEC_BOOL: write_npy(path, "|b1", t, host.data(), t.bytes); break;
      case TEC_BF16: {
        size_t n = num_elements(t);
        std::vector<float> f(n);
        const __nv_bfloat16* src = reinterpret_cast<const __nv_bfloat16*>(host.data());
        for (size_t j = 0; j < n; j++) f[j] = __bfloat162float(src[j]);
        write_npy(path, "<f4", t, f.data(), n * sizeof(float));
        break;
      }
    }
    printf("wrote %s (%s)\n", path.c_str(), type_string(t).c_str());
  }

  if (bench > 0) {
    for (int i = 0; i < warmup; i++) run_model(in, par, out, ws, stream);
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    std::vector<float> ms(bench);
    for (int i = 0; i < bench; i++) {
      CHECK(cudaEventRecord(start, stream));
      run_model(in, par, out, ws, stream);
      CHECK(cudaEventRecord(stop, stream));
      CHECK(cudaEventSynchronize(stop));
      CHECK(cudaEventElapsedTime(&ms[i], start, stop));
    }
    std::vector<float> sorted = ms;
    std::sort(sorted.begin(), sorted.end());
    float median = bench % 2 ? sorted[bench / 2] : (sorted[bench / 2 - 1] + sorted[bench / 2]) / 2;
    printf("bench: median %.4f ms, min %.4f ms, max %.4f ms over %d runs (%d warm-up)\n", median, sorted[0],
           sorted[bench - 1], bench, warmup);
    CHECK(cudaEventDestroy(start));
    CHECK(cudaEventDestroy(stop));
  }
#ifdef TEC_STAGE_CLOCK
  if (!clock_path.empty()) stage_clock(clock_path, std::max(bench, 5), in, par, out, ws, stream);
#endif
  CHECK(cudaStreamDestroy(stream));
  for (void* p : in) CHECK(cudaFree(p));
  for (void* p : par) CHECK(cudaFree(p));
  for (int i = 0; i < n_out; i++)
    if (owned[i]) CHECK(cudaFree(out[i]));
  if (ws) CHECK(cudaFree(ws));
  return 0;
}
