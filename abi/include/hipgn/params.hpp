// What a kernel launch receives: pointers, sizes, and the index arithmetic the host
// prepared once per call (so kernels divide by multiplication). Shared by the runtime, which
// fills it, and the kernels in kernels/include/hipgn/kernels/.
#pragma once

#include <cstdint>

#include "hipgn/family_limits.hpp"  // generated: codegen/families.py
#include "hipgn/storage.hpp"

namespace hipgn {

// Division by a divisor fixed for the whole launch. Dividends below 2^31 use the
// multiply-high method (Granlund and Montgomery); larger ones, only possible in groups past
// 2^31 vectors, fall back to a 64-bit division.
struct FastDivmod {
  std::uint64_t divisor = 1;
  std::uint32_t multiplier = 1;  // 0 when divisor = 1: quotient = dividend
  std::uint32_t shift = 0;

  static FastDivmod make(std::uint64_t d) {
    FastDivmod f;
    f.divisor = d;
    if (d <= 1u || d >= (1ull << 31)) { f.multiplier = 0; f.shift = 0; return f; }
    std::uint32_t l = 0;
    while ((1ull << l) < d) ++l;
    f.shift = l;
    f.multiplier = static_cast<std::uint32_t>(((1ull << 32) * ((1ull << l) - d)) / d + 1);
    return f;
  }

  HIPGN_HD std::uint64_t div(std::uint64_t n) const {
    if (multiplier == 0) return divisor == 1 ? n : n / divisor;
    if (n >= (1ull << 31)) return n / divisor;
    const std::uint32_t n32 = static_cast<std::uint32_t>(n);
#if defined(HIPGN_DEVICE_PASS)
    const std::uint32_t hi = __umulhi(n32, multiplier);
#else
    const std::uint32_t hi = static_cast<std::uint32_t>((std::uint64_t(n32) * multiplier) >> 32);
#endif
    return (std::uint64_t(hi) + n32) >> shift;
  }
  // div for a dividend known to be below 2^31: no 64-bit fallback in the code (kernels whose
  // support check bounds their indices; the fallback is a called helper that costs registers)
  HIPGN_HD std::uint32_t div31(std::uint32_t n) const {
    if (multiplier == 0) return divisor == 1 ? n : 0;  // divisor 1, or past 2^31 > n
#if defined(HIPGN_DEVICE_PASS)
    const std::uint32_t hi = __umulhi(n, multiplier);
#else
    const std::uint32_t hi = static_cast<std::uint32_t>((std::uint64_t(n) * multiplier) >> 32);
#endif
    return (hi + n) >> shift;
  }
};

// floor(a / b) for 0 <= a < 2^52 and 0 < b < 2^31, given rcp = 1 / b rounded to a double (a
// launch's Params::spatial_rcp and the like): the product is off by at most one, which the two
// checks correct. The channels-first stream forward's shares start at 64-bit offsets; a double
// division there is a subroutine on the chain before its first loads, and the 64-bit integer
// division a called helper around which ptxas spilled (bench/NOTES.md, "Where the fifth
// session of 2026-11-26 ended").
HIPGN_HD std::int64_t floor_div(std::int64_t a, std::int64_t b, double rcp) {
  std::int64_t q = static_cast<std::int64_t>(static_cast<double>(a) * rcp);
  if (q * b > a) --q;
  else if ((q + 1) * b <= a) ++q;
  return q;
}

// Part `part`'s share of `total` rows (or vectors) cut in shares of `each` (Params::part_rows):
// `each`, the last part what is left; below 0 past the last (the onchip merges clamp it). The
// one statement of it for the onchip parts, the stream items and the channels-last resident
// slices.
template <typename I>
HIPGN_HD constexpr I part_share(I total, I each, I part) {
  const I left = total - part * each;
  return left < each ? left : each;
}

// The channels-last onchip kernels (families/onchip.hpp, fwd_onchip_rows, bwd_onchip_rows): a
// thread keeps one vector column of the group's rows (C/G / vector columns a row) and walks the
// rows (positions) block / columns apart, so a workgroup holds per_thread * (block / columns)
// rows; none where a row has more columns than the workgroup threads.
HIPGN_HD constexpr std::int64_t onchip_cl_rows(int block, int per_thread, std::int64_t columns) {
  return columns > block ? 0 : per_thread * (block / columns);
}
// Whether an onchip forward instance (x of `x_bytes` an element) also has its parts kernel with
// x held as loaded (families/onchip.hpp, kOnchipHeldBits; channels-last its rows, channels-first
// its vectors): 16-bit x, and at least 32 values a thread (fewer hold few registers to save).
HIPGN_HD constexpr bool onchip_held_bits(int x_bytes, int vector, int per_thread) {
  return x_bytes == 2 && vector * per_thread >= 32;
}

// The channels-last onchip kernels where C/G is below the vector (and divides it, the support
// check): a workgroup a column of `vector` channels of a sample, vector / (C/G) groups
// (fwd_onchip_columns, bwd_onchip_columns), so the launch has num_groups * C/G / vector
// workgroups, not num_groups.
HIPGN_HD constexpr bool onchip_cl_columns(std::int64_t channels_per_group, int vector) {
  return channels_per_group < vector;
}
HIPGN_HD constexpr std::int64_t onchip_cl_workgroups(std::int64_t num_groups, std::int64_t channels_per_group,
                                                    int vector) {
  return onchip_cl_columns(channels_per_group, vector) ? num_groups * channels_per_group / vector : num_groups;
}
// The onchip family's kernels in parts (families/onchip.hpp), one occupancy question each
// (Instance::clusters_at_once): a group's rows or aligned vectors (fwd_onchip_parts_kernel,
// bwd_onchip_parts_kernel), a peeled channels-first group's (the forward's kPeeled
// instantiation), a column of groups narrower than the vector (fwd_onchip_columns_parts_kernel).
enum class PartsKernel : int { held, peeled, columns };

// The channels-first split backward's first pass (families/split.hpp: bwd_split_rows_kernel and
// bwd_split_sums_kernel), which sums each channel row of a group. Short rows (spatial / vector
// vectors, at most half the workgroup, or up to all of it where every team has a row: below) go to
// teams of `team` lanes (a power of two, at most 32, so a team never spans a wavefront of any
// target), `rows` rows a workgroup at once; a group takes at least min_units such units (of fewer
// rows) where it has the rows, so that few groups still spread over the device. Other rows take the
// whole workgroup, on one of the row's `pieces` pieces of up to piece_vectors vectors
// (kSplitBwdPieceChunks x block x per_thread), whose sums a fold kernel adds in order. `units` is
// the workgroups of a group. Measured on an H100 (fp16 SiLU, L2-cold; bench/NOTES.md, "Rows in
// teams"): a workgroup a row made sd15_8x2560 (64-element rows) 5120 workgroups of 8 busy lanes
// each (18.5 -> 9.8 us in teams) and vae_1024x128 (1M-element rows) 128 workgroups, one a compute
// unit (732 -> 454 us in 32 pieces). A row of more vectors than a team has lanes goes to a team
// only from kSplitBwdTeamRowsPerCu rows (N x C) a compute unit: below, a workgroup a row runs in
// one wave and spreads each row over 4x the lanes (sd15_32x320, 640 rows of 1024: teams 13.3 us, a
// workgroup a row 11.7; layer_norm_32x64, 128 rows: 12.1 against 10.3); above, the teams win
// (sd15_32x1920, 3840 rows: 21.7 against 24.1). Rows of half to all of the workgroup's vectors take
// teams only where every team of a unit has a row (H200, SiLU, L2-cold; bench/NOTES.md, "Rows of up
// to a workgroup's vectors in teams"): det_25x42x2048 (64 rows a group, 132 vectors each, 16-bit)
// in workgroups of 132 busy lanes took 27.7 us, in full units of 8 teams 19.7; where min_units
// leaves half the teams idle they lost or tied (C = 640, 20 rows a group, 4 a unit: fp32 rows of
// 225-256 vectors 1.06-1.10x, of 157-189 0.98-1.01x; fp16 rows of 162-252 vectors 1.04-1.14x, of
// 132 1.00x).
struct SplitRows {
  std::int64_t rows = 1, team = 1, pieces = 1, piece_vectors = 1, units = 1;
};
inline constexpr std::int64_t kSplitBwdPieceChunks = 4;
inline constexpr std::int64_t kSplitBwdTeamRowsPerCu = 8;
HIPGN_HD SplitRows split_bwd_cf_rows(std::int64_t spatial, std::int64_t channels_per_group, int vector, int block,
                                     int per_thread, std::int64_t num_groups, std::int64_t compute_units) {
  SplitRows r;
  const std::int64_t row_vectors = (spatial + vector - 1) / vector;
  const bool many_rows = num_groups * channels_per_group >= kSplitBwdTeamRowsPerCu * compute_units;
  if (row_vectors <= block && (row_vectors <= 32 || many_rows)) {
    while (r.team < row_vectors && r.team < 32) r.team *= 2;
    const std::int64_t teams = block / r.team, full = (channels_per_group + teams - 1) / teams;
    const std::int64_t min_units = (2 * compute_units + num_groups - 1) / num_groups;  // two a compute unit
    const std::int64_t units = full > min_units ? full : (min_units < channels_per_group ? min_units : channels_per_group);
    r.rows = (channels_per_group + units - 1) / units;  // balanced: no unit of a few rows
    r.units = (channels_per_group + r.rows - 1) / r.rows;
    // a unit of one row longer than a team: the whole workgroup on it, more lanes on the row;
    // rows past half the workgroup's vectors only in units with a row for every team
    if ((r.rows > 1 || row_vectors <= r.team) && (2 * row_vectors <= block || r.rows == teams)) return r;
    r = SplitRows{};
  }
  r.team = block;
  r.piece_vectors = kSplitBwdPieceChunks * block * per_thread;
  r.pieces = (row_vectors + r.piece_vectors - 1) / r.piece_vectors;
  r.units = channels_per_group * r.pieces;
  return r;
}

struct Params {
  // Fields in the order kernels first read them, a 64-byte line of the constant bank at a time
  // (the parameters start at offset 0x210, the driver's 0x200-0x20f in the first line). A line's
  // first read is a miss on the chain of every workgroup of a compute unit's first wave, and a
  // wavefront waits on such misses one after another, in program order (Nsight's stall_imc),
  // where ptxas reads the parameters of the code before a kernel's first barrier at its top: a
  // small kernel's chain took a miss per line ahead of x's load, 2 to 7 of them (bench/NOTES.md,
  // "The parameters' lines"). So the lines below go first to last as the grid families' small
  // kernels read them: where a group is (before x's load), gamma's channel (beside it), the
  // peeled view and the normalize (under x's latency), then each family's own.

  // A group's place: x's and dy's addresses
  const void* x;
  const void* dy;                  // backward
  std::int64_t group_stride;       // elements between groups of a sample: C/G * spatial or C/G
  std::int64_t vectors;            // vectors in one group: rows * cols / vector
  std::int64_t sample_stride;      // elements between samples: C * spatial
  std::int64_t groups_per_sample;  // G

  // gamma's channel (and the channels-last row walk)
  const void* gamma;               // may be null: scale 1
  const void* beta;                // may be null: shift 0
  std::int64_t channels_per_group; // C / G
  std::int64_t row_stride;         // a group is rows x cols; channels-first: spatial, last: C
  FastDivmod vectors_per_row;      // cols / vector
  FastDivmod groups_div;           // group -> (sample, group of the sample); every family

  // The peeled view, the statistics and the normalize (spatial_size, group_elements, phase and
  // spatial below: set for every family)
  std::int64_t spatial_size;       // HW
  std::int64_t group_elements;     // M = C/G * spatial
  void* y;
  float* mean;                     // [N, G]; forward: may be null (not written); backward: read
  float* rstd;                     // [N, G]
  double group_rcp;                // 1 / group_elements; every family (the onchip forward's 1 / count)
  float eps;
  float swish_beta;
  std::int32_t phase;              // channels-first: (x's address / element size) % vector
  // Channels-last: 1 when gamma and beta (those given) start on a boundary of a vector of
  // their own type (vector x their element size), so a vector's channels' gamma and beta are
  // one load each (grid.hpp: vector_affine); set for every family
  std::int32_t affine_vectors;

  // A peeled element's channel; the backward's epilogue (dx; dgamma and dbeta by the last of a
  // group's samples)
  FastDivmod spatial;              // channels-first: channel of a group-relative element
  void* dx;                        // backward data; may be null (dgb)
  float* workspace;   // forward split: 3 floats per (group, slice); backward: [N, C, 2] sums (then pieces)
  void* dgamma;                    // backward gamma/beta; may be null (dx, or affine off)
  void* dbeta;
  std::uint32_t* counters;
  std::int64_t channels;           // C

  std::int32_t num_groups;         // N * G: the grid's x (families with a grid of groups)
  // 1 where `counters` are zero at launch: the handle's own, zeroed once where allocated and
  // left zero by every arrival (exchange.hpp), so the launcher skips their memset; 0 where they
  // are in the caller's workspace (any content), which the launcher zeroes first
  std::int32_t counters_zeroed;
  std::int32_t slices;             // split: workgroups per group; resident: slices per unit; onchip: parts
  // The stream family (stream_fwd.hpp, stream_bwd.hpp): items = N x parts (p.slices), a part
  // part_rows rows of a sample. Forward: partials are [items, G] (mean, M2) pairs, group_stats
  // [N * G] (mean, rstd) pairs. Backward: partials [items, C] (S1, S2) pairs, group_stats
  // [items, G] (gamma S1, gamma S2) pairs. The onchip forward in parts
  // (fwd_onchip_parts_kernel): a group's `slices` parts of part_rows rows (channels-first,
  // vectors of its aligned body), a cluster a group. The channels-last resident family: a
  // unit's slices of part_rows rows, the spatial size over its slices (resident_fwd.hpp,
  // resident_bwd.hpp).
  std::int64_t part_rows;
  // The channels-first split backward (families/split.hpp): its first pass's units; with pieces
  // > 1 they write [N, C, pieces] (S1, S2) pairs to `partials`, folded into the workspace's
  // [N, C] pairs before the second pass.
  SplitRows split_rows;

  // The resident family: a persistent grid walks items = units x slices, a unit being a group
  // (channels-first) or chunk_channels of a sample (channels-last); the slices of a unit
  // exchange partial statistics through `partials`, counting arrivals in `counters` (a counter
  // and its generation a unit: unit_counter_words).
  std::int64_t items;
  FastDivmod slices_div;           // item -> (unit, slice) without a 64-bit division
  // 1 / spatial_size and 1 / C as doubles (and group_rcp above), for the channels-first stream
  // forward's floor_div: a multiply where a double division is a subroutine on the chains
  // before its first loads and before its merges; set for the stream family.
  double spatial_rcp, channels_rcp;
  std::int32_t slice_vectors;      // channels-first: body vectors per slice (block * per_thread)
  // The channels-first stream forward (stream_fwd_cf.hpp): the flat tensor's aligned vectors
  // cut into `items` shares of slice_vectors (slices_div divides by it), partials a float4 slot
  // per (share, group); hold_vectors, set by the launcher, the vectors of its first share a
  // workgroup keeps in shared memory; affine_rows the rows of its gamma/beta table. The
  // channels-last stream forward (stream_fwd.hpp): hold_vectors, set by its launcher, the rows
  // a thread keeps in shared memory of its workgroup's last item; the backward (stream_bwd.hpp):
  // in the ring's kernel the rows a thread has in flight in its ring in shared memory, in the
  // register loop's kernel (short items) the rows of its last item it keeps there for dx.
  std::int32_t affine_rows;
  // The channels-first stream forward in waves (set by its launcher, never by the runtime): the
  // groups taken wave_groups whole groups at a time, each wave cut into shares that workgroups
  // hold whole, so x is read from memory once however large the tensor; wave_groups = N * G:
  // one wave, the tensor (stream_fwd_cf.hpp).
  std::int32_t wave_groups;
  std::int32_t hold_vectors;
  std::int32_t chunk_channels;     // channels-last forward: a unit's channels (whole groups; C or less)
  std::int32_t row_lanes;          // channels-last: rows a workgroup covers at once

  float* partials;
  float* group_stats;
  FastDivmod cpg_div;              // channel -> its group (C/G)
  // The resident forward: 1 when the launcher made each unit's slices one thread-block cluster,
  // so they exchange through distributed shared memory (primitives/cluster.hpp), not `counters`
  // and `partials`; 0 otherwise (set by the launcher, never by the runtime)
  std::int32_t cluster;
  std::int32_t pass;               // the backward: 0 on chip; 1, 2 the streaming passes (resident_bwd.hpp)
  // Channels-first backward of the grid families (onchip, looped, split), and the onchip
  // forward: 1 when the spatial size is not a multiple of the vector or the tensors start
  // `phase` elements off a 16-byte boundary, so rows and groups are read as peeled runs
  // (primitives/vector.hpp: Peel; view.hpp: SpatialCursor)
  std::int32_t span;
  // Uneven groups (Problem::uneven_groups; the families whose kernels take UnevenGroups<Traits>,
  // primitives/view.hpp): the last group of a sample's channels, vectors, vectors a row and elements;
  // the other groups' values (channels_per_group, vectors, ...) where the groups are even
  std::int64_t last_channels;
  std::int64_t last_vectors;
  FastDivmod last_vectors_per_row;
  std::int64_t last_group_elements;
};

// The onchip backward in parts (bwd_onchip_parts_kernel): each part leaves its per-channel sums
// in its shared memory for the cluster's first part to add, a slot a channel of the group, so
// groups of at most this many channels (Instance::onchip_parts); the suite's widest group,
// sdxl_32x2560's, has 80.
inline constexpr int kOnchipPartsBwdChannels = 256;

// The onchip forward's slots a thread that all load at once, before any of them is used
// (onchip.hpp, kOnchipLoadsAtOnce): the kernels' loads, and the heuristic's order of the
// channels-last forward's instances (better(): such instances first where they hold a group, in
// parts within the limits measured there).
inline constexpr int kOnchipAtOnceSlots = 4;

// The resident family's limits and shapes, shared by the runtime (support, workspace, launch
// shape) and the kernels.
// Channels staged per channels-first item: a slice touches at most min(C/G, its elements / HW
// + 2) channels.
inline constexpr int kResidentStageChannels = 1024;
// The most slices of a resident unit (a channels-first group, a channels-last forward's chunk
// of a sample) that form one thread-block cluster (sm_90: 8 on every part, 16 on an H100 once
// a kernel opts in; primitives/cluster.hpp checks what the device holds); past it, slices exchange
// through the workspace.
inline constexpr int kClusterSlicesMax = 16;
// Dynamic shared memory a resident workgroup may ask for: within sm_90's 227 KB a workgroup
// with room for the static arrays (AMD's register path asks for no stages, so its need stays
// within the 64 KB LDS for the C and G the support check lets through).
#if defined(HIPGN_PLATFORM_AMD)
inline constexpr std::int64_t kResidentMaxSmem = 48 * 1024;
#else
inline constexpr std::int64_t kResidentMaxSmem = 200 * 1024;
#endif
// Channels-last forward shared memory, in floats: the cluster exchange's slots first (2 x
// slices x groups of the chunk pairs, where 1 < slices <= kClusterSlicesMax; 8-byte aligned
// after the stages), per-lane channel means and M2 (2 x row_lanes x chunk; the first, at least
// 2 x chunk, later holds scale and shift) and per-group statistics (2 x groups of the chunk).
HIPGN_HD std::int64_t resident_cl_slot_floats(std::int64_t chunk_groups, std::int64_t slices) {
  return slices > 1 && slices <= kClusterSlicesMax ? 4 * slices * chunk_groups : 0;
}
HIPGN_HD std::int64_t resident_cl_smem_floats(std::int64_t chunk, std::int64_t chunk_groups, std::int64_t row_lanes,
                                              std::int64_t slices) {
  return resident_cl_slot_floats(chunk_groups, slices) + 2 * (row_lanes > 2 ? row_lanes : 2) * chunk +
         2 * chunk_groups;
}
// The channels-last resident backward streams a sample cut into more slices than this (two
// passes over x and dy, the second from L2 where it fits) instead of holding it on chip: the
// slices must be co-resident, and every one waits for the last. 64 is half an H100's compute
// units, not yet a measured optimum.
inline constexpr std::int64_t kResidentBwdMaxSlices = 64;
// The channels-last resident backward (resident_bwd.hpp), in floats: per-lane channel sums S1
// and S2 (2 x row_lanes x C), gamma and beta (2 x C), per-channel statistics (2 x C) and
// per-group sums (2 x G).
HIPGN_HD std::int64_t resident_bwd_cl_smem_floats(std::int64_t c, std::int64_t groups, std::int64_t row_lanes) {
  return 2 * row_lanes * c + 4 * c + 2 * groups;
}
// The two shared-memory stages of the bulk-copy path (kernels/include/hipgn/kernels/primitives/bulk.hpp):
// NVIDIA builds target sm_90, which has it; AMD takes the register path and needs none.
HIPGN_HD std::int64_t resident_stage_bytes(int block, int per_thread) {
#if defined(HIPGN_PLATFORM_AMD)
  return 0 * block * per_thread;
#else
  return 2 * std::int64_t(block) * per_thread * 16;
#endif
}
// Channels-last workgroups are row_lanes x (C / V) threads, rounded up to whole wavefronts of
// 64 (a multiple of every target's wavefront).
HIPGN_HD int resident_cl_block(std::int64_t c, int vector, int row_lanes) {
  return int((std::int64_t(row_lanes) * (c / vector) + 63) / 64 * 64);
}

// The stream family's channels-last workgroup: each thread sums `cols` column vectors of a row
// (vectors cv, cv + threads_per_row, ...), threads_per_row threads cover a row, and `lanes`
// rows are read at once. cols <= the instance's per_thread (the support check).
struct StreamShape {
  int cols, threads_per_row, lanes;
};
HIPGN_HD StreamShape stream_cl_shape(std::int64_t c, int vector, int block) {
  const int row_vectors = int(c / vector);
  const int cols = (row_vectors + block - 1) / block;
  const int per_row = (row_vectors + cols - 1) / cols;
  return {cols, per_row, block / per_row};
}
// Arrival counters: one buffer serves every family in turn (the handle keeps one a stream,
// zeroed once), so every family keeps one layout: arrival counts at even words, zero before and
// after every launch (exchange.hpp), and generations at odd words, any value. A count at a word
// where another family left a generation would start from that value and never reach its
// total: the barrier waits forever.
HIPGN_HD bool is_generation_word(std::int64_t w) { return w % 2 == 1; }
// A unit's count and generation side by side (unit u: words 2 u, 2 u + 1): the resident
// family's exchange (a unit's few slices polled the count itself before, its line now) and
// the grid families' dgamma/dbeta arrivals (a unit a group of a sample, no generation).
HIPGN_HD std::int64_t unit_counter_words(std::int64_t units) { return 2 * units; }
// The stream family's two grid barriers: a count and a generation each, in 128-byte lines of
// their own (barrier k: count at word 2 k kStreamLineWords, generation a line and a word after),
// so that waiters polling a generation never queue in front of arrivals at the count.
inline constexpr int kStreamLineWords = 32;
inline constexpr int kStreamGenerationOffset = kStreamLineWords + 1;
inline constexpr int kStreamCounterWords = 2 * 2 * kStreamLineWords;
static_assert(kStreamGenerationOffset % 2 == 1 && kStreamLineWords % 2 == 0, "counts at even words, generations at odd");
// Shared memory of a stream workgroup, in floats: each lane's per-channel S1 and S2, then the
// forward's channel shifts, gamma and beta (3 C), the backward's gamma and beta and an item's
// per-channel then per-group sums (4 C).
HIPGN_HD std::int64_t stream_cl_smem_floats(std::int64_t c, int lanes, bool backward = false) {
  return (2 * std::int64_t(lanes) + (backward ? 4 : 3)) * c;
}
// Where the channels-last stream forward's held rows (the backward's rows in flight) start in
// its shared memory, in bytes: after the floats above, 16-byte aligned.
HIPGN_HD std::int64_t stream_cl_held_offset(std::int64_t c, int lanes, bool backward = false) {
  return (stream_cl_smem_floats(c, lanes, backward) * 4 + 15) / 16 * 16;
}
// The channels-last stream backward's ring (kernels/include/hipgn/kernels/primitives/async_copy.hpp,
// stream_bwd.hpp's each_row): the rows a thread has in flight through shared memory, from `rows`
// a thread of an item and room for `fits` of them; 0 loads through registers, two rows at a time.
// H200, fp16 / bf16 SiLU, L2-cold, against registers (bench/NOTES.md, "Rows in flight through
// shared memory"): from 16 rows a thread the ring of 4 takes 0.88-0.94x / 0.90-0.97x
// (sdxl_64x1280, 21 rows; vae_256x256, 32; sdxl_128x960, 63; vae_512x256), depths 4 and 8
// within 2% of each other; at 16 rows mixed (sdxl_32x2560 0.94-0.97 / 1.02, det_50x84x1024
// 0.94-0.98 / 0.99-1.04). Below, every depth was level or slower, the deeper the slower
// (sd15_64x320, 6 rows, 0.98-1.01x at depth 2, 1.02-1.06 at 4, 1.03-1.05 at 6): a short item's
// rows arrive in the first round trip anyway. NVIDIA builds target sm_90, which copies
// asynchronously; AMD loads through registers and gets no ring.
#if defined(HIPGN_PLATFORM_AMD)
inline constexpr std::int64_t kStreamRingMost = 0;
#else
inline constexpr std::int64_t kStreamRingMost = 4;
#endif
inline constexpr std::int64_t kStreamRingFromRows = 16;
HIPGN_HD std::int64_t stream_ring_depth(std::int64_t rows, std::int64_t fits) {
  if (rows < kStreamRingFromRows) return 0;
  return kStreamRingMost < fits ? kStreamRingMost : fits;
}
// Shared memory a stream forward workgroup that holds x leaves unused of its share of the
// compute unit's: the 1 KB sm_90 reserves per workgroup and the kernel's static arrays.
inline constexpr std::int64_t kStreamSmemReserve = 4096;
// The most shared memory a channels-first stream workgroup gives to its share's gamma and beta
// (8 bytes a channel row the share touches, Params::affine_rows).
inline constexpr std::int64_t kStreamCfTableBytes = 32 * 1024;
// Rows of a channels-first stream share's gamma/beta table: a share of `vectors` body vectors
// (plus the head or tail, fewer than a vector) touches at most this many channel rows; even, so
// that the held vectors after the table start 16-byte aligned.
HIPGN_HD std::int64_t stream_cf_affine_rows(std::int64_t vectors, int vector, std::int64_t spatial) {
  return ((vectors + 1) * vector / spatial + 2 + 1) / 2 * 2;
}
// The channels-first stream forward's waves (stream_fwd_cf.hpp), planned by its launcher from
// the body vectors a workgroup may hold: `waves` waves of `groups` whole groups, every share of
// a wave `chunk` body vectors at most, held whole. groups = 0: no plan (a group is more than
// the grid holds).
struct StreamCfWaves {
  std::int64_t groups, waves, chunk;
};
HIPGN_HD StreamCfWaves stream_cf_waves(std::int64_t group_elements, std::int64_t num_groups, int vector,
                                       std::int64_t workgroups, std::int64_t hold_vectors) {
  StreamCfWaves w{0, 0, 0};
  if (workgroups < 1 || hold_vectors < 1) return w;
  // g groups have at most g L / V body vectors, whatever x's phase: `workgroups` shares of hold
  const std::int64_t most = ((hold_vectors * workgroups + 1) * vector - 1) / group_elements;
  if (most < 1) return w;
  // as few waves as fit, the groups spread evenly over them
  w.waves = (num_groups + most - 1) / most;
  w.groups = (num_groups + w.waves - 1) / w.waves;
  const std::int64_t body = w.groups * group_elements / vector;
  w.chunk = body > workgroups ? (body + workgroups - 1) / workgroups : 1;
  return w;
}
// Waves from a tensor of this many times what the grid holds. Each wave costs ~8 us more than its
// bytes (phase 1's loads beside the previous wave's stores, a grid barrier that waits for the
// slowest workgroup: bench/NOTES.md "Waves"), so waves pay only where most of x would be read
// twice: H100, fp16, b512 x 1, waves of what the grid holds against one wave: 0.92x at 10-12
// times (vae_1024x128, video_5d), 0.98 at 5 (vae_512x256), 0.99-1.06 at 2.5 (the 67-69 MB
// shapes), 1.05-1.16 below 2 (r50_56x256_n32, vae_256x256).
inline constexpr std::int64_t kStreamCfWavesFromHeld = 4;
// A wave takes 1/kStreamCfWaveL2Share of the L2 beyond what the grid holds (that part of each
// share read again, from L2), so the waves are fewer. H100 (50 MB L2), fp16 and bf16, against
// one wave: video_5d (10.5 MB groups) 0.96x with none (2 groups a wave), 0.88-0.91 with 6-9 MB
// (3 groups), 0.85-0.87 with 12-16 MB (4); vae_1024x128 (8.4 MB groups) 0.96 with none (3
// groups), 0.87-0.90 with 6-9 MB (4), 0.92-0.93 with 12-16 MB (5); vae_512x256 0.92-0.94 with
// any; the 67 MB shapes, below kStreamCfWavesFromHeld, unchanged (0.99-1.02). A sixth (8.7 MB)
// packs as 9 MB did, 0.94x in geomean over the five shapes. Since the kernel's loads and stores
// of lines it will not read again go first out of the L2 (eviction hints), a third keeps up: H200,
// fp16, against a sixth (both hinted): vae_512x256 0.97, video_5d 0.92-0.94, vae_1024x128
// 1.03 (two rounds; a half 0.97 / 0.95 / 1.00, a quarter 1.00 / 0.91 / 1.03; bench/NOTES.md,
// "Eviction hints").
inline constexpr std::int64_t kStreamCfWaveL2Share = 3;
// Its workspace's float4 slots: a wave's slot per (share, group) pair at share + its group in
// the wave, in area wave % 2 (phase 1 of a wave writes its slots while others may still merge
// the previous wave's); one area of items + 1 + N * G where the tensor is one wave.
HIPGN_HD std::int64_t stream_cf_slot_area(std::int64_t items, std::int64_t wave_groups) {
  return items + 1 + wave_groups;
}
HIPGN_HD std::int64_t stream_cf_slots(std::int64_t items, std::int64_t num_groups) {
  return 2 * stream_cf_slot_area(items, num_groups);
}
// Threads a compute unit runs of a stream kernel (its launch bounds), and so how many items the
// runtime cuts a problem into: the forward's thread holds 3 values a channel (64 registers at
// 1024 threads), the backward's 5 (128 at 512); twice the column vectors, half the threads.
constexpr HIPGN_HD int stream_threads_per_cu(bool backward, int per_thread) {
  return (backward ? 512 : 1024) / (per_thread == 1 ? 1 : 2);
}

}  // namespace hipgn
