// hipgn_profiler: for one problem (any op), run every supporting instance, verify it against the CPU
// reference, time it with device events (warm-up, median of many runs, L2 flushed between
// runs) next to a same-size device-to-device copy, and mark the fastest and the heuristic's
// choice. In the manner of ckProfiler and cutlass_profiler. The command line and the exit
// codes are in options.hpp.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "hipgn/dispatcher.hpp"
#include "hipgn/op.hpp"
#include "hipgn/verify.hpp"
#include "hipgn/reference.hpp"
#include "options.hpp"

namespace {

using namespace hipgn;
using namespace hipgn::profiler;

#define CHECK(expr)                                                          \
  do {                                                                       \
    const hipError_t e_ = (expr);                                            \
    if (e_ != hipSuccess) {                                                  \
      std::fprintf(stderr, "hipgn_profiler: runtime error: %s: %s\n", #expr, \
                   hipGetErrorString(e_));                                   \
      std::exit(kExitRuntimeError);                                          \
    }                                                                        \
  } while (0)

struct Timing {
  double median_us = 0;
};

// Median time of fn over `iters` runs after `warmup` runs, each run alone between two
// events, with the L2 flushed before it so that repeated runs do not read a warm cache.
template <typename Fn>
double median_us(Fn&& fn, int warmup, int iters, void* flush, std::size_t flush_bytes) {
  for (int i = 0; i < warmup; ++i) fn();
  hipEvent_t a, b;
  CHECK(hipEventCreate(&a));
  CHECK(hipEventCreate(&b));
  std::vector<float> ms(std::size_t(iters), 0.f);
  for (int i = 0; i < iters; ++i) {
    if (flush) CHECK(hipMemsetAsync(flush, i & 0xff, flush_bytes, nullptr));
    CHECK(hipEventRecord(a, nullptr));
    fn();
    CHECK(hipEventRecord(b, nullptr));
    CHECK(hipEventSynchronize(b));
    CHECK(hipEventElapsedTime(&ms[std::size_t(i)], a, b));
  }
  CHECK(hipEventDestroy(a));
  CHECK(hipEventDestroy(b));
  std::sort(ms.begin(), ms.end());
  return 1000.0 * ms[ms.size() / 2];
}

struct Row {
  std::string name;
  bool ok = false;
  bool launch_failed = false;
  double max_err = 0, us = 0,  // max_err: the worst error as a fraction of its tolerance (> 1 fails)
         gbps = 0, pct_copy = 0;
  std::string note;
};

int refuse(const std::string& why) {
  std::fprintf(stderr, "hipgn_profiler: %s\n", why.c_str());
  return kExitBadInput;
}

// What the run covers: the named instance or every supporting one, and the heuristic's choice
// (or, when it has none, the library's reason). Returns -1 to go on, else the exit code.
struct Selection {
  std::vector<const Instance*> candidates;
  const Instance* chosen = nullptr;
  std::string rule;  // the chosen rule's reason
  Status none;       // why the heuristic has no choice
};

int select_instances(const Dispatcher& handle, const Options& o, Selection* s) {
  const Problem& p = o.problem;
  s->chosen = heuristic_choice(handle.registry(), handle.device(), p, nullptr, &s->rule);
  if (!s->chosen) handle.choose(p, nullptr, &s->none);
  if (!o.instance.empty()) {
    Status why;
    const Instance* inst = handle.named(p, o.instance, nullptr, &why);
    if (!inst) return refuse("--instance: " + why.message);
    s->candidates = {inst};
    return -1;
  }
  s->candidates = handle.supporting(p);
  if (s->candidates.empty()) return refuse(std::string(to_string(s->none.code)) + ": " + s->none.message);
  return -1;
}

// --tune: after the table, the fastest verified instance becomes the problem's entry in the
// tuning database (--tuning-db or HIPGN_TUNING_DB; options.cpp parses both), under this
// device's target (architecture and compute units).
// Records the fastest verified row; returns the exit status (0: recorded).
int record_tuning(Dispatcher& handle, const Problem& p, const std::vector<Row>& rows, const std::string& path) {
  const Row* best = nullptr;
  for (const Row& r : rows)
    if (r.ok && (!best || r.us < best->us)) best = &r;
  if (!best) {
    std::fprintf(stderr, "hipgn_profiler: --tune: no instance was verified; nothing recorded\n");
    return 1;
  }
  Status s = handle.set_tuned(p, best->name, best->us);
  if (s.ok()) s = handle.save_tuning_db(path);
  if (!s.ok()) {
    std::fprintf(stderr, "hipgn_profiler: --tune: %s\n", s.message.c_str());
    return 1;
  }
  std::printf("tuned: %s -> %s (%.2f us) on %s (%s), saved to %s\n", p.to_string().c_str(), best->name.c_str(),
              best->us, handle.device().key().to_string().c_str(), handle.device().name.c_str(), path.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (const int rc = parse_command_line(argc, argv, &o); rc >= 0) return rc;
  const Problem& p = o.problem;
  if (const Status valid = validate(p); !valid.ok()) return refuse("invalid problem: " + valid.message);

  std::unique_ptr<Dispatcher> handle;
  const Status created = Dispatcher::create(&handle);
  if (!created.ok() && created.code != StatusCode::no_device) {
    std::fprintf(stderr, "hipgn_profiler: runtime error: %s\n", created.message.c_str());
    return kExitRuntimeError;
  }
  const bool gpu = created.ok();
  Selection sel;
  if (const int rc = select_instances(*handle, o, &sel); rc >= 0) return rc;
  const std::vector<const Instance*>& candidates = sel.candidates;
  const Instance* const chosen = sel.chosen;

  const std::string last =
      p.uneven() ? ", the last of each sample " + std::to_string(p.last_group_channels() * p.spatial_size()) : "";
  std::printf("problem:   %s (%lld elements, %lld groups of %lld%s)\n", p.to_string().c_str(), (long long)p.elements(),
              (long long)p.num_groups(), (long long)p.group_elements(), last.c_str());
  const DeviceInfo& dev = handle->device();
  if (gpu)
    std::printf("device:    %s (%s), %d compute units, %lld MB L2, %lld KB shared memory a workgroup; rules: %s's\n",
                dev.name.c_str(), dev.arch.c_str(), dev.cus(), (long long)(dev.l2() >> 20),
                (long long)(dev.shared_per_block() >> 10), std::string(dev.target().rules).c_str());
  else  // the rules compare group counts with compute units: say which count they used
    std::printf("device:    none (%s); the heuristic assumes %d compute units, the %s's\n", created.message.c_str(),
                kAssumedTarget.compute_units, std::string(kAssumedTarget.arch).c_str());
  if (chosen)
    std::printf("heuristic: %s (%s)\n", chosen->name().c_str(), sel.rule.c_str());
  else
    std::printf("heuristic: none: %s\n", sel.none.message.c_str());
  if (!gpu || o.list_only) {
    std::printf("instances: %zu support this problem%s\n", candidates.size(),
                gpu ? "" : "; none run without a GPU");
    // a group held in parts says how many, and in how many rounds the device runs their
    // clusters (the tie-breaks that read them: runtime/src/heuristics.cpp, better())
    for (const Instance* inst : candidates) {
      const Instance::OnchipParts q = inst->onchip_parts(p);
      const std::int64_t rounds = inst->onchip_rounds(p, q);
      const std::string parts =
          q.parts > 1 ? "  in " + std::to_string(q.parts) + " parts" +
                            (rounds > 0 ? ", " + std::to_string(rounds) + " round(s) of clusters (" +
                                              std::to_string(inst->onchip_at_once(p, q)) + " at once)"
                                        : "")
                      : "";
      std::printf("  %s%s%s\n", inst->name().c_str(), parts.c_str(), inst == chosen ? "  <- heuristic" : "");
    }
    if (!o.csv.empty()) std::printf("csv:       %s not written: nothing was timed\n", o.csv.c_str());
    if (o.tune) {
      std::fprintf(stderr, "hipgn_profiler: --tune times instances: it needs a GPU%s\n", gpu ? " (not --list)" : "");
      return kExitRuntimeError;
    }
    return kExitOk;
  }
  const int warmup = o.warmup, iters = o.iters;
  const bool no_flush = o.no_flush;

  // inputs, the reference, and device buffers
  const std::size_t count = std::size_t(p.elements()), bytes = count * size_of(p.x_dtype);
  std::mt19937_64 rng(12345);
  const OpDescriptor& op = describe(p.op);
  const bool backward = op.backward;
  // inputs rounded to their storage, as the tests make them (hipgn/verify.hpp)
  const verify::Inputs in = verify::make_inputs(p, rng);
  const std::vector<double> &x = in.x.values, &dyv = in.dy.values, &gamma = in.gamma.values, &beta = in.beta.values;
  const std::vector<std::uint8_t> &xb = in.x.bytes, &dyb = in.dy.bytes, &gb = in.gamma.bytes, &bb = in.beta.bytes;
  // the reference output checked: y (fwd), dx (dx, bwd) or dgamma (dgb), with dgamma's terms
  std::vector<double> ref(count), mean_ref(std::size_t(p.num_groups())), rstd_ref(mean_ref.size()), dg_ref(gamma.size()),
      dg_terms(gamma.size());
  reference_fwd(p, x.data(), gamma.data(), beta.data(), ref.data(), mean_ref.data(), rstd_ref.data());
  if (backward)
    reference_bwd(p, x.data(), dyv.data(), gamma.data(), beta.data(), ref.data(), dg_ref.data(), nullptr,
                  dg_terms.data());

  void *dx, *dy, *dg, *db, *dcopy, *dgrad, *ddg, *ddb, *flush = nullptr;
  float *dm, *dr;
  const std::size_t flush_bytes = std::size_t(256) << 20;  // several times any L2 today
  CHECK(hipMalloc(&dx, bytes));
  CHECK(hipMalloc(&dy, bytes));
  CHECK(hipMalloc(&dcopy, bytes));
  CHECK(hipMalloc(&dgrad, bytes));
  CHECK(hipMalloc(&ddg, gb.size()));
  CHECK(hipMalloc(&ddb, gb.size()));
  CHECK(hipMalloc(&dg, gb.size()));
  CHECK(hipMalloc(&db, bb.size()));
  CHECK(hipMalloc(&dm, std::size_t(p.num_groups()) * 4));
  CHECK(hipMalloc(&dr, std::size_t(p.num_groups()) * 4));
  if (!no_flush) CHECK(hipMalloc(&flush, flush_bytes));
  CHECK(hipMemcpy(dx, xb.data(), bytes, hipMemcpyHostToDevice));
  CHECK(hipMemcpy(dg, gb.data(), gb.size(), hipMemcpyHostToDevice));
  CHECK(hipMemcpy(db, bb.data(), bb.size(), hipMemcpyHostToDevice));
  // every buffer; the op's row keeps those it reads and writes (y and dx share one)
  const Tensors t = only(Tensors{dx, dgrad, dg, db, dm, dr, dy, dgrad, ddg, ddb},
                         op.reads | op.writes | op.optional_writes | op.writes_with_gamma);
  if (backward) {  // the forward's statistics from the reference
    CHECK(hipMemcpy(dy, dyb.data(), bytes, hipMemcpyHostToDevice));
    const auto mb = encode(DataType::f32, mean_ref), rb = encode(DataType::f32, rstd_ref);
    CHECK(hipMemcpy(dm, mb.data(), mb.size(), hipMemcpyHostToDevice));
    CHECK(hipMemcpy(dr, rb.data(), rb.size(), hipMemcpyHostToDevice));
  }
  void* const out = dgrad;  // what is checked elementwise (y or dx), unless per channel

  // the same-size copy, measured in this run: reads x once and writes once, like the floor
  const double copy_us = median_us([&] { CHECK(hipMemcpyAsync(dcopy, dx, bytes, hipMemcpyDeviceToDevice, nullptr)); },
                                   warmup, iters, flush, flush_bytes);
  // the floor: each tensor read once and written once (fwd: x, y; dx and bwd: x, dy, dx;
  // dgb: x, dy), against a copy that reads and writes bytes once each
  const double floor_bytes = op.x_sized_tensors * double(bytes);
  std::printf("copy: %.2f us, %.0f GB/s\n", copy_us, 2.0 * double(bytes) / copy_us / 1e3);

  std::vector<Row> rows;
  for (const Instance* inst : candidates) {
    Row r;
    r.name = inst->name();
    void* ws = nullptr;
    const int cus = handle->device().cus();
    const Problem q = in_layout(p, inst->spec().layout);  // the problem as this instance runs it
    if (const std::size_t wsb = inst->workspace_bytes(q, cus)) CHECK(hipMalloc(&ws, wsb));
    // zeroed arrival counters, as the handle's run() launches with (no memset a launch)
    void* counters = nullptr;
    if (const std::size_t cb = inst->counter_bytes(q, cus)) {
      CHECK(hipMalloc(&counters, cb));
      CHECK(hipMemset(counters, 0, cb));
    }
    CHECK(hipMemset(out, verify::kPoisonByte, bytes));
    CHECK(hipMemset(ddg, verify::kPoisonByte, gb.size()));
    const Status s = inst->run(q, t, ws, nullptr, cus, counters);
    CHECK(hipDeviceSynchronize());
    if (!s.ok()) {
      r.launch_failed = true;
      r.note = s.message;
    } else {
      const bool per_channel = op.checked == kDgamma;
      const std::size_t n_check = per_channel ? gamma.size() : count;
      std::vector<std::uint8_t> yb(per_channel ? gb.size() : bytes);
      CHECK(hipMemcpy(yb.data(), per_channel ? ddg : out, yb.size(), hipMemcpyDeviceToHost));
      const auto y = decode(per_channel ? p.gamma_dtype : p.x_dtype, yb.data(), n_check);
      // the tests' tolerances (hipgn/verify.hpp); dgamma relative to its terms' magnitudes
      const verify::Comparison cmp =
          per_channel ? verify::compare(y, dg_ref, verify::tolerance(p.gamma_dtype, kDgamma), &dg_terms)
                      : verify::compare(y, ref, verify::tolerance(p.x_dtype, op.checked));
      const bool ok = cmp.ok();
      r.max_err = cmp.worst;
      r.ok = ok;
      r.us = median_us([&] { (void)inst->run(q, t, ws, nullptr, cus, counters); }, warmup, iters, flush, flush_bytes);
      r.gbps = floor_bytes / r.us / 1e3;
      r.pct_copy = 100.0 * (floor_bytes / r.us) / (2.0 * double(bytes) / copy_us);
      if (!ok) r.note = "WRONG";
    }
    if (ws) CHECK(hipFree(ws));
    if (counters) CHECK(hipFree(counters));
    rows.push_back(r);
  }
  const Row* fastest = nullptr;
  for (const Row& r : rows)
    if (r.ok && (!fastest || r.us < fastest->us)) fastest = &r;

  std::printf("%-52s %8s %10s %8s %7s %9s  %s\n", "instance", "verified", "us", "GB/s", "%copy", "err/tol", "");
  for (const Row& r : rows) {
    std::string marks;
    if (&r == fastest) marks += "* fastest ";
    if (chosen && r.name == chosen->name()) marks += "<- heuristic ";
    std::printf("%-52s %8s %10.2f %8.0f %6.1f%% %9.2e  %s%s\n", r.name.c_str(), r.ok ? "yes" : "NO", r.us, r.gbps,
                r.pct_copy, r.max_err, marks.c_str(), r.note.c_str());
  }
  bool written = true;
  if (!o.csv.empty()) {
    std::ofstream out(o.csv);
    out << "problem,instance,verified,us,gbps,pct_copy,err_over_tol,fastest,heuristic,copy_us\n";
    for (const Row& r : rows)
      out << '"' << p.to_string() << "\"," << r.name << ',' << (r.ok ? 1 : 0) << ',' << r.us << ',' << r.gbps << ','
          << r.pct_copy << ',' << r.max_err << ',' << (&r == fastest) << ','
          << (chosen && r.name == chosen->name()) << ',' << copy_us << '\n';
    out.close();
    written = bool(out);
    if (!written) std::fprintf(stderr, "hipgn_profiler: runtime error: --csv %s: writing failed\n", o.csv.c_str());
  }
  for (void* ptr : {dx, dy, dcopy, dgrad, ddg, ddb, dg, db, static_cast<void*>(dm), static_cast<void*>(dr), flush})
    if (ptr) CHECK(hipFree(ptr));
  bool all_ok = true, launched = true;
  for (const Row& r : rows) {
    all_ok = all_ok && r.ok;
    launched = launched && !r.launch_failed;
  }
  if (!launched || !written) return kExitRuntimeError;
  if (o.tune && record_tuning(*handle, p, rows, o.tuning_db) != 0) return kExitRuntimeError;
  return all_ok ? kExitOk : kExitWrong;
}
