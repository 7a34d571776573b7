// The CPU reference against hand-computed values and an independent float64 formula; the
// storage conversions; the launch-constant division.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "corpus.hpp"
#include "hipgn/params.hpp"
#include "hipgn/reference.hpp"

namespace hipgn::test {
namespace {

TEST(Reference, HandComputed) {
  // one group of 1, 2, 3, 4: mean 2.5, biased variance 1.25
  Problem p = make_problem({1, 1, {4}, 1}, DataType::f32, DataType::f32, Layout::channels_first, Activation::none);
  const double x[] = {1, 2, 3, 4}, gamma[] = {2}, beta[] = {0.5};
  double y[4], mean, rstd;
  reference_fwd(p, x, gamma, beta, y, &mean, &rstd);
  EXPECT_DOUBLE_EQ(mean, 2.5);
  EXPECT_NEAR(rstd, 1.0 / std::sqrt(1.25 + double(p.eps)), 1e-15);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(y[i], 2 * (x[i] - 2.5) * rstd + 0.5, 1e-14);
  // Swish with s = 1 (SiLU) of z = 0 is 0; of large z is z
  p.act = Activation::swish;
  reference_fwd(p, x, gamma, beta, y, &mean, &rstd);
  const double z3 = 2 * (4 - 2.5) * rstd + 0.5;
  EXPECT_NEAR(y[3], z3 / (1 + std::exp(-z3)), 1e-14);
}

// The formula written out directly, group by group, in another order than the reference.
TEST(Reference, MatchesIndependentFormula) {
  std::mt19937 rng(test_seed());
  std::uniform_real_distribution<double> u(-3, 3);
  for (const Shape& s : shape_corpus()) {
    if (s.n * s.c > 4096) continue;
    for (Layout layout : {Layout::channels_first, Layout::channels_last}) {
      Problem p = make_problem(s, DataType::f32, DataType::f32, layout, Activation::swish);
      p.swish_beta = 1.5f;
      std::vector<double> x(std::size_t(p.elements())), g(std::size_t(p.c)), b(std::size_t(p.c));
      for (auto& v : x) v = u(rng);
      for (auto& v : g) v = u(rng);
      for (auto& v : b) v = u(rng);
      std::vector<double> y(x.size()), mean(std::size_t(p.num_groups())), rstd(mean.size());
      reference_fwd(p, x.data(), g.data(), b.data(), y.data(), mean.data(), rstd.data());
      const std::int64_t hw = p.spatial_size(), cg = p.c / p.groups;
      for (std::int64_t n = 0; n < p.n; ++n)
        for (std::int64_t grp = 0; grp < p.groups; ++grp) {
          // Caffe2's uneven groups: the last group takes the channels the others leave
          const std::int64_t end = grp == p.groups - 1 ? p.c : (grp + 1) * cg;
          std::vector<double> vals;
          for (std::int64_t s2 = hw - 1; s2 >= 0; --s2)
            for (std::int64_t c = end - 1; c >= grp * cg; --c) {
              const std::int64_t i = layout == Layout::channels_first ? (n * p.c + c) * hw + s2 : (n * hw + s2) * p.c + c;
              vals.push_back(x[std::size_t(i)]);
            }
          double m = 0, v = 0;
          for (double a : vals) m += a / double(vals.size());
          for (double a : vals) v += (a - m) * (a - m) / double(vals.size());
          ASSERT_NEAR(mean[std::size_t(n * p.groups + grp)], m, 1e-12);
          ASSERT_NEAR(rstd[std::size_t(n * p.groups + grp)], 1 / std::sqrt(v + double(p.eps)), 1e-9);
          ASSERT_EQ(vals.size(), std::size_t((end - grp * cg) * hw));
          const std::int64_t c = end - 1, s2 = hw / 2;
          const std::int64_t i = layout == Layout::channels_first ? (n * p.c + c) * hw + s2 : (n * hw + s2) * p.c + c;
          const double z = g[std::size_t(c)] * (x[std::size_t(i)] - m) / std::sqrt(v + double(p.eps)) + b[std::size_t(c)];
          ASSERT_NEAR(y[std::size_t(i)], z / (1 + std::exp(-1.5 * z)), 1e-10);
        }
    }
  }
}

// The backward reference against central finite differences of the forward, in float64:
// L = sum_i w_i y_i, so dL/dx = dx, dL/dgamma = dgamma, dL/dbeta = dbeta with dy = w.
TEST(Reference, BackwardMatchesFiniteDifferences) {
  std::mt19937 rng(test_seed());
  std::uniform_real_distribution<double> u(-1, 1);
  for (const Shape& s : {Shape{2, 6, {5}, 2}, Shape{1, 4, {3, 2}, 1}, Shape{2, 3, {4}, 3}, Shape{2, 5, {3}, 2}})
    for (Layout layout : {Layout::channels_first, Layout::channels_last})
      for (Activation act : {Activation::none, Activation::swish}) {
        Problem p = make_problem(s, DataType::f32, DataType::f32, layout, act);
        p.swish_beta = 1.3f;
        p.eps = 1e-3f;
        const std::size_t n = std::size_t(p.elements()), c = std::size_t(p.c);
        std::vector<double> x(n), w(n), g(c), b(c);
        for (auto& v : x) v = u(rng);
        for (auto& v : w) v = u(rng);
        for (auto& v : g) v = 1 + 0.5 * u(rng);
        for (auto& v : b) v = 0.5 * u(rng);
        auto loss = [&] {
          std::vector<double> y(n);
          reference_fwd(p, x.data(), g.data(), b.data(), y.data(), nullptr, nullptr);
          double l = 0;
          for (std::size_t i = 0; i < n; ++i) l += w[i] * y[i];
          return l;
        };
        auto numeric = [&](double& v) {
          const double h = 1e-6, keep = v;
          v = keep + h;
          const double up = loss();
          v = keep - h;
          const double down = loss();
          v = keep;
          return (up - down) / (2 * h);
        };
        std::vector<double> dx(n), dg(c), db(c);
        reference_bwd(p, x.data(), w.data(), g.data(), b.data(), dx.data(), dg.data(), db.data());
        const std::string what = p.to_string();
        for (std::size_t i = 0; i < n; ++i) ASSERT_NEAR(dx[i], numeric(x[i]), 1e-6) << what << " dx " << i;
        for (std::size_t i = 0; i < c; ++i) {
          ASSERT_NEAR(dg[i], numeric(g[i]), 1e-6) << what << " dgamma " << i;
          ASSERT_NEAR(db[i], numeric(b[i]), 1e-6) << what << " dbeta " << i;
        }
      }
}

TEST(Conversions, HalfKnownValues) {
  const std::pair<double, std::uint16_t> known[] = {
      {1.0, 0x3c00}, {-2.0, 0xc000}, {65504.0, 0x7bff}, {65520.0, 0x7c00}, {std::ldexp(1.0, -24), 0x0001},
      {std::ldexp(1.0, -14), 0x0400}, {0.0, 0x0000}, {1.0 + std::ldexp(1.0, -11), 0x3c00} /* tie to even */,
      {1.0 + 3 * std::ldexp(1.0, -11), 0x3c02} /* tie to even, upward */, {0.1, 0x2e66}};
  for (auto [v, bits] : known) {
    const auto b = encode(DataType::f16, {v});
    EXPECT_EQ(b[0] | (b[1] << 8), bits) << v;
  }
  // every finite binary16 value decodes and re-encodes to itself
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00) continue;
    const std::uint8_t in[2] = {std::uint8_t(h), std::uint8_t(h >> 8)};
    const auto back = encode(DataType::f16, decode(DataType::f16, in, 1));
    ASSERT_EQ(back[0] | (back[1] << 8), int(h));
  }
}

TEST(Conversions, Bfloat16RoundsToNearestEven) {
  const std::pair<double, std::uint16_t> known[] = {
      {1.0, 0x3f80}, {1.0 + std::ldexp(1.0, -8), 0x3f80}, {1.0 + 3 * std::ldexp(1.0, -8), 0x3f82},
      {-3.0, 0xc040}, {1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -12), 0x3f81}};
  for (auto [v, bits] : known) {
    const auto b = encode(DataType::bf16, {v});
    EXPECT_EQ(b[0] | (b[1] << 8), bits) << v;
  }
  const std::uint8_t nan[2] = {0xFF, 0xFF};
  EXPECT_TRUE(std::isnan(decode(DataType::bf16, nan, 1)[0]));
  EXPECT_TRUE(std::isnan(decode(DataType::f16, nan, 1)[0]));
}

TEST(FastDivmod, AgreesWithDivision) {
  std::mt19937_64 rng(test_seed());
  const std::uint64_t divisors[] = {1, 2, 3, 5, 7, 10, 143, 1000, 4095, 4096, 65537, (1u << 30) + 3, 2147483647ull};
  for (std::uint64_t d : divisors) {
    const FastDivmod f = FastDivmod::make(d);
    for (int i = 0; i < 20000; ++i) {
      const std::uint64_t n = i < 1000 ? std::uint64_t(i) : (rng() >> (i % 2 ? 33 : 20));
      ASSERT_EQ(f.div(n), n / d) << n << " / " << d;
    }
    ASSERT_EQ(f.div(2147483647ull), 2147483647ull / d);
  }
  // dividends past 2^31 (groups of more than 2^31 vectors) take the 64-bit path
  EXPECT_EQ(FastDivmod::make(7).div(10000000000ull), 10000000000ull / 7);
}

// floor_div by a rounded reciprocal (params.hpp), as the channels-first stream forward takes
// it: exact across the divisors and offsets it meets, and at the edges of its range.
TEST(FloorDiv, AgreesWithDivision) {
  std::mt19937_64 rng(test_seed());
  const std::int64_t divisors[] = {1, 2, 3, 7, 10, 49, 4096, 8191, 65536, 122880, 1048576, 2147483647};
  for (std::int64_t d : divisors) {
    const double rcp = 1.0 / double(d);
    for (int i = 0; i < 20000; ++i) {
      // small offsets, multiples of d and their neighbours, and offsets up to 2^52
      const std::int64_t m = std::int64_t(rng() >> 40) * d;
      const std::int64_t a = i < 1000 ? i : i % 3 == 0 ? m + (i % 2 ? -1 : 0) : std::int64_t(rng() >> (12 + i % 30));
      if (a < 0) continue;
      ASSERT_EQ(floor_div(a, d, rcp), a / d) << a << " / " << d;
    }
    const std::int64_t top = (std::int64_t(1) << 52) - 1;
    ASSERT_EQ(floor_div(top, d, rcp), top / d) << d;
    ASSERT_EQ(floor_div(top / d * d, d, rcp), top / d) << d;
    ASSERT_EQ(floor_div(top / d * d - 1, d, rcp), top / d - 1) << d;
  }
}

// The channels-first split backward's first-pass units (params.hpp: split_bwd_cf_rows): every
// row of a group in exactly one unit, teams that the kernel's shuffle tree can add (a power of
// two of at most 32 lanes, dividing the workgroup), pieces that cover a long row exactly.
TEST(SplitRows, CoverEveryRowOnce) {
  int checked = 0, teams = 0, pieced = 0;
  for (std::int64_t spatial : {1, 7, 49, 64, 143, 256, 1023, 1024, 4096, 8191, 40009, 1 << 20})
    for (std::int64_t cpg : {1, 3, 10, 40, 64, 160})
      for (int vector : {1, 2, 4, 8})
        for (std::int64_t groups : {1, 64, 4096}) {
          const int block = 256, per_thread = 4;
          const SplitRows r = split_bwd_cf_rows(spatial, cpg, vector, block, per_thread, groups, 132);
          const std::int64_t row_vectors = (spatial + vector - 1) / vector;
          const std::string at = std::to_string(spatial) + " x " + std::to_string(cpg) + " v" + std::to_string(vector);
          ASSERT_GE(r.rows, 1) << at;
          if (r.team < block) {
            ++teams;
            EXPECT_TRUE(r.team <= 32 && (r.team & (r.team - 1)) == 0 && block % r.team == 0) << at;
            EXPECT_LE(r.rows, block / r.team) << at;
            EXPECT_EQ(r.pieces, 1) << at;
            EXPECT_GE(r.rows * r.units, cpg) << at;  // every row in a unit ...
            EXPECT_LT(r.rows * (r.units - 1), cpg) << at;  // ... and no unit without one
          } else {
            EXPECT_EQ(r.team, block) << at;
            EXPECT_EQ(r.rows, 1) << at;
            EXPECT_GE(r.pieces * r.piece_vectors, row_vectors) << at;
            EXPECT_LT((r.pieces - 1) * r.piece_vectors, row_vectors) << at;
            EXPECT_EQ(r.units, cpg * r.pieces) << at;
            pieced += r.pieces > 1;
          }
          ++checked;
        }
  EXPECT_GT(teams, 0);
  EXPECT_GT(pieced, 0);
  EXPECT_EQ(checked, 12 * 6 * 4 * 3);
}

// A row of more than half the workgroup's vectors but no more than its threads goes to a team
// where every team of a unit has a row: det_25x42x2048 (N = 2, 64 groups of 64 rows of 1050
// 16-bit elements, 132 vectors) took a workgroup a row, half its lanes idle (27.7 us), and takes
// full units of 8 teams of 32 lanes (19.7 us; params.hpp, SplitRows). Where two workgroups a
// compute unit leave half the teams idle (C = 640: 4 rows a unit) the workgroup keeps the row,
// and past the threads it always does (sd15_64x640, 512 vectors: teams 1.30x slower).
TEST(SplitRows, RowsUpToTheThreadsGoToTeams) {
  const SplitRows det = split_bwd_cf_rows(1050, 64, 8, 256, 4, 64, 132);
  EXPECT_EQ(det.team, 32);
  EXPECT_EQ(det.rows * det.units, 64);
  const SplitRows half = split_bwd_cf_rows(1050, 20, 8, 256, 4, 64, 132);
  EXPECT_EQ(half.team, 256);
  EXPECT_EQ(half.units, 20);
  const SplitRows sd = split_bwd_cf_rows(4096, 20, 8, 256, 4, 64, 132);
  EXPECT_EQ(sd.team, 256);
  EXPECT_EQ(sd.units, 20);
}

}  // namespace
}  // namespace hipgn::test
