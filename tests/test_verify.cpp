// The verification library (hipgn/verify.hpp) the GPU tests and the profiler share: its
// tolerances are never looser than the tests' were, NaN fails, inputs are what storage holds.
#include <gtest/gtest.h>

#include <cmath>

#include "corpus.hpp"
#include "hipgn/reference.hpp"
#include "hipgn/verify.hpp"

namespace hipgn::test {
namespace {

TEST(Verify, TolerancesAreTheTests) {
  const verify::Tolerance f16 = verify::tolerance(DataType::f16, kY);
  EXPECT_LE(f16.atol, 4e-3);
  EXPECT_LE(f16.rtol, 4e-3);
  EXPECT_LE(verify::tolerance(DataType::f32, kDx).atol, 1e-4);
  EXPECT_LE(verify::tolerance(DataType::bf16, kY).rtol, 1.6e-2);
  EXPECT_LE(verify::tolerance(DataType::f16, kDgamma).atol, 2e-3);
  EXPECT_EQ(verify::tolerance(DataType::f16, kY).per_term, 0.0);
}

TEST(Verify, CompareCountsNaNAndTheFirst) {
  const std::vector<double> want{1, 2, 3, 4};
  const verify::Comparison same = verify::compare(want, want, verify::tolerance(DataType::f32, kY));
  EXPECT_TRUE(same.ok());
  EXPECT_EQ(same.worst, 0.0);
  const verify::Comparison bad = verify::compare({1, std::nan(""), 3.1, 4}, want, verify::tolerance(DataType::f32, kY));
  EXPECT_EQ(bad.bad, 2u);
  EXPECT_EQ(bad.first, 1u);
  EXPECT_TRUE(std::isinf(bad.worst));
  const std::vector<double> terms{0, 0, 1e5, 0};
  EXPECT_EQ(verify::compare({1, 2, 3.1, 4}, want, verify::tolerance(DataType::f32, kDgamma), &terms).bad, 0u);
}

TEST(Verify, InputsAreWhatStorageHolds) {
  Problem p = make_problem({2, 8, {3, 5}, 4}, DataType::bf16, DataType::f32, Layout::channels_last, Activation::none);
  p.op = Op::bwd;
  std::mt19937_64 rng(7);
  const verify::Inputs in = verify::make_inputs(p, rng);
  ASSERT_EQ(in.x.values.size(), std::size_t(p.elements()));
  ASSERT_EQ(in.dy.values.size(), std::size_t(p.elements()));
  EXPECT_EQ(in.gamma.bytes.size(), std::size_t(p.c) * 4);
  EXPECT_EQ(decode(p.x_dtype, in.x.bytes.data(), in.x.values.size()), in.x.values);
  p.op = Op::fwd;
  EXPECT_TRUE(verify::make_inputs(p, rng).dy.values.empty()) << "the forward reads no dy";
  EXPECT_TRUE(verify::all_poison(std::vector<std::uint8_t>(5, verify::kPoisonByte)));
  EXPECT_FALSE(verify::all_poison({verify::kPoisonByte, 0}));
}

}  // namespace
}  // namespace hipgn::test
