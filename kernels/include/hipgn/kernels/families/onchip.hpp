// Family onchip: one workgroup per group, the whole group held in registers; x (and dy) read
// once.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string>
#include <type_traits>

#include "hipgn/kernels/family.hpp"
#include "hipgn/kernels/families/grid.hpp"
#include "hipgn/kernels/primitives/cluster.hpp"
#include "hipgn/kernels/primitives/param.hpp"
#include "hipgn/kernels/primitives/phase_clock.hpp"
#include "hipgn/params.hpp"

namespace hipgn::kernels {

// Whether the channels-first onchip forward's aligned slots widen after every slot's load, not in
// the slot's guard: bf16's 16-byte slots, eight or more a thread (the span kernel's widen in the
// guard, where this measured the other way: fwd_onchip_span). There a guarded block held a load,
// eight conversions of two instructions each pair and the sums, too long for ptxas to predicate,
// so it stayed a branch and each slot's load waited for the one before (Nsight, 512 x 8 x 8 at
// sd15_32x640: 8.96 us against fp16's 7.74, long_sb 2,307 stall samples against 1,243). After:
// 0.79-0.91x the time, level with fp16; elsewhere, 8-byte vectors and fp16, the same change ran
// 0.98-1.08x (bench/NOTES.md, "bf16's loads in rounds").
template <typename Traits>
inline constexpr bool kOnchipWidenAfterLoads =
    std::is_same_v<typename Traits::XType, bf16_t> && Traits::kVectorSize == 8 && Traits::kPerThread >= 8;
// The same for the channels-last onchip forward's rows (the kernels that hold them as fp32):
// 16-bit pairs (4-byte vectors), sixteen slots a thread: 512 x 2 x 16 ran 0.88-0.94x the time
// with it (sd15_32x320 7.7 -> 6.9 us fp16, 8.0 -> 7.0 bf16; sd15_16x1920 6.9 -> 6.5), 1024 x 2 x
// 16 0.96-1.01x. 16-bit 16-byte vectors, eight slots a thread, fp16 and bf16 alike: widened in
// the guard, each slot's load sat behind its own branch, into one register set (SASS of
// 256 x 8 x 8), so that each waited for the one before; after, 0.69-0.82x the time
// (sdxl_64x1280 42.5 -> 29.7 us, sd15_32x1280 10.9 -> 8.7). 8-byte vectors of eight slots ran
// 1.06-1.08x (bench/NOTES.md, "bf16's loads in rounds", "Sixteen 4-byte slots" and "The
// channels-last rows kernel's loads in rounds"). Eight slots or more: never loaded at once
// (kOnchipLoadsAtOnce), so the loads stay in the slots' guards.
template <typename Traits>
inline constexpr bool kOnchipRowsWidenAfterLoads =
    sizeof(typename Traits::XType) == 2 &&
    ((Traits::kVectorSize == 2 && Traits::kPerThread >= 16) || (Traits::kVectorSize == 8 && Traits::kPerThread >= 8));

// Which forward instances also have their parts kernel with x held as loaded (16-bit x: half
// the registers of their fp32 values, widened again at each of their three uses; the kBits of
// fwd_onchip_rows, fwd_onchip_aligned and fwd_onchip_span). It costs instructions and saves
// registers: channels-last 256 x 8 x 4 78 -> 62 (three workgroups a compute unit -> four),
// 256 x 4 x 8 80 -> 55, 256 x 8 x 8 128 -> 79 (two -> three), 512 x 4 x 8 64 -> 54 (two either
// way). So the launcher takes it where the device runs more of a launch's clusters at once with
// it and the plain kernel's would not all run at once (FamilyLauncher<onchip>::HeldParts), and
// the plain kernel elsewhere. Measured (H200, fp16 / bf16; bench/NOTES.md, "The channels-last
// onchip forward's rows held as loaded"): 256 x 8 x 4 at sd15_32x1280 9.55 -> 8.64 us (62 + 2
// clusters -> one round), sdxl_32x2560 16.2 -> 15.0; 256 x 8 x 8 at det_25x42x2048 18.3 -> 10.9;
// but at one round either way 1.05-1.08x the time (vae_64x512 7.51 -> 7.98), and 512 x 4 x 8
// 1.08-1.16x.
// Channels-first, the aligned and peeled parts kernels the same way (x's vectors held as loaded):
// fp16's aligned 256 x 8 x 4 80 -> 58 registers, 256 x 8 x 8 114 -> 79, peeled 256 x 8 x 8 118 ->
// 58 (bf16's aligned plain kernels hold so already: ptxas widens its shifted halves again at each
// use); sd15_64x640 fp16 14.34 -> 12.73 us, det_25x42x2048's peeled 256 x 8 x 8 in 5 parts 15.73 ->
// 12.62 (bench/NOTES.md, "The channels-first onchip forward's parts held as loaded").
// Which instances: params.hpp, onchip_held_bits.
template <typename Traits>
inline constexpr bool kOnchipHeldBits =
    Traits::kOp == Op::fwd &&
    onchip_held_bits(int(sizeof(typename Traits::XType)), Traits::kVectorSize, Traits::kPerThread);

// Which parts kernel the launcher takes where an instance has both (kOnchipHeldBits): the one
// held as loaded where the device runs more of the launch's clusters at once with it and would
// not run all of the plain kernel's at once, the plain one elsewhere (HeldParts::take_bits); or,
// with HIPGN_ONCHIP_HELD_BITS (read once), `0` the plain one (for measuring), `always` the one
// held as loaded (the GPU check tests that kernel so: the corpus's shapes run in one round).
enum class HeldBitsMode { more_at_once, never, always };
inline HeldBitsMode onchip_held_bits_mode() {
  static const HeldBitsMode mode = [] {
    const char* e = std::getenv("HIPGN_ONCHIP_HELD_BITS");
    if (e && std::string(e) == "0") return HeldBitsMode::never;
    return e && std::string(e) == "always" ? HeldBitsMode::always : HeldBitsMode::more_at_once;
  }();
  return mode;
}

// The onchip forward's parts of a group (fwd_onchip_parts_kernel) exchange their (mean, M2)
// through distributed shared memory: each pushes its pair to every part, waits for all of them
// and merges them in part order (ClusterExchange), so every part has the group's statistics to
// the same bits. Its one item: the exchange's slots and barriers are used once. A part is
// part_rows units of the group's `units` (channels-last rows of C/G elements, channels-first
// vectors of V), the last part the rest, and the first part `first_extra` elements more (a
// peeled group's head and tail). Takes this part's mean in `mean` and leaves the group's there;
// returns the group's rstd.
#if defined(HIPGN_CLUSTERS)
__device__ __forceinline__ ClusterExchange& parts_exchange() {
  __shared__ ClusterExchange x;
  return x;
}
#endif
__device__ __forceinline__ float exchange_parts(const Params& p, int part, float& mean, float m2, int units,
                                                int unit_elements, int first_extra = 0) {
#if defined(HIPGN_CLUSTERS)
  ClusterExchange& x = parts_exchange();
  cluster_wait();  // every part's barrier is initialized (the parts kernels)
  x.push(0, part, int(p.slices), make_float2(mean, m2));
  const int each = int(p.part_rows);
  const Stats s = x.merge_item(0, int(p.slices), [&](int i) {
    return float(max(0, part_share(units, each, i)) * unit_elements + (i == 0 ? first_extra : 0));
  });
  mean = s.mean;
  return rsqrtf(s.m2 / s.n + p.eps);
#else
  (void)p, (void)part, (void)mean, (void)m2, (void)units, (void)unit_elements, (void)first_extra;
  return 0.f;  // never launched without clusters (the launcher refuses)
#endif
}

// The same for a channels-last column of V channels (fwd_onchip_columns with kParts), V / (C/G)
// groups: each part pushes every group's (mean, M2) of its rows to every part (ClusterPairs),
// and every wavefront merges them in a fixed order (merge_groups). Takes this part's per-channel
// mean and M2 (each channel its group's) in `mean` and `m2`; leaves the group's mean in `mean`
// and rstd in `rstd`, per channel.
#if defined(HIPGN_CLUSTERS)
template <int V>
__device__ __forceinline__ ClusterPairs column_parts_pairs(const Params& p, int shift) {
  __shared__ float2 slot[kClusterSlicesMax * V];  // one item: [rank][group of the column]
  __shared__ std::uint64_t bar[2];
  return ClusterPairs{slot, bar, int(p.slices), V >> shift};
}
#endif
template <int V>
__device__ __forceinline__ void exchange_column_parts(const Params& p, int part, int shift, float (&mean)[V],
                                                      const float (&m2)[V], float (&rstd)[V]) {
#if defined(HIPGN_CLUSTERS)
  const ClusterPairs x = column_parts_pairs<V>(p, shift);
  cluster_wait();  // every part's barrier is initialized (fwd_onchip_columns_parts_kernel)
  // thread r sends every group's pair to part r: each group's values are its first channel's,
  // a constant index (a group picked by thread took the arrays to local memory: 64 bytes of stack)
  const int r = threadIdx.x, cg = int(p.channels_per_group);
  if (r == 0) x.expect(0);
  if (r < x.slices) {
#pragma unroll
    for (int i = 0; i < V; ++i)
      if ((i & (cg - 1)) == 0) x.send(0, part, r, i >> shift, make_float2(mean[i], m2[i]));
  }
  const int each = int(p.part_rows), rows = int(p.spatial_size);
  const Stats s = x.merge_groups(0, [&](int r) { return float(max(0, part_share(rows, each, r)) * cg); });
  const float inv_count = 1.f / float(p.group_elements);
#pragma unroll
  for (int i = 0; i < V; ++i) {
    mean[i] = __shfl(s.mean, i >> shift, kWarpSize);
    rstd[i] = rsqrtf(__shfl(s.m2, i >> shift, kWarpSize) * inv_count + p.eps);
  }
#else
  (void)p, (void)part, (void)shift, (void)mean, (void)m2, (void)rstd;  // never launched without clusters
#endif
}

// Slot e of a thread's x for one use: its fp32 values as held (v), or with kBits widened again
// from the bits as loaded (raw), made opaque so that the compiler holds the bits (16-bit x: half
// the registers) and not a first widening's values.
template <bool kBits, typename Raw, int E, typename Held, typename Use>
__device__ __forceinline__ void with_held(const Raw (&raw)[E], const Held& v, int e, Use&& use) {
  if constexpr (kBits) {
    float f[sizeof(v[0]) / sizeof(float)];
    widen(opaque(from_bits(raw[e])), f);
    use(f);
  } else {
    use(v[e]);
  }
}

// Family onchip, channels-first span mode (Params::span: a spatial size the vector does not
// divide, or x and y off a 16-byte boundary): the group's contiguous run peeled, its body
// vectors held kPerThread a thread and its head and tail an element a thread. A body vector may
// cross one channel row's end (the spatial size is at least the vector: Instance::supports):
// its elements from `cut` on take the next channel's gamma and beta. With a few vectors a
// thread both channels' are loaded beside x, as the aligned path does.
//
// With kParts (fwd_onchip_parts_kernel's kPeeled), the workgroup is part `part` of a thread-block
// cluster that holds the group: body vectors part * part_rows on, up to part_rows of them (q
// below counts from the part's first), the first part the head and the tail too, with statistics
// of its own that the parts exchange (exchange_parts).
//
// With kBits (kOnchipHeldBits), the body vectors are held as loaded and widened at each use.
template <typename Traits, bool kParts = false, bool kBits = false>
__device__ __forceinline__ void fwd_onchip_span(const Params& p, const GroupView<Traits>& view, std::int64_t group,
                                                int part = 0) {
  constexpr int B = Traits::kBlockSize, V = Traits::kVectorSize, E = Traits::kPerThread;
  constexpr bool kEarly = E <= 4;
  using X = typename Traits::XType;
  static_assert(!kBits || sizeof(X) == 2, "x held as loaded: 16-bit x");
  const int t = threadIdx.x, hw = int(p.spatial_size);
  const Peel<V> run(p.phase, view.base, p.group_elements);
  const int first = kParts ? part * int(p.part_rows) : 0;  // the part's first body vector
  const int head = int(run.head), body = kParts ? part_share(int(run.body), int(p.part_rows), part) : int(run.body);
  const int edges = part == 0 ? int(run.head + run.tail) : 0;
  // the part's body from its first vector on, x and y alike
  const X* x = static_cast<const X*>(p.x) + std::int64_t(first) * V;
  X* y = static_cast<X*>(p.y) + std::int64_t(first) * V;
  // vector q's channel row r (of the group) and the element where row r + 1 begins in it
  struct Rows {
    float g0, b0, g1, b1;
    int cut;
  };
  auto rows_of = [&](int q) {
    const int rel = head + (first + q) * V, r = int(p.spatial.div31(std::uint32_t(rel))), cut = (r + 1) * hw - rel;
    const Affine<Traits> a0(p, view.channel0 + r);
    const Affine<Traits> a1 = cut < V ? Affine<Traits>(p, view.channel0 + r + 1) : a0;
    return Rows{a0.gamma, a0.beta, a1.gamma, a1.beta, cut};
  };
  float v[kBits ? 1 : E][V];
  Rows early[kEarly ? E : 1];
  // Each slot widened and summed in its guard, bf16 too (kOnchipWidenAfterLoads is the aligned
  // kernel's): here, with the widening after every slot's load, ptxas branched around each
  // guarded load into one set of registers, so each slot's load waited for the one before (SASS,
  // 256 x 8 x 8); in the guard they are predicated, several in flight. bf16's 256 x 8 x 8 and
  // 512 x 8 x 8 ran 0.89-0.90 of the time so, level with fp16 (bench/NOTES.md, "The onchip
  // forward's bf16 loads, again").
  // (Vecs without kBits, as before: held as Bits, and widened through one branch with the
  // held-as-loaded kernel's, the plain span kernels' SASS changed, unmeasured)
  using VecT = Vec<X, V>;
  using Raw = std::conditional_t<kBits, Bits<VecT>, VecT>;
  Raw raw[E];
  float sum = 0.f;
#pragma unroll
  for (int e = 0; e < E; ++e) {
    const int q = t + e * B;
    if (q < body) {
      raw[e] = *reinterpret_cast<const Raw*>(x + view.base + head + std::int64_t(q) * V);
      if constexpr (kEarly) early[e] = rows_of(q);
      if constexpr (kBits) {
        float f[V];
        widen(from_bits(raw[e]), f);
#pragma unroll
        for (int i = 0; i < V; ++i) sum += f[i];
      } else {
        widen(raw[e], v[e]);
#pragma unroll
        for (int i = 0; i < V; ++i) sum += v[e][i];
      }
    }
  }
  // the head and the tail, an element a thread: element `rel` of the group
  const int rel = t < head ? t : head + int(run.body) * V + (t - head);
  const X* xs = static_cast<const X*>(p.x);
  float h = 0.f;
  if (t < edges) sum += (h = to_float(xs[view.base + rel]));
  // the part's elements (with kParts; else the group's)
  const float count = kParts ? float(max(body, 0) * V + edges) : float(p.group_elements);
  float mean = block_sum<B>(sum) / count;
  float sq = t < edges ? (h - mean) * (h - mean) : 0.f;
#pragma unroll
  for (int e = 0; e < E; ++e) {
    if (t + e * B < body) {
      with_held<kBits>(raw, v, e, [&](const float(&f)[V]) {
#pragma unroll
        for (int i = 0; i < V; ++i) sq += (f[i] - mean) * (f[i] - mean);
      });
    }
  }
  float rstd;
  if constexpr (kParts) rstd = exchange_parts(p, part, mean, block_sum<B>(sq), int(run.body), V, int(run.head + run.tail));
  else rstd = rsqrtf(block_sum<B>(sq) / count + p.eps);
  save_stats(p, group, mean, rstd, t == 0 && part == 0);
#pragma unroll
  for (int e = 0; e < E; ++e) {
    const int q = t + e * B;
    if (q < body) {
      Rows rw;
      if constexpr (kEarly) rw = early[e];
      else rw = rows_of(q);
      with_held<kBits>(raw, v, e, [&](const float(&f)[V]) {
        float out[V];
#pragma unroll
        for (int i = 0; i < V; ++i) {
          const float g = i < rw.cut ? rw.g0 : rw.g1, b = i < rw.cut ? rw.b0 : rw.b1;
          out[i] = activate<Traits::kActivation>((f[i] - mean) * (g * rstd) + b, p.swish_beta);
        }
        store_vec<V>(y + view.base + head + std::int64_t(q) * V, out);
      });
    }
  }
  if (t < edges) {
    const Affine<Traits> a(p, view.channel0 + int(p.spatial.div31(std::uint32_t(rel))));
    static_cast<X*>(p.y)[view.base + rel] =
        from_float<X>(activate<Traits::kActivation>((h - mean) * (a.gamma * rstd) + a.beta, p.swish_beta));
  }
}

// Whether the onchip forward's slots all load, a slot past the group at a place in it (its sum
// masked by a select), so that no branch separates a thread's loads: with a guarded load a slot
// ptxas issued them in rounds, each waiting for the one before (Nsight, sd15_16x640). Measured
// (bench/NOTES.md, "Loads in one round; the resident forward's stores on one path"): with two
// slots a thread 0.83-0.85x (sd15_8x1280, both layouts), one 0.96-0.98x; with eight or sixteen
// 0.97-1.08x, slower on most (the extra loads of unused slots, and the registers of all in
// flight), so those keep the guarded loads. Four: the channels-first forward's predicated loads
// went in two rounds (SASS; bench/NOTES.md, "The parameters' lines, late").
template <typename Traits>
inline constexpr bool kOnchipLoadsAtOnce = Traits::kPerThread <= kOnchipAtOnceSlots;

// The channels-last rows of a group that a workgroup holds, and the first one's offset: all of
// them, or with kParts part `part`'s, part_rows from part * part_rows (the last part the rest).
struct HeldRows {
  int rows;
  std::int64_t base;
};
template <bool kParts, typename View>
__device__ __forceinline__ HeldRows held_rows(const Params& p, const View& view, int part) {
  if constexpr (!kParts) return {int(p.spatial_size), view.base};
  const int begin = part * int(p.part_rows);
  return {part_share(int(p.spatial_size), int(p.part_rows), part), view.base + std::int64_t(begin) * p.row_stride};
}

// Family onchip, channels-last: a thread keeps one vector column of the group's rows and walks
// the rows (positions) R = block / columns apart, up to kPerThread of them (onchip_cl_rows), so
// a vector's place is a pointer step, not a division, and its channels' gamma and beta are
// loaded once, beside x, off the chain after the reductions. The flat mapping (vector q of the
// group at thread q % block) located each vector with a division and read gamma and beta per
// element after the reductions: sd15_16x640 (C/G = 20, 2560 vectors of 2 in 1024 threads) ran
// ~800 instructions a wavefront for under three vectors a thread (bench/NOTES.md, "The
// channels-last onchip forward by rows").
//
// With kParts (fwd_onchip_parts_kernel), the workgroup is part `part` of a thread-block cluster
// that holds the group: its rows part * part_rows on, up to part_rows of them, with statistics
// of its own rows that the cluster's parts exchange (exchange_parts).
//
// With kBits (kOnchipHeldBits), the rows are held as loaded and widened at each use.
template <typename Traits, bool kParts = false, bool kBits = false>
__device__ __forceinline__ void fwd_onchip_rows(const Params& p, const GroupView<Traits>& view, std::int64_t group,
                                                int part = 0) {
  constexpr int B = Traits::kBlockSize, V = Traits::kVectorSize, E = Traits::kPerThread;
  using X = typename Traits::XType;
  const int columns = int(p.vectors_per_row.divisor);
  const auto [rows, base] = held_rows<kParts>(p, view, part);
  const int R = B / columns, t = threadIdx.x;
  const int r0 = t / columns, column = t - r0 * columns;
  const bool active = r0 < R;
  const std::int64_t first = base + std::int64_t(r0) * p.row_stride + column * V;
  const std::int64_t step = std::int64_t(R) * p.row_stride;
  const X* x = static_cast<const X*>(p.x) + first;
  const X* x0 = static_cast<const X*>(p.x) + base + column * V;  // the column's first row
  // bench/phase_times.sh: loads | the mean | the squares | the parts' exchange | stores issued.
  // The laps cost registers (256 x 8 x 4: 110 where the kernel takes 78, so two workgroups a
  // compute unit where three run), so where several run on a compute unit a launch with them
  // takes more rounds of clusters than without: read the laps, not the launch's span
  // (bench/NOTES.md, "The channels-last onchip forward's laps").
  PhaseClock<5> phases;
  static_assert(!kBits || sizeof(X) == 2, "rows held as loaded: 16-bit x");
  constexpr bool kAfter = kOnchipRowsWidenAfterLoads<Traits>;
  static_assert(!kAfter || !kOnchipLoadsAtOnce<Traits>, "widened after guarded loads only");
  float v[kBits ? 1 : E][V];
  float sum = 0.f;
  using VecT = Vec<X, V>;
  Bits<VecT> raw[kAfter || kBits ? E : 1];  // as loaded, in 32-bit words
#pragma unroll
  for (int e = 0; e < E; ++e) {
    const bool mine = active && r0 + e * R < rows;
    if (kOnchipLoadsAtOnce<Traits> || mine) {
      if constexpr (kAfter) {  // no loads at once (kOnchipRowsWidenAfterLoads), so `mine` holds here
        raw[e] = *reinterpret_cast<const Bits<VecT>*>(x + e * step);
      } else if constexpr (kBits) {
        raw[e] = *reinterpret_cast<const Bits<VecT>*>(mine ? x + e * step : x0);
      } else {
        load_vec<V>(mine ? x + e * step : x0, v[e]);
#pragma unroll
        for (int i = 0; i < V; ++i) sum += mine ? v[e][i] : 0.f;
      }
    }
  }
  if constexpr (kAfter || kBits) {
#pragma unroll
    for (int e = 0; e < E; ++e) {
      if (active && r0 + e * R < rows) {
        float f[V];
        widen(from_bits<VecT>(raw[e]), f);
#pragma unroll
        for (int i = 0; i < V; ++i) {
          sum += f[i];
          if constexpr (!kBits) v[e][i] = f[i];
        }
      }
    }
  }
  auto with_values = [&](int e, auto&& use) { with_held<kBits>(raw, v, e, use); };
  if constexpr (kBits) phases.lap_after(0, raw);
  else phases.lap_after(0, v);
  float gamma[V], beta[V];
  vector_affine<Traits>(p, view.channel0 + column * V, gamma, beta);
  const float count = kParts ? float(rows * int(p.channels_per_group)) : float(p.group_elements);
  float mean = block_sum<B>(sum) / count;
  phases.lap(1);
  float sq = 0.f;
#pragma unroll
  for (int e = 0; e < E; ++e) {
    if (active && r0 + e * R < rows) {
      with_values(e, [&](const float(&f)[V]) {
#pragma unroll
        for (int i = 0; i < V; ++i) sq += (f[i] - mean) * (f[i] - mean);
      });
    }
  }
  const float m2 = block_sum<B>(sq);
  phases.lap(2);
  float rstd;
  if constexpr (kParts) rstd = exchange_parts(p, part, mean, m2, int(p.spatial_size), int(p.channels_per_group));
  else rstd = rsqrtf(m2 / count + p.eps);
  phases.lap(3);
  save_stats(p, group, mean, rstd, t == 0 && part == 0);
  float scale[V];
#pragma unroll
  for (int i = 0; i < V; ++i) scale[i] = gamma[i] * rstd;
  X* y = static_cast<X*>(p.y) + first;
#pragma unroll
  for (int e = 0; e < E; ++e) {
    if (active && r0 + e * R < rows) {
      with_values(e, [&](const float(&f)[V]) {
        float out[V];
#pragma unroll
        for (int i = 0; i < V; ++i)
          out[i] = activate<Traits::kActivation>((f[i] - mean) * scale[i] + beta[i], p.swish_beta);
        store_vec<V>(y + e * step, out);
      });
    }
  }
  phases.lap(4);
  phases.report("fwd_onchip_cl");
}

// Family onchip, channels-last, groups narrower than the vector (V a multiple of C/G, C of V;
// the runtime checks): a workgroup a column of V channels of a sample, V / (C/G) whole groups,
// so that groups of one, two or four channels still move 16 bytes an access where one
// workgroup a group read C/G elements a row (instance_norm_32x64, C/G = 1: the looped family's
// 2-byte loads, 9.8 us against torch.compile's 7; bench/NOTES.md). A thread walks the rows B
// apart, up to kPerThread of them, and keeps the column's V per-channel sums; the workgroup
// adds the V sums at once (block_sum_transposed), and each channel takes its group's total from
// the C/G channels around it (C/G a power of two: group_sums). Two exact passes, as
// fwd_onchip_rows.
//
// With kParts (fwd_onchip_columns_parts_kernel), the workgroup is part `part` of a thread-block
// cluster that holds the column: its rows part * part_rows on, up to part_rows of them, with
// per-group statistics of its own rows that the parts exchange (exchange_column_parts), so that
// a column past one workgroup's rows, or a few columns (instance_norm_32x64: 16 of 1024 rows),
// spread over more compute units with 16-byte accesses.
template <typename Traits, bool kParts = false>
__device__ __forceinline__ void fwd_onchip_columns(const Params& p, std::int64_t unit, int part = 0) {
  constexpr int B = Traits::kBlockSize, V = Traits::kVectorSize, E = Traits::kPerThread;
  using X = typename Traits::XType;
  const int begin = kParts ? part * int(p.part_rows) : 0;  // the part's first row
  const int rows = kParts ? part_share(int(p.spatial_size), int(p.part_rows), part) : int(p.spatial_size);
  const int t = threadIdx.x;
  const int shift = __ffs(int(p.channels_per_group)) - 1;  // log2(C/G)
  // the column's sample and first channel: 32-bit (a grid's workgroups; C / V columns a sample)
  const int columns = int(p.channels / V), n = int(unit) / columns;
  const std::int64_t channel0 = std::int64_t(int(unit) - n * columns) * V;
  const std::int64_t first = n * p.sample_stride + channel0 + std::int64_t(begin + t) * p.row_stride;
  const std::int64_t step = std::int64_t(B) * p.row_stride;
  const X* x = static_cast<const X*>(p.x) + first;
  float v[E][V], s[V] = {};
#pragma unroll
  for (int e = 0; e < E; ++e) {
    if (t + e * B < rows) {
      load_vec<V>(x + e * step, v[e]);
#pragma unroll
      for (int i = 0; i < V; ++i) s[i] += v[e][i];
    }
  }
  float gamma[V], beta[V];
  vector_affine<Traits>(p, channel0, gamma, beta);
  // channel i's group total: the workgroup's per-channel sums, then over the group's channels
  const auto group_totals = [&](float(&a)[V]) {
    block_sum_transposed<B, V>(a);
    group_sums(a, int(p.channels_per_group));
  };
  // the part's rows of each group (kParts), else the group's
  const float inv_count = 1.f / float(kParts ? rows * int(p.channels_per_group) : p.group_elements);
  group_totals(s);
  float mean[V], q[V] = {};
#pragma unroll
  for (int i = 0; i < V; ++i) mean[i] = s[i] * inv_count;
#pragma unroll
  for (int e = 0; e < E; ++e) {
    if (t + e * B < rows) {
#pragma unroll
      for (int i = 0; i < V; ++i) q[i] += (v[e][i] - mean[i]) * (v[e][i] - mean[i]);
    }
  }
  group_totals(q);
  float scale[V], rstd[V];
  if constexpr (kParts) {
    exchange_column_parts<V>(p, part, shift, mean, q, rstd);
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i) rstd[i] = rsqrtf(q[i] * inv_count + p.eps);
  }
#pragma unroll
  for (int i = 0; i < V; ++i) scale[i] = gamma[i] * rstd[i];
  if (t == 0 && part == 0) {
    const std::int64_t group0 = n * p.groups_per_sample + (channel0 >> shift);
#pragma unroll
    for (int i = 0; i < V; ++i)
      if ((i & ((1 << shift) - 1)) == 0) save_stats(p, group0 + (i >> shift), mean[i], rstd[i]);
  }
  X* y = static_cast<X*>(p.y) + first;
#pragma unroll
  for (int e = 0; e < E; ++e) {
    if (t + e * B < rows) {
      float out[V];
#pragma unroll
      for (int i = 0; i < V; ++i)
        out[i] = activate<Traits::kActivation>((v[e][i] - mean[i]) * scale[i] + beta[i], p.swish_beta);
      store_vec<V>(y + e * step, out);
    }
  }
}

// Family onchip, channels-first, the group's body aligned: vector q of the group at thread
// q % block, kPerThread of them a thread. Mean and variance are two exact passes over registers.
// Even channels-first groups are consecutive runs of C/G x HW elements, so vector q is at
// group * group_stride + q * V: x's address waits on no division (the group's sample, for its
// channels, and q's channel row, for gamma and beta, are off that chain), and 1 / count is the
// host's (Params::group_rcp; bench/NOTES.md, "The small channels-first forward's prologue" and
// "The small forward, piece by piece").
//
// With kParts (fwd_onchip_parts_kernel), the workgroup is part `part` of a thread-block cluster
// that holds the group: its vectors part * part_rows on, up to part_rows of them (q below counts
// from the part's first), with statistics of its own that the parts exchange (exchange_parts).
//
// With kBits (kOnchipHeldBits), x is held as loaded and widened at each use.
template <typename Traits, bool kParts = false, bool kBits = false>
__device__ __forceinline__ void fwd_onchip_aligned(const Params& p, std::int64_t group, int part = 0) {
  constexpr int B = Traits::kBlockSize, V = Traits::kVectorSize, E = Traits::kPerThread;
  static_assert(!kUneven<Traits>, "consecutive groups of C/G channels: the onchip family runs even groups only");
  using X = typename Traits::XType;
  static_assert(!kBits || sizeof(X) == 2, "x held as loaded: 16-bit x");
  using G = typename Traits::GammaType;
  constexpr bool kLate = B <= 512;  // below
  const auto read = [](const auto& field) {
    if constexpr (kLate) return param_late(field);
    else return field;
  };
  const int part_rows = kParts ? int(read(p.part_rows)) : 0;  // (its line, the parts', late too)
  const int first = part * part_rows;  // the part's first vector of the group
  const auto vectors = [&] {
    if constexpr (kParts) return part_share(int(p.vectors), part_rows, part);
    else return p.vectors;
  }();
  const std::int64_t base = group * p.group_stride + std::int64_t(first) * V;  // the part's first element
  const auto* x = static_cast<const X*>(p.x) + base;
  // x's address reads one line of the parameters (x, group_stride, vectors). In workgroups of up
  // to 512 threads (128 registers a thread or more) every field after it is read by param_late,
  // right after x's loads, so that those wait on that line alone and the others arrive under
  // them (bench/NOTES.md, "The parameters' lines, late"); 1024-thread ones (64 registers) read
  // them where used, uniform (by param_late, in vector registers, they spilled 4-36 bytes).
  // gamma and beta from the group's first channel (its sample by the host's multiply-high) ...
  struct GroupAffine {
    const G *gamma, *beta;  // null where absent
    FastDivmod per_row;
    int first;
    // vector q's (of the part), its one channel's
    __device__ __forceinline__ Affine<Traits> at(int q) const {
      const std::uint32_t c = per_row.div31(std::uint32_t(first + q));
      return Affine<Traits>(gamma, beta, c);
    }
  };
  const auto group_affine = [&] {
    const std::int64_t sample = read(p.groups_div).div31(std::uint32_t(group));
    const std::int64_t channel0 = (group - sample * p.groups_per_sample) * read(p.channels_per_group);
    const auto* gamma = static_cast<const G*>(read(p.gamma));
    const auto* beta = static_cast<const G*>(read(p.beta));
    return GroupAffine{gamma ? gamma + channel0 : nullptr, beta ? beta + channel0 : nullptr, read(p.vectors_per_row),
                       first};
  };
  // ... and the statistics' and the store's
  struct Tail {
    float eps, swish_beta;
    float *mean, *rstd;
    X* y;
  };
  const auto tail = [&] {
    return Tail{read(p.eps), read(p.swish_beta), read(p.mean), read(p.rstd), static_cast<X*>(read(p.y)) + base};
  };
  // Only the values stay in registers; channels are recomputed for the store (a multiply-high
  // each), which keeps the 1024-thread configurations within 64 registers.
  float v[kBits ? 1 : E][V];
  // With a few vectors a thread, each vector's gamma and beta (its one channel) loaded beside
  // x, so that their latency is not on the chain after the two reductions (bench/NOTES.md,
  // "Small forwards against torch.compile's kernels"). Two registers a vector: up to four (the
  // 1024-thread configurations hold 16 vectors within 64 registers).
  constexpr bool kEarlyAffine = E <= 4;
  float early_gamma[kEarlyAffine ? E : 1], early_beta[kEarlyAffine ? E : 1];
  using VecT = Vec<X, V>;
  Bits<VecT> raw[E];  // as loaded, in 32-bit words
  float sum = 0.f;
  const auto widen_and_add = [&](int e, bool mine) {
    float f[V];
    widen(from_bits<VecT>(raw[e]), f);
#pragma unroll
    for (int i = 0; i < V; ++i) {
      sum += mine ? f[i] : 0.f;
      if constexpr (!kBits) v[e][i] = f[i];
    }
  };
  [[maybe_unused]] GroupAffine late_affine{};
  [[maybe_unused]] Tail late_tail{};
  // (ptxas issues these indexed loads after x's, wherever the source has them: here, as in the
  // form the A/B measured)
  if constexpr (kLate) late_affine = group_affine();
#pragma unroll
  for (int e = 0; e < E; ++e) {
    const int q = threadIdx.x + e * B;
    const bool mine = q < vectors;
    if (kOnchipLoadsAtOnce<Traits> || mine) {
      const int at = mine ? q : 0;  // the group's first vector for a slot past it
      raw[e] = *reinterpret_cast<const Bits<VecT>*>(x + std::int64_t(at) * V);
      if constexpr (!kOnchipWidenAfterLoads<Traits>) widen_and_add(e, mine);
    }
  }
  if constexpr (kLate) late_tail = tail();
  if constexpr (kEarlyAffine) {
    // after every slot's x: in the slot's guarded block with x's load, they made it a branch
    // that ptxas did not predicate, and four slots a thread loaded x in four rounds
    const GroupAffine a = kLate ? late_affine : group_affine();
#pragma unroll
    for (int e = 0; e < E; ++e) {
      const int q = threadIdx.x + e * B;
      if (kOnchipLoadsAtOnce<Traits> || q < vectors) {
        const Affine<Traits> ae = a.at(q < vectors ? q : 0);
        early_gamma[e] = ae.gamma, early_beta[e] = ae.beta;
      }
    }
  }
  // p.vectors * V elements: even groups' aligned bodies; a part's, its own. Taken into the sums
  // before their reduction, so that with kLate its line too is read under x's loads.
  const float inv_count = kParts ? 1.f / float(vectors * V) : float(read(p.group_rcp));
  if constexpr (kOnchipWidenAfterLoads<Traits>)
#pragma unroll
    for (int e = 0; e < E; ++e) widen_and_add(e, threadIdx.x + e * B < vectors);
  float mean = block_sum<B, true>(sum * inv_count);
  float sq = 0.f;
#pragma unroll
  for (int e = 0; e < E; ++e) {
    if (threadIdx.x + e * B < vectors) {
      with_held<kBits>(raw, v, e, [&](const float(&f)[V]) {
#pragma unroll
        for (int i = 0; i < V; ++i) sq += (f[i] - mean) * (f[i] - mean);
      });
    }
  }
  const Tail t = kLate ? late_tail : tail();
  float rstd;
  if constexpr (kParts) rstd = exchange_parts(p, part, mean, block_sum<B, true>(sq), int(p.vectors), V);
  else rstd = rsqrtf(block_sum<B, true>(sq) * inv_count + t.eps);
  const bool writer = threadIdx.x == 0 && part == 0;
  save_stats(t.mean, t.rstd, group, mean, rstd, writer);
  const auto store = [&](int e, const Affine<Traits>& a) {
    with_held<kBits>(raw, v, e, [&](const float(&f)[V]) {
      store_normalized<Traits>(t.y, t.swish_beta, f, std::int64_t(threadIdx.x + e * B) * V, mean, a.gamma * rstd,
                               a.beta);
    });
  };
  if constexpr (kEarlyAffine) {
#pragma unroll
    for (int e = 0; e < E; ++e)
      if (threadIdx.x + e * B < vectors) store(e, Affine<Traits>(early_gamma[e], early_beta[e]));
  } else {
    const GroupAffine a = kLate ? late_affine : group_affine();
#pragma unroll
    for (int e = 0; e < E; ++e)
      if (threadIdx.x + e * B < vectors) store(e, a.at(threadIdx.x + e * B));
  }
}

// Family onchip: one workgroup per group, the whole group in registers (kPerThread vectors a
// thread); x is read once. Channels-first, the aligned body only: the span mode is a kernel of
// its own (fwd_onchip_span_kernel), chosen at launch from Params::span, so that this one neither
// reads that flag (one more constant-cache line) nor jumps over the peeled code before its first
// load (bench/NOTES.md, "The small channels-first forward's prologue").
template <typename Traits>
__global__ void __launch_bounds__(Traits::kBlockSize) fwd_onchip_kernel(const HIPGN_GRID_CONSTANT Params p) {
  const std::int64_t group = blockIdx.x;
  if constexpr (Traits::kLayout == Layout::channels_last) {
    with_late_params<Traits>(p, [&](const Params& q) {
      fwd_onchip_rows<Traits>(q, GroupView<Traits>(q, group, group_sample_by_multiply(q, group)), group);
    });
  } else {
    fwd_onchip_aligned<Traits>(p, group);
  }
}

// Family onchip, forward of a group in parts: a thread-block cluster a group (Params::slices
// workgroups, the cluster's ranks its parts, part_rows rows or, channels-first, vectors of the
// group's body each; sm_90), so that a group past what one workgroup holds stays on chip, x
// read once, and large groups spread over more compute units (Instance::onchip_parts:
// sd15_32x1920 channels-last, 64 groups of 61440 elements, 13.6 us in 2 parts a group against
// the stream family's 19.6). Each part holds its rows as fwd_onchip_rows does (its vectors as
// fwd_onchip_aligned does, or with kPeeled as fwd_onchip_span does: odd spatial sizes and
// misaligned tensors, a kernel of its own as the span mode is beside fwd_onchip_kernel) and the
// parts exchange their statistics once (exchange_parts).
template <typename Traits, bool kPeeled = false, bool kBits = false>
__global__ void __launch_bounds__(Traits::kBlockSize) fwd_onchip_parts_kernel(const HIPGN_GRID_CONSTANT Params p) {
#if defined(HIPGN_CLUSTERS)
  if (threadIdx.x == 0) parts_exchange().init();
  cluster_arrive_relaxed();  // waited for before the first push, after the loads are issued
  const std::int64_t group = cluster_index();
  const int part = int(cluster_rank());
  if constexpr (kPeeled || Traits::kLayout == Layout::channels_last) {
    const GroupView<Traits> view(p, group, group_sample_by_multiply(p, group));
    if constexpr (kPeeled) fwd_onchip_span<Traits, true, kBits>(p, view, group, part);
    else fwd_onchip_rows<Traits, true, kBits>(p, view, group, part);
  } else {
    fwd_onchip_aligned<Traits, true, kBits>(p, group, part);
  }
  // no workgroup leaves while its pushes to peers may be in flight (as the resident forward)
  cluster_barrier_relaxed();
#endif
}

// Which forward instances have the span mode (Instance::supports: 16-byte vectors only).
template <typename Traits>
inline constexpr bool kOnchipSpans =
    kPeels<Traits> && sizeof(typename Traits::XType) * Traits::kVectorSize == kPeeledForwardVectorBytes;

template <typename Traits>
__global__ void __launch_bounds__(Traits::kBlockSize) fwd_onchip_span_kernel(const HIPGN_GRID_CONSTANT Params p) {
  const std::int64_t group = blockIdx.x;
  with_late_params<Traits>(p, [&](const Params& q) {
    fwd_onchip_span<Traits>(q, GroupView<Traits>(q, group, group_sample_by_multiply(q, group)), group);
  });
}

// Family onchip, channels-last groups narrower than the vector: a workgroup a column. A kernel
// of its own: as a branch of fwd_onchip_kernel it made the rows path 2-5% slower (sd15_16x640,
// H100 A/B).
template <typename Traits>
__global__ void __launch_bounds__(Traits::kBlockSize) fwd_onchip_columns_kernel(Params p) {
  // (not with_late_params, here or in parts: with the whole parameter read so, 256 x 2 x 8
  // spilled 8-16 bytes at 48 registers; not measured since)
  fwd_onchip_columns<Traits>(p, blockIdx.x);
}

// Family onchip, channels-last groups narrower than the vector, a column in parts: a
// thread-block cluster a column (Params::slices workgroups, part_rows rows each; sm_90), as
// fwd_onchip_parts_kernel holds a group.
template <typename Traits>
__global__ void __launch_bounds__(Traits::kBlockSize) fwd_onchip_columns_parts_kernel(Params p) {
#if defined(HIPGN_CLUSTERS)
  if (threadIdx.x == 0) column_parts_pairs<Traits::kVectorSize>(p, 0).init();  // (the barriers alone)
  cluster_arrive_relaxed();  // waited for before the first push, after the loads are issued
  fwd_onchip_columns<Traits, true>(p, cluster_index(), int(cluster_rank()));
  // no workgroup leaves while its pushes to peers may be in flight
  cluster_barrier_relaxed();
#endif
}

// Where the channels-last onchip backward keeps the fp32 terms of x and dy for dx: in registers
// (held: 2 E V of them, where they take at most half of a thread's 64K / B registers); else dy'
// (the activation's derivative applied: two MUFU operations an element under Swish) in shared
// memory, x - mean computed again from x as loaded (staged: E V B floats, where the target has
// the room); else neither, both computed again from x and dy as loaded (recomputed). Staged
// against recomputed, 512 x 2 x 32 (the one configuration the default preset recomputes): 0.92-
// 0.96 of its time where it is dispatched (sd15_32x1280, sd15_32x1920), 0.82-0.95 on the groups
// of 16 channels or more; staged in place of held, the 512-thread instances ran 1.03-1.06x
// slower at half the registers (H200, fp16 / bf16 SiLU, L2-cold, bench.py --best; bench/NOTES.md,
// "dy' staged in shared memory").
enum class DxTerms { held, staged, recomputed };

template <typename Traits>
inline constexpr std::size_t kOnchipStagedBytes =
    std::size_t(Traits::kBlockSize) * Traits::kPerThread * Traits::kVectorSize * sizeof(float);

// The most a workgroup stages: within sm_90's 227 KB beside its static arrays; none on AMD,
// whose 64 KB of LDS a workgroup would not hold the 512 x 2 x 32 configuration's 128 KB.
#if defined(HIPGN_PLATFORM_AMD)
inline constexpr std::size_t kOnchipStagedMostBytes = 0;
#else
inline constexpr std::size_t kOnchipStagedMostBytes = 128 << 10;
#endif

template <typename Traits>
inline constexpr DxTerms kOnchipRegisterTerms =
    2 * Traits::kPerThread * Traits::kVectorSize * Traits::kBlockSize <= 32768 ? DxTerms::held : DxTerms::recomputed;

template <typename Traits>
inline constexpr DxTerms kOnchipDxTerms =
    kOnchipRegisterTerms<Traits> == DxTerms::recomputed && kWritesDx<Traits> &&
            Traits::kLayout == Layout::channels_last && kOnchipStagedBytes<Traits> <= kOnchipStagedMostBytes
        ? DxTerms::staged
        : kOnchipRegisterTerms<Traits>;

// The dynamic shared memory a launch of the channels-last onchip backward asks for.
template <typename Traits>
inline constexpr std::size_t kOnchipBwdSmem = kOnchipDxTerms<Traits> == DxTerms::staged ? kOnchipStagedBytes<Traits> : 0;

// A staging launch's dy' and the kernel's static arrays within sm_90's 227 KB a workgroup, checked
// where it is built rather than refused by allow_dynamic_smem at run time
template <typename Traits>
__host__ __device__ constexpr bool onchip_bwd_smem_fits(std::size_t static_bytes) {
  return static_bytes + kOnchipBwdSmem<Traits> <= (227u << 10);
}

// Slot e of thread t's staged dy' (V floats): a wavefront's accesses are consecutive.
template <typename Traits>
__device__ __forceinline__ Vec<float, Traits::kVectorSize>* staged_slot(float* staged, int e, int t) {
  return reinterpret_cast<Vec<float, Traits::kVectorSize>*>(staged) + e * Traits::kBlockSize + t;
}

// dx of the vectors a thread holds (bwd_onchip_rows, bwd_onchip_columns): dx = slope dy' +
// dslope (x - mean) + dconst, channel by channel, from the terms where kTerms keeps them.
template <typename Traits, DxTerms kTerms, int H, typename Raw>
__device__ __forceinline__ void store_held_dx(const Params& p, std::int64_t first, std::int64_t step, int mine,
                                              const Raw (&bx)[Traits::kPerThread], const Raw (&bdy)[Traits::kPerThread],
                                              const float (&held_d)[H][Traits::kVectorSize],
                                              const float (&held_g)[H][Traits::kVectorSize],
                                              const BwdChannel (&k)[Traits::kVectorSize],
                                              const float (&dslope)[Traits::kVectorSize],
                                              const float (&dconst)[Traits::kVectorSize], float* staged = nullptr) {
  constexpr int V = Traits::kVectorSize, E = Traits::kPerThread;
  using T = typename Traits::XType;
  using VecT = Vec<T, V>;
  T* dxs = static_cast<T*>(p.dx) + first;
#pragma unroll
  for (int e = 0; e < E; ++e) {
    if (e < mine) {
      float d[V], gr[V];
      if constexpr (kTerms == DxTerms::held) {
#pragma unroll
        for (int i = 0; i < V; ++i) d[i] = held_d[e][i], gr[i] = held_g[e][i];
      } else if constexpr (kTerms == DxTerms::staged) {
        widen(from_bits<VecT>(bx[e]), d);
        const Vec<float, V> g = *staged_slot<Traits>(staged, e, int(threadIdx.x));
#pragma unroll
        for (int i = 0; i < V; ++i) d[i] -= k[i].mean, gr[i] = g.v[i];
      } else {
        vector_terms<Traits::kActivation>(opaque(from_bits<VecT>(bx[e])), opaque(from_bits<VecT>(bdy[e])), k,
                                          p.swish_beta, d, gr);
      }
#pragma unroll
      for (int i = 0; i < V; ++i) d[i] = fmaf(k[i].slope, gr[i], fmaf(dslope[i], d[i], dconst[i]));
      store_global(dxs + e * step, narrow<T, V>(d));
    }
  }
}

// The onchip backward's parts of a group (bwd_onchip_parts_kernel) add up their sums through
// distributed shared memory, no workspace and no second launch: each part leaves its (A, B)
// terms and its per-channel sums (dgamma's and dbeta's, a slot a channel of the group) in its
// own shared memory; a cluster barrier publishes them; every part reads every part's (A, B) in
// part order, so all have the group's to the same bits, and the first part reads every part's
// channel sums and stores them as one workgroup a group does. The barrier that keeps each
// part's shared memory alive while peers read it is arrived at once the reads are done and
// waited for at the kernel's end, after dx.
struct PartSums {
  float2 ab;
  float2 channel[kOnchipPartsBwdChannels];
};

// Every thread of every part, once `mine` holds this part's sums (ab from thread 0, channel[c]
// for c < channels where the op wants channel sums): the group's (A, B) in `ab`, and the first
// part's stores of the group's per-channel sums. (Only ops that write dx take parts.)
template <typename Traits>
__device__ __forceinline__ void add_parts(const Params& p, PartSums& mine, std::int64_t sample, std::int64_t channel0,
                                          int channels, float (&ab)[2]) {
#if defined(HIPGN_CLUSTERS)
  cluster_sync();
  const int parts = int(p.slices);
  if (wants_channel_sums<Traits>(p) && cluster_rank() == 0) {
    for (int c = int(threadIdx.x); c < channels; c += Traits::kBlockSize) {
      float2 t = make_float2(0.f, 0.f);
      for (int r = 0; r < parts; ++r) {
        const float2 v = dsmem::load_pair(&mine.channel[c], r);
        t.x += v.x, t.y += v.y;
      }
      store_channel_sums(p, sample, channel0 + c, t.x, t.y);
    }
  }
  ab[0] = ab[1] = 0.f;
  for (int r = 0; r < parts; ++r) {
    const float2 v = dsmem::load_pair(&mine.ab, r);
    ab[0] += v.x, ab[1] += v.y;
  }
  cluster_arrive_relaxed();  // this part's reads of its peers are done; waited for at the kernel's end
#else
  (void)p, (void)mine, (void)sample, (void)channel0, (void)channels, (void)ab;  // never launched without clusters
#endif
}

// Family onchip, channels-last: the forward's rows mapping (fwd_onchip_rows) for the backward.
// A thread keeps one vector column of the group and walks its rows R = block / columns apart,
// so its V channels' sums of dy' and dy' (x - mean) stay in registers over its rows and only
// R partials a channel meet in shared memory (a slot per thread and channel, block x V), where
// the flat mapping staged a slot per element (which capped a group at 4096 elements) and
// located every vector by a division. x and dy are held as loaded (16-bit types: half the
// registers) where fp32 terms would not fit a thread's share of the register file, and dy'
// staged in shared memory for dx, or both terms computed again (kOnchipDxTerms; bench/NOTES.md,
// "The channels-last onchip backward by rows").
//
// With kParts (bwd_onchip_parts_kernel), the workgroup is part `part` of a thread-block cluster
// that holds the group: its rows part * part_rows on, up to part_rows of them, whose sums the
// parts add up through `sums` (add_parts).
template <typename Traits, bool kParts = false>
__device__ __forceinline__ void bwd_onchip_rows(const Params& p, const GroupView<Traits>& view, std::int64_t sample,
                                                std::int64_t g, float mean, float rstd, float* s1, float* s2,
                                                GroupArrival& arrival, float* staged, PartSums* sums = nullptr,
                                                int part = 0) {
  constexpr int B = Traits::kBlockSize, V = Traits::kVectorSize, E = Traits::kPerThread;
  constexpr DxTerms kTerms = kOnchipDxTerms<Traits>;
  constexpr bool kHoldTerms = kTerms == DxTerms::held;
  using T = typename Traits::XType;
  using VecT = Vec<T, V>;
  const int columns = int(p.vectors_per_row.divisor);
  const auto [rows, base] = held_rows<kParts>(p, view, part);
  const int R = B / columns, t = threadIdx.x;
  const int r0 = t / columns, column = t - r0 * columns;
  // the rows this thread holds, and the most any thread of the workgroup holds
  const int mine = r0 < R && r0 < rows ? min(E, (rows - r0 + R - 1) / R) : 0;
  const int held = min(E, (rows + R - 1) / R);
  const std::int64_t first = base + std::int64_t(r0) * p.row_stride + column * V;
  const std::int64_t step = std::int64_t(R) * p.row_stride;
  const T* xs = static_cast<const T*>(p.x) + first;
  const T* dys = static_cast<const T*>(p.dy) + first;
  // rows past mine stay zero (dy = 0 adds nothing to the sums): the loads and the dx stores
  // test this thread's count, the sums only the workgroup's, `held`, a uniform branch (with
  // this thread's count there too, ptxas kept the predicates in a register that it spilled,
  // 4-16 bytes, in the dgb and dx kernels; with none, a workgroup of 16 vectors a thread
  // holding 5 computed 16)
  // bench/phase_times.sh: loads | the thread's sums | the channel sums | the block sum | the
  // parts' exchange | dx stores issued (the laps cost registers: fwd_onchip_rows says what that does)
  PhaseClock<6> phases;
  using Raw = Bits<VecT>;
  Raw bx[E] = {}, bdy[E] = {};
#pragma unroll
  for (int e = 0; e < E; ++e) {
    if (e < mine) {
      bx[e] = *reinterpret_cast<const Raw*>(xs + e * step);
      bdy[e] = *reinterpret_cast<const Raw*>(dys + e * step);
    }
  }
  phases.lap_after(0, bx, bdy);
  auto rx = [&](int e) { return from_bits<VecT>(bx[e]); };
  auto rdy = [&](int e) { return from_bits<VecT>(bdy[e]); };
  float gamma[V], beta[V];
  vector_affine<Traits>(p, view.channel0 + column * V, gamma, beta);
  BwdChannel k[V];
#pragma unroll
  for (int i = 0; i < V; ++i) k[i] = BwdChannel{mean, rstd, gamma[i] * rstd, beta[i]};
  // c1 = sum dy', c2 = sum dy' (x - mean) over this thread's rows, a channel each
  float c1[V] = {}, c2[V] = {};
  float held_d[kHoldTerms ? E : 1][V], held_g[kHoldTerms ? E : 1][V];
#pragma unroll
  for (int e = 0; e < E; ++e) {
    if (e < held) {
      float d[V], gr[V];
      vector_terms<Traits::kActivation>(rx(e), rdy(e), k, p.swish_beta, d, gr);
#pragma unroll
      for (int i = 0; i < V; ++i) {
        c1[i] += gr[i];
        c2[i] += gr[i] * d[i];
        if constexpr (kHoldTerms) held_d[e][i] = d[i], held_g[e][i] = gr[i];
      }
      if constexpr (kTerms == DxTerms::staged) {
        Vec<float, V> g;
#pragma unroll
        for (int i = 0; i < V; ++i) g.v[i] = gr[i];
        *staged_slot<Traits>(staged, e, t) = g;
      }
    }
  }
  phases.lap(1);
  if (wants_channel_sums<Traits>(p)) {
    // thread u's element i at slot i kRowsSlots + slot(u): a wavefront's stores are consecutive,
    // and one channel's partials (threads r columns + column, a stride of columns) fall in
    // distinct banks with a word of padding each 32 threads. Channel c = column V + i has R
    // partials, row r's at i kRowsSlots + slot(r columns + column); q takes the channels column
    // by column, so a wavefront's teams (neighbouring q, neighbouring columns) read distinct banks
    constexpr int kRowsSlots = B + B / 32;
    struct RowPartials {
      int columns, R;
      FastDivmod by_columns;
      __device__ static int slot(int u) { return u + u / 32; }
      __device__ int channel(int q) const {
        const int i = int(by_columns.div31(std::uint32_t(q)));
        return (q - i * columns) * V + i;
      }
      __device__ int begin(int) const { return 0; }
      __device__ int end(int) const { return R; }
      __device__ int at(int c, int r) const { return c % V * kRowsSlots + slot(r * columns + c / V); }
    };
    if (r0 < R) {
#pragma unroll
      for (int i = 0; i < V; ++i) {
        s1[i * kRowsSlots + RowPartials::slot(t)] = c1[i];
        s2[i * kRowsSlots + RowPartials::slot(t)] = c2[i] * rstd;
      }
    }
    __syncthreads();
    team_channel_sums<B>(columns * V, RowPartials{columns, R, p.vectors_per_row}, s1, s2, [&](int c, float t1, float t2) {
      if constexpr (kParts) sums->channel[c] = make_float2(t1, t2);  // this part's, added up by add_parts
      else store_channel_sums(p, sample, view.channel0 + c, t1, t2);
    });
    if constexpr (!kParts) arrive_after_sums<Traits>(p, g, arrival);
  }
  phases.lap(2);
  // dx = rstd (gamma dy' - A/M - xhat B/M) = slope dy' + dslope (x - mean) + dconst
  float ab[2] = {0.f, 0.f};
  if constexpr (kWritesDx<Traits>) {
#pragma unroll
    for (int i = 0; i < V; ++i) ab[0] += gamma[i] * c1[i], ab[1] += gamma[i] * c2[i];
    block_sum_array<B>(ab);
  }
  phases.lap(3);
  if constexpr (kParts) {
    if (t == 0) sums->ab = make_float2(ab[0], ab[1]);
    add_parts<Traits>(p, *sums, sample, view.channel0, columns * V, ab);
    if (part == 0) arrive_after_sums<Traits>(p, g, arrival);
  }
  phases.lap(4);
  if constexpr (kWritesDx<Traits>) {
    const float inv_m = 1.f / float(p.group_elements);
    float dconst[V], dslope[V];  // the group's, the same for every channel
#pragma unroll
    for (int i = 0; i < V; ++i) dconst[i] = -rstd * ab[0] * inv_m, dslope[i] = -rstd * rstd * rstd * ab[1] * inv_m;
    store_held_dx<Traits, kTerms>(p, first, step, mine, bx, bdy, held_d, held_g, k, dslope, dconst, staged);
  }
  phases.lap(5);
  phases.report("bwd_onchip_cl");
}

// Family onchip, channels-last backward, groups narrower than the vector: fwd_onchip_columns'
// workgroup (a column of V channels of a sample, V / (C/G) groups, its rows B apart), x and dy
// held as loaded. One block_sum_array of the column's 2 V per-channel sums serves both outputs:
// dgamma/dbeta's per-(n, c) sums, stored with one arrival a column (at its first group's
// counter), and dx, each channel taking its group's A and B from the C/G channels around it.
template <typename Traits>
__device__ __forceinline__ void bwd_onchip_columns(const Params& p, std::int64_t unit) {
  constexpr int B = Traits::kBlockSize, V = Traits::kVectorSize, E = Traits::kPerThread;
  // no staging here (a column's kernel takes no dynamic shared memory): held, or recomputed
  constexpr DxTerms kTerms = kOnchipRegisterTerms<Traits>;
  constexpr bool kHoldTerms = kTerms == DxTerms::held;
  using T = typename Traits::XType;
  using VecT = Vec<T, V>;
  using Raw = Bits<VecT>;
  const int rows = int(p.spatial_size), t = threadIdx.x;
  const int shift = __ffs(int(p.channels_per_group)) - 1;  // log2(C/G)
  const std::int64_t columns = p.channels / V, n = unit / columns;
  const std::int64_t channel0 = (unit - n * columns) * V, g0 = channel0 >> shift;
  const std::int64_t first = n * p.sample_stride + channel0 + std::int64_t(t) * p.row_stride;
  const std::int64_t step = std::int64_t(B) * p.row_stride;
  // the rows this thread holds, and the most any thread holds (bwd_onchip_rows says why both)
  const int mine = t < rows ? min(E, (rows - t + B - 1) / B) : 0;
  const int held = min(E, (rows + B - 1) / B);
  const T* xs = static_cast<const T*>(p.x) + first;
  const T* dys = static_cast<const T*>(p.dy) + first;
  Raw bx[E] = {}, bdy[E] = {};
#pragma unroll
  for (int e = 0; e < E; ++e) {
    if (e < mine) {
      bx[e] = *reinterpret_cast<const Raw*>(xs + e * step);
      bdy[e] = *reinterpret_cast<const Raw*>(dys + e * step);
    }
  }
  float gamma[V], beta[V];
  vector_affine<Traits>(p, channel0, gamma, beta);
  BwdChannel k[V];
#pragma unroll
  for (int i = 0; i < V; ++i) {
    const std::int64_t group = n * p.groups_per_sample + g0 + (i >> shift);
    const float rstd = p.rstd[group];
    k[i] = BwdChannel{p.mean[group], rstd, gamma[i] * rstd, beta[i]};
  }
  // c[i] = sum dy', c[V + i] = sum dy' (x - mean) of channel i over the column's rows
  float c[2 * V] = {};
  float held_d[kHoldTerms ? E : 1][V], held_g[kHoldTerms ? E : 1][V];
#pragma unroll
  for (int e = 0; e < E; ++e) {
    if (e < held) {
      float d[V], gr[V];
      vector_terms<Traits::kActivation>(from_bits<VecT>(bx[e]), from_bits<VecT>(bdy[e]), k, p.swish_beta, d, gr);
#pragma unroll
      for (int i = 0; i < V; ++i) {
        c[i] += gr[i];
        c[V + i] += gr[i] * d[i];
        if constexpr (kHoldTerms) held_d[e][i] = d[i], held_g[e][i] = gr[i];
      }
    }
  }
  block_sum_array<B>(c);  // (block_sum_transposed spilled 16 bytes in the fp32 dgb 512 x 4 x 4)
  GroupArrival arrival;
  if (wants_channel_sums<Traits>(p)) {
    if (t == 0) {
#pragma unroll
      for (int i = 0; i < V; ++i) store_channel_sums(p, n, channel0 + i, c[i], c[V + i] * k[i].rstd);
    }
    arrive_after_sums<Traits>(p, g0, arrival);
  }
  if constexpr (kWritesDx<Traits>) {
    // dx = slope dy' + dslope (x - mean) + dconst (bwd_onchip_rows), A and B a group's: the sums
    // of gamma-weighted channel sums over the group's channels (group_sums)
    const float inv_m = 1.f / float(p.group_elements);
    float a[V], b[V], dconst[V], dslope[V];
#pragma unroll
    for (int i = 0; i < V; ++i) a[i] = gamma[i] * c[i], b[i] = gamma[i] * c[V + i];
    group_sums(a, int(p.channels_per_group));
    group_sums(b, int(p.channels_per_group));
#pragma unroll
    for (int i = 0; i < V; ++i) {
      const float rstd = k[i].rstd;
      dconst[i] = -rstd * a[i] * inv_m;
      dslope[i] = -rstd * rstd * rstd * b[i] * inv_m;
    }
    store_held_dx<Traits, kTerms>(p, first, step, mine, bx, bdy, held_d, held_g, k, dslope, dconst);
  }
  arrival.finish<Traits>(p, g0, channel0, V);
}

// Family onchip, channels-first, the group's body aligned: vector q of the group at thread
// q % block, x and dy in registers; the per-channel sums one slot per vector in shared memory,
// channel c's the contiguous slots of its row, added up a wavefront per channel.
template <typename Traits>
__device__ __forceinline__ void bwd_onchip_aligned(const Params& p, const GroupView<Traits>& view, std::int64_t sample,
                                                   std::int64_t g, float mean, float rstd, float* s1, float* s2,
                                                   GroupArrival& arrival) {
  constexpr int B = Traits::kBlockSize, V = Traits::kVectorSize, E = Traits::kPerThread;
  using X = typename Traits::XType;
  float x[E][V], dy[E][V];
  float ab[2] = {0.f, 0.f};
#pragma unroll
  for (int e = 0; e < E; ++e) {
    const std::int64_t q = threadIdx.x + std::int64_t(e) * B;
    if (q < p.vectors) {
      std::int64_t offset, channel;
      view.locate(p, q, offset, channel);
      load_vec<V>(static_cast<const X*>(p.x) + offset, x[e]);
      load_vec<V>(static_cast<const X*>(p.dy) + offset, dy[e]);
      const Affine<Traits> a(p, channel);
#pragma unroll
      for (int i = 0; i < V; ++i) {
        backward_terms<Traits>(p, a, mean, rstd, x[e][i], dy[e][i]);
        ab[0] += a.gamma * dy[e][i];
        ab[1] += a.gamma * dy[e][i] * x[e][i];
      }
    }
  }
  if (wants_channel_sums<Traits>(p)) {
#pragma unroll
    for (int e = 0; e < E; ++e) {
      const std::int64_t q = threadIdx.x + std::int64_t(e) * B;
      if (q >= p.vectors) continue;
      float t1 = 0.f, t2 = 0.f;
#pragma unroll
      for (int i = 0; i < V; ++i) t1 += dy[e][i], t2 += dy[e][i] * x[e][i];
      s1[q] = t1;
      s2[q] = t2;
    }
    __syncthreads();
    store_staged_channel_sums<B>(p, sample, view.channel0, s1, s2, std::int64_t(p.vectors_per_row.divisor));
    arrive_after_sums<Traits>(p, g, arrival);
  }
  if constexpr (kWritesDx<Traits>) {
    block_sum_array<B>(ab);
    const float m = float(p.group_elements), a_mean = ab[0] / m, b_mean = ab[1] / m;
#pragma unroll
    for (int e = 0; e < E; ++e) {
      const std::int64_t q = threadIdx.x + std::int64_t(e) * B;
      if (q >= p.vectors) continue;
      std::int64_t offset, channel;
      view.locate(p, q, offset, channel);
      const float gm = Affine<Traits>(p, channel).gamma;
      float dx[V];
#pragma unroll
      for (int i = 0; i < V; ++i) dx[i] = rstd * (gm * dy[e][i] - a_mean - x[e][i] * b_mean);
      store_vec<V>(static_cast<X*>(p.dx) + offset, dx);
    }
  }
}

// Family onchip, channels-first backward: the group's contiguous run read as the forward's span
// (fwd_onchip_span), any spatial size and phase: body vector q at thread q % block, kPerThread of
// them a thread, x and dy held as loaded (16-bit types: half the registers), and a head and a
// tail element a thread at most. A vector crosses at most one channel row's end (the spatial
// size is at least the vector: Instance::supports), found by one division a vector, its
// elements from `cut` on the next row's. The per-channel sums meet in shared memory a pair of
// slots a vector: slot q + 1 takes vector q's sums of its first row; after a barrier, the sums
// of its next row are added into slot q + 2, the next vector's, which begins in that row (the
// last vector's into slot body + 1); slot 0 holds the head's (row 0) and slot body + 2 the
// tail's (the last row). So channel c's sums are the contiguous slots from its first vector's
// on, added up by store_slot_channel_sums (past a round of wavefronts, teams of lanes a
// channel). The kernel this replaced staged every element's terms
// (2 M floats of dynamic shared memory, a cursor stepped each element: 80 registers and 25 KB a
// workgroup, 47 us under Nsight Compute at r50_7x2048_n32 where the split pair took 33). Aligned
// groups keep bwd_onchip_aligned: this kernel took them 0.3-0.6 us longer (tiny 3.6 against 3.0,
// instance_norm_32x64 5.4 against 5.1; H200 A/B, bench/NOTES.md, "The peeled onchip backward").
template <typename Traits>
__device__ __forceinline__ void bwd_onchip_run(const Params& p, const GroupView<Traits>& view, std::int64_t sample,
                                               std::int64_t g, float mean, float rstd, float* s1, float* s2,
                                               GroupArrival& arrival) {
  constexpr int B = Traits::kBlockSize, V = Traits::kVectorSize, E = Traits::kPerThread;
  // the rows of a thread's few vectors kept from beside the loads to dx, else found again there
  // (as fwd_onchip_span's); the terms computed again for dx: held, they took 79 registers
  // where this takes 64 (fp16 256 x 8 x 2; ptxas)
  constexpr bool kEarly = E <= 4;
  constexpr Activation kAct = Traits::kActivation;
  using X = typename Traits::XType;
  using VecT = Vec<X, V>;
  using Raw = Bits<VecT>;
  const int t = threadIdx.x, hw = int(p.spatial_size);
  const Peel<V> run(p.phase, view.base, p.group_elements);
  const int head = int(run.head), body = int(run.body), edges = int(run.head + run.tail);
  const X* xs = static_cast<const X*>(p.x) + view.base;
  const X* dys = static_cast<const X*>(p.dy) + view.base;
  // vector q's first row r, the element where row r + 1 begins in it (V: none), and both rows'
  // gamma and beta
  struct Rows {
    int cut;
    float g0, b0, g1, b1;
  };
  const auto rows_of = [&](int q) {
    const int j = head + q * V, r = int(p.spatial.div31(std::uint32_t(j))), cut = min((r + 1) * hw - j, V);
    const Affine<Traits> a0(p, view.channel0 + r);
    const Affine<Traits> a1 = cut < V ? Affine<Traits>(p, view.channel0 + r + 1) : a0;
    return Rows{cut, a0.gamma, a0.beta, a1.gamma, a1.beta};
  };
  const auto constants = [&](const Rows& w, BwdChannel(&k)[V]) {
#pragma unroll
    for (int i = 0; i < V; ++i) {
      const bool next = i >= w.cut;
      k[i] = BwdChannel{mean, rstd, (next ? w.g1 : w.g0) * rstd, next ? w.b1 : w.b0};
    }
  };
  Raw bx[E], bdy[E];
  Rows early[kEarly ? E : 1];
#pragma unroll
  for (int e = 0; e < E; ++e) {
    const int q = t + e * B;
    if (q < body) {
      bx[e] = *reinterpret_cast<const Raw*>(xs + head + q * V);
      bdy[e] = *reinterpret_cast<const Raw*>(dys + head + q * V);
      if constexpr (kEarly) early[e] = rows_of(q);
    }
  }
  // the head and the tail, an element a thread: group-relative element `rel`, its x - mean and
  // dy', its row's gamma and beta
  const int rel = t < head ? t : head + body * V + (t - head);
  float ed = 0.f, eg = 0.f;
  if (t < edges) ed = to_float(xs[rel]) - mean, eg = to_float(dys[rel]);
  const Affine<Traits> ea(p, view.channel0 + (t < edges ? int(p.spatial.div31(std::uint32_t(rel))) : 0));
  if constexpr (kAct != Activation::none)
    if (t < edges) eg *= activation_grad<kAct>(fmaf(ea.gamma * rstd, ed, ea.beta), p.swish_beta);
  const bool sums = wants_channel_sums<Traits>(p);
  // each vector's sums of dy' and dy' (x - mean) over its first row go to its slot (q + 1) at
  // once, those over its next row (hi) after the barrier below; A and B without rstd: sum gamma
  // dy', sum gamma dy' (x - mean)
  float hi1[E], hi2[E];
  float ab[2] = {t < edges ? ea.gamma * eg : 0.f, t < edges ? ea.gamma * eg * ed : 0.f};
#pragma unroll
  for (int e = 0; e < E; ++e) {
    hi1[e] = hi2[e] = 0.f;
    const int q = t + e * B;
    if (q < body) {
      Rows w;
      if constexpr (kEarly) w = early[e];
      else w = rows_of(q);
      BwdChannel k[V];
      constants(w, k);
      float d[V], gr[V];
      vector_terms<kAct>(from_bits<VecT>(bx[e]), from_bits<VecT>(bdy[e]), k, p.swish_beta, d, gr);
      float lo1 = 0.f, lo2 = 0.f;
#pragma unroll
      for (int i = 0; i < V; ++i) {
        const float gd = gr[i] * d[i], gamma = i >= w.cut ? w.g1 : w.g0;
        if (i < w.cut) lo1 += gr[i], lo2 += gd;
        else hi1[e] += gr[i], hi2[e] += gd;
        ab[0] += gamma * gr[i];
        ab[1] += gamma * gd;
      }
      if (sums) s1[q + 1] = lo1, s2[q + 1] = lo2 * rstd;
    }
  }
  if (sums) {
    __shared__ float edge1[2 * V], edge2[2 * V];  // the head's and the tail's elements, at most 2 (V - 1)
    if (t == 0) s1[body + 1] = s2[body + 1] = 0.f;
    if (t < edges) edge1[t] = eg, edge2[t] = eg * ed * rstd;
    __syncthreads();
    // a vector's next row is the next vector's first (0 where it has none)
#pragma unroll
    for (int e = 0; e < E; ++e) {
      const int q = t + e * B;
      if (q < body) s1[q + 2] += hi1[e], s2[q + 2] += hi2[e] * rstd;
    }
    if (t == 0) {  // the head's slot and the tail's, in element order
      float h1 = 0.f, h2 = 0.f, t1 = 0.f, t2 = 0.f;
      for (int k = 0; k < head; ++k) h1 += edge1[k], h2 += edge2[k];
      for (int k = head; k < edges; ++k) t1 += edge1[k], t2 += edge2[k];
      s1[0] = h1, s2[0] = h2, s1[body + 2] = t1, s2[body + 2] = t2;
    }
    __syncthreads();
    // channel c's slots: from its first vector's (the first whose first element is in row c) on
    const int rows = int(p.channels_per_group);
    const auto first_slot = [&](int c) {
      return c == 0 ? 0 : c == rows ? body + 3 : 1 + min(body, (c * hw - head + V - 1) / V);
    };
    store_slot_channel_sums<B>(p, sample, view.channel0, rows, first_slot, s1, s2);
    arrive_after_sums<Traits>(p, g, arrival);
  }
  if constexpr (kWritesDx<Traits>) {
    // dx = rstd (gamma dy' - A/M - xhat B/M) = slope dy' + dslope (x - mean) + dconst
    block_sum_array<B>(ab);
    const float inv_m = 1.f / float(p.group_elements);
    const float dconst = -rstd * ab[0] * inv_m, dslope = -rstd * rstd * rstd * ab[1] * inv_m;
    X* dxs = static_cast<X*>(p.dx) + view.base;
#pragma unroll
    for (int e = 0; e < E; ++e) {
      const int q = t + e * B;
      if (q < body) {
        // the terms again from the loads' bits (opaque: not held from above). Not one lambda
        // with the sums' loop: that moved ptxas's allocation (dgb f16 SiLU 256 x 8 x 2 peeled,
        // 48 -> 64 registers; bench/NOTES.md, "Where the sixth session of 2026-11-28 ended")
        Rows w;
        if constexpr (kEarly) w = early[e];
        else w = rows_of(q);
        BwdChannel k[V];
        constants(w, k);
        float d[V], gr[V];
        vector_terms<kAct>(opaque(from_bits<VecT>(bx[e])), opaque(from_bits<VecT>(bdy[e])), k, p.swish_beta, d, gr);
#pragma unroll
        for (int i = 0; i < V; ++i) d[i] = fmaf(k[i].slope, gr[i], fmaf(dslope, d[i], dconst));
        store_global(dxs + head + q * V, narrow<X, V>(d));
      }
    }
    if (t < edges) dxs[rel] = from_float<X>(fmaf(ea.gamma * rstd, eg, fmaf(dslope, ed, dconst)));
  }
}

// Family onchip: one workgroup per group, x and dy read once into registers. The per-channel
// sums meet in shared memory (channels-first a slot per vector, channels-last a slot per thread
// and channel) and are added up in a fixed order, a wavefront per channel (the peeled
// channels-first groups' in teams of lanes past one round: store_slot_channel_sums). Channels-first
// peeled groups (kPeeled, chosen at launch from Params::span) are a kernel of their own, as the
// forward's span mode is.
template <typename Traits, bool kPeeled = false>
__global__ void __launch_bounds__(Traits::kBlockSize) bwd_onchip_kernel(Params p) {
  constexpr int B = Traits::kBlockSize, V = Traits::kVectorSize, E = Traits::kPerThread;
  constexpr bool kChannelsFirst = Traits::kLayout == Layout::channels_first;
  constexpr int kSlots = kChannelsFirst ? B * E : B * V;
  static_assert(kSlots <= kBwdStagedSlots, "the per-channel staging must fit in 32 KB of shared memory");
  // channels-first: bwd_onchip_run's slots, a vector's and three; channels-last: bwd_onchip_rows pads
  constexpr int kStaged = kChannelsFirst ? kSlots + 3 : kSlots + kSlots / 32;
  static_assert(onchip_bwd_smem_fits<Traits>(2 * kStaged * sizeof(float)));
  __shared__ float s1[kStaged], s2[kStaged];
  const std::int64_t group = blockIdx.x, sample = group_sample(p, group), g = group - sample * p.groups_per_sample;
  const GroupView<Traits> view(p, group);
  const float mean = p.mean[group], rstd = p.rstd[group];
  GroupArrival arrival;
  if constexpr (!kChannelsFirst) {
    extern __shared__ __align__(16) unsigned char dynamic_smem[];  // kOnchipBwdSmem: the staged dy'
    bwd_onchip_rows<Traits>(p, view, sample, g, mean, rstd, s1, s2, arrival, reinterpret_cast<float*>(dynamic_smem));
  } else if constexpr (kPeeled) {
    bwd_onchip_run<Traits>(p, view, sample, g, mean, rstd, s1, s2, arrival);
  } else {
    bwd_onchip_aligned<Traits>(p, view, sample, g, mean, rstd, s1, s2, arrival);
  }
  arrival.finish(p, view, g);
}

// Family onchip, channels-last backward of a group in parts: a thread-block cluster a group
// (Params::slices workgroups, the cluster's ranks its parts, part_rows rows each; sm_90), so that
// a group past what one workgroup holds keeps x and dy on chip, read once, and large groups
// spread over more compute units (Instance::onchip_parts). Each part holds its rows as
// bwd_onchip_rows does; the parts add up their sums once (add_parts), and the first part stores
// the group's channel sums and arrives for dgamma and dbeta as one workgroup a group does.
// Channels-first has none: its parts of 4096 elements (fp32 terms held) ran behind the split
// family on every SD shape measured (bench/NOTES.md, "The backward in parts"); nor has the op of
// dgamma and dbeta alone (off the training step, which runs the fused op), whose parts kernel
// spilled 12-24 bytes (bf16, 256 x 8 x 2 and 512 x 8 x 4).
template <typename Traits>
__global__ void __launch_bounds__(Traits::kBlockSize) bwd_onchip_parts_kernel(Params p) {
  static_assert(Traits::kLayout == Layout::channels_last && kWritesDx<Traits>, "the channels-last dx's rows only");
#if defined(HIPGN_CLUSTERS)
  constexpr int kSlots = Traits::kBlockSize * Traits::kVectorSize;
  static_assert(onchip_bwd_smem_fits<Traits>(2 * (kSlots + kSlots / 32) * sizeof(float) + sizeof(PartSums)));
  __shared__ float s1[kSlots + kSlots / 32], s2[kSlots + kSlots / 32];  // bwd_onchip_rows pads
  __shared__ PartSums sums;
  const std::int64_t group = cluster_index(), sample = group_sample(p, group), g = group - sample * p.groups_per_sample;
  const int part = int(cluster_rank());
  const GroupView<Traits> view(p, group);
  GroupArrival arrival;
  extern __shared__ __align__(16) unsigned char dynamic_smem[];  // kOnchipBwdSmem: the staged dy'
  bwd_onchip_rows<Traits, true>(p, view, sample, g, p.mean[group], p.rstd[group], s1, s2, arrival,
                                reinterpret_cast<float*>(dynamic_smem), &sums, part);
  if (part == 0) arrival.finish(p, view, g);
  cluster_wait();  // no part leaves while a peer may still read its sums (add_parts)
#endif
}

template <typename Traits>
__global__ void __launch_bounds__(Traits::kBlockSize) bwd_onchip_columns_kernel(Params p) {
  bwd_onchip_columns<Traits>(p, blockIdx.x);
}

template <>
struct FamilyLauncher<Family::onchip> {
  // The forward's kernels of a group's rows or aligned vectors in `parts` parts: how many
  // clusters of the plain one and of the one with x held as loaded (kOnchipHeldBits; 0 where
  // the instance has none, or HIPGN_ONCHIP_HELD_BITS is 0) the device runs at once, and which
  // one the launcher takes (onchip_held_bits_mode).
  struct HeldParts {
    int plain = 0, bits = 0;
    bool always = false;  // HIPGN_ONCHIP_HELD_BITS=always
    // x held as loaded for `groups` groups: always, or where the plain kernel's clusters would
    // not all run at once and these run more of them at once, though both make as many rounds
    // (a second round of fewer clusters ends sooner); not where the plain kernel's run in one
    // round (channels-last, held as loaded ran slower at one round). H200, SiLU, L2-cold,
    // bench.py --best against HIPGN_ONCHIP_HELD_BITS=0 (bench/NOTES.md, "Two rounds, fewer in
    // the second"): sd15_32x1920 (64 groups) channels-first 256 x 8 x 4 in 8 parts, fp16's plain
    // kernel 45 clusters at once, held 62, 11.11 -> 10.07 us; channels-last sdxl_32x2560 256 x 8
    // x 8 in 6 (39 -> 62) 15.61 -> 14.76, 256 x 4 x 8 0.93-0.97 on three shapes; but
    // channels-last 256 x 8 x 4 slower, odd_1d_8191_c256 27.91 -> 30.30 and det_25x42x2048 12.62
    // -> 13.38 (neither row's dispatched instance). The heuristics count the rounds of the
    // kernel taken so (at_once, below).
    bool take_bits(std::int64_t groups) const {
      return bits > 0 && (always || plain == 0 || (bits > plain && groups > plain));
    }
    // the taken kernel's: the most at once makes the fewest rounds of any count of groups
    int at_once() const { return (always && bits > 0) || bits > plain ? bits : plain; }
  };
  template <typename Traits, bool kPeeled = false>
  static HeldParts held_parts(int parts) {
    HeldParts h;
    h.plain = active_clusters(&fwd_onchip_parts_kernel<Traits, kPeeled>, Traits::kBlockSize, 0, parts);
    if constexpr (kOnchipHeldBits<Traits>) {
      const HeldBitsMode mode = onchip_held_bits_mode();
      if (mode != HeldBitsMode::never)
        h.bits = active_clusters(&fwd_onchip_parts_kernel<Traits, kPeeled, true>, Traits::kBlockSize, 0, parts);
      h.always = mode == HeldBitsMode::always;
    }
    return h;
  }

  // How many clusters of `parts` workgroups of the kernel in parts of that kind (params.hpp:
  // PartsKernel) the device runs at once; 0 where the op has no such kernel or the device runs
  // none. The held kind's: of the kernel the launcher takes (held_parts).
  template <typename Traits>
  static int clusters_at_once(int parts, PartsKernel kind) {
    (void)kind;
    if constexpr (Traits::kOp == Op::fwd && kOnchipSpans<Traits>)
      if (kind == PartsKernel::peeled) return held_parts<Traits, true>(parts).at_once();
    if constexpr (Traits::kOp == Op::fwd && Traits::kLayout == Layout::channels_last && Traits::kVectorSize > 1)
      if (kind == PartsKernel::columns)
        return active_clusters(&fwd_onchip_columns_parts_kernel<Traits>, Traits::kBlockSize, 0, parts);
    if constexpr (Traits::kOp == Op::fwd)
      return held_parts<Traits>(parts).at_once();
    else if constexpr (Traits::kLayout == Layout::channels_last && kWritesDx<Traits>)
      return active_clusters(&bwd_onchip_parts_kernel<Traits>, Traits::kBlockSize, kOnchipBwdSmem<Traits>, parts);
    else
      return 0;
  }

  template <typename Traits>
  static hipError_t launch(const Params& p, hipStream_t stream) {
    constexpr bool kForward = Traits::kOp == Op::fwd;
    if constexpr (Traits::kLayout == Layout::channels_last && Traits::kVectorSize > 1) {
      if (onchip_cl_columns(p.channels_per_group, Traits::kVectorSize)) {
        const dim3 grid(unsigned(onchip_cl_workgroups(p.num_groups, p.channels_per_group, Traits::kVectorSize)));
        if constexpr (kForward) {
          if (p.slices > 1) {  // the runtime asks for parts only where the device has clusters
            hipError_t e = hipErrorInvalidValue;
            launch_clusters(&fwd_onchip_columns_parts_kernel<Traits>, p, Traits::kBlockSize, 0, int(p.slices),
                            std::int64_t(grid.x), stream, &e, false);
            return e;
          }
          fwd_onchip_columns_kernel<Traits><<<grid, dim3(Traits::kBlockSize), 0, stream>>>(p);
          return hipGetLastError();
        } else {
          bwd_onchip_columns_kernel<Traits><<<grid, dim3(Traits::kBlockSize), 0, stream>>>(p);
          return gamma_beta_by_arrival<Traits>(p) ? hipGetLastError() : launch_grid_gamma_beta<Traits>(p, stream);
        }
      }
    }
    if constexpr (kForward) {
      if (p.slices > 1) {  // the runtime asks for parts only where the device has clusters
        // the plain kernel or, channels-first, the one of spans peeled (kOnchipSpans); either
        // with x held as loaded where that runs more clusters at once (kOnchipHeldBits)
        const auto pick = [&](auto peeled) -> void (*)(Params) {
          constexpr bool kPeeled = decltype(peeled)::value;
          if constexpr (kOnchipHeldBits<Traits>)
            if (held_parts<Traits, kPeeled>(int(p.slices)).take_bits(p.num_groups))
              return &fwd_onchip_parts_kernel<Traits, kPeeled, true>;
          return &fwd_onchip_parts_kernel<Traits, kPeeled>;
        };
        void (*kernel)(Params) = nullptr;
        if constexpr (kOnchipSpans<Traits>)
          if (p.span) kernel = pick(std::true_type{});
        if (!kernel) kernel = pick(std::false_type{});
        hipError_t e = hipErrorInvalidValue;
        launch_clusters(kernel, p, Traits::kBlockSize, 0, int(p.slices), p.num_groups, stream, &e, false);
        return e;
      }
      if constexpr (kOnchipSpans<Traits>) {
        if (p.span) {
          fwd_onchip_span_kernel<Traits><<<dim3(p.num_groups), dim3(Traits::kBlockSize), 0, stream>>>(p);
          return hipGetLastError();
        }
      }
      fwd_onchip_kernel<Traits><<<dim3(p.num_groups), dim3(Traits::kBlockSize), 0, stream>>>(p);
      return hipGetLastError();
    } else {
      if constexpr (Traits::kLayout == Layout::channels_last && kWritesDx<Traits>) {
        if (p.slices > 1) {  // the runtime asks for parts only where the device has clusters
          hipError_t e = hipErrorInvalidValue;
          launch_clusters(&bwd_onchip_parts_kernel<Traits>, p, Traits::kBlockSize, kOnchipBwdSmem<Traits>,
                          int(p.slices), p.num_groups, stream, &e, false);
          if (e != hipSuccess) return e;
          return gamma_beta_by_arrival<Traits>(p) ? hipGetLastError() : launch_grid_gamma_beta<Traits>(p, stream);
        }
      }
      auto kernel = &bwd_onchip_kernel<Traits>;
      if constexpr (kPeels<Traits>)
        if (p.span) kernel = &bwd_onchip_kernel<Traits, true>;
      constexpr std::size_t smem = kOnchipBwdSmem<Traits>;
      if constexpr (smem > 0)
        if (const hipError_t e = allow_dynamic_smem(reinterpret_cast<const void*>(kernel), smem); e != hipSuccess)
          return e;
      kernel<<<dim3(p.num_groups), dim3(Traits::kBlockSize), smem, stream>>>(p);
      return gamma_beta_by_arrival<Traits>(p) ? hipGetLastError() : launch_grid_gamma_beta<Traits>(p, stream);
    }
  }
};

}  // namespace hipgn::kernels
