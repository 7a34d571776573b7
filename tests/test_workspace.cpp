// The caller-supplied workspace: the size query covers whatever dispatch picks, the checks of
// a given workspace, the C API; on a GPU, runs with a poisoned caller workspace (its content
// must not matter) and runs captured in a graph (nothing allocated, nothing synchronized).
#include <gtest/gtest.h>

#include <algorithm>

#include "corpus.hpp"
#include "gpu.hpp"
#include "hipgn/hipgn.h"
#include "hipgn/op.hpp"

namespace hipgn::test {
namespace {

const DeviceInfo kH100{"H100 (assumed)", 132, 32, "sm_90"};

TEST(Workspace, SizeCoversEverySupportingInstance) {
  Dispatcher h(kH100);
  int checked = 0;
  for (const Key& k : Registry::global().keys())
    for (const Shape& shape : shape_corpus()) {
      Problem p = make_problem(shape, k.x_dtype, k.gamma_dtype, k.layout, k.act);
      p.op = k.op;
      std::size_t most = 0, bytes = 0;
      // a spatial size of 1 runs in either layout (layout_views), so either's instances count
      for (const Problem& q : layout_views(p))
        for (const Instance* inst : Registry::global().bucket(Key::of(q))) {
          if (!inst->supports(q)) continue;
          most = std::max(most, inst->workspace_bytes(q));
          ASSERT_TRUE(h.workspace_size(p, inst->name(), &bytes).ok()) << inst->name();
          EXPECT_EQ(bytes, inst->workspace_bytes(q)) << inst->name();
        }
      ASSERT_TRUE(h.workspace_size(p, "", &bytes).ok()) << p.to_string();
      EXPECT_EQ(bytes, most) << p.to_string();
      EXPECT_EQ(h.workspace_bytes(p), most);
      const Instance* chosen = h.choose(p, nullptr);
      ASSERT_NE(chosen, nullptr);
      EXPECT_LE(chosen->workspace_bytes(in_layout(p, chosen->spec().layout)), bytes) << chosen->name();
      // the backward keeps per-(n, c) sums: its need is never zero for ops dgb and bwd
      if (p.op == Op::dgb || p.op == Op::bwd) EXPECT_GE(bytes, std::size_t(p.n * p.c) * 8) << p.to_string();
      ++checked;
    }
  EXPECT_GT(checked, 0);
}

// Arrival counters (Instance::counter_bytes): wherever workgroups wait for each other (a stream
// instance's grid barriers; a resident instance's slices exchanging on chip in one launch, which
// the backward does only to write dx) or count who finishes last (an onchip or looped backward
// writing dgamma/dbeta over more than one sample) and nowhere else, and never more than the
// workspace, which holds the waiting ones where the caller gives it.
TEST(Workspace, CountersExactlyWhereWorkgroupsWaitOrCount) {
  int waiting = 0, counting = 0;
  for (const Instance& inst : Registry::global().all())
    for (const Shape& shape : shape_corpus()) {
      const InstanceSpec& s = inst.spec();
      Problem p = make_problem(shape, s.x_dtype, s.gamma_dtype, s.layout, s.act);
      p.op = s.op;
      if (!inst.supports(p)) continue;
      const FamilyDescriptor& family = describe(s.family);
      bool waits = family.streams;
      if (family.persistent) {
        const Instance::ResidentShape r = inst.resident_shape(p);
        waits = r.slices > 1 && !r.streaming && (s.op == Op::fwd || s.op == Op::dx || s.op == Op::bwd);
      }
      const bool counts = family.gamma_beta_arrivals && (s.op == Op::dgb || s.op == Op::bwd) && p.n > 1;
      const std::size_t bytes = inst.counter_bytes(p);
      EXPECT_EQ(bytes > 0, waits || counts) << inst.name() << " on " << p.to_string();
      // a count a group of a sample, at even words
      if (counts)
        EXPECT_EQ(bytes, std::size_t(unit_counter_words(p.groups) * 4 + 15) / 16 * 16) << inst.name() << " on " << p.to_string();
      EXPECT_LE(bytes, inst.workspace_bytes(p)) << inst.name() << " on " << p.to_string();
      waiting += waits;
      counting += counts;
    }
  // (a filtered build without the stream and resident families has nothing that waits; a build
  // of forward ops only has nothing that counts)
  bool could_wait = false, could_count = false;
  for (const Instance& inst : Registry::global().all()) {
    could_wait |= describe(inst.spec().family).streams || describe(inst.spec().family).persistent;
    could_count |= describe(inst.spec().family).gamma_beta_arrivals && describe(inst.spec().op).backward;
  }
  if (could_wait) EXPECT_GT(waiting, 0) << "no instance of this build waits for another workgroup on the corpus";
  if (could_count) EXPECT_GT(counting, 0) << "no instance of this build counts a group's samples on the corpus";
}

// The channels-first stream forward's waves (params.hpp: stream_cf_waves): whole groups, every
// wave's body in the grid's shares of at most what a workgroup holds, and the slot
// areas within the workspace the runtime sized (stream_cf_slots).
TEST(Workspace, StreamWavesFitTheirSharesAndSlots) {
  int plans = 0;
  for (std::int64_t L : {8ll, 1000ll, 565647ll, 4194304ll, 10485760ll})
    for (std::int64_t groups : {1ll, 5ll, 30ll, 32ll, 1024ll})
      for (std::int64_t workgroups : {264ll, 132ll, 7ll})
        for (std::int64_t hold : {1ll, 3200ll, 6500ll})
          for (int v : {4, 8}) {
            const StreamCfWaves w = stream_cf_waves(L, groups, v, workgroups, hold);
            if (w.groups == 0) {
              // no plan only where one group's body is more than the grid holds
              EXPECT_GT(L, (hold * workgroups + 1) * v - 1) << L << " " << hold << " " << workgroups;
              continue;
            }
            ++plans;
            EXPECT_GE(w.groups * w.waves, groups);
            EXPECT_LT(w.groups * (w.waves - 1), groups) << "an empty wave";
            EXPECT_LE(w.chunk, hold);
            // a wave's body, at most groups L / V vectors, in at most `workgroups` shares
            EXPECT_LE((w.groups * L / v + w.chunk - 1) / w.chunk, workgroups);
            if (w.waves > 1)
              EXPECT_LE(2 * stream_cf_slot_area(workgroups, w.groups), stream_cf_slots(workgroups, groups));
          }
  EXPECT_GT(plans, 100);
}

TEST(Workspace, SizeQueryErrors) {
  Dispatcher h(kH100);
  const Key k = Registry::global().keys().front();
  Problem p = make_problem({2, 64, {8, 8}, 32}, k.x_dtype, k.gamma_dtype, k.layout, k.act);
  p.op = k.op;
  std::size_t bytes = 99;
  EXPECT_EQ(h.workspace_size(p, "gn_not_an_instance", &bytes).code, StatusCode::unknown_instance);
  EXPECT_EQ(bytes, 0u);
  // an instance of another op
  Problem other = p;
  other.op = p.op == Op::fwd ? Op::bwd : Op::fwd;
  const std::string name = Registry::global().bucket(k).front()->name();
  EXPECT_EQ(h.workspace_size(other, name, &bytes).code, StatusCode::not_supported);
  Problem invalid = p;
  invalid.groups = 7;
  EXPECT_EQ(h.workspace_size(invalid, "", &bytes).code, StatusCode::invalid_argument);
  Registry empty;
  Dispatcher nothing(kH100, &empty);
  const Status s = nothing.workspace_size(p, "", &bytes);
  EXPECT_EQ(s.code, StatusCode::not_built);
  EXPECT_NE(s.message.find("reconfigure"), std::string::npos) << s.message;
}

// A backward problem (whose every instance needs a workspace) and fake, aligned tensor
// addresses: run_with_workspace's checks all come before any launch.
struct FakeBackward {
  Problem p;
  Tensors t;
};
FakeBackward fake_backward() {
  FakeBackward f;
  for (const Key& k : Registry::global().keys())
    if (k.op == Op::bwd) {
      f.p = make_problem({2, 64, {8, 8}, 32}, k.x_dtype, k.gamma_dtype, k.layout, k.act);
      f.p.op = Op::bwd;
      break;
    }
  auto* base = reinterpret_cast<char*>(std::uintptr_t(1) << 20);
  f.t.x = base;
  f.t.dy = base + (1 << 16);
  f.t.dx = base + (2 << 16);
  f.t.mean = reinterpret_cast<float*>(base + (3 << 16));
  f.t.rstd = reinterpret_cast<float*>(base + (4 << 16));
  f.t.gamma = base + (5 << 16);
  f.t.beta = base + (6 << 16);
  f.t.dgamma = base + (7 << 16);
  f.t.dbeta = base + (8 << 16);
  return f;
}

TEST(Workspace, GivenWorkspaceIsChecked) {
  const FakeBackward f = fake_backward();
  if (f.p.n == 0) GTEST_SKIP() << "no fused backward in this build";
  Dispatcher h(kH100);  // no device: every check runs, then no_device instead of a launch
  const std::size_t need = h.workspace_bytes(f.p);
  ASSERT_GE(need, std::size_t(2 * 64 * 8));
  void* ws = reinterpret_cast<void*>(std::uintptr_t(1) << 30);
  Status s = h.run_with_workspace(f.p, f.t, nullptr, 0);
  EXPECT_EQ(s.code, StatusCode::invalid_argument);
  EXPECT_NE(s.message.find("needs a workspace of"), std::string::npos) << s.message;
  // 4 bytes short of what the chosen instance needs (workspace_bytes(p) is the largest need of
  // every supporting instance, which the chosen one may be below)
  const Instance* chosen = h.choose(f.p, &f.t);
  ASSERT_NE(chosen, nullptr);
  const std::size_t own = h.workspace_bytes(f.p, chosen->name());
  ASSERT_GT(own, 4u) << chosen->name();
  ASSERT_LE(own, need);
  s = h.run_with_workspace(f.p, f.t, ws, own - 4);
  EXPECT_EQ(s.code, StatusCode::invalid_argument);
  EXPECT_NE(s.message.find(chosen->name() + " needs a workspace of " + std::to_string(own) + " bytes"),
            std::string::npos)
      << s.message;
  EXPECT_NE(s.message.find(std::to_string(own - 4) + " given"), std::string::npos) << s.message;
  EXPECT_EQ(h.run_with_workspace(f.p, f.t, ws, own).code, StatusCode::no_device);
  s = h.run_with_workspace(f.p, f.t, nullptr, need);
  EXPECT_NE(s.message.find("workspace is null"), std::string::npos) << s.message;
  s = h.run_with_workspace(f.p, f.t, static_cast<char*>(ws) + 4, need);
  EXPECT_NE(s.message.find("16-byte aligned"), std::string::npos) << s.message;
  // the problem and tensors are still validated first
  Tensors no_dy = f.t;
  no_dy.dy = nullptr;
  s = h.run_with_workspace(f.p, no_dy, ws, need);
  EXPECT_NE(s.message.find("dy is null"), std::string::npos) << s.message;
  EXPECT_EQ(h.run_with_workspace(f.p, f.t, ws, need).code, StatusCode::no_device);
  EXPECT_EQ(h.run_with_workspace(f.p, f.t, ws, need, nullptr, "gn_nope").code, StatusCode::unknown_instance);
}

TEST(Workspace, CApi) {
  const FakeBackward f = fake_backward();
  if (f.p.n == 0) GTEST_SKIP() << "no fused backward in this build";
  hipgn_handle_t h = nullptr;
  (void)hipgn_create(&h);
  hipgn_problem_t cp{};
  cp.op = HIPGN_OP_BWD;
  cp.n = f.p.n;
  cp.c = f.p.c;
  cp.groups = f.p.groups;
  cp.spatial_rank = 2;
  cp.spatial[0] = cp.spatial[1] = 8;
  cp.x_dtype = hipgn_dtype_t(f.p.x_dtype);
  cp.gamma_dtype = hipgn_dtype_t(f.p.gamma_dtype);
  cp.layout = hipgn_layout_t(f.p.layout);
  cp.act = hipgn_activation_t(f.p.act);
  cp.eps = 1e-5f;
  cp.swish_beta = 1.f;
  std::size_t bytes = 0;
  ASSERT_EQ(hipgn_workspace_size(h, &cp, nullptr, &bytes), HIPGN_STATUS_SUCCESS) << hipgn_last_error();
  EXPECT_EQ(bytes, Dispatcher(kH100).workspace_bytes(f.p));
  EXPECT_EQ(hipgn_workspace_size(h, &cp, "gn_nope", &bytes), HIPGN_STATUS_UNKNOWN_INSTANCE);
  EXPECT_EQ(hipgn_workspace_size(h, &cp, nullptr, nullptr), HIPGN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(hipgn_workspace_size(nullptr, &cp, nullptr, &bytes), HIPGN_STATUS_INVALID_ARGUMENT);
  ASSERT_EQ(hipgn_workspace_size(h, &cp, "", &bytes), HIPGN_STATUS_SUCCESS);
  const Tensors& t = f.t;
  EXPECT_EQ(hipgn_groupnorm_bwd_with_workspace(h, &cp, t.dy, t.x, t.mean, t.rstd, t.gamma, t.beta, t.dx, t.dgamma,
                                               t.dbeta, nullptr, 0, nullptr, nullptr),
            HIPGN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hipgn_last_error()).find("needs a workspace of"), std::string::npos) << hipgn_last_error();
  // each entry point takes its own ops
  EXPECT_EQ(hipgn_groupnorm_fwd_with_workspace(h, &cp, t.x, t.dx, nullptr, nullptr, nullptr, nullptr, nullptr, 0,
                                               nullptr, nullptr),
            HIPGN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hipgn_last_error()).find("needs op HIPGN_OP_FWD"), std::string::npos);
  hipgn_destroy(h);
}

// The keys the GPU tests below run: one per dtype, both layouts, both activations.
std::vector<Key> gpu_keys() {
  std::vector<Key> keys;
  for (const Key& k : Registry::global().keys()) {
    const bool pick = (k.x_dtype == DataType::f32 && k.layout == Layout::channels_first && k.act == Activation::none) ||
                      (k.x_dtype == DataType::f16 && k.gamma_dtype == DataType::f16 &&
                       k.layout == Layout::channels_last && k.act == Activation::swish) ||
                      (k.x_dtype == DataType::bf16 && k.gamma_dtype == DataType::f32 &&
                       k.layout == Layout::channels_last && k.act == Activation::none);
    if (pick) keys.push_back(k);
  }
  return keys;
}

TEST(Workspace, PoisonedCallerWorkspaceOnTheGpu) {
  HIPGN_REQUIRE_GPU();
  std::unique_ptr<Dispatcher> h;
  ASSERT_TRUE(Dispatcher::create(&h).ok());
  int runs = 0;
  for (const Key& k : gpu_keys())
    for (std::size_t i = 0; i < shape_corpus().size(); ++i) {
      Problem p = make_problem(shape_corpus()[i], k.x_dtype, k.gamma_dtype, k.layout, k.act);
      p.op = k.op;
      const std::size_t bytes = h->workspace_bytes(p);
      DeviceBuffer ws(bytes);
      auto launch = [&](const Problem& q, const Tensors& t) {
        ws.poison();  // NaN everywhere: the kernels must initialize what they read
        return h->run_with_workspace(q, t, ws.get(), bytes);
      };
      const std::string what = "caller workspace, " + p.to_string();
      run_and_check_op(p, RunOptions{}, launch, what);
      if (HasFailure()) return;
      ++runs;
    }
  if (!runs) GTEST_SKIP() << "none of the keys this test runs is built";
}

TEST(Workspace, EveryInstanceNeedingOneTakesTheCallers) {
  HIPGN_REQUIRE_GPU();
  std::unique_ptr<Dispatcher> h;
  ASSERT_TRUE(Dispatcher::create(&h).ok());
  for (const Key& k : gpu_keys())
    for (const Instance* inst : Registry::global().bucket(k)) {
      Problem p = make_problem({2, 64, {64, 64}, 32}, k.x_dtype, k.gamma_dtype, k.layout, k.act);
      p.op = k.op;
      if (!inst->supports(p) || inst->workspace_bytes(p) == 0) continue;
      std::size_t bytes = 0;
      ASSERT_TRUE(h->workspace_size(p, inst->name(), &bytes).ok());
      DeviceBuffer ws(bytes);
      auto launch = [&](const Problem& q, const Tensors& t) {
        ws.poison();
        return h->run_with_workspace(q, t, ws.get(), bytes, nullptr, inst->name());
      };
      run_and_check_op(p, RunOptions{}, launch, inst->name());
      if (HasFailure()) return;
    }
}

TEST(Workspace, RunsCapturedInAGraph) {
  HIPGN_REQUIRE_GPU();
  std::unique_ptr<Dispatcher> h;
  ASSERT_TRUE(Dispatcher::create(&h).ok());
  int runs = 0;
  for (const Key& k : gpu_keys())
    for (const Shape& shape : {Shape{2, 320, {32, 32}, 32}, Shape{1, 64, {128, 128}, 2}, Shape{2, 96, {17, 19}, 32}}) {
      Problem p = make_problem(shape, k.x_dtype, k.gamma_dtype, k.layout, k.act);
      p.op = k.op;
      const std::size_t bytes = h->workspace_bytes(p);
      DeviceBuffer ws(bytes);
      ws.poison();
      auto launch = [&](const Problem& q, const Tensors& t) {
        // one run uncaptured first, as PyTorch's capture asks (kernels loaded, caches warm),
        // then every output poisoned again: what is checked is what the replays wrote
        Status s = h->run_with_workspace(q, t, ws.get(), bytes);
        if (!s.ok()) return s;
        const std::size_t out = std::size_t(q.elements()) * size_of(q.x_dtype);
        const std::size_t affine = std::size_t(q.c) * size_of(q.gamma_dtype);
        const std::size_t stats = std::size_t(q.num_groups()) * sizeof(float);
        for (auto [ptr, size] : {std::pair<void*, std::size_t>{t.y, out}, {t.dx, out}, {t.dgamma, affine},
                                 {t.dbeta, affine}, {q.op == Op::fwd ? t.mean : nullptr, stats},
                                 {q.op == Op::fwd ? t.rstd : nullptr, stats}})
          if (ptr && hipMemset(ptr, 0xFF, size) != hipSuccess) return Status::error(StatusCode::runtime_error, "memset");
        ws.poison();
        // replayed twice: a second replay over the first's workspace must give the same
        return capture_and_replay([&](hipStream_t st) { return h->run_with_workspace(q, t, ws.get(), bytes, st); },
                                  2);
      };
      const std::string what = "captured, " + p.to_string();
      run_and_check_op(p, RunOptions{}, launch, what);
      if (HasFailure()) return;
      ++runs;
    }
  if (!runs) GTEST_SKIP() << "none of the keys this test runs is built";
}

}  // namespace
}  // namespace hipgn::test
