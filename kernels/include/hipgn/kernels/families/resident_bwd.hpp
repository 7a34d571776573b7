// The resident backward, channels-last: x and dy cross device memory once in and dx once out
// (the floor: 1.5 copies), with 16-byte accesses whatever C/G is. The grid and the slicing are
// the resident forward's (resident_fwd.hpp): a persistent grid walks items (sample, slice of
// its rows); a workgroup covers row_lanes x (C / V) vectors of whole rows, and a thread keeps
// fixed channels, so it sums dy' and dy' * xhat per channel over its rows in registers with no
// shuffle, and shared memory adds the lanes up per channel in a fixed order. From those sums
// S1_c = sum dy', S2_c = sum dy' xhat:
//   A_g = sum_{c in g} gamma_c S1_c,  B_g = sum_{c in g} gamma_c S2_c
//   dx = rstd * (gamma dy' - A / M - xhat B / M),  written from the registers x and dy came in.
// The slices of a sample exchange their A and B (2 G floats each) through the workspace
// (arrival counter, cooperative launch), each adding all the sample's slices in the same order,
// so every workgroup, and every run, gets the same bits. For dgamma and dbeta each slice stores
// its S1, S2 per channel to the workspace [items, C, 2], and bwd_resident_gamma_beta_kernel sums them
// over the items in order: no floating-point atomics anywhere. (Exchanging the per-channel
// sums instead costs every workgroup slices x C reads: 4x slower at C = 1280, measured.)
//
// A sample cut into more than kResidentBwdMaxSlices slices cannot wait on chip for all of
// them; it streams (Params::pass): pass 1 stores every slice's sums, a small kernel forms A and
// B per (sample, group), and pass 2 reads x and dy again (from L2 where the tensor fits) and
// writes dx. Five transfers where the floor is three, still 16 bytes an access on any C/G.
#pragma once

#include <cstdint>

#include "hipgn/kernels/primitives/activation.hpp"
#include "hipgn/kernels/primitives/backward.hpp"
#include "hipgn/kernels/primitives/exchange.hpp"
#include "hipgn/kernels/primitives/persistent.hpp"
#include "hipgn/kernels/primitives/reduce.hpp"
#include "hipgn/kernels/primitives/target.hpp"
#include "hipgn/kernels/primitives/vector.hpp"
#include "hipgn/params.hpp"

namespace hipgn::kernels {

// dy' and xhat of one element, in place: x becomes xhat and dy the gradient at z = gamma xhat +
// beta (Swish's derivative with the hardware's exp2 and reciprocal, as the forward's Swish).
template <Activation A>
__device__ __forceinline__ void resident_terms(float mean, float rstd, float gamma, float beta, float swish_beta,
                                               float& x, float& dy) {
  x = (x - mean) * rstd;
  if constexpr (A == Activation::swish) dy *= activation_grad<A>(gamma * x + beta, swish_beta);
}

// Occupancy: x and dy in registers, 2 x per_thread x vector values a thread; up to 16 fit in
// 64 registers (1024 threads a compute unit), more take up to 128 (ptxas spilled 16-byte
// vectors of fp16 at 2 per thread under 64).
template <typename Traits>
inline constexpr int kResidentBwdMinBlocks =
    Traits::kBlockSize >= 1024 ? 1
                               : (2 * Traits::kPerThread * Traits::kVectorSize <= 16 ? 1024 : 512) / Traits::kBlockSize;

template <typename Traits>
__global__ void __launch_bounds__(Traits::kBlockSize, kResidentBwdMinBlocks<Traits>) bwd_resident_cl_kernel(Params p) {
  constexpr int V = Traits::kVectorSize, E = Traits::kPerThread;
  constexpr bool kDx = kWritesDx<Traits>;
  using T = typename Traits::XType;
  using Gm = typename Traits::GammaType;
  using VecT = Vec<T, V>;
  extern __shared__ __align__(16) unsigned char dynamic_smem[];
  const int c = int(p.channels), cv_count = c / V, lanes = p.row_lanes;
  const int groups = int(p.groups_per_sample), cpg = int(p.channels_per_group);
  const int t = threadIdx.x;
  const bool active = t < lanes * cv_count;
  const int cv = active ? t % cv_count : 0, lane = active ? t / cv_count : 0;
  // Shared memory (resident_bwd_cl_smem_floats). Per-channel values live here, not in
  // registers, which hold x and dy: a thread reads its V channels' as vectors when it needs them.
  float* red1 = reinterpret_cast<float*>(dynamic_smem);  // lanes x C: S1 per lane; row 0 the slice's, then c1
  float* red2 = red1 + lanes * c;                          // lanes x C: S2; row 0, then c2
  float* affine = red2 + lanes * c;                        // gamma[C], beta[C]: the same for every item
  float* chan = affine + 2 * c;                            // mean[C], rstd[C] per channel, then c3 in mean's place
  float* gstat = chan + 2 * c;                             // per group: (A, B)
  const Gm* gamma = static_cast<const Gm*>(p.gamma);
  const Gm* beta = static_cast<const Gm*>(p.beta);
  for (int ch = t; ch < c; ch += blockDim.x) {
    affine[ch] = gamma ? to_float(gamma[ch]) : 1.f;
    affine[c + ch] = beta ? to_float(beta[ch]) : 0.f;
  }
  const bool sums = wants_channel_sums<Traits>(p);
  const std::int64_t hw = p.spatial_size, rows_per_slice = p.part_rows;  // at most lanes x E
  const float per_group = float(hw) * float(cpg);
  const T* xs = static_cast<const T*>(p.x);
  const T* dys = static_cast<const T*>(p.dy);
  // this thread's V channels of a per-channel array, one access (V scalar reads from threads V
  // floats apart were V-way bank conflicts)
  auto mine = [&](const float* a, float (&out)[V]) { load_vec<V>(a + cv * V, out); };
  for (std::int64_t item = blockIdx.x; item < p.items; item += gridDim.x) {
    const std::int64_t n = std::int64_t(p.slices_div.div(std::uint64_t(item))), slice = item - n * p.slices;
    const int rows = int(part_share(hw, rows_per_slice, slice));
    const std::int64_t first = (n * hw + slice * rows_per_slice) * c;
    // x and dy of this thread's vectors (rows e * lanes + lane, column cv), widened once
    float x[E][V], dy[E][V];
    {
      const VecT* xv = reinterpret_cast<const VecT*>(xs + first);
      const VecT* dv = reinterpret_cast<const VecT*>(dys + first);
#pragma unroll
      for (int e = 0; e < E; ++e) {
        if (active && e * lanes + lane < rows) {
          const std::int64_t q = std::int64_t(e * lanes + lane) * cv_count + cv;
          widen(xv[q], x[e]);
          widen(dv[q], dy[e]);
        } else {
#pragma unroll
          for (int i = 0; i < V; ++i) x[e][i] = dy[e][i] = 0.f;  // dy' = 0: adds nothing
        }
      }
    }
    for (int ch = t; ch < c; ch += blockDim.x) {
      const std::int64_t g = n * groups + std::int64_t(p.cpg_div.div(std::uint64_t(ch)));
      chan[ch] = p.mean[g];
      chan[c + ch] = p.rstd[g];
    }
    __syncthreads();
    // xhat and dy' in place; this thread's S1, S2 per channel over its rows (not in the
    // streaming pass 2, which has the sums already)
    const int pass = p.pass;
    {
      float mean[V], rstd[V], ga[V], be[V];
      mine(chan, mean), mine(chan + c, rstd), mine(affine, ga), mine(affine + c, be);
      // the sums go to shared memory Q channels a store: a channel a store, with a lane's
      // threads V floats apart, was a V-way bank conflict; all V at once held 2 V more floats
      // and spilled 196 bytes at 128 registers (256 x 8 x 4)
      constexpr int Q = V < 4 ? V : 4;
#pragma unroll
      for (int i0 = 0; i0 < V; i0 += Q) {
        float s1[Q], s2[Q];
#pragma unroll
        for (int i = i0; i < i0 + Q; ++i) {
          s1[i - i0] = 0.f, s2[i - i0] = 0.f;
#pragma unroll
          for (int e = 0; e < E; ++e) {
            resident_terms<Traits::kActivation>(mean[i], rstd[i], ga[i], be[i], p.swish_beta, x[e][i], dy[e][i]);
            s1[i - i0] += dy[e][i];
            s2[i - i0] += dy[e][i] * x[e][i];
          }
        }
        if (active && pass != 2)
          store_floats<Q>(red1 + lane * c + cv * V + i0, s1), store_floats<Q>(red2 + lane * c + cv * V + i0, s2);
      }
    }
    __syncthreads();
    if (pass != 2) {
      // the slice's sums per channel: lanes added in order
      for (int ch = t; ch < c; ch += blockDim.x) {
        float s1 = red1[ch], s2 = red2[ch];
        for (int l = 1; l < lanes; ++l) s1 += red1[l * c + ch], s2 += red2[l * c + ch];
        red1[ch] = s1, red2[ch] = s2;
      }
      // the slice's sums per channel to the workspace: for dgamma/dbeta, summed over every
      // (sample, slice) in order by bwd_resident_gamma_beta_kernel, and streaming, for A and B
      if (sums || pass == 1)
        for (int ch = t; ch < c; ch += blockDim.x) store_channel_sums(p, item, ch, red1[ch], red2[ch]);
    }
    if (kDx && pass != 1) {
      __syncthreads();
      if (pass == 2) {  // A and B of the sample's groups, from bwd_resident_group_sums_kernel
        for (int g = t; g < groups; g += blockDim.x)
          gstat[2 * g] = p.partials[(n * groups + g) * 2], gstat[2 * g + 1] = p.partials[(n * groups + g) * 2 + 1];
      } else {
      for (int g = t; g < groups; g += blockDim.x) {
        float a = 0.f, b = 0.f;
        for (int k = 0; k < cpg; ++k) {
          const int ch = g * cpg + k;
          a += affine[ch] * red1[ch];
          b += affine[ch] * red2[ch];
        }
        gstat[2 * g] = a, gstat[2 * g + 1] = b;
      }
      if (p.slices > 1) {
        // the slices of a sample exchange A and B per group (2 G floats each, not the 2 C of
        // the channel sums), and every workgroup adds them in the same (slice) order
        float* w = p.partials + item * groups * 2;
        for (int g = t; g < groups; g += blockDim.x) w[2 * g] = gstat[2 * g], w[2 * g + 1] = gstat[2 * g + 1];
        __syncthreads();
        if (t == 0) arrive_and_wait(p.counters + 2 * n, p.counters + 2 * n + 1, std::uint32_t(p.slices));
        __syncthreads();
        // a wavefront per group, its lanes striding over the slices, then a fixed shuffle tree:
        // the L2 reads overlap (a thread walking every slice waited for each in turn: 20 us a
        // round at 86 slices, measured)
        const float* part = p.partials + n * p.slices * groups * 2;
        const int lane_id = t % kWarpSize, warp = t / kWarpSize, warps = int(blockDim.x) / kWarpSize;
        for (int g = warp; g < groups; g += warps) {
          float a = 0.f, b = 0.f;
          for (std::int64_t s = lane_id; s < p.slices; s += kWarpSize) {
            a += load_shared_partial(part + (s * groups + g) * 2);
            b += load_shared_partial(part + (s * groups + g) * 2 + 1);
          }
          a = warp_sum(a);
          b = warp_sum(b);
          if (lane_id == 0) gstat[2 * g] = a, gstat[2 * g + 1] = b;
        }
      }
      }
      __syncthreads();
      // dx = c1 dy' - c2 - c3 xhat per channel: c1 = rstd gamma, c2 = rstd A / M, c3 = rstd B / M
      for (int ch = t; ch < c; ch += blockDim.x) {
        const int g = int(p.cpg_div.div(std::uint64_t(ch)));
        const float r = chan[c + ch];
        red1[ch] = r * affine[ch];
        red2[ch] = r * gstat[2 * g] / per_group;
        chan[ch] = r * gstat[2 * g + 1] / per_group;
      }
      __syncthreads();
      if (active) {
        float c1[V], c2[V], c3[V];
        mine(red1, c1), mine(red2, c2), mine(chan, c3);
        VecT* dst = reinterpret_cast<VecT*>(static_cast<T*>(p.dx) + first);
#pragma unroll
        for (int e = 0; e < E; ++e) {
          if (e * lanes + lane < rows) {
            float f[V];
#pragma unroll
            for (int i = 0; i < V; ++i) f[i] = c1[i] * dy[e][i] - c2[i] - c3[i] * x[e][i];
            dst[std::int64_t(e * lanes + lane) * cv_count + cv] = narrow<T, V>(f);
          }
        }
      }
    }
    __syncthreads();  // shared memory is rewritten by the next item
  }
}

// Streaming, between the passes: A_g and B_g of every (sample, group) from the per-(item,
// channel) sums, a workgroup per (n, g) adding its slices and channels in a fixed order.
template <typename GammaType>
__global__ void __launch_bounds__(256) bwd_resident_group_sums_kernel(Params p) {
  const std::int64_t n = blockIdx.x / p.groups_per_sample, g = blockIdx.x - n * p.groups_per_sample;
  const std::int64_t cpg = p.channels_per_group, terms = p.slices * cpg;
  const auto* gamma = static_cast<const GammaType*>(p.gamma);
  float ab[2] = {0.f, 0.f};
  for (std::int64_t k = threadIdx.x; k < terms; k += 256) {
    const std::int64_t s = k / cpg, ch = g * cpg + (k - s * cpg);
    const float* w = p.workspace + ((n * p.slices + s) * p.channels + ch) * 2;
    const float ga = gamma ? to_float(gamma[ch]) : 1.f;
    ab[0] += ga * w[0];
    ab[1] += ga * w[1];
  }
  block_sum_array<256>(ab);
  if (threadIdx.x == 0) p.partials[blockIdx.x * 2] = ab[0], p.partials[blockIdx.x * 2 + 1] = ab[1];
}

// dgamma_c = sum S2[item, c], dbeta_c = sum S1[item, c] over the items (up to thousands when
// streaming): a workgroup per 32 channels, its 32 rows of threads striding over the items, then
// the rows added in order; a thread per channel walking every item took its items one by one.
template <typename GammaType>
__global__ void __launch_bounds__(1024) bwd_resident_gamma_beta_kernel(Params p) {
  __shared__ float part[2][32][33];
  const int lane = threadIdx.x % 32, row = threadIdx.x / 32;
  const std::int64_t ch = std::int64_t(blockIdx.x) * 32 + lane;
  float s1 = 0.f, s2 = 0.f;
  if (ch < p.channels)
    for (std::int64_t i = row; i < p.items; i += 32) {
      const float* w = p.workspace + (i * p.channels + ch) * 2;
      s1 += w[0];
      s2 += w[1];
    }
  part[0][row][lane] = s1;
  part[1][row][lane] = s2;
  __syncthreads();
  if (row == 0 && ch < p.channels) {
    for (int r = 1; r < 32; ++r) s1 += part[0][r][lane], s2 += part[1][r][lane];
    static_cast<GammaType*>(p.dgamma)[ch] = from_float<GammaType>(s2);
    static_cast<GammaType*>(p.dbeta)[ch] = from_float<GammaType>(s1);
  }
}

template <typename Traits>
struct ResidentBwdLauncher {
  static_assert(Traits::kLayout == Layout::channels_last, "the channels-first resident backward is not written yet");
  static hipError_t launch(const Params& p, hipStream_t stream) {
    using Gm = typename Traits::GammaType;
    const std::size_t smem = std::size_t(resident_bwd_cl_smem_floats(p.channels, p.groups_per_sample, p.row_lanes)) *
                             sizeof(float);
    const int block = resident_cl_block(p.channels, Traits::kVectorSize, p.row_lanes);
    const std::int64_t samples = p.items / p.slices;
    hipError_t e = hipSuccess;
    if (p.pass == 0) {  // on chip: one launch, the slices of a sample exchanging A and B
      e = launch_persistent(&bwd_resident_cl_kernel<Traits>, p, block, smem, kWritesDx<Traits> && p.slices > 1,
                            unit_counter_words(samples), stream);
    } else {  // streaming: sums, then A and B, then dx; no exchange, so no counters
      e = launch_persistent(&bwd_resident_cl_kernel<Traits>, p, block, smem, false, 0, stream);
      if (e == hipSuccess && kWritesDx<Traits>) {
        bwd_resident_group_sums_kernel<Gm><<<dim3(unsigned(samples * p.groups_per_sample)), dim3(256), 0, stream>>>(p);
        e = hipGetLastError();
        Params second = p;
        second.pass = 2;
        if (e == hipSuccess) e = launch_persistent(&bwd_resident_cl_kernel<Traits>, second, block, smem, false, 0, stream);
      }
    }
    if (e != hipSuccess || p.dgamma == nullptr || Traits::kOp == Op::dx) return e;
    bwd_resident_gamma_beta_kernel<Gm><<<dim3(unsigned((p.channels + 31) / 32)), dim3(1024), 0, stream>>>(p);
    return hipGetLastError();
  }
};

}  // namespace hipgn::kernels
