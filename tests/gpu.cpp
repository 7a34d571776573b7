#include "gpu.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>

#include "corpus.hpp"
#include "hipgn/family.hpp"
#include "hipgn/op.hpp"
#include "hipgn/params.hpp"
#include "hipgn/verify.hpp"

namespace hipgn::test {

unsigned test_seed() {
  static const unsigned seed = [] {
    const char* env = std::getenv("HIPGN_TEST_SEED");
    const unsigned s = env ? unsigned(std::strtoul(env, nullptr, 10))
                           : unsigned(std::chrono::steady_clock::now().time_since_epoch().count());
    std::printf("hipgn tests: random seed %u (set HIPGN_TEST_SEED to repeat)\n", s);
    return s;
  }();
  return seed;
}

const std::string& no_gpu_reason() {
  static const std::string reason = [] {
    int n = 0;
    const hipError_t e = hipGetDeviceCount(&n);
    if (e != hipSuccess) return std::string("the GPU runtime reports: ") + hipGetErrorString(e);
    if (n == 0) return std::string("the GPU runtime sees no device");
    return std::string();
  }();
  return reason;
}

#define HIPGN_CHECK_HIP(expr)                                                              \
  do {                                                                                     \
    const hipError_t e_ = (expr);                                                          \
    if (e_ != hipSuccess) {                                                                \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr, hipGetErrorString(e_)); \
      std::abort();                                                                        \
    }                                                                                      \
  } while (0)

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  HIPGN_CHECK_HIP(hipMalloc(&ptr_, std::max<std::size_t>(bytes, 1)));
}
DeviceBuffer::~DeviceBuffer() { (void)hipFree(ptr_); }
void DeviceBuffer::upload(const void* host, std::size_t bytes, std::size_t offset) {
  HIPGN_CHECK_HIP(hipMemcpy(static_cast<char*>(ptr_) + offset, host, bytes, hipMemcpyHostToDevice));
}
std::vector<std::uint8_t> DeviceBuffer::download() const {
  std::vector<std::uint8_t> out(bytes_);
  HIPGN_CHECK_HIP(hipMemcpy(out.data(), ptr_, bytes_, hipMemcpyDeviceToHost));
  return out;
}
void DeviceBuffer::poison() { HIPGN_CHECK_HIP(hipMemset(ptr_, verify::kPoisonByte, bytes_)); }

bool run_and_check(const Problem& p, const RunOptions& o, const Launch& launch, const std::string& what) {
  const std::size_t count = std::size_t(p.elements()), groups = std::size_t(p.num_groups());
  const std::size_t es = size_of(p.x_dtype), gs = size_of(p.gamma_dtype);
  std::mt19937_64 rng(test_seed() ^ std::hash<std::string>{}(what));
  // the reference sees exactly the values the GPU sees: rounded to the storage dtype
  const verify::Inputs in = verify::make_inputs(p, rng, {o.x_offset, o.x_scale});
  const std::vector<double> &x = in.x.values, &gamma = in.gamma.values, &beta = in.beta.values;
  const std::vector<std::uint8_t> &xb = in.x.bytes, &gb = in.gamma.bytes, &bb = in.beta.bytes;

  const std::size_t shift = o.misalign_elements * es;
  const std::size_t gshift = o.misalign_affine ? gs : 0;
  DeviceBuffer dx(count * es + shift), dy(count * es + shift), dg(p.c * gs + gshift), db(p.c * gs + gshift),
      dm(groups * 4), dr(groups * 4);
  dx.upload(xb.data(), xb.size(), shift);
  dg.upload(gb.data(), gb.size(), gshift);
  db.upload(bb.data(), bb.size(), gshift);
  dy.poison();
  dm.poison();
  dr.poison();
  Tensors t;
  t.x = static_cast<char*>(dx.get()) + shift;
  t.y = static_cast<char*>(dy.get()) + shift;
  t.gamma = o.gamma ? static_cast<char*>(dg.get()) + gshift : nullptr;
  t.beta = o.beta ? static_cast<char*>(db.get()) + gshift : nullptr;
  t.mean = o.save_stats ? static_cast<float*>(dm.get()) : nullptr;
  t.rstd = o.save_stats ? static_cast<float*>(dr.get()) : nullptr;

  const Status s = launch(p, t);
  EXPECT_TRUE(s.ok()) << what << ": " << s.message;
  if (!s.ok()) return false;
  EXPECT_EQ(hipDeviceSynchronize(), hipSuccess) << what;

  std::vector<double> ry(count), rm(groups), rr(groups);
  reference_fwd(p, x.data(), o.gamma ? gamma.data() : nullptr, o.beta ? beta.data() : nullptr, ry.data(), rm.data(),
                rr.data());
  const auto yb = dy.download();
  const auto y = decode(p.x_dtype, yb.data() + shift, count);
  const verify::Comparison cmp = verify::compare(y, ry, verify::tolerance(p.x_dtype, kY));
  const std::size_t bad = cmp.bad, first = cmp.first;
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << count << " outputs wrong; first at " << first << ": got "
                     << y[first] << ", want " << ry[first];
  // the poison beyond the tensor (misaligned runs) stays: nothing written out of bounds
  for (std::size_t i = 0; i < shift; ++i) EXPECT_EQ(yb[i], verify::kPoisonByte) << what << ": byte before y written";

  if (o.save_stats) {
    const auto mb = dm.download(), rb = dr.download();
    const auto m = decode(DataType::f32, mb.data(), groups), r = decode(DataType::f32, rb.data(), groups);
    for (std::size_t g = 0; g < groups; ++g) {
      // mean to a small fraction of the group's spread; rstd relative
      const double spread = 1.0 / rr[g];
      EXPECT_NEAR(m[g], rm[g], 1e-4 * (std::fabs(rm[g]) + spread)) << what << ": mean of group " << g;
      EXPECT_NEAR(r[g], rr[g], 2e-4 * rr[g]) << what << ": rstd of group " << g;
      if (::testing::Test::HasFailure()) break;
    }
  } else {
    // not requested: not written
    if (!verify::all_poison(dm.download())) ADD_FAILURE() << what << ": mean written though not requested";
  }
  return bad == 0 && !::testing::Test::HasFailure();
}

// Graph capture is outside the HIP subset platform_cuda.hpp maps (the library never captures):
// the runtime's own names here.
#if defined(HIPGN_PLATFORM_AMD) || defined(HIPGN_NVIDIA_SYSTEM_HIP)
#define HIPGN_GRAPH(name) hip##name
using GraphT = hipGraph_t;
using GraphExecT = hipGraphExec_t;
#define HIPGN_CAPTURE_GLOBAL hipStreamCaptureModeGlobal
#else
#define HIPGN_GRAPH(name) cuda##name
using GraphT = cudaGraph_t;
using GraphExecT = cudaGraphExec_t;
#define HIPGN_CAPTURE_GLOBAL cudaStreamCaptureModeGlobal
#endif

Status capture_and_replay(const std::vector<std::function<Status(hipStream_t)>>& works, int replays) {
  auto failed = [](const char* what, hipError_t e) {
    return Status::error(StatusCode::runtime_error, std::string(what) + ": " + hipGetErrorString(e));
  };
  const std::size_t n = works.size();
  // streams[0] captures every graph; one graph replays there, several each on a stream of its own
  std::vector<hipStream_t> streams(n == 1 ? 1 : n + 1, nullptr);
  std::vector<GraphT> graphs(n, nullptr);
  std::vector<GraphExecT> execs(n, nullptr);
  Status s;
  for (hipStream_t& st : streams)
    if (s.ok())
      if (hipError_t e = hipStreamCreate(&st); e != hipSuccess) s = failed("stream", e);
  for (std::size_t k = 0; s.ok() && k < n; ++k) {
    if (hipError_t e = HIPGN_GRAPH(StreamBeginCapture)(streams[0], HIPGN_CAPTURE_GLOBAL); e != hipSuccess) {
      s = failed("begin capture", e);
      break;
    }
    s = works[k](streams[0]);
    const hipError_t e_end = HIPGN_GRAPH(StreamEndCapture)(streams[0], &graphs[k]);
    if (s.ok() && e_end != hipSuccess) s = failed("end capture (something in the capture is not capturable)", e_end);
#if defined(HIPGN_PLATFORM_AMD) || defined(HIPGN_NVIDIA_SYSTEM_HIP)
    if (s.ok())
      if (hipError_t e = hipGraphInstantiate(&execs[k], graphs[k], nullptr, nullptr, 0); e != hipSuccess)
        s = failed("instantiate", e);
#else
    if (s.ok())
      if (hipError_t e = cudaGraphInstantiate(&execs[k], graphs[k], 0); e != hipSuccess) s = failed("instantiate", e);
#endif
  }
  for (int i = 0; s.ok() && i < replays; ++i)
    for (std::size_t k = 0; s.ok() && k < n; ++k)
      if (hipError_t e = HIPGN_GRAPH(GraphLaunch)(execs[k], streams[n == 1 ? 0 : k + 1]); e != hipSuccess)
        s = failed("graph launch", e);
  for (hipStream_t st : streams)
    if (s.ok() && st)
      if (hipError_t e = hipStreamSynchronize(st); e != hipSuccess) s = failed("replay", e);
  for (std::size_t k = 0; k < n; ++k) {
    if (execs[k]) (void)HIPGN_GRAPH(GraphExecDestroy)(execs[k]);
    if (graphs[k]) (void)HIPGN_GRAPH(GraphDestroy)(graphs[k]);
  }
  for (hipStream_t st : streams)
    if (st) (void)hipStreamDestroy(st);
  (void)hipGetLastError();
  return s;
}

Status capture_and_replay(const std::function<Status(hipStream_t)>& work, int replays) {
  return capture_and_replay(std::vector<std::function<Status(hipStream_t)>>{work}, replays);
}

bool run_and_check_op(const Problem& p, const RunOptions& o, const Launch& launch, const std::string& what) {
  return describe(p.op).backward ? run_and_check_bwd(p, o, launch, what) : run_and_check(p, o, launch, what);
}

bool check_instance(const Instance& inst, const Problem& p, const RunOptions& o, bool own_counters,
                    const std::string& what) {
  DeviceBuffer ws(inst.workspace_bytes(p));
  DeviceBuffer counters(own_counters ? inst.counter_bytes(p) : 0);
  HIPGN_CHECK_HIP(hipMemset(counters.get(), 0, counters.bytes()));
  void* mine = counters.bytes() ? counters.get() : nullptr;
  const std::string label = what + (mine ? " (zeroed counters)" : "");
  const bool ok = run_and_check_op(
      p, o, [&](const Problem& q, const Tensors& t) { return inst.run(q, t, ws.get(), nullptr, 0, mine); }, label);
  if (!mine) return ok;
  const std::vector<std::uint8_t> bytes = counters.download();
  std::vector<std::uint32_t> words(bytes.size() / 4);
  std::memcpy(words.data(), bytes.data(), words.size() * 4);
  for (std::size_t w = 0; w < words.size(); ++w)
    if (words[w] != 0 && !is_generation_word(std::int64_t(w))) {
      ADD_FAILURE() << label << ": arrival counter word " << w << " of " << words.size() << " is " << words[w]
                    << " after the launch, not 0";
      return false;
    }
  return ok;
}

bool check_corpus_shape(const Instance& inst, const Problem& p, RunOptions o, std::size_t i) {
  if (i % 3 == 0 && takes_offset(inst, p, 1)) o.misalign_elements = 1;
  o.misalign_affine = i % 5 == 2;
  return check_instance(inst, p, o, i % 2 == 1,
                        inst.name() + " on " + p.to_string() + (o.misalign_elements ? " misaligned" : "") +
                            (o.misalign_affine ? " (gamma, beta misaligned)" : ""));
}

std::vector<std::string> instance_names(bool backward, const std::function<bool(const InstanceSpec&)>& keep) {
  std::vector<std::string> names;
  for (const Instance& inst : Registry::global().all())
    if (describe(inst.spec().op).backward == backward && (!keep || keep(inst.spec()))) names.push_back(inst.name());
  return names;
}

namespace {
bool all_poison(const DeviceBuffer& b) { return verify::all_poison(b.download()); }
}  // namespace

bool takes_offset(const Instance& inst, const Problem& p, std::size_t elements) {
  // addresses for the support check only, never dereferenced: one 4 KB-aligned base plus the offset
  char* const at = reinterpret_cast<char*>(std::uintptr_t(1) << 20) + elements * size_of(p.x_dtype);
  Tensors t;
  t.x = t.dy = at;
  t.y = t.dx = at;
  return inst.supports(p, &t);
}

bool run_and_check_bwd(const Problem& p, const RunOptions& o, const Launch& launch, const std::string& what,
                       const Launch* forward) {
  const std::size_t count = std::size_t(p.elements()), groups = std::size_t(p.num_groups()), c = std::size_t(p.c);
  const std::size_t es = size_of(p.x_dtype), gs = size_of(p.gamma_dtype);
  std::mt19937_64 rng(test_seed() ^ std::hash<std::string>{}(what));
  const verify::Inputs in = verify::make_inputs(p, rng, {o.x_offset, o.x_scale});
  const std::vector<double> &x = in.x.values, &dy = in.dy.values, &gamma = in.gamma.values, &beta = in.beta.values;
  const std::vector<std::uint8_t> &xb = in.x.bytes, &dyb = in.dy.bytes, &gb = in.gamma.bytes, &bb = in.beta.bytes;

  const std::size_t shift = o.misalign_elements * es;
  const std::size_t gshift = o.misalign_affine ? gs : 0;
  DeviceBuffer dx_in(count * es + shift), ddy(count * es + shift), ddx(count * es + shift), dg(c * gs + gshift),
      db(c * gs + gshift), ddg(c * gs), ddb(c * gs), dm(groups * 4), dr(groups * 4), dyf(count * es);
  dx_in.upload(xb.data(), xb.size(), shift);
  ddy.upload(dyb.data(), dyb.size(), shift);
  dg.upload(gb.data(), gb.size(), gshift);
  db.upload(bb.data(), bb.size(), gshift);
  Tensors t;
  t.x = static_cast<char*>(dx_in.get()) + shift;
  t.dy = static_cast<char*>(ddy.get()) + shift;
  t.dx = static_cast<char*>(ddx.get()) + shift;
  t.gamma = o.gamma ? static_cast<char*>(dg.get()) + gshift : nullptr;
  t.beta = o.beta ? static_cast<char*>(db.get()) + gshift : nullptr;
  t.mean = static_cast<float*>(dm.get());
  t.rstd = static_cast<float*>(dr.get());
  t.dgamma = ddg.get();
  t.dbeta = ddb.get();
  // what the op reads and writes; dgamma/dbeta of the fused backward only with gamma (affine on)
  const OpDescriptor& op = describe(p.op);
  t = only(t, op.reads | op.writes | op.optional_writes | (o.gamma ? op.writes_with_gamma : 0));

  if (forward) {  // our forward's saved statistics feed the backward
    Problem fp = p;
    fp.op = Op::fwd;
    Tensors ft;
    ft.x = t.x;
    ft.y = dyf.get();
    ft.gamma = t.gamma;
    ft.beta = t.beta;
    ft.mean = t.mean;
    ft.rstd = t.rstd;
    const Status s = (*forward)(fp, ft);
    EXPECT_TRUE(s.ok()) << what << ": forward: " << s.message;
    if (!s.ok()) return false;
  } else {
    std::vector<double> y(count), m(groups), r(groups);
    reference_fwd(p, x.data(), nullptr, nullptr, y.data(), m.data(), r.data());
    const auto mb = encode(DataType::f32, m), rb = encode(DataType::f32, r);
    dm.upload(mb.data(), mb.size());
    dr.upload(rb.data(), rb.size());
  }
  ddx.poison();
  ddg.poison();
  ddb.poison();

  const Status s = launch(p, t);
  EXPECT_TRUE(s.ok()) << what << ": " << s.message;
  if (!s.ok()) return false;
  EXPECT_EQ(hipDeviceSynchronize(), hipSuccess) << what;

  std::vector<double> rdx(count), rdg(c), rdb(c), adg(c), adb(c);
  reference_bwd(p, x.data(), dy.data(), o.gamma ? gamma.data() : nullptr, o.beta ? beta.data() : nullptr, rdx.data(),
                rdg.data(), rdb.data(), adg.data(), adb.data());
  if (t.dx) {
    const auto b = ddx.download();
    const auto got = decode(p.x_dtype, b.data() + shift, count);
    const verify::Comparison cmp = verify::compare(got, rdx, verify::tolerance(p.x_dtype, kDx));
    const std::size_t bad = cmp.bad, first = cmp.first;
    EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << count << " dx wrong; first at " << first << ": got "
                       << got[first] << ", want " << rdx[first];
  } else {
    EXPECT_TRUE(all_poison(ddx)) << what << ": dx written though the op does not write it";
  }
  if (t.dgamma) {
    const auto g = decode(p.gamma_dtype, ddg.download().data(), c), b = decode(p.gamma_dtype, ddb.download().data(), c);
    // fp32 accumulation over N * spatial terms: relative to the terms' magnitudes
    const verify::Comparison cg = verify::compare(g, rdg, verify::tolerance(p.gamma_dtype, kDgamma), &adg);
    const verify::Comparison cb = verify::compare(b, rdb, verify::tolerance(p.gamma_dtype, kDbeta), &adb);
    EXPECT_EQ(cg.bad, 0u) << what << ": dgamma " << cg.first << ": got " << g[cg.first] << ", want " << rdg[cg.first];
    EXPECT_EQ(cb.bad, 0u) << what << ": dbeta " << cb.first << ": got " << b[cb.first] << ", want " << rdb[cb.first];
  } else {
    EXPECT_TRUE(all_poison(ddg) && all_poison(ddb)) << what << ": dgamma/dbeta written though not requested";
  }
  return !::testing::Test::HasFailure();
}

}  // namespace hipgn::test
