// A probe, not a kernel of the library: where instance_norm_32x64's channels-first forward (128
// groups of 1024 fp16 elements, one workgroup of 128 threads each; hipgn 2.8 us against
// torch.compile's 2.5 in bench.py) spends its time, by kernels that add hipgn's work one piece at
// a time (bench/NOTES.md, "The small forward, piece by piece"):
//   0 copy        one 16-byte vector a thread, 128 x 128 (256 KB of fp16).
//   1 bare        a group a workgroup: sum, block sum, squared deviations, block sum, normalize,
//                 store; one barrier a block sum (a shared array each).
//   2 +swish      and y = z sigmoid(z) (two MUFU operations an element, as activation.hpp).
//   3 +affine     and each group's gamma and beta (its channel), loaded beside x; mean and rstd
//                 stored (hipgn's saved statistics).
//   4 +barriers   and a leading barrier in each block sum, one shared array (hipgn's reduce.hpp).
//   5 big params  +barriers with a 456-byte parameter block, its fields on four 64-byte lines
//                 (sizeof(hipgn::Params)).
//   6 256 x 4     +affine's work by 256 threads of 8-byte vectors (torch.compile's shape here).
//   7 hipgn's     the library's gn_fwd_f16_f16_cf_swish_onchip_b128_v8_e1 kernel, compiled into
//     kernel      this probe and launched from it with a Params filled here as Instance::run
//                 fills it (built with -DHIPGN_KERNEL and a build's include folders: small_fwd_probe.sh),
//                 to tell its code from its launch through the library.
// bench/small_fwd_probe.py times them as bench.py times (its functions, in its process), beside
// the copy, hipgn's instances and torch.compile. Built as a shared library with one C entry:
//     nvcc -O3 -arch=sm_90 -shared -Xcompiler -fPIC bench/small_fwd_probe.cu -o /tmp/small_fwd_probe.so
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#if defined(HIPGN_KERNEL)
#include "hipgn/kernels/launch.hpp"
// gn_fwd_f16_f16_cf_swish_onchip_b128_v8_e1's traits (its generated .inc also registers it, which
// needs the library's registry)
struct Traits {
  static constexpr hipgn::Op kOp = hipgn::Op::fwd;
  using XType = hipgn::f16_t;
  using GammaType = hipgn::f16_t;
  static constexpr hipgn::Layout kLayout = hipgn::Layout::channels_first;
  static constexpr hipgn::Activation kActivation = hipgn::Activation::swish;
  static constexpr int kBlockSize = 128;
  static constexpr int kVectorSize = 8;
  static constexpr int kPerThread = 1;
};
#endif


namespace {

struct Small {
  const uint4* x;
  uint4* y;
  const __half* gamma;
  const __half* beta;
  float* mean;
  float* rstd;
  float eps;
};
struct Big {  // Small's fields spread over the lines of a Params-sized block
  const uint4* x;
  const __half* gamma;
  const __half* beta;
  char pad0[104];
  uint4* y;
  float* mean;
  float* rstd;
  char pad1[168];
  float eps;
  char pad2[132];
};
static_assert(sizeof(Big) == 456, "Params' size");

__global__ void __launch_bounds__(128) copy_kernel(Small p) {
  const int i = blockIdx.x * 128 + threadIdx.x;
  p.y[i] = p.x[i];
}

// kLeading: a barrier before the partials are written (reduce.hpp's, so that one array serves
// every call); without it each call site passes its own array.
template <bool kLeading>
__device__ __forceinline__ float block_sum128(float v, float (&part)[4]) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (kLeading) __syncthreads();
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
  __syncthreads();
  float t = part[threadIdx.x & 3];
  t += __shfl_xor_sync(0xffffffffu, t, 1);
  t += __shfl_xor_sync(0xffffffffu, t, 2);
  return t;
}

enum Level { kBare, kSwish, kAffine, kBarriers };

template <Level L, typename P>
__global__ void __launch_bounds__(128) norm_kernel(P p) {
  __shared__ float part0[4], part1[4];
  const int i = blockIdx.x * 128 + threadIdx.x;
  const uint4 raw = p.x[i];
  float g = 1.f, b = 0.f;
  if (L >= kAffine) g = __half2float(p.gamma[blockIdx.x % 64]), b = __half2float(p.beta[blockIdx.x % 64]);
  const __half2* h = reinterpret_cast<const __half2*>(&raw);
  float v[8];
  for (int k = 0; k < 4; ++k) {
    const float2 f = __half22float2(h[k]);
    v[2 * k] = f.x, v[2 * k + 1] = f.y;
  }
  float s = 0.f;
  for (int k = 0; k < 8; ++k) s += v[k];
  const float mean = block_sum128<L >= kBarriers>(s, part0) * (1.f / 1024);
  float q = 0.f;
  for (int k = 0; k < 8; ++k) q += (v[k] - mean) * (v[k] - mean);
  const float rstd = rsqrtf(block_sum128<L >= kBarriers>(q, L >= kBarriers ? part0 : part1) * (1.f / 1024) + p.eps);
  if (L >= kAffine && threadIdx.x == 0) p.mean[blockIdx.x] = mean, p.rstd[blockIdx.x] = rstd;
  const float scale = g * rstd, shift = b - mean * scale;
  float z[8];
  for (int k = 0; k < 8; ++k) {
    z[k] = v[k] * scale + shift;
    if (L >= kSwish) z[k] = __fdividef(z[k], 1.f + __expf(-z[k]));  // MUFU.EX2 + MUFU.RCP, as activation.hpp
  }
  uint4 out;
  __half2* o = reinterpret_cast<__half2*>(&out);
  for (int k = 0; k < 4; ++k) o[k] = __floats2half2_rn(z[2 * k], z[2 * k + 1]);
  p.y[i] = out;
}

// 256 threads, 4 elements (8 bytes) a thread: the shape of torch.compile's kernel here, with
// +affine's work.
__global__ void __launch_bounds__(256) triton_shaped_kernel(Small p) {
  __shared__ float part0[8], part1[8];
  const int i = blockIdx.x * 256 + threadIdx.x;
  const uint2 raw = reinterpret_cast<const uint2*>(p.x)[i];
  const float g = __half2float(p.gamma[blockIdx.x % 64]), b = __half2float(p.beta[blockIdx.x % 64]);
  const __half2* h = reinterpret_cast<const __half2*>(&raw);
  float v[4];
  for (int k = 0; k < 2; ++k) {
    const float2 f = __half22float2(h[k]);
    v[2 * k] = f.x, v[2 * k + 1] = f.y;
  }
  auto sum256 = [](float t, float (&part)[8]) {
    for (int o = 16; o > 0; o >>= 1) t += __shfl_xor_sync(0xffffffffu, t, o);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = t;
    __syncthreads();
    float u = part[threadIdx.x & 7];
    for (int o = 1; o < 8; o <<= 1) u += __shfl_xor_sync(0xffffffffu, u, o);
    return u;
  };
  const float mean = sum256(v[0] + v[1] + v[2] + v[3], part0) * (1.f / 1024);
  float q = 0.f;
  for (int k = 0; k < 4; ++k) q += (v[k] - mean) * (v[k] - mean);
  const float rstd = rsqrtf(sum256(q, part1) * (1.f / 1024) + p.eps);
  if (threadIdx.x == 0) p.mean[blockIdx.x] = mean, p.rstd[blockIdx.x] = rstd;
  const float scale = g * rstd, shift = b - mean * scale;
  uint2 out;
  __half2* o = reinterpret_cast<__half2*>(&out);
  float z[4];
  for (int k = 0; k < 4; ++k) z[k] = __fdividef(v[k] * scale + shift, 1.f + __expf(-(v[k] * scale + shift)));
  for (int k = 0; k < 2; ++k) o[k] = __floats2half2_rn(z[2 * k], z[2 * k + 1]);
  reinterpret_cast<uint2*>(p.y)[i] = out;
}

}  // namespace

// ctypes entry (bench/small_fwd_probe.py): launches variant `which` on one tensor set of
// instance_norm_32x64 (fp16, x and y 128 x 1024 elements, gamma and beta 64, mean and rstd 128).
extern "C" int probe_launch(int which, const void* x, void* y, const void* gamma, const void* beta, float* mean,
                            float* rstd, void* stream) {
  Small p{static_cast<const uint4*>(x), static_cast<uint4*>(y), static_cast<const __half*>(gamma),
          static_cast<const __half*>(beta), mean, rstd, 1e-5f};
  Big q{};
  q.x = p.x, q.y = p.y, q.gamma = p.gamma, q.beta = p.beta, q.mean = mean, q.rstd = rstd, q.eps = p.eps;
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  switch (which) {
    case 0: copy_kernel<<<128, 128, 0, s>>>(p); break;
    case 1: norm_kernel<kBare><<<128, 128, 0, s>>>(p); break;
    case 2: norm_kernel<kSwish><<<128, 128, 0, s>>>(p); break;
    case 3: norm_kernel<kAffine><<<128, 128, 0, s>>>(p); break;
    case 4: norm_kernel<kBarriers><<<128, 128, 0, s>>>(p); break;
    case 5: norm_kernel<kBarriers><<<128, 128, 0, s>>>(q); break;
    case 6: triton_shaped_kernel<<<128, 256, 0, s>>>(p); break;
#if defined(HIPGN_KERNEL)
    case 7: {
      hipgn::Params k{};
      k.x = x, k.y = y, k.gamma = gamma, k.beta = beta, k.mean = mean, k.rstd = rstd;
      k.channels = 64, k.groups_per_sample = 64, k.channels_per_group = 1, k.sample_stride = 64 * 1024;
      k.group_stride = 1024, k.row_stride = 1024, k.vectors = 128, k.last_vectors = 128;
      k.vectors_per_row = k.last_vectors_per_row = hipgn::FastDivmod::make(128);
      k.group_elements = k.last_group_elements = 1024, k.last_channels = 1, k.spatial_size = 1024;
      k.spatial = hipgn::FastDivmod::make(1024), k.groups_div = hipgn::FastDivmod::make(64), k.group_rcp = 1.0 / 1024;
      k.num_groups = 128, k.slices = 1, k.eps = 1e-5f, k.swish_beta = 1.f;
      hipgn::kernels::fwd_onchip_kernel<Traits><<<128, 128, 0, s>>>(k);
      break;
    }
#endif
    default: return 1;
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
