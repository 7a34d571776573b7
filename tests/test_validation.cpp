// Bad input gets a clear error naming the problem, and nothing is written.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "corpus.hpp"
#include "gpu.hpp"

namespace hipgn::test {
namespace {

FwdProblem good() {
  return make_problem({2, 64, {8, 8}, 32}, DataType::f16, DataType::f16, Layout::channels_first, Activation::swish);
}
const FwdTensors kTensors{reinterpret_cast<const void*>(4096), reinterpret_cast<void*>(8192)};

struct BadCase {
  const char* name;
  std::function<void(FwdProblem&, FwdTensors&)> spoil;
  const char* message;  // a phrase the error must contain
};

const std::vector<BadCase>& bad_cases() {
  static const std::vector<BadCase> cases = {
      {"CNotDivisibleByG", [](FwdProblem& p, FwdTensors&) { p.groups = 30; }, "C = 64 is not divisible by G = 30"},
      {"ZeroGroups", [](FwdProblem& p, FwdTensors&) { p.groups = 0; }, "G = 0"},
      {"NegativeGroups", [](FwdProblem& p, FwdTensors&) { p.groups = -2; }, "G = -2"},
      {"ZeroBatch", [](FwdProblem& p, FwdTensors&) { p.n = 0; }, "N = 0"},
      {"ZeroChannels", [](FwdProblem& p, FwdTensors&) { p.c = 0; }, "C = 0"},
      {"EmptySpatial", [](FwdProblem& p, FwdTensors&) { p.spatial = {8, 0}; }, "spatial dimension 1 = 0: empty"},
      {"ZeroEps", [](FwdProblem& p, FwdTensors&) { p.eps = 0; }, "eps"},
      {"NegativeEps", [](FwdProblem& p, FwdTensors&) { p.eps = -1e-5f; }, "eps"},
      {"NanEps", [](FwdProblem& p, FwdTensors&) { p.eps = std::nanf(""); }, "eps"},
      {"InfEps", [](FwdProblem& p, FwdTensors&) { p.eps = INFINITY; }, "eps"},
      {"NullX", [](FwdProblem&, FwdTensors& t) { t.x = nullptr; }, "x is null"},
      {"NullY", [](FwdProblem&, FwdTensors& t) { t.y = nullptr; }, "y is null"},
      {"GammaDtype", [](FwdProblem& p, FwdTensors&) { p.gamma_dtype = DataType::bf16; }, "gamma/beta dtype bf16"},
      {"Overflow", [](FwdProblem& p, FwdTensors&) { p.spatial = {1ll << 40, 1ll << 30}; }, "2^63"},
  };
  return cases;
}

TEST(Validation, EachBadInputIsNamed) {
  Handle h(DeviceInfo{});
  for (const BadCase& c : bad_cases()) {
    FwdProblem p = good();
    FwdTensors t = kTensors;
    c.spoil(p, t);
    const Status s = h.forward(p, t);
    EXPECT_EQ(s.code, StatusCode::invalid_argument) << c.name;
    EXPECT_NE(s.message.find(c.message), std::string::npos) << c.name << ": " << s.message;
  }
}

TEST(Validation, GoodProblemIsValid) { EXPECT_TRUE(validate(good(), kTensors).ok()); }

TEST(Validation, NotBuiltNamesTheOption) {
  Registry empty;
  Handle h(DeviceInfo{}, &empty);
  const Status s = h.forward(good(), kTensors);
  EXPECT_EQ(s.code, StatusCode::not_built);
  EXPECT_NE(s.message.find("fwd_f16_f16_cf_swish"), std::string::npos) << s.message;
  const std::string m = not_built_message(good(), BuildConfig{"f32;bf16", "cf;cl", "none"});
  EXPECT_NE(m.find("-DHIPGN_DTYPES=\"f32;bf16;f16\""), std::string::npos) << m;
  EXPECT_NE(m.find("-DHIPGN_ACTIVATIONS=\"none;swish\""), std::string::npos) << m;
  EXPECT_EQ(m.find("HIPGN_LAYOUTS"), std::string::npos) << m;
}

TEST(Validation, NamedInstanceErrors) {
  Handle h(DeviceInfo{});
  EXPECT_EQ(h.forward(good(), kTensors, nullptr, "gn_fwd_nonsense").code, StatusCode::unknown_instance);
  // an instance of another key does not support the problem
  for (const Instance& inst : Registry::global().all()) {
    if (inst.spec().key() == Key::of(good())) continue;
    const Status s = h.forward(good(), kTensors, nullptr, inst.name());
    EXPECT_EQ(s.code, StatusCode::not_supported) << inst.name();
    EXPECT_NE(s.message.find("functional key"), std::string::npos) << s.message;
    break;
  }
}

TEST(Validation, NoDeviceHandleDoesNotLaunch) {
  Handle h(DeviceInfo{});
  if (Registry::global().bucket(Key::of(good())).empty()) GTEST_SKIP() << "f16 cf swish not built";
  EXPECT_EQ(h.forward(good(), kTensors).code, StatusCode::no_device);
}

// On the GPU: a rejected call leaves y, mean and rstd untouched.
TEST(Validation, NothingWrittenOnError) {
  HIPGN_REQUIRE_GPU();
  std::unique_ptr<Handle> h;
  ASSERT_TRUE(Handle::create(&h).ok());
  const FwdProblem base = good();
  const std::size_t bytes = std::size_t(base.elements()) * 2 + 64;
  DeviceBuffer x(bytes), y(bytes), mean(1024), rstd(1024);
  std::vector<std::uint8_t> ones(bytes, 0x3c);
  x.upload(ones.data(), bytes);
  for (const BadCase& c : bad_cases()) {
    y.poison();
    mean.poison();
    rstd.poison();
    FwdProblem p = base;
    FwdTensors t{x.get(), y.get(), nullptr, nullptr, static_cast<float*>(mean.get()), static_cast<float*>(rstd.get())};
    c.spoil(p, t);
    EXPECT_FALSE(h->forward(p, t).ok()) << c.name;
    ASSERT_EQ(hipDeviceSynchronize(), hipSuccess);
    for (const DeviceBuffer* b : {&y, &mean, &rstd})
      for (auto byte : b->download()) ASSERT_EQ(byte, 0xFF) << c.name << ": output written";
  }
  // a vectorized instance named for a misaligned tensor is refused, and writes nothing
  for (const Instance* inst : Registry::global().bucket(Key::of(base))) {
    if (inst->spec().vector == 1) continue;
    y.poison();
    const FwdTensors t{static_cast<char*>(x.get()) + 2, static_cast<char*>(y.get()) + 2};
    const Status s = h->forward(base, t, nullptr, inst->name());
    EXPECT_EQ(s.code, StatusCode::not_supported);
    EXPECT_NE(s.message.find("aligned"), std::string::npos) << s.message;
    ASSERT_EQ(hipDeviceSynchronize(), hipSuccess);
    for (auto byte : y.download()) ASSERT_EQ(byte, 0xFF) << inst->name() << ": output written";
    break;
  }
}

}  // namespace
}  // namespace hipgn::test
