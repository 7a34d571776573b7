// Autotuning: time every instance that supports a problem on the handle's device and record
// the fastest. Timed the profiler's way (device events, the median of several runs, the L2
// flushed before each) so that its --tune and this agree on what "fastest" means.
#include <algorithm>
#include <cstddef>
#include <random>
#include <string>
#include <vector>

#include "hipgn/dispatcher.hpp"
#include "hipgn/op.hpp"
#include "hipgn/reference.hpp"

namespace hipgn {
namespace {

// Device memory freed on every return path.
struct DeviceMemory {
  void* ptr = nullptr;
  DeviceMemory() = default;
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  ~DeviceMemory() {
    if (ptr) (void)hipFree(ptr);
  }
  hipError_t allocate(std::size_t bytes) { return hipMalloc(&ptr, std::max<std::size_t>(bytes, 1)); }
};

struct Events {
  hipEvent_t start = nullptr, stop = nullptr;
  ~Events() {
    if (start) (void)hipEventDestroy(start);
    if (stop) (void)hipEventDestroy(stop);
  }
};

Status gpu_error(const char* what, hipError_t e) {
  return Status::error(StatusCode::runtime_error, std::string("tuning: ") + what + ": " + hipGetErrorString(e));
}

// Fills a device buffer of `count` elements with one random block repeated: random enough for
// timing (no instance's speed depends on values), and the host never holds a tensor-sized copy.
Status fill(void* dst, DataType dtype, std::size_t count, double offset, double scale, std::mt19937_64& rng) {
  const std::size_t block = std::min<std::size_t>(count, std::size_t(1) << 16);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> values(block);
  for (double& v : values) v = offset + scale * u(rng);
  const std::vector<std::uint8_t> bytes = encode(dtype, values);
  const std::size_t element = size_of(dtype);
  for (std::size_t done = 0; done < count; done += block) {
    const std::size_t n = std::min(block, count - done);
    const hipError_t e =
        hipMemcpy(static_cast<char*>(dst) + done * element, bytes.data(), n * element, hipMemcpyHostToDevice);
    if (e != hipSuccess) return gpu_error("upload", e);
  }
  return Status::success();
}

}  // namespace

Status Dispatcher::tune(const Problem& p, hipStream_t stream, TuneResult* out, const TuneOptions& o) {
  if (Status s = validate(p); !s.ok()) return s;
  if (o.iters < 1 || o.warmup < 0)
    return Status::error(StatusCode::invalid_argument, "tuning needs iters >= 1 and warmup >= 0");
  // every supporting instance, and one workspace that any of them can use
  const std::vector<const Instance*> candidates = supporting(p);
  if (candidates.empty()) return Status::error(StatusCode::not_built, not_built_message(p, build_config()));
  const std::size_t ws_bytes = largest_workspace(p, candidates);
  if (!has_device_) return Status::error(StatusCode::no_device, "no GPU: this handle cannot tune");
  // the stream's counters, as run() launches with them
  std::size_t counter_bytes = 0;
  for (const Instance* inst : candidates)
    counter_bytes = std::max(counter_bytes, inst->counter_bytes(in_layout(p, inst->spec().layout), info_.cus()));
  void* counters = nullptr;
  if (counter_bytes)
    if (Status s = counters_for(stream, counter_bytes, &counters); !s.ok()) return s;

  // inputs as the profiler makes them: x around 0.5 with spread, gamma near 1
  const OpDescriptor& op = describe(p.op);
  const bool backward = op.backward;
  const std::size_t count = std::size_t(p.elements()), bytes = count * size_of(p.x_dtype);
  const std::size_t channels = std::size_t(p.c), stats = std::size_t(p.num_groups());
  DeviceMemory x, y, dy, gamma, beta, dgamma, dbeta, mean, rstd, ws, flush;
  const std::size_t affine = channels * size_of(p.gamma_dtype);
  const std::pair<DeviceMemory*, std::size_t> buffers[] = {
      {&x, bytes}, {&y, bytes}, {&gamma, affine}, {&beta, affine}, {&mean, stats * 4}, {&rstd, stats * 4},
      {&ws, ws_bytes}, {&dy, backward ? bytes : 0}, {&dgamma, backward ? affine : 0},
      {&dbeta, backward ? affine : 0}};
  for (const auto& [mem, size] : buffers)
    if (const hipError_t e = mem->allocate(size); e != hipSuccess) return gpu_error("allocation", e);
  // several times any L2 today; without room for it, time warm (and say nothing: still a ranking)
  const std::size_t flush_bytes = std::size_t(256) << 20;
  if (o.flush_l2 && flush.allocate(flush_bytes) != hipSuccess) {
    flush.ptr = nullptr;
    (void)hipGetLastError();
  }
  std::mt19937_64 rng(20240607);
  Status s = fill(x.ptr, p.x_dtype, count, 0.5, 2.0, rng);
  if (s.ok()) s = fill(gamma.ptr, p.gamma_dtype, channels, 1.0, 0.5, rng);
  if (s.ok()) s = fill(beta.ptr, p.gamma_dtype, channels, 0.0, 0.5, rng);
  // the backward reads the forward's statistics: those of x's distribution (mean 0.5, and
  // 1/std of U(-2, 2)) serve, as values do not change speed
  if (s.ok()) s = fill(mean.ptr, DataType::f32, stats, 0.5, 0.0, rng);
  if (s.ok()) s = fill(rstd.ptr, DataType::f32, stats, 0.866, 0.0, rng);
  if (s.ok() && backward) s = fill(dy.ptr, p.x_dtype, count, 0.0, 1.0, rng);
  if (!s.ok()) return s;

  // every buffer; the op's row keeps those it reads and writes (y and dx share one)
  const Tensors t = only(Tensors{x.ptr, y.ptr, gamma.ptr, beta.ptr, static_cast<float*>(mean.ptr),
                                 static_cast<float*>(rstd.ptr), dy.ptr, y.ptr, dgamma.ptr, dbeta.ptr},
                         op.reads | op.writes | op.optional_writes | op.writes_with_gamma);

  Events ev;
  if (hipError_t e = hipEventCreate(&ev.start); e != hipSuccess) return gpu_error("event", e);
  if (hipError_t e = hipEventCreate(&ev.stop); e != hipSuccess) return gpu_error("event", e);
  TuneResult result;
  const Instance* best = nullptr;
  for (const Instance* inst : candidates) {
    const Problem q = in_layout(p, inst->spec().layout);  // as this instance runs it, made once
    std::vector<float> ms;
    bool ok = true;
    for (int i = 0; ok && i < o.warmup + o.iters; ++i) {
      if (flush.ptr) ok = hipMemsetAsync(flush.ptr, i & 0xff, flush_bytes, stream) == hipSuccess;
      ok = ok && hipEventRecord(ev.start, stream) == hipSuccess;
      ok = ok && inst->run(q, t, ws.ptr, stream, info_.cus(), counters).ok();
      ok = ok && hipEventRecord(ev.stop, stream) == hipSuccess && hipEventSynchronize(ev.stop) == hipSuccess;
      float elapsed = 0;
      ok = ok && hipEventElapsedTime(&elapsed, ev.start, ev.stop) == hipSuccess;
      if (ok && i >= o.warmup) ms.push_back(elapsed);
    }
    if (!ok) {
      // a failed launch leaves a sticky error on some platforms: clear it, rank the others
      (void)hipGetLastError();
      result.timings.emplace_back(inst->name(), -1.0);
      continue;
    }
    std::nth_element(ms.begin(), ms.begin() + std::ptrdiff_t(ms.size() / 2), ms.end());
    const double us = 1000.0 * ms[ms.size() / 2];
    result.timings.emplace_back(inst->name(), us);
    if (!best || us < result.us) {
      best = inst;
      result.us = us;
      result.instance = inst->name();
    }
  }
  if (!best) return Status::error(StatusCode::runtime_error, "tuning: every instance failed to run " + p.to_string());
  s = set_tuned(p, best->name(), result.us);
  if (!s.ok()) return s;
  if (out) *out = std::move(result);
  return Status::success();
}

}  // namespace hipgn
