// Problems the tests run: odd shapes on purpose (prime spatial sizes, C/G of 1, 3, 30 and
// 160, vector tails, G = 1 and G = C, 3-D spatial, far fewer and far more groups than compute
// units, uneven groups), and a random corpus for dispatch coverage.
#pragma once

#include <random>
#include <vector>

#include "hipgn/problem.hpp"

namespace hipgn::test {

struct Shape {
  std::int64_t n, c;
  std::vector<std::int64_t> spatial;
  std::int64_t groups;
};

inline const std::vector<Shape>& shape_corpus() {
  static const std::vector<Shape> shapes = {
      {2, 4, {1}, 4},             // G = C with one position: groups of one element
      {2, 6, {7}, 2},             // C/G = 3, prime spatial
      {3, 30, {5, 7}, 1},         // G = 1 (LayerNorm), C/G = 30
      {2, 64, {8, 8}, 64},        // G = C (InstanceNorm)
      {2, 64, {32, 32}, 64},      // G = C of 1024 positions: channels-last columns of 8 groups in parts
      {2, 320, {13, 11}, 32},     // C/G = 10, spatial 143
      {2, 96, {17, 19}, 32},      // C/G = 3, spatial 323: vector tails
      {2, 60, {3, 4, 5}, 2},      // 3-D spatial, C/G = 30
      {64, 32, {4, 4}, 32},       // 2048 groups: far more than compute units; C/G = 1
      {2, 64, {64, 64}, 32},      // 64 groups, fewer than compute units; 8K-element groups
      {1, 64, {128, 128}, 2},     // 2 groups of 512K elements: looped and split
      {1, 8, {8191}, 2},          // prime spatial 8191, C/G = 4: 32764-element groups
      {2, 1280, {8, 8}, 32},      // C/G = 40
      {2, 640, {7, 7}, 4},        // C/G = 160
      {3, 160, {}, 1},            // no spatial dimensions: (N, C) alone
      {1, 48, {2, 3}, 16},        // C/G = 3, tiny
      {2, 32, {33, 47}, 4},       // C/G = 8, odd 2-D spatial: 12408-element groups
      {2, 14, {40, 40}, 2},       // C/G = 7 of 1600 positions: channels-first parts that cut a channel's row
      {2, 16, {7, 11, 3}, 4},     // C/G = 4, 3-D spatial 231: two groups a 16-byte column
      {3, 24, {37}, 12},          // C/G = 2, 1-D prime spatial: four groups a 16-byte column
      // rows long enough that the channels-first split backward cuts them into pieces (params.hpp:
      // split_bwd_cf_rows: past 4 x block x per_thread vectors, 16384 to 32768 elements)
      {1, 4, {40009}, 2},         // prime spatial: peeled pieces
      {2, 2, {256, 160}, 1},      // aligned pieces
      {1, 2, {200, 200}, 1},      // the same, run one element off the 16-byte boundary (i % 3 == 0)
      // uneven groups (Problem::uneven_groups, which make_problem sets where G does not divide
      // C): groups of C/G channels, floored, and a wider last group
      {2, 10, {7, 3}, 3},         // 3, 3 and 4 channels
      {1, 5, {13}, 3},            // 1, 1 and 3: groups of one channel beside a wider one
      {2, 64, {8, 8}, 5},         // 12 x 4 and 16: channels-last vectors of 4 in every group
      {2, 322, {5, 7}, 32},       // SD's C/G = 10 with a last group of 12
      {3, 40, {}, 6},             // no spatial dimensions: 6 x 5 and 10
      {1, 36, {2, 3, 5}, 5},      // 3-D spatial: 7 x 4 and 8
      {1, 9, {100, 101}, 2},      // 4 and 5 channels of 10100 positions: long, unaligned rows
      // a launch at the default shared-memory limit: the channels-last resident forward 256 x 8
      // x 4 holds this sample in one slice with 48 KB of dynamic memory exactly (32 KB of
      // stages, 16 KB of lanes' sums), past the limit only with its static arrays
      {1, 96, {8, 8}, 32},
  };
  return shapes;
}

inline Problem make_problem(const Shape& s, DataType x, DataType gamma, Layout layout, Activation act) {
  Problem p;
  p.n = s.n;
  p.c = s.c;
  p.spatial = s.spatial;
  p.groups = s.groups;
  p.uneven_groups = s.groups > 0 && s.c % s.groups != 0;
  p.x_dtype = x;
  p.gamma_dtype = gamma;
  p.layout = layout;
  p.act = act;
  p.eps = 1e-5f;
  p.swish_beta = act == Activation::swish ? 1.0f : 1.0f;
  return p;
}

// The (x, gamma) dtype pairs hipgn builds: gamma is x's dtype or fp32.
inline constexpr DataType kDtypePairs[][2] = {{DataType::f32, DataType::f32}, {DataType::f16, DataType::f16},
                                              {DataType::f16, DataType::f32}, {DataType::bf16, DataType::bf16},
                                              {DataType::bf16, DataType::f32}};

// A seed per run: fresh inputs every time, reproducible through HIPGN_TEST_SEED.
unsigned test_seed();

}  // namespace hipgn::test
