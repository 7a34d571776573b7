// Every built forward instance on the odd-shape corpus against the float64 reference, and the
// dispatch API end to end. One test per instance, named by the instance.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <random>
#include <set>

#include "corpus.hpp"
#include "gpu.hpp"

namespace hipgn::test {
namespace {

std::atomic<int> g_instances_tested{0};
std::atomic<int> g_runs{0};

class ReportCounts : public ::testing::Environment {
 public:
  void TearDown() override {
    if (g_instances_tested > 0)
      std::printf("hipgn: %d forward instances tested in %d checked runs\n", g_instances_tested.load(), g_runs.load());
  }
};
const auto* const kReport = ::testing::AddGlobalTestEnvironment(new ReportCounts);

class FwdInstance : public ::testing::TestWithParam<std::string> {};

TEST_P(FwdInstance, MatchesReferenceOnCorpus) {
  HIPGN_REQUIRE_GPU();
  const Instance* inst = Registry::global().find(GetParam());
  ASSERT_NE(inst, nullptr);
  const InstanceSpec& s = inst->spec();
  int supported = 0;
  for (std::size_t i = 0; i < shape_corpus().size(); ++i) {
    Problem p = make_problem(shape_corpus()[i], s.x_dtype, s.gamma_dtype, s.layout, s.act);
    if (!inst->supports(p)) continue;
    ++supported;
    // Swish's beta other than SiLU's 1 on some shapes, negative on some (any finite beta is
    // valid; primitives/activation.hpp takes its sign apart)
    if (s.act == Activation::swish && i % 4 != 0) p.swish_beta = i % 4 == 1 ? -0.8f : 1.702f;
    // vary affine and saved statistics across shapes so each instance sees both
    RunOptions o;
    o.gamma = i % 3 != 1;
    o.beta = i % 3 != 2;
    o.save_stats = i % 2 == 0;
    if (i % 4 == 3) {  // a large offset: statistics must not cancel catastrophically
      o.x_offset = 40.0;
      o.x_scale = 1.0;
    }
    check_corpus_shape(*inst, p, o, i);  // misaligned, own counters on a share of the shapes
    ++g_runs;
    if (HasFailure()) return;
  }
  // every instance must meet the corpus somewhere, or the corpus does not test it
  EXPECT_GT(supported, 0) << inst->name() << " supports no shape of the corpus";
  ++g_instances_tested;
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(FwdInstance);  // a build of backward ops only
INSTANTIATE_TEST_SUITE_P(All, FwdInstance, ::testing::ValuesIn(instance_names(false)),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// The channels-first stream forward past what its grid holds (stream_fwd_cf.hpp): holding what
// it can and reading the rest again, as it does by default below kStreamCfWavesFromHeld times
// what the grid holds, or, with HIPGN_STREAM_WAVES=always (scripts/gpu_check.sh runs these tests
// so too), in waves of whole groups, each held whole; a tensor whose one group is more than the
// grid holds is one wave either way. The corpus's shapes all fit on chip.
class StreamWaves : public ::testing::TestWithParam<std::string> {};

std::vector<std::string> stream_cf_forwards() {
  return instance_names(false, [](const InstanceSpec& s) {
    return s.family == Family::stream && s.layout == Layout::channels_first;
  });
}

TEST_P(StreamWaves, LargeTensorsMatchReference) {
  HIPGN_REQUIRE_GPU();
  const Instance* inst = Registry::global().find(GetParam());
  ASSERT_NE(inst, nullptr);
  const InstanceSpec& s = inst->spec();
  int device = 0, cus = 0, smem = 0;
  ASSERT_EQ(hipGetDevice(&device), hipSuccess);
  ASSERT_EQ(hipDeviceGetAttribute(&cus, hipDeviceAttributeMultiprocessorCount, device), hipSuccess);
  ASSERT_EQ(hipDeviceGetAttribute(&smem, hipDeviceAttributeMaxSharedMemoryPerMultiprocessor, device), hipSuccess);
  int l2 = 0;
  ASSERT_EQ(hipDeviceGetAttribute(&l2, hipDeviceAttributeL2CacheSize, device), hipSuccess);
  const std::int64_t chip = std::int64_t(cus) * smem, es = std::int64_t(size_of(s.x_dtype));
  // at most what a wave takes: what the grid holds (less than the chip's shared memory) and a
  // share of the L2
  const std::int64_t wave = chip + l2 / kStreamCfWaveL2Share;
  // 38 groups of 3 channels of 1-D rows of an odd length, 2.5 waves (the last shorter), x one
  // element off the 16-byte boundary; then one group of a 1-D row of 10 channels, more than a wave
  const std::int64_t row = (wave * 5 / 2 / es / (2 * 57)) | 1, single = (wave * 6 / 5 / es / 10) | 1;
  const Shape shapes[] = {{2, 57, {row}, 19}, {1, 10, {single}, 1}};
  int runs = 0;
  for (const Shape& shape : shapes) {
    const Problem p = make_problem(shape, s.x_dtype, s.gamma_dtype, s.layout, s.act);
    if (!inst->supports(p)) continue;
    ASSERT_GT(p.elements() * es, wave) << "the shape fits in one wave";
    RunOptions o;
    o.misalign_elements = runs == 0 && takes_offset(*inst, p, 1) ? 1 : 0;
    check_instance(*inst, p, o, true, inst->name() + " on " + p.to_string());
    ++runs;
    if (HasFailure()) return;
  }
  EXPECT_EQ(runs, 2) << inst->name() << " supports not every large shape";
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(StreamWaves);  // a build without the family
INSTANTIATE_TEST_SUITE_P(All, StreamWaves, ::testing::ValuesIn(stream_cf_forwards()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// The onchip forward's parts with x held as loaded (families/onchip.hpp, kOnchipHeldBits: the
// channels-last rows, the channels-first vectors, aligned or peeled), which the launcher takes by
// default only where the device would not run all of the plain kernel's clusters at once: no
// shape small enough for a test is so large. Two shapes whose groups go in two to five parts for every such
// instance (channels-first: 4160 an aligned channel row, 1517 a peeled one), against the
// reference; with HIPGN_ONCHIP_HELD_BITS=always (scripts/gpu_check.sh runs these tests so) in
// that kernel.
class OnchipHeldBits : public ::testing::TestWithParam<std::string> {};

std::vector<std::string> onchip_held_bits_forwards() {
  return instance_names(false, [](const InstanceSpec& s) {
    return s.family == Family::onchip && onchip_held_bits(int(size_of(s.x_dtype)), s.vector, s.per_thread);
  });
}

TEST_P(OnchipHeldBits, GroupsInPartsMatchReference) {
  HIPGN_REQUIRE_GPU();
  const Instance* inst = Registry::global().find(GetParam());
  ASSERT_NE(inst, nullptr);
  const InstanceSpec& s = inst->spec();
  // C/G = 8 of 4160 rows and C/G = 16 of 1517 (odd), a group's rows in 2-5 parts from 256 x 4 x 8
  // to 1024 x 2 x 16
  const Shape shapes[] = {{1, 16, {64, 65}, 2}, {2, 64, {37, 41}, 4}};
  int runs = 0;
  for (const Shape& shape : shapes) {
    Problem p = make_problem(shape, s.x_dtype, s.gamma_dtype, s.layout, s.act);
    if (!inst->supports(p) || inst->onchip_parts(p).parts < 2) continue;
    if (s.act == Activation::swish && runs == 1) p.swish_beta = 1.702f;
    RunOptions o;
    o.save_stats = runs == 0;
    o.misalign_affine = runs == 1;
    check_instance(*inst, p, o, true, inst->name() + " on " + p.to_string());
    ++runs;
    if (HasFailure()) return;
  }
  EXPECT_GT(runs, 0) << inst->name() << " holds no group of these shapes in parts";
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OnchipHeldBits);  // a build without such instances
INSTANTIATE_TEST_SUITE_P(All, OnchipHeldBits, ::testing::ValuesIn(onchip_held_bits_forwards()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// The dispatch API: the heuristic's choice (and misaligned tensors, which only vector-1
// instances accept) over the corpus, for every key this build has.
TEST(FwdDispatch, HandleForwardOnCorpus) {
  HIPGN_REQUIRE_GPU();
  std::unique_ptr<Handle> h;
  ASSERT_TRUE(Handle::create(&h).ok());
  int runs = 0;
  for (const auto& pair : kDtypePairs)
    for (Layout layout : {Layout::channels_first, Layout::channels_last})
      for (Activation act : {Activation::none, Activation::swish}) {
        if (Registry::global().bucket({Op::fwd, pair[0], pair[1], layout, act}).empty()) continue;
        for (std::size_t i = 0; i < shape_corpus().size(); ++i) {
          Problem p = make_problem(shape_corpus()[i], pair[0], pair[1], layout, act);
          if (act == Activation::swish) p.swish_beta = i % 2 ? 1.0f : 1.702f;
          RunOptions o;
          o.misalign_elements = i % 5 == 4 ? 1 : 0;
          run_and_check(p, o, [&](const Problem& q, const Tensors& t) { return h->run(q, t); },
                        "dispatch " + p.to_string() + (o.misalign_elements ? " misaligned" : ""));
          ++runs;
          if (HasFailure()) return;
        }
      }
  EXPECT_GT(runs, 0);
}

// Stable Diffusion's shape through the handle, both layouts, with a stream of its own.
TEST(FwdDispatch, StableDiffusionShapeOnStream) {
  HIPGN_REQUIRE_GPU();
  std::unique_ptr<Handle> h;
  ASSERT_TRUE(Handle::create(&h).ok());
  hipStream_t stream;
  ASSERT_EQ(hipStreamCreate(&stream), hipSuccess);
  for (Layout layout : {Layout::channels_first, Layout::channels_last}) {
    const Problem p = make_problem({2, 320, {64, 64}, 32}, DataType::f16, DataType::f16, layout, Activation::swish);
    if (Registry::global().bucket(Key::of(p)).empty()) continue;
    run_and_check(p, RunOptions{}, [&](const Problem& q, const Tensors& t) { return h->run(q, t, stream); },
                  "sd15 " + p.to_string());
  }
  EXPECT_EQ(hipStreamSynchronize(stream), hipSuccess);
  EXPECT_EQ(hipStreamDestroy(stream), hipSuccess);
}

// Running the same instance twice gives the same bits.
TEST(FwdDispatch, Deterministic) {
  HIPGN_REQUIRE_GPU();
  std::unique_ptr<Handle> h;
  ASSERT_TRUE(Handle::create(&h).ok());
  const Problem p = make_problem({1, 64, {128, 128}, 2}, DataType::f32, DataType::f32, Layout::channels_first,
                                    Activation::none);
  if (Registry::global().bucket(Key::of(p)).empty()) GTEST_SKIP() << "f32 channels-first not built";
  const std::size_t bytes = std::size_t(p.elements()) * 4;
  std::vector<double> x(std::size_t(p.elements()));
  std::mt19937 rng(test_seed());
  std::uniform_real_distribution<double> u(-1, 1);
  for (auto& v : x) v = u(rng);
  const auto xb = encode(DataType::f32, x);
  DeviceBuffer dx(bytes), y1(bytes), y2(bytes);
  dx.upload(xb.data(), bytes);
  ASSERT_TRUE(h->run(p, Tensors{dx.get(), y1.get()}).ok());
  ASSERT_TRUE(h->run(p, Tensors{dx.get(), y2.get()}).ok());
  EXPECT_EQ(y1.download(), y2.download());
}

// Graphs captured on one stream may be replayed side by side on others (PyTorch captures every
// graph on one side stream by default): run_with_workspace's launches must share nothing that
// they write, arrival counters included (the handle gives each captured launch a slice of its
// own). For each family whose forward counts arrivals, two problems' launches are captured on
// one stream and replayed together on two, 20 times; each output must keep the bits of an
// eager run (shared counters would mix the two grids' arrivals: a wrong answer or a hang).
TEST(Counters, GraphsCapturedOnOneStreamReplaySideBySide) {
  HIPGN_REQUIRE_GPU();
  std::unique_ptr<Handle> h;
  ASSERT_TRUE(Handle::create(&h).ok());
  const Shape shape{4, 320, {24, 24}, 32};
  std::set<Family> seen;
  for (const Instance& inst : Registry::global().all()) {
    const InstanceSpec& sp = inst.spec();
    if (sp.op != Op::fwd || seen.count(sp.family)) continue;
    const Problem p = make_problem(shape, sp.x_dtype, sp.gamma_dtype, sp.layout, sp.act);
    if (!inst.supports(p) || inst.counter_bytes(p) == 0) continue;
    seen.insert(sp.family);
    const std::size_t bytes = std::size_t(p.elements()) * size_of(p.x_dtype), ws_bytes = h->workspace_bytes(p, inst.name());
    std::vector<double> v(std::size_t(p.elements()));
    std::mt19937 rng(test_seed());
    std::uniform_real_distribution<double> u(-1, 1);
    DeviceBuffer xa(bytes), xb(bytes), ya(bytes), yb(bytes), ra(bytes), rb(bytes), wa(ws_bytes), wb(ws_bytes),
        wr(ws_bytes);
    for (DeviceBuffer* x : {&xa, &xb}) {
      for (auto& e : v) e = u(rng);
      const auto enc = encode(p.x_dtype, v);
      x->upload(enc.data(), bytes);
    }
    auto launch = [&](DeviceBuffer& x, DeviceBuffer& y, DeviceBuffer& ws, hipStream_t stream) {
      return h->run_with_workspace(p, Tensors{x.get(), y.get()}, ws.get(), ws_bytes, stream, inst.name());
    };
    ASSERT_TRUE(launch(xa, ra, wr, nullptr).ok());
    ASSERT_TRUE(launch(xb, rb, wr, nullptr).ok());
    ASSERT_EQ(hipDeviceSynchronize(), hipSuccess);
    const Status s = capture_and_replay({[&](hipStream_t st) { return launch(xa, ya, wa, st); },
                                         [&](hipStream_t st) { return launch(xb, yb, wb, st); }},
                                        20);
    ASSERT_TRUE(s.ok()) << inst.name() << ": " << s.message;
    EXPECT_EQ(ya.download(), ra.download()) << inst.name() << " on " << p.to_string() << ", the first graph";
    EXPECT_EQ(yb.download(), rb.download()) << inst.name() << " on " << p.to_string() << ", the second graph";
  }
  if (seen.empty()) GTEST_SKIP() << "no forward instance of this build counts arrivals on " << "the test's shape";
}

}  // namespace
}  // namespace hipgn::test
