// hipgn_profiler: for one problem (any op), run every supporting instance, verify it against the CPU
// reference, time it with device events (warm-up, median of many runs, L2 flushed between
// runs) next to a same-size device-to-device copy, and mark the fastest and the heuristic's
// choice. In the manner of ckProfiler and cutlass_profiler.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "hipgn/hipgn.hpp"
#include "hipgn/reference.hpp"

namespace {

using namespace hipgn;

#define CHECK(expr)                                                                   \
  do {                                                                                \
    const hipError_t e_ = (expr);                                                     \
    if (e_ != hipSuccess) {                                                           \
      std::fprintf(stderr, "hipgn_profiler: %s: %s\n", #expr, hipGetErrorString(e_)); \
      std::exit(1);                                                                   \
    }                                                                                 \
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
  double max_err = 0, us = 0, gbps = 0, pct_copy = 0;
  std::string note;
};

std::vector<std::int64_t> parse_dims(const std::string& s) {
  std::vector<std::int64_t> d;
  std::size_t start = 0;
  while (start < s.size()) {
    std::size_t end = s.find_first_of(",x", start);
    if (end == std::string::npos) end = s.size();
    d.push_back(std::stoll(s.substr(start, end - start)));
    start = end + 1;
  }
  return d;
}

// --tune and --tuning-db: after the table, the fastest verified instance becomes the
// problem's entry in the tuning database. Kept apart from main()'s options on purpose.
struct TuningOptions {
  bool tune = false;
  std::string db;  // the file; empty: HIPGN_TUNING_DB's
};

void add_tuning_options(CLI::App& app, TuningOptions& o) {
  app.add_flag("--tune", o.tune,
               "record the fastest verified instance in the tuning database (--tuning-db or HIPGN_TUNING_DB)");
  app.add_option("--tuning-db", o.db, "the tuning database file --tune writes (default: $HIPGN_TUNING_DB)");
}

// The file --tune writes; empty (after saying why) when there is none.
std::string tuning_db_path(const TuningOptions& o) {
  if (!o.db.empty()) return o.db;
  const char* env = std::getenv("HIPGN_TUNING_DB");
  if (env && *env) return env;
  std::fprintf(stderr, "hipgn_profiler: --tune needs a database file: --tuning-db PATH or HIPGN_TUNING_DB\n");
  return "";
}

// Records the fastest verified row; returns the exit status (0: recorded).
int record_tuning(Handle& handle, const Problem& p, const std::vector<Row>& rows, const std::string& path) {
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
  std::printf("tuned: %s -> %s (%.2f us) on %s, saved to %s\n", p.to_string().c_str(), best->name.c_str(), best->us,
              handle.device().name.c_str(), path.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"hipgn_profiler: run, verify and time every instance that supports a GroupNorm problem"};
  Problem p;
  p.n = 2;
  p.c = 320;
  p.groups = 32;
  std::string op = "fwd", spatial = "64,64", dtype = "f16", gamma_dtype = "", layout = "cl", act = "swish", instance, csv;
  int warmup = 10, iters = 100;
  bool list_only = false, no_flush = false;
  app.add_option("--op", op, "fwd, dx (backward data), dgb (backward gamma/beta), bwd (fused backward)")
      ->check(CLI::IsMember({"fwd", "dx", "dgb", "bwd"}))->capture_default_str();
  app.add_option("-n,--batch", p.n, "N")->capture_default_str();
  app.add_option("-c,--channels", p.c, "C")->capture_default_str();
  app.add_option("-s,--spatial", spatial, "spatial sizes, e.g. 64,64 or 8x64x64 (empty: none)")->capture_default_str();
  app.add_option("-g,--groups", p.groups, "G")->capture_default_str();
  app.add_option("--dtype", dtype, "x/y dtype")->check(CLI::IsMember({"f32", "f16", "bf16"}))->capture_default_str();
  app.add_option("--gamma-dtype", gamma_dtype, "gamma/beta dtype (default: the x dtype)")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}));
  app.add_option("--layout", layout, "cf (channels-first) or cl (channels-last)")
      ->check(CLI::IsMember({"cf", "cl"}))->capture_default_str();
  app.add_option("--act", act, "none or swish")->check(CLI::IsMember({"none", "swish"}))->capture_default_str();
  app.add_option("--swish-beta", p.swish_beta, "s in z * sigmoid(s z)")->capture_default_str();
  app.add_option("--eps", p.eps, "epsilon")->capture_default_str();
  app.add_option("--instance", instance, "profile only this instance");
  app.add_option("--warmup", warmup, "runs before timing")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--iters", iters, "timed runs (the median is reported)")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_flag("--no-flush", no_flush, "do not flush the L2 between timed runs");
  app.add_option("--csv", csv, "also write the table as CSV to this file");
  app.add_flag("--list", list_only, "list the supporting instances and the heuristic's choice; run nothing");
  TuningOptions tuning;
  add_tuning_options(app, tuning);
  CLI11_PARSE(app, argc, argv);
  const std::string tuning_db = tuning.tune ? tuning_db_path(tuning) : "";
  if (tuning.tune && tuning_db.empty()) return 2;

  hipgn::parse(op, p.op);
  hipgn::parse(dtype, p.x_dtype);
  hipgn::parse(gamma_dtype.empty() ? dtype : gamma_dtype, p.gamma_dtype);
  hipgn::parse(layout, p.layout);
  hipgn::parse(act, p.act);
  p.spatial = parse_dims(spatial);

  std::unique_ptr<Handle> handle;
  const Status created = Handle::create(&handle);
  const bool gpu = created.ok();
  const Status valid = validate(p);
  if (!valid.ok()) {
    std::fprintf(stderr, "hipgn_profiler: %s\n", valid.message.c_str());
    return 2;
  }
  std::string rule;
  const Instance* chosen = heuristic_choice(handle->registry(), handle->device(), p, nullptr, &rule);
  std::vector<const Instance*> candidates;
  for (const Instance* inst : handle->registry().bucket(Key::of(p)))
    if ((instance.empty() || inst->name() == instance) && inst->supports(p)) candidates.push_back(inst);
  if (!instance.empty() && candidates.empty()) {
    std::fprintf(stderr, "hipgn_profiler: instance %s is not built or does not support %s\n", instance.c_str(),
                 p.to_string().c_str());
    return 2;
  }
  std::printf("problem: %s (%lld elements, %lld groups of %lld)\n", p.to_string().c_str(), (long long)p.elements(),
              (long long)p.num_groups(), (long long)p.group_elements());
  std::printf("device: %s, %d compute units\n", gpu ? handle->device().name.c_str() : "none",
              handle->device().compute_units);
  std::printf("heuristic: %s (%s)\n", chosen ? chosen->name().c_str() : "none built", rule.c_str());
  if (!gpu || list_only) {
    if (!gpu) std::printf("no GPU on this machine (%s): listing the instances, running none\n", created.message.c_str());
    for (const Instance* inst : candidates)
      std::printf("  %s%s\n", inst->name().c_str(), inst == chosen ? "  <- heuristic" : "");
    std::printf("%zu instances support this problem\n", candidates.size());
    if (tuning.tune) {
      std::fprintf(stderr, "hipgn_profiler: --tune times instances: it needs a GPU%s\n", gpu ? " (not --list)" : "");
      return 1;
    }
    return 0;
  }

  // inputs, the reference, and device buffers
  const std::size_t count = std::size_t(p.elements()), bytes = count * size_of(p.x_dtype);
  std::mt19937_64 rng(12345);
  std::uniform_real_distribution<double> u(-1, 1);
  const bool backward = p.op != Op::fwd;
  std::vector<double> x(count), dyv(count), gamma(std::size_t(p.c)), beta(std::size_t(p.c));
  for (auto& v : x) v = 0.5 + 2 * u(rng);
  for (auto& v : dyv) v = u(rng);
  for (auto& v : gamma) v = 1 + 0.5 * u(rng);
  for (auto& v : beta) v = 0.5 * u(rng);
  const auto xb = encode(p.x_dtype, x), gb = encode(p.gamma_dtype, gamma), bb = encode(p.gamma_dtype, beta);
  x = decode(p.x_dtype, xb.data(), count);
  gamma = decode(p.gamma_dtype, gb.data(), gamma.size());
  beta = decode(p.gamma_dtype, bb.data(), beta.size());
  const auto dyb = encode(p.x_dtype, dyv);
  dyv = decode(p.x_dtype, dyb.data(), count);
  // the reference output checked: y (fwd), dx (dx, bwd) or dgamma (dgb)
  std::vector<double> ref(count), mean_ref(std::size_t(p.num_groups())), rstd_ref(mean_ref.size()), dg_ref(gamma.size());
  reference_fwd(p, x.data(), gamma.data(), beta.data(), ref.data(), mean_ref.data(), rstd_ref.data());
  if (backward)
    reference_bwd(p, x.data(), dyv.data(), gamma.data(), beta.data(), ref.data(), dg_ref.data(), nullptr);

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
  Tensors t{dx, dy, dg, db, dm, dr};
  if (backward) {  // dy in the y buffer; the forward's statistics from the reference
    CHECK(hipMemcpy(dy, dyb.data(), bytes, hipMemcpyHostToDevice));
    const auto mb = encode(DataType::f32, mean_ref), rb = encode(DataType::f32, rstd_ref);
    CHECK(hipMemcpy(dm, mb.data(), mb.size(), hipMemcpyHostToDevice));
    CHECK(hipMemcpy(dr, rb.data(), rb.size(), hipMemcpyHostToDevice));
    t.y = nullptr;
    t.dy = dy;
    t.dx = p.op == Op::dgb ? nullptr : dgrad;
    t.dgamma = p.op == Op::dx ? nullptr : ddg;
    t.dbeta = p.op == Op::dx ? nullptr : ddb;
  }
  void* const out = backward ? dgrad : dy;  // what is checked elementwise (unless dgb)

  // the same-size copy, measured in this run: reads x once and writes once, like the floor
  const double copy_us = median_us([&] { CHECK(hipMemcpyAsync(dcopy, dx, bytes, hipMemcpyDeviceToDevice, nullptr)); },
                                   warmup, iters, flush, flush_bytes);
  // the floor: each tensor read once and written once (fwd: x, y; dx and bwd: x, dy, dx;
  // dgb: x, dy), against a copy that reads and writes bytes once each
  const double floor_bytes = (p.op == Op::dx || p.op == Op::bwd ? 3.0 : 2.0) * double(bytes);
  std::printf("copy: %.2f us, %.0f GB/s\n", copy_us, 2.0 * double(bytes) / copy_us / 1e3);

  const double tol = p.x_dtype == DataType::f32 ? 1e-4 : p.x_dtype == DataType::f16 ? 8e-3 : 5e-2;
  std::vector<Row> rows;
  for (const Instance* inst : candidates) {
    Row r;
    r.name = inst->name();
    void* ws = nullptr;
    if (const std::size_t wsb = inst->workspace_bytes(p)) CHECK(hipMalloc(&ws, wsb));
    CHECK(hipMemset(out, 0xFF, bytes));
    CHECK(hipMemset(ddg, 0xFF, gb.size()));
    const Status s = inst->run(p, t, ws, nullptr);
    CHECK(hipDeviceSynchronize());
    if (!s.ok()) {
      r.note = s.message;
    } else {
      const bool per_channel = p.op == Op::dgb;
      const std::size_t n_check = per_channel ? gamma.size() : count;
      std::vector<std::uint8_t> yb(per_channel ? gb.size() : bytes);
      CHECK(hipMemcpy(yb.data(), per_channel ? ddg : out, yb.size(), hipMemcpyDeviceToHost));
      const auto y = decode(per_channel ? p.gamma_dtype : p.x_dtype, yb.data(), n_check);
      const std::vector<double>& want = per_channel ? dg_ref : ref;
      // dgamma sums N * spatial terms: compare relative to that count
      const double scale = per_channel ? double(p.n * p.spatial_size()) : 1.0;
      bool ok = true;
      for (std::size_t i = 0; i < n_check; ++i) {
        const double err = std::fabs(y[i] - want[i]) / scale / (1 + std::fabs(want[i]) / scale);
        if (!(err <= tol)) ok = false;  // NaN too
        if (err > r.max_err || std::isnan(err)) r.max_err = err;
      }
      r.ok = ok;
      r.us = median_us([&] { (void)inst->run(p, t, ws, nullptr); }, warmup, iters, flush, flush_bytes);
      r.gbps = floor_bytes / r.us / 1e3;
      r.pct_copy = 100.0 * (floor_bytes / r.us) / (2.0 * double(bytes) / copy_us);
      if (!ok) r.note = "WRONG";
    }
    if (ws) CHECK(hipFree(ws));
    rows.push_back(r);
  }
  const Row* fastest = nullptr;
  for (const Row& r : rows)
    if (r.ok && (!fastest || r.us < fastest->us)) fastest = &r;

  std::printf("%-52s %8s %10s %8s %7s %9s  %s\n", "instance", "verified", "us", "GB/s", "%copy", "max_err", "");
  for (const Row& r : rows) {
    std::string marks;
    if (&r == fastest) marks += "* fastest ";
    if (chosen && r.name == chosen->name()) marks += "<- heuristic ";
    std::printf("%-52s %8s %10.2f %8.0f %6.1f%% %9.2e  %s%s\n", r.name.c_str(), r.ok ? "yes" : "NO", r.us, r.gbps,
                r.pct_copy, r.max_err, marks.c_str(), r.note.c_str());
  }
  if (!csv.empty()) {
    std::ofstream out(csv);
    out << "problem,instance,verified,us,gbps,pct_copy,max_err,fastest,heuristic,copy_us\n";
    for (const Row& r : rows)
      out << '"' << p.to_string() << "\"," << r.name << ',' << (r.ok ? 1 : 0) << ',' << r.us << ',' << r.gbps << ','
          << r.pct_copy << ',' << r.max_err << ',' << (&r == fastest) << ','
          << (chosen && r.name == chosen->name()) << ',' << copy_us << '\n';
  }
  for (void* ptr : {dx, dy, dcopy, dgrad, ddg, ddb, dg, db, static_cast<void*>(dm), static_cast<void*>(dr), flush})
    if (ptr) CHECK(hipFree(ptr));
  bool all_ok = true;
  for (const Row& r : rows) all_ok = all_ok && r.ok;
  if (tuning.tune && record_tuning(*handle, p, rows, tuning_db) != 0) return 1;
  return all_ok ? 0 : 1;
}
