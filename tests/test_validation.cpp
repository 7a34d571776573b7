// Bad input gets a clear error naming the problem, and nothing is written.
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <functional>
#include <tuple>

#include "corpus.hpp"
#include "gpu.hpp"
#include "hipgn/clusters.hpp"
#include "hipgn/family.hpp"
#include "hipgn/op.hpp"

namespace hipgn::test {
namespace {

Problem good() {
  return make_problem({2, 64, {8, 8}, 32}, DataType::f16, DataType::f16, Layout::channels_first, Activation::swish);
}
const Tensors kTensors{reinterpret_cast<const void*>(4096), reinterpret_cast<void*>(8192)};

// A channels-first forward instance that refuses runs its vector does not divide or align:
// vectorized, of a family that peels no run (FamilyDescriptor::peels_forward: onchip) and walks
// no persistent or streaming grid (resident, stream).
bool refuses_unaligned_runs(const Instance& inst) {
  const FamilyDescriptor& family = describe(inst.spec().family);
  return inst.spec().vector > 1 && !family.peels_forward && !family.persistent && !family.streams;
}

struct BadCase {
  const char* name;
  std::function<void(Problem&, Tensors&)> spoil;
  const char* message;  // a phrase the error must contain
};

const std::vector<BadCase>& bad_cases() {
  static const std::vector<BadCase> cases = {
      {"CNotDivisibleByG", [](Problem& p, Tensors&) { p.groups = 30; }, "C = 64 is not divisible by G = 30"},
      {"UnevenGroupsNotAskedFor", [](Problem& p, Tensors&) { p.groups = 5; }, "uneven groups are opt-in"},
      {"UnevenGroupsMoreThanChannels", [](Problem& p, Tensors&) { p.uneven_groups = true, p.groups = 65; },
       "G = 65 exceeds C = 64"},
      {"ZeroGroups", [](Problem& p, Tensors&) { p.groups = 0; }, "G = 0"},
      {"NegativeGroups", [](Problem& p, Tensors&) { p.groups = -2; }, "G = -2"},
      {"ZeroBatch", [](Problem& p, Tensors&) { p.n = 0; }, "N = 0"},
      {"ZeroChannels", [](Problem& p, Tensors&) { p.c = 0; }, "C = 0"},
      {"EmptySpatial", [](Problem& p, Tensors&) { p.spatial = {8, 0}; }, "spatial dimension 1 = 0: empty"},
      {"ZeroEps", [](Problem& p, Tensors&) { p.eps = 0; }, "eps"},
      {"NegativeEps", [](Problem& p, Tensors&) { p.eps = -1e-5f; }, "eps"},
      {"NanEps", [](Problem& p, Tensors&) { p.eps = std::nanf(""); }, "eps"},
      {"InfEps", [](Problem& p, Tensors&) { p.eps = INFINITY; }, "eps"},
      {"NullX", [](Problem&, Tensors& t) { t.x = nullptr; }, "x is null"},
      {"NullY", [](Problem&, Tensors& t) { t.y = nullptr; }, "y is null"},
      {"GammaDtype", [](Problem& p, Tensors&) { p.gamma_dtype = DataType::bf16; }, "gamma/beta dtype bf16"},
      {"Overflow", [](Problem& p, Tensors&) { p.spatial = {1ll << 40, 1ll << 30}; }, "2^63"},
  };
  return cases;
}

TEST(Validation, EachBadInputIsNamed) {
  Dispatcher h(DeviceInfo{});
  for (const BadCase& c : bad_cases()) {
    Problem p = good();
    Tensors t = kTensors;
    c.spoil(p, t);
    const Status s = h.run(p, t);
    EXPECT_EQ(s.code, StatusCode::invalid_argument) << c.name;
    EXPECT_NE(s.message.find(c.message), std::string::npos) << c.name << ": " << s.message;
  }
}

// Backward: the forward's statistics, dy, dx and (with Swish, or for dgb) gamma are required.
TEST(Validation, BackwardInputsAreNamed) {
  Dispatcher h(DeviceInfo{});
  auto bwd = [](Op op) {
    Problem p = good();
    p.op = op;
    Tensors t;
    t.x = t.dy = t.gamma = reinterpret_cast<const void*>(4096);
    t.dx = t.dgamma = t.dbeta = reinterpret_cast<void*>(8192);
    t.mean = t.rstd = reinterpret_cast<float*>(4096);
    return std::make_pair(p, t);
  };
  const std::vector<std::tuple<Op, std::function<void(Problem&, Tensors&)>, const char*>> cases = {
      {Op::dx, [](Problem&, Tensors& t) { t.mean = nullptr; }, "saved mean and rstd are required"},
      {Op::bwd, [](Problem&, Tensors& t) { t.rstd = nullptr; }, "saved mean and rstd are required"},
      {Op::dx, [](Problem&, Tensors& t) { t.dy = nullptr; }, "dy is null"},
      {Op::dx, [](Problem&, Tensors& t) { t.dx = nullptr; }, "dx is null"},
      {Op::bwd, [](Problem&, Tensors& t) { t.gamma = nullptr; }, "gamma is null but swish was fused"},
      {Op::dgb, [](Problem& p, Tensors& t) { p.act = Activation::none; t.gamma = nullptr; }, "affine off"},
      {Op::dgb, [](Problem&, Tensors& t) { t.dbeta = nullptr; }, "dgamma or dbeta is null"},
      {Op::bwd, [](Problem& p, Tensors& t) { p.act = Activation::none; t.gamma = nullptr; }, "gamma is null"},
      {Op::dx, [](Problem& p, Tensors&) { p.groups = 3; }, "not divisible"},
  };
  for (const auto& [op, spoil, message] : cases) {
    auto [p, t] = bwd(op);
    EXPECT_TRUE(validate(p, t).ok()) << validate(p, t).message;
    spoil(p, t);
    const Status s = h.run(p, t);
    EXPECT_EQ(s.code, StatusCode::invalid_argument) << message;
    EXPECT_NE(s.message.find(message), std::string::npos) << s.message;
  }
}

// The op table has one row per op, in Op's order, and its masks are consistent: every
// required tensor is read or written, the checked output is written, aligned tensors are x-sized.
TEST(Validation, OpTableIsConsistent) {
  for (std::size_t i = 0; i < std::size(Names<Op>::all); ++i) {
    const OpDescriptor& d = describe(Op(i));
    EXPECT_EQ(int(d.op), int(i));
    const unsigned touched = d.reads | d.writes | d.optional_writes | d.writes_with_gamma;
    for (const Required& r : d.required) EXPECT_EQ(r.tensors & ~touched, 0u) << to_string(d.op);
    EXPECT_NE(d.checked & (d.writes | d.writes_with_gamma), 0u) << to_string(d.op);
    EXPECT_EQ(d.aligned & ~(kX | kY | kDy | kDx), 0u) << to_string(d.op);
    EXPECT_EQ(d.backward, (d.reads & kDy) != 0) << to_string(d.op);
  }
  EXPECT_EQ(tensor_list(kX | kDy | kDx), "x, dy or dx");
  EXPECT_EQ(tensor_list(kX | kY), "x or y");
}

TEST(Validation, GoodProblemIsValid) { EXPECT_TRUE(validate(good(), kTensors).ok()); }

TEST(Validation, NotBuiltNamesTheOption) {
  Registry empty;
  Dispatcher h(DeviceInfo{}, &empty);
  const Status s = h.run(good(), kTensors);
  EXPECT_EQ(s.code, StatusCode::not_built);
  EXPECT_NE(s.message.find("fwd_f16_f16_cf_swish"), std::string::npos) << s.message;
  const std::string m = not_built_message(good(), BuildConfig{"fwd", "f32;bf16", "cf;cl", "none"});
  EXPECT_NE(m.find("-DHIPGN_DTYPES=\"f32;bf16;f16\""), std::string::npos) << m;
  EXPECT_NE(m.find("-DHIPGN_ACTIVATIONS=\"none;swish\""), std::string::npos) << m;
  EXPECT_EQ(m.find("HIPGN_LAYOUTS"), std::string::npos) << m;
}

TEST(Validation, NamedInstanceErrors) {
  Dispatcher h(DeviceInfo{});
  EXPECT_EQ(h.run(good(), kTensors, nullptr, "gn_fwd_nonsense").code, StatusCode::unknown_instance);
  // an instance of another key does not support the problem
  for (const Instance& inst : Registry::global().all()) {
    if (inst.spec().key() == Key::of(good())) continue;
    const Status s = h.run(good(), kTensors, nullptr, inst.name());
    EXPECT_EQ(s.code, StatusCode::not_supported) << inst.name();
    EXPECT_NE(s.message.find("functional key"), std::string::npos) << s.message;
    break;
  }
}

// A registry holding only vectorized instances of good()'s key, none of which can run a
// spatial size of 49: the message must say the key is built and give each family's reason.
TEST(Validation, NoSupportingInstanceSaysBuiltAndWhy) {
  Registry reg;
  const LaunchFn never = [](const Params&, hipStream_t) { return hipErrorInvalidValue; };
  for (const char* name : {"gn_fwd_f16_f16_cf_swish_split_b256_v8_e4", "gn_fwd_f16_f16_cf_swish_looped_b256_v4_e4",
                           "gn_fwd_f16_f16_cf_swish_looped_b256_v8_e4"})
    reg.add(*InstanceSpec::parse(name), name, never);
  Dispatcher h(DeviceInfo{}, &reg);
  Problem p = good();
  p.spatial = {7, 7};
  Status s;
  EXPECT_EQ(h.choose(p, nullptr, &s), nullptr);
  EXPECT_EQ(s.code, StatusCode::not_supported) << s.message;
  for (const char* phrase : {"this build has 3 instances for fwd_f16_f16_cf_swish but none supports",
                             "split: spatial size 49 is not a multiple of the vector 8",
                             "looped: spatial size 49 is not a multiple of the vector 4; spatial size 49 is not a "
                             "multiple of the vector 8"})
    EXPECT_NE(s.message.find(phrase), std::string::npos) << phrase << " in: " << s.message;
  // run() says the same, before it would look for a device
  const Status r = h.run(p, kTensors);
  EXPECT_EQ(r.code, s.code);
  EXPECT_EQ(r.message, s.message);
  // the same registry, another key: that one is really not built
  p.layout = Layout::channels_last;
  EXPECT_EQ(h.choose(p, nullptr, &s), nullptr);
  EXPECT_EQ(s.code, StatusCode::not_built) << s.message;
}

// Families with the same reasons share a clause, so a limit every instance hits reads once.
TEST(Validation, NoSupportingInstanceGroupsSharedReasons) {
  Registry reg;
  const LaunchFn never = [](const Params&, hipStream_t) { return hipErrorInvalidValue; };
  for (const char* name : {"gn_fwd_f16_f16_cf_swish_split_b256_v8_e4", "gn_fwd_f16_f16_cf_swish_looped_b256_v8_e4"})
    reg.add(*InstanceSpec::parse(name), name, never);
  Problem p = good();
  p.spatial = {7, 7};
  const Status s = no_instance_status(reg, p);
  EXPECT_NE(s.message.find(": split, looped: spatial size 49 is not a multiple of the vector 8"), std::string::npos)
      << s.message;
}

// The onchip forward peels a channels-first run the vector does not divide (fwd_onchip_span):
// it takes a spatial size of 49 with 16-byte vectors, and says why it refuses one below the
// vector (a vector would cross two channels' ends) and narrower vectors.
TEST(Validation, OnchipForwardPeelsWithSixteenByteVectors) {
  Registry reg;
  const LaunchFn never = [](const Params&, hipStream_t) { return hipErrorInvalidValue; };
  const char* v8 = "gn_fwd_f16_f16_cf_swish_onchip_b256_v8_e4";
  const char* v2 = "gn_fwd_f16_f16_cf_swish_onchip_b256_v2_e8";
  for (const char* name : {v8, v2}) reg.add(*InstanceSpec::parse(name), name, never);
  Problem p = good();
  p.spatial = {7, 7};
  std::string why;
  EXPECT_TRUE(reg.find(v8)->supports(p, nullptr, &why)) << why;
  EXPECT_FALSE(reg.find(v2)->supports(p, nullptr, &why));
  EXPECT_NE(why.find("a peeled forward takes 16-byte vectors only"), std::string::npos) << why;
  p.spatial = {5};
  EXPECT_FALSE(reg.find(v8)->supports(p, nullptr, &why));
  EXPECT_NE(why.find("spatial size 5 is below the vector 8"), std::string::npos) << why;
}

// The onchip backward reads a channels-first group as the forward's peeled run (bwd_onchip_run):
// a spatial size the vector does not divide, held up to the instance's capacity, but not one
// below the vector, which the split family (its rows peeled one by one) still takes.
TEST(Validation, OnchipBackwardPeelsRunsOfAtLeastAVector) {
  Registry reg;
  const LaunchFn never = [](const Params&, hipStream_t) { return hipErrorInvalidValue; };
  const char* onchip = "gn_bwd_f16_f16_cf_swish_onchip_b256_v8_e2";
  const char* split = "gn_bwd_f16_f16_cf_swish_split_b256_v8_e4";
  for (const char* name : {onchip, split}) reg.add(*InstanceSpec::parse(name), name, never);
  Problem p = good();
  p.op = Op::bwd;
  p.spatial = {7, 7};  // two channels of 49: 98 elements, rows crossing vectors
  std::string why;
  EXPECT_TRUE(reg.find(onchip)->supports(p, nullptr, &why)) << why;
  p.spatial = {2047};  // 4094 elements of the 4096 the instance holds
  EXPECT_TRUE(reg.find(onchip)->supports(p, nullptr, &why)) << why;
  p.spatial = {2049};
  EXPECT_FALSE(reg.find(onchip)->supports(p, nullptr, &why));
  EXPECT_NE(why.find("exceed the 4096 a peeled group holds on chip"), std::string::npos) << why;
  p.spatial = {5};
  EXPECT_FALSE(reg.find(onchip)->supports(p, nullptr, &why));
  EXPECT_NE(why.find("spatial size 5 is below the vector 8"), std::string::npos) << why;
  EXPECT_TRUE(reg.find(split)->supports(p, nullptr, &why)) << why;
}

// Channels-last groups narrower than the vector (families/onchip.hpp: fwd_onchip_columns,
// bwd_onchip_columns): a workgroup a column of V channels, so V must be a multiple of C/G, C of
// V, and a column's rows must fit the workgroup; the forward and every backward op alike.
TEST(Validation, OnchipColumnsNeedWholeGroupsInAVectorAndRowsThatFit) {
  Registry reg;
  const LaunchFn never = [](const Params&, hipStream_t) { return hipErrorInvalidValue; };
  const std::vector<const char*> names = {"gn_fwd_f16_f16_cl_swish_onchip_b256_v8_e4",
                                          "gn_bwd_f16_f16_cl_swish_onchip_b256_v8_e4",
                                          "gn_dgb_f16_f16_cl_none_onchip_b256_v8_e4",
                                          "gn_dx_f16_f16_cl_swish_onchip_b256_v8_e4"};
  for (const char* name : names) reg.add(*InstanceSpec::parse(name), name, never);
  for (const char* name : names) {
    const Instance& inst = *reg.find(name);
    const InstanceSpec& s = inst.spec();
    auto problem = [&](std::int64_t c, std::vector<std::int64_t> spatial, std::int64_t g) {
      Problem p = make_problem({2, c, std::move(spatial), g}, DataType::f16, DataType::f16, Layout::channels_last, s.act);
      p.op = s.op;
      return p;
    };
    std::string why;
    // C/G = 1, 2, 4 with 1024 rows (256 x 4 hold 1024 in a column)
    for (std::int64_t cpg : {1, 2, 4})
      EXPECT_TRUE(inst.supports(problem(64, {32, 32}, 64 / cpg), nullptr, &why)) << name << " C/G " << cpg << ": " << why;
    EXPECT_FALSE(inst.supports(problem(48, {32, 32}, 16), nullptr, &why)) << name;  // C/G = 3
    EXPECT_NE(why.find("C/G 3 does not divide the vector 8"), std::string::npos) << name << ": " << why;
    EXPECT_FALSE(inst.supports(problem(12, {32, 32}, 12), nullptr, &why)) << name;  // C/G = 1, C = 12
    EXPECT_NE(why.find("C 12 is not a multiple of the vector 8"), std::string::npos) << name << ": " << why;
    // 1056 rows: the forward holds the column in 2 parts where the device has clusters
    // (fwd_onchip_columns_parts_kernel); the backward's column must fit one workgroup
    const Problem more = problem(64, {33, 32}, 64);
    if (s.op == Op::fwd && cluster_launch_max() >= 2) {
      EXPECT_TRUE(inst.supports(more, nullptr, &why)) << name << ": " << why;
      EXPECT_EQ(inst.onchip_parts(more).parts, 2) << name;
      // past a cluster's parts: 16 x 1024 rows at most (clusters of 16), 8 x 1024 (portable)
      const std::int64_t most = cluster_launch_max();
      EXPECT_FALSE(inst.supports(problem(64, {most * 32 + 1, 32}, 64), nullptr, &why)) << name;
      EXPECT_NE(why.find("in each of a cluster's " + std::to_string(most) + " parts"), std::string::npos) << name << ": " << why;
    } else {
      EXPECT_FALSE(inst.supports(more, nullptr, &why)) << name;
      EXPECT_NE(why.find("the 1056 positions exceed the 1024 rows"), std::string::npos) << name << ": " << why;
    }
  }
}

// N*G past 2^31-1 is valid. Either an instance of this build runs it, or the message says the
// key is built and why its instances refuse: never "not built" for a key that is.
TEST(Validation, GroupsPastTheGridLimitAreValidAndExplained) {
  Problem p = good();
  p.n = 70000;
  p.c = p.groups = 32768;
  p.spatial = {};
  ASSERT_GT(p.num_groups(), std::int64_t(INT32_MAX));
  ASSERT_TRUE(validate(p).ok()) << validate(p).message;
  if (Registry::global().bucket(Key::of(p)).empty()) GTEST_SKIP() << "f16 cf swish not built";
  Dispatcher h(DeviceInfo{});
  Status s;
  const Instance* inst = h.choose(p, nullptr, &s);
  if (inst) {  // of either layout: a spatial size of 1 runs as both (in_layout)
    std::string why;
    EXPECT_TRUE(inst->supports(in_layout(p, inst->spec().layout), nullptr, &why)) << inst->name() << ": " << why;
    return;
  }
  EXPECT_EQ(s.code, StatusCode::not_supported) << s.message;
  EXPECT_NE(s.message.find("instances for fwd_f16_f16_cf_swish but none supports"), std::string::npos) << s.message;
  EXPECT_NE(s.message.find("N*G"), std::string::npos) << s.message;
}

TEST(Validation, NamedInstanceSaysWhichAndWhy) {
  Dispatcher h(DeviceInfo{});
  const auto& bucket = Registry::global().bucket(Key::of(good()));
  if (bucket.empty()) GTEST_SKIP() << "f16 cf swish not built";
  Status s;
  EXPECT_EQ(h.named(good(), "gn_fwd_nonsense", nullptr, &s), nullptr);
  EXPECT_EQ(s.code, StatusCode::unknown_instance);
  EXPECT_NE(s.message.find("'gn_fwd_nonsense' is not an instance name"), std::string::npos) << s.message;
  // well formed, but no preset builds a block of 999 threads
  EXPECT_EQ(h.named(good(), "gn_fwd_f16_f16_cf_swish_looped_b999_v1_e1", nullptr, &s), nullptr);
  EXPECT_EQ(s.code, StatusCode::unknown_instance);
  EXPECT_NE(s.message.find("is a valid name but this build did not compile it"), std::string::npos) << s.message;
  // built, but the problem's spatial size (49) is no multiple of its vector
  Problem p = good();
  p.spatial = {7, 7};
  for (const Instance* inst : bucket) {
    // the peeling families take any spatial size: a build filtered to them has no instance to
    // refuse it
    if (!refuses_unaligned_runs(*inst)) continue;
    EXPECT_EQ(h.named(p, inst->name(), nullptr, &s), nullptr);
    EXPECT_EQ(s.code, StatusCode::not_supported);
    EXPECT_NE(s.message.find(inst->name() + " does not support " + p.to_string() + ": spatial size 49 is not a multiple"),
              std::string::npos)
        << s.message;
    EXPECT_EQ(h.run(p, kTensors, nullptr, inst->name()).message, s.message);
    break;
  }
  const Instance* generic = nullptr;
  for (const Instance* inst : bucket)
    if (inst->spec().generic()) generic = inst;
  ASSERT_NE(generic, nullptr);
  EXPECT_EQ(h.named(p, generic->name(), nullptr, &s), generic);
}

TEST(Validation, NoDeviceHandleDoesNotLaunch) {
  Dispatcher h(DeviceInfo{});
  if (Registry::global().bucket(Key::of(good())).empty()) GTEST_SKIP() << "f16 cf swish not built";
  EXPECT_EQ(h.run(good(), kTensors).code, StatusCode::no_device);
}

// On the GPU: a rejected call leaves y, mean and rstd untouched.
TEST(Validation, NothingWrittenOnError) {
  HIPGN_REQUIRE_GPU();
  std::unique_ptr<Dispatcher> h;
  ASSERT_TRUE(Dispatcher::create(&h).ok());
  const Problem base = good();
  const std::size_t bytes = std::size_t(base.elements()) * 2 + 64;
  DeviceBuffer x(bytes), y(bytes), mean(1024), rstd(1024);
  std::vector<std::uint8_t> ones(bytes, 0x3c);
  x.upload(ones.data(), bytes);
  for (const BadCase& c : bad_cases()) {
    y.poison();
    mean.poison();
    rstd.poison();
    Problem p = base;
    Tensors t{x.get(), y.get(), nullptr, nullptr, static_cast<float*>(mean.get()), static_cast<float*>(rstd.get())};
    c.spoil(p, t);
    EXPECT_FALSE(h->run(p, t).ok()) << c.name;
    ASSERT_EQ(hipDeviceSynchronize(), hipSuccess);
    for (const DeviceBuffer* b : {&y, &mean, &rstd})
      for (auto byte : b->download()) ASSERT_EQ(byte, 0xFF) << c.name << ": output written";
  }
  // a vectorized instance named for a misaligned tensor is refused, and writes nothing
  for (const Instance* inst : Registry::global().bucket(Key::of(base))) {
    if (!refuses_unaligned_runs(*inst)) continue;
    y.poison();
    const Tensors t{static_cast<char*>(x.get()) + 2, static_cast<char*>(y.get()) + 2};
    const Status s = h->run(base, t, nullptr, inst->name());
    EXPECT_EQ(s.code, StatusCode::not_supported);
    EXPECT_NE(s.message.find("aligned"), std::string::npos) << s.message;
    ASSERT_EQ(hipDeviceSynchronize(), hipSuccess);
    for (auto byte : y.download()) ASSERT_EQ(byte, 0xFF) << inst->name() << ": output written";
    break;
  }
}

}  // namespace
}  // namespace hipgn::test
