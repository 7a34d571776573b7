// 64-bit indexing: a tensor past 2^31 elements, forward and backward data, checked on its last
// sample (whose offsets are all past 2^31); and dispatch from several threads at once.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <thread>

#include "corpus.hpp"
#include "gpu.hpp"

namespace hipgn::test {
namespace {

TEST(Large, PastTwoTo31Elements) {
  HIPGN_REQUIRE_GPU();
  // N * C * spatial = 8193 * 32 * 8192 = 2^31 + 2^18 fp16 elements, 4 GiB per tensor
  Problem p = make_problem({8193, 32, {8192}, 32}, DataType::f16, DataType::f16, Layout::channels_last,
                           Activation::swish);
  if (Registry::global().bucket(Key::of(p)).empty()) GTEST_SKIP() << "f16 channels-last swish not built";
  std::size_t free_bytes = 0, total = 0;
  ASSERT_EQ(hipMemGetInfo(&free_bytes, &total), hipSuccess);
  const std::size_t count = std::size_t(p.elements()), bytes = count * 2;
  if (free_bytes < 3 * bytes + (1u << 30)) GTEST_SKIP() << "needs " << 3 * bytes / (1u << 30) << " GiB free";
  ASSERT_GT(count, std::size_t(1) << 31);

  // x and dy: one random block repeated (its length prime, so samples differ)
  const std::size_t block = 1000003, sample = count / std::size_t(p.n);
  std::mt19937 rng(test_seed());
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> vx(block), vdy(block), gamma(32), beta(32);
  for (auto& v : vx) v = 0.5 + 2 * u(rng);
  for (auto& v : vdy) v = u(rng);
  for (auto& v : gamma) v = 1 + 0.5 * u(rng);
  for (auto& v : beta) v = 0.5 * u(rng);
  const auto bx = encode(DataType::f16, vx), bdy = encode(DataType::f16, vdy), bg = encode(DataType::f16, gamma),
             bb = encode(DataType::f16, beta);
  DeviceBuffer x(bytes), y(bytes), dy(bytes), g(64), b(64), mean(std::size_t(p.num_groups()) * 4),
      rstd(std::size_t(p.num_groups()) * 4);
  for (std::size_t at = 0; at < count; at += block) {
    const std::size_t n = std::min(block, count - at);
    x.upload(bx.data(), n * 2, at * 2);
    dy.upload(bdy.data(), n * 2, at * 2);
  }
  g.upload(bg.data(), 64);
  b.upload(bb.data(), 64);
  y.poison();
  std::unique_ptr<Handle> h;
  ASSERT_TRUE(Handle::create(&h).ok());
  Tensors t;
  t.x = x.get();
  t.y = y.get();
  t.gamma = g.get();
  t.beta = b.get();
  t.mean = static_cast<float*>(mean.get());
  t.rstd = static_cast<float*>(rstd.get());
  ASSERT_TRUE(h->run(p, t).ok());
  ASSERT_EQ(hipDeviceSynchronize(), hipSuccess);

  // the last sample, as a problem of its own, on the CPU
  Problem last = p;
  last.n = 1;
  const std::size_t first = count - sample;
  std::vector<double> lx(sample), ldy(sample), ly(sample), ldx(sample);
  for (std::size_t i = 0; i < sample; ++i) lx[i] = decode(DataType::f16, &bx[((first + i) % block) * 2], 1)[0];
  for (std::size_t i = 0; i < sample; ++i) ldy[i] = decode(DataType::f16, &bdy[((first + i) % block) * 2], 1)[0];
  gamma = decode(DataType::f16, bg.data(), 32);
  beta = decode(DataType::f16, bb.data(), 32);
  reference_fwd(last, lx.data(), gamma.data(), beta.data(), ly.data(), nullptr, nullptr);
  std::vector<std::uint8_t> out(sample * 2);
  ASSERT_EQ(hipMemcpy(out.data(), static_cast<char*>(y.get()) + first * 2, out.size(), hipMemcpyDeviceToHost),
            hipSuccess);
  auto expect_close = [&](const std::vector<double>& want, const char* what) {
    const auto got = decode(DataType::f16, out.data(), sample);
    std::size_t bad = 0;
    for (std::size_t i = 0; i < sample; ++i)
      if (!(std::fabs(got[i] - want[i]) <= 4e-3 + 4e-3 * std::fabs(want[i]))) ++bad;
    EXPECT_EQ(bad, 0u) << what << ": " << bad << " of the last sample's " << sample << " wrong";
  };
  expect_close(ly, "y");

  // backward data in place of y, with our saved statistics
  p.op = Op::dx;
  if (Registry::global().bucket(Key::of(p)).empty()) return;
  Tensors bt = t;
  bt.y = nullptr;
  bt.dy = dy.get();
  bt.dx = y.get();
  y.poison();
  ASSERT_TRUE(h->run(p, bt).ok());
  ASSERT_EQ(hipDeviceSynchronize(), hipSuccess);
  reference_bwd(last, lx.data(), ldy.data(), gamma.data(), beta.data(), ldx.data(), nullptr, nullptr);
  ASSERT_EQ(hipMemcpy(out.data(), static_cast<char*>(y.get()) + first * 2, out.size(), hipMemcpyDeviceToHost),
            hipSuccess);
  expect_close(ldx, "dx");
}

// One handle, several threads, each on a stream of its own (the split family's workspace is
// per stream): every result right.
TEST(Threads, ConcurrentDispatchOnStreams) {
  HIPGN_REQUIRE_GPU();
  std::unique_ptr<Handle> h;
  ASSERT_TRUE(Handle::create(&h).ok());
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] {
      hipStream_t stream;
      ASSERT_EQ(hipStreamCreate(&stream), hipSuccess);
      Problem p = make_problem({2, 320, {64 + 8 * i, 64}, 32}, DataType::bf16, DataType::f32,
                               i % 2 ? Layout::channels_last : Layout::channels_first, Activation::swish);
      p.op = i < 2 ? Op::fwd : Op::bwd;
      const Launch run = [&](const Problem& q, const Tensors& t) {
        const Status s = h->run(q, t, stream);
        (void)hipStreamSynchronize(stream);
        return s;
      };
      if (!Registry::global().bucket(Key::of(p)).empty()) {
        run_and_check_op(p, RunOptions{}, run, "thread " + std::to_string(i));
      }
      ASSERT_EQ(hipStreamDestroy(stream), hipSuccess);
    });
  for (auto& t : threads) t.join();
}

}  // namespace
}  // namespace hipgn::test
