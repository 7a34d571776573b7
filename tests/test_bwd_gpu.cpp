// Every built backward instance (ops dx, dgb, bwd) on the odd-shape corpus against the float64
// reference; our forward feeding our backward; bitwise determinism; dispatch end to end.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

#include "corpus.hpp"
#include "gpu.hpp"

namespace hipgn::test {
namespace {

std::atomic<int> g_tested{0};

class ReportCounts : public ::testing::Environment {
 public:
  void TearDown() override {
    if (g_tested > 0) std::printf("hipgn: %d backward instances tested\n", g_tested.load());
  }
};
const auto* const kReport = ::testing::AddGlobalTestEnvironment(new ReportCounts);

class BwdInstance : public ::testing::TestWithParam<std::string> {};

// gamma is needed with Swish (to recompute its input) and by dgb; elsewhere vary affine
RunOptions options_for(const Problem& p, std::size_t i) {
  RunOptions o;
  const bool must = p.act == Activation::swish || p.op == Op::dgb;
  o.gamma = must || i % 3 != 1;
  o.beta = i % 3 != 2 && o.gamma;
  if (i % 4 == 3) {
    o.x_offset = 40.0;
    o.x_scale = 1.0;
  }
  return o;
}

TEST_P(BwdInstance, MatchesReferenceOnCorpus) {
  HIPGN_REQUIRE_GPU();
  const Instance* inst = Registry::global().find(GetParam());
  ASSERT_NE(inst, nullptr);
  const InstanceSpec& s = inst->spec();
  int supported = 0;
  for (std::size_t i = 0; i < shape_corpus().size(); ++i) {
    Problem p = make_problem(shape_corpus()[i], s.x_dtype, s.gamma_dtype, s.layout, s.act);
    p.op = s.op;
    if (!inst->supports(p)) continue;
    ++supported;
    check_corpus_shape(*inst, p, options_for(p, i), i);  // misaligned, own counters on a share of the shapes
    if (HasFailure()) return;
  }
  EXPECT_GT(supported, 0) << inst->name() << " supports no shape of the corpus";
  ++g_tested;
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(BwdInstance);  // a build of forward ops only
INSTANTIATE_TEST_SUITE_P(All, BwdInstance, ::testing::ValuesIn(instance_names(true)),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// The channels-last stream backward's ring (stream_bwd.hpp's each_row): rows in flight through
// shared memory only where a thread has kStreamRingFromRows rows of an item or more, which no
// corpus shape gives (its items are short). One sample whose rows a workgroup reads two at a
// time, of an odd spatial size sized from this device's workgroups, so that a thread has about
// `rows_a_thread` rows: at 1.25 x kStreamRingFromRows the ring wraps several times, in phase 1
// and in dx's reverse order; just below it (the register loop) a thread of an op that writes
// dx holds its first rows for dx in the shared memory left beside C = 2048's sums (~10 rows on
// an H200), fewer than it has, so dx takes some from there and the rest from memory.
class StreamRing : public ::testing::TestWithParam<std::string> {};

std::vector<std::string> stream_backwards() {
  return instance_names(true, [](const InstanceSpec& s) { return s.family == Family::stream; });
}

void check_stream_items(const std::string& name, std::int64_t rows_a_thread) {
  const Instance* inst = Registry::global().find(name);
  ASSERT_NE(inst, nullptr);
  const InstanceSpec& s = inst->spec();
  int device = 0, cus = 0;
  ASSERT_EQ(hipGetDevice(&device), hipSuccess);
  ASSERT_EQ(hipDeviceGetAttribute(&cus, hipDeviceAttributeMultiprocessorCount, device), hipSuccess);
  // two rows of C at once (lanes), whatever the instance's block and vector
  const std::int64_t c = std::int64_t(s.block) * s.vector / 2, lanes = stream_cl_shape(c, s.vector, s.block).lanes;
  const std::int64_t workgroups = std::int64_t(cus) * (stream_threads_per_cu(true, s.per_thread) / s.block);
  // a part a workgroup (N = 1), rows / lanes a thread
  const std::int64_t hw = rows_a_thread * lanes * workgroups | 1;
  Problem p = make_problem({1, c, {hw}, 32}, s.x_dtype, s.gamma_dtype, s.layout, s.act);
  p.op = s.op;
  ASSERT_TRUE(inst->supports(p)) << inst->name() << " on " << p.to_string();
  RunOptions o;
  o.misalign_affine = true;
  check_instance(*inst, p, o, true, inst->name() + " on " + p.to_string());
}

TEST_P(StreamRing, LongItemsMatchReference) {
  HIPGN_REQUIRE_GPU();
  check_stream_items(GetParam(), kStreamRingFromRows * 5 / 4);
}

TEST_P(StreamRing, ItemsHeldInPartMatchReference) {
  HIPGN_REQUIRE_GPU();
  check_stream_items(GetParam(), kStreamRingFromRows - 1);
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(StreamRing);  // a build without the family
INSTANTIATE_TEST_SUITE_P(All, StreamRing, ::testing::ValuesIn(stream_backwards()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// Through the handle, with the saved statistics of our own forward.
TEST(BwdDispatch, ForwardStatisticsFeedBackward) {
  HIPGN_REQUIRE_GPU();
  std::unique_ptr<Handle> h;
  ASSERT_TRUE(Handle::create(&h).ok());
  const Launch run = [&](const Problem& q, const Tensors& t) { return h->run(q, t); };
  int runs = 0, built = 0;
  for (Op op : {Op::dx, Op::dgb, Op::bwd})
    for (const auto& pair : kDtypePairs)
      for (Layout layout : {Layout::channels_first, Layout::channels_last})
        for (Activation act : {Activation::none, Activation::swish}) {
          if (Registry::global().bucket({op, pair[0], pair[1], layout, act}).empty() ||
              Registry::global().bucket({Op::fwd, pair[0], pair[1], layout, act}).empty())
            continue;
          ++built;
          for (std::size_t i = 0; i < shape_corpus().size(); i += 3) {
            Problem p = make_problem(shape_corpus()[i], pair[0], pair[1], layout, act);
            p.op = op;
            if (act == Activation::swish) p.swish_beta = 1.702f;
            RunOptions o = options_for(p, i);
            o.misalign_elements = i % 2;
            run_and_check_bwd(p, o, run, "dispatch " + p.to_string() + (o.misalign_elements ? " misaligned" : ""),
                              &run);
            ++runs;
            if (HasFailure()) return;
          }
        }
  if (built == 0) GTEST_SKIP() << "no backward built beside its forward (a forward-only build)";
  EXPECT_GT(runs, 0);
}

// Two runs of every backward family on the same inputs give the same bits.
TEST(BwdDispatch, Deterministic) {
  HIPGN_REQUIRE_GPU();
  Problem p = make_problem({2, 64, {96, 96}, 32}, DataType::f32, DataType::f32, Layout::channels_last,
                           Activation::swish);
  p.op = Op::bwd;
  const std::size_t n = std::size_t(p.elements()), bytes = n * 4;
  std::vector<double> v(n);
  std::mt19937 rng(test_seed());
  std::uniform_real_distribution<double> u(-1, 1);
  for (auto& e : v) e = u(rng);
  const auto xb = encode(DataType::f32, v);
  DeviceBuffer x(bytes), dy(bytes), gamma(64 * 4), dx1(bytes), dx2(bytes), g1(256), g2(256), b1(256), b2(256),
      mean(256), rstd(256);
  x.upload(xb.data(), bytes);
  dy.upload(xb.data(), bytes);  // any values: only the two runs' agreement matters
  std::vector<float> ones(64, 1.25f), stats(64, 0.5f);
  gamma.upload(ones.data(), 256);
  mean.upload(stats.data(), 256);
  rstd.upload(stats.data(), 256);
  if (Registry::global().bucket(Key::of(p)).empty()) GTEST_SKIP() << "f32 channels-last backward not built";
  int families = 0;
  for (const Instance* inst : Registry::global().bucket(Key::of(p))) {
    if (!inst->supports(p)) continue;
    DeviceBuffer ws(inst->workspace_bytes(p));
    // the handle's way too: counters of its own, zero at launch (the onchip and looped
    // backwards then add dgamma and dbeta up in their kernel, in the same order)
    DeviceBuffer counters(inst->counter_bytes(p));
    ASSERT_EQ(hipMemset(counters.get(), 0, counters.bytes()), hipSuccess);
    auto launch = [&](DeviceBuffer& dx, DeviceBuffer& dg, DeviceBuffer& db, bool own = false) {
      Tensors t;
      t.x = x.get();
      t.dy = dy.get();
      t.gamma = gamma.get();
      t.mean = static_cast<float*>(mean.get());
      t.rstd = static_cast<float*>(rstd.get());
      t.dx = dx.get();
      t.dgamma = dg.get();
      t.dbeta = db.get();
      return inst->run(p, t, ws.get(), nullptr, 0, own && counters.bytes() ? counters.get() : nullptr);
    };
    for (bool own : {false, true}) {
      ASSERT_TRUE(launch(dx1, g1, b1).ok());
      ASSERT_TRUE(launch(dx2, g2, b2, own).ok());
      const std::string what = inst->name() + (own ? " (the second on zeroed counters)" : "");
      EXPECT_EQ(dx1.download(), dx2.download()) << what;
      EXPECT_EQ(g1.download(), g2.download()) << what;
      EXPECT_EQ(b1.download(), b2.download()) << what;
    }
    ++families;
  }
  EXPECT_GT(families, 0);
}

// The handle keeps one counter buffer a stream for every launch on it: each family's counts
// must start at zero whatever the launch before left in its generation words (params.hpp:
// counts at even words, generations at odd). One instance of each (family, op, layout) that
// counts, the stream family's first (its barriers' generations at words 33 and 97), in turn on
// one handle and stream, twice, on shapes whose resident units and onchip groups count at words
// past those.
TEST(Counters, OneBufferServesEveryFamilyOnAStream) {
  HIPGN_REQUIRE_GPU();
  std::unique_ptr<Handle> h;
  ASSERT_TRUE(Handle::create(&h).ok());
  const std::vector<Shape> shapes = {{20, 64, {24, 24}, 32}, {3, 256, {7, 9}, 64}, {50, 32, {13}, 8}};
  struct Turn {
    Problem p;
    std::string instance;
    bool streams;
  };
  std::vector<Turn> turns;
  std::set<std::tuple<Family, Op, Layout>> seen;
  std::size_t most = 0;
  for (const Instance& inst : Registry::global().all()) {
    const InstanceSpec& s = inst.spec();
    if (seen.count({s.family, s.op, s.layout})) continue;
    for (const Shape& shape : shapes) {
      Problem p = make_problem(shape, s.x_dtype, s.gamma_dtype, s.layout, s.act);
      p.op = s.op;
      if (s.act == Activation::swish) p.swish_beta = 1.702f;
      if (!inst.supports(p)) continue;
      const std::size_t bytes = inst.counter_bytes(p);
      if (bytes == 0) continue;
      turns.push_back({p, inst.name(), describe(s.family).streams});
      seen.insert({s.family, s.op, s.layout});
      most = std::max(most, bytes);
      break;
    }
  }
  std::stable_partition(turns.begin(), turns.end(), [](const Turn& t) { return t.streams; });
  if (turns.empty() || !turns.front().streams) GTEST_SKIP() << "this build has no stream instance on these shapes";
  EXPECT_GT(most, std::size_t(98 * 4)) << "no family counted past the stream barriers' generations";
  for (int round = 0; round < 2; ++round)
    for (std::size_t i = 0; i < turns.size(); ++i) {
      const Turn& t = turns[i];
      RunOptions o;
      o.gamma = o.beta = true;
      const Launch run = [&](const Problem& q, const Tensors& ts) { return h->run(q, ts, nullptr, t.instance); };
      if (!run_and_check_op(t.p, o, run, "round " + std::to_string(round) + ": " + t.instance + " " + t.p.to_string()))
        return;
    }
}

}  // namespace
}  // namespace hipgn::test
