// Support checks, workspace and launch of an instance.
#include "hipgn/instance.hpp"
#include "hipgn/clusters.hpp"
#include "hipgn/op.hpp"

#include <algorithm>
#include <climits>
#include <limits>
#include <cstdint>
#include <tuple>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

namespace hipgn {

bool Key::operator<(const Key& o) const {
  auto t = [](const Key& k) { return std::make_tuple(int(k.op), int(k.x_dtype), int(k.gamma_dtype), int(k.layout), int(k.act)); };
  return t(*this) < t(o);
}

Key Key::of(const Problem& p) { return {p.op, p.x_dtype, p.gamma_dtype, p.layout, p.act}; }

// Key::to_string, InstanceSpec::name and parse: generated (templates/instance_name.cpp.j2).

std::int64_t group_run(const Problem& p) {
  return p.layout == Layout::channels_first ? p.spatial_size() : p.channels_per_group();
}

std::int64_t run_bytes(const Problem& p) { return group_run(p) * std::int64_t(size_of(p.x_dtype)); }

namespace {
constexpr std::int64_t kMaxSlices = 65535;  // the grid's y limit on both vendors
std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
std::uintptr_t address(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }
// Why the op's alignment-checked tensors (OpDescriptor::aligned) do not allow `vector`-element
// accesses, or empty when they do (or when no tensors are given).
std::string misaligned(const Problem& p, const Tensors* t, std::int64_t vector) {
  const std::size_t align = std::size_t(vector) * size_of(p.x_dtype);
  const unsigned aligned = describe(p.op).aligned;
  for (unsigned i = 0; t && i < kTensorCount; ++i)
    if (((aligned >> i) & 1u) && address(tensor_pointer(*t, TensorBit(1u << i))) % align != 0)
      return tensor_list(aligned) + " is not aligned to " + std::to_string(align) + " bytes";
  return {};
}
const char* layout_words(Layout l) { return l == Layout::channels_first ? "channels-first " : "channels-last "; }
// The stream family's workspace after its barrier counters, in pairs of floats: the items'
// partials (the forward's per-group (mean, M2), the backward's per-channel (S1, S2)), then
// group_stats (the forward's samples' per-group (mean, rstd), the backward's items' per-group
// (gamma S1, gamma S2)): stream_fwd.hpp, stream_bwd.hpp.
struct StreamPairs {
  std::size_t partials, group_stats;
};
StreamPairs stream_pairs(const Problem& p, std::int64_t items) {
  const std::size_t i = std::size_t(items), g = std::size_t(p.groups);
  return describe(p.op).backward ? StreamPairs{i * std::size_t(p.c), i * g} : StreamPairs{i * g, std::size_t(p.n) * g};
}
// The element offset of x from a 16-byte (`vector`-element) boundary: where a peeled run's
// head ends (primitives/vector.hpp: Peel).
int phase_of(const Problem& p, const Tensors& t, std::int64_t vector) {
  return t.x ? int((address(t.x) / size_of(p.x_dtype)) % std::uintptr_t(vector)) : 0;
}
// Whether a grid family (onchip, looped, split) reads a channels-first op's runs peeled
// (Params::span): the backward's, and the forward's of a family that peels it
// (FamilyDescriptor::peels_forward), where the spatial size is not a multiple of the vector or
// x is off a 16-byte boundary.
bool spans(const Problem& p, const Tensors* t, std::int64_t vector, const FamilyDescriptor& family) {
  return p.layout == Layout::channels_first && (describe(p.op).backward || family.peels_forward) && vector > 1 &&
         (p.spatial_size() % vector != 0 || (t && phase_of(p, *t, vector) != 0));
}
// Why a peeled op cannot read its tensors, or empty when it can: x, y, dy and dx (those the op
// has) share one phase (a vector of each lies at the same element offsets) and each is
// element-aligned.
std::string unpeelable(const Problem& p, const Tensors* t, std::int64_t vector) {
  const std::size_t elem = size_of(p.x_dtype), align = std::size_t(vector) * elem;
  if (!t || !t->x) return {};
  for (const void* q : {t->x, static_cast<const void*>(t->y), t->dy, static_cast<const void*>(t->dx)}) {
    if (q && address(q) % elem != 0) return "x, y, dy or dx is not aligned to its element size";
    if (q && address(q) % align != address(t->x) % align)
      return "x, y, dy and dx differ in alignment modulo " + std::to_string(align) + " bytes";
  }
  return {};
}
}  // namespace

std::size_t Instance::counter_words_bytes(std::int64_t words) { return (std::size_t(words) * 4 + 15) / 16 * 16; }
std::size_t Instance::unit_counter_bytes(std::int64_t units) {
  return counter_words_bytes(unit_counter_words(units));
}
std::size_t Instance::resident_sums_bytes(const Problem& p) const {
  // ops writing dgamma/dbeta (dgb, bwd) keep them; dx only to carry A, B when streaming
  const ResidentShape r = resident_shape(p);
  const OpDescriptor& op = describe(p.op);
  if (!op.backward || (!((op.writes | op.writes_with_gamma) & kDgamma) && !r.streaming)) return 0;
  return (std::size_t(r.items()) * std::size_t(p.c) * 2 * sizeof(float) + 15) / 16 * 16;
}

Instance::ResidentShape Instance::resident_shape(const Problem& p) const {
  ResidentShape r;
  const std::int64_t v = spec_.vector;
  if (p.layout == Layout::channels_first) {
    r.units = p.num_groups();
    r.slices = std::max<std::int64_t>(1, ceil_div(p.group_elements() / v, std::int64_t(spec_.block) * spec_.per_thread));
  } else {
    const bool backward = describe(p.op).backward;
    const auto cut = [&](std::int64_t chunk) {
      r.chunk = chunk;
      r.units = p.n * (p.c / chunk);
      r.row_lanes = int(std::max<std::int64_t>(1, spec_.block / std::max<std::int64_t>(1, chunk / v)));
      r.slices = ceil_div(p.spatial_size(), std::int64_t(r.row_lanes) * spec_.per_thread);
    };
    cut(p.c);
    // The forward's unit: the widest chunk of whole groups (C itself first) that a workgroup's
    // row covers and whose slices fit one thread-block cluster, so they exchange on chip
    // (primitives/cluster.hpp); where none does, the narrowest, the fewest slices to wait for.
    // Narrower chunks make about as many items, of shorter row segments: each starts on its own
    // 16 bytes (chunks are whole vectors) and a group (statistics stay within a unit). The
    // backward keeps whole samples (resident_bwd.hpp).
    if (!backward && (r.slices > kClusterSlicesMax || p.c / v > spec_.block)) {
      const std::int64_t step = std::lcm(p.channels_per_group(), v);
      std::int64_t narrowest = 0;
      for (std::int64_t chunk = p.c; chunk >= step; chunk -= step) {
        if (p.c % chunk != 0 || chunk / v > spec_.block) continue;
        narrowest = chunk;
        cut(chunk);
        if (r.slices <= kClusterSlicesMax) return r;
      }
      cut(narrowest > 0 ? narrowest : p.c);
    }
    r.streaming = backward && r.slices > kResidentBwdMaxSlices;
  }
  return r;
}

// The channels-first stream forward's share, in vectors: the body (at least (elements - V +
// 1) / V, whatever x's phase) over the workgroups the device runs at once. A phase that leaves
// one vector fewer makes the last share shorter, never another share.
std::int64_t Instance::stream_cf_chunk(const Problem& p, int compute_units) const {
  const std::int64_t v = spec_.vector, body = (p.elements() - (v - 1)) / v;
  return std::max<std::int64_t>(1, ceil_div(std::max<std::int64_t>(body, 1), stream_items(p, compute_units).items));
}

Instance::StreamItems Instance::stream_items(const Problem& p, int compute_units) const {
  const int cus = compute_units > 0 ? compute_units : kDefaultComputeUnits;
  // workgroups the device runs at once (stream_threads_per_cu: the kernels' launch bounds)
  const int threads = stream_threads_per_cu(describe(p.op).backward, spec_.per_thread);
  const std::int64_t resident = std::int64_t(cus) * std::max(1, threads / spec_.block);
  StreamItems s;
  if (p.layout == Layout::channels_first) {
    s.items = resident;
    return s;
  }
  const StreamShape shape = stream_cl_shape(p.c, spec_.vector, spec_.block);
  const std::int64_t hw = p.spatial_size();
  // Parts a sample: no more items than workgroups (a workgroup with two items is the one the
  // grid barriers wait for: r50_56x256_n32 as 32 x 9 = 288 items on 264 workgroups, 24 of them
  // reading 2 x 349 rows where 256 items read 392 each; bench/NOTES.md), and a part holds at
  // least a row a lane.
  const std::int64_t want = std::clamp<std::int64_t>(resident / p.n, 1, ceil_div(hw, shape.lanes));
  s.part_rows = ceil_div(hw, want);
  s.parts = ceil_div(hw, s.part_rows);
  s.items = p.n * s.parts;
  return s;
}

namespace {
// The most parts the onchip family holds a group in: the forward's as many as a cluster the
// device launches has (16 on an H100 or H200, past a portable cluster's 8: layer_norm_32x64, two
// groups of 65536 elements, in 16 parts of 256 x 8 x 2 3.9 us against split's 5.3, vae_64x512
// 7.2 against 8 parts' 8.1; H200, fp16 SiLU, L2-cold, bench.py --best, bench/NOTES.md, "Sixteen
// parts"), the backward's a portable cluster's (its parts were measured up to 8 only).
int onchip_parts_most(bool backward) {
  return backward ? std::min(cluster_launch_max(), kClusterPortable) : cluster_launch_max();
}
}  // namespace

bool Instance::columns(const Problem& p) const {
  return describe(spec_.family).columns_channels_last && p.layout == Layout::channels_last &&
         onchip_cl_columns(p.channels_per_group(), spec_.vector);
}

int Instance::clusters_at_once(const Problem& p, int parts) const {
  const PartsKernel kind = columns(p) ? PartsKernel::columns
                           : p.layout == Layout::channels_first && p.spatial_size() % spec_.vector != 0
                               ? PartsKernel::peeled
                               : PartsKernel::held;
  return clusters_(parts, kind);
}

Instance::OnchipParts Instance::onchip_parts(const Problem& p) const {
  OnchipParts r;
  // (the backward's parts are channels-last ops that write dx only: families/onchip.hpp,
  // bwd_onchip_parts_kernel)
  const OpDescriptor& op = describe(p.op);
  const bool backward = op.backward;
  if (spec_.family != Family::onchip || p.uneven() ||
      (backward && (p.layout == Layout::channels_first || !(op.writes & kDx))))
    return r;
  // a part's units: channels-last rows of the group (fwd_onchip_rows), channels-first vectors of
  // its body (fwd_onchip_aligned; where the spatial size or the tensors' alignment peels the
  // group, fwd_onchip_span, whose body has at most the group's whole vectors, the first part
  // taking the head and the tail beside them)
  std::int64_t rows = 0, held = 0;
  if (columns(p)) {
    // a column of V channels (fwd_onchip_columns): its rows, block * per_thread a workgroup
    if (backward) return r;
    rows = p.spatial_size();
    held = std::int64_t(spec_.block) * spec_.per_thread;
  } else if (p.layout == Layout::channels_last) {
    if (p.channels_per_group() % spec_.vector != 0) return r;
    rows = p.spatial_size();
    held = onchip_cl_rows(spec_.block, spec_.per_thread, p.channels_per_group() / spec_.vector);
  } else {
    rows = p.group_elements() / spec_.vector;
    held = std::int64_t(spec_.block) * spec_.per_thread;
  }
  const std::int64_t need = held > 0 ? ceil_div(rows, held) : std::numeric_limits<std::int64_t>::max();
  r.part_rows = rows;
  if (need == 1) return r;
  // as few parts as hold the group, only for groups (columns) of kOnchipPartsFromElements or
  // more, and no more than a cluster has (onchip_parts_most)
  if (parts_elements(p) < kOnchipPartsFromElements || need > onchip_parts_most(backward) ||
      (backward && p.channels_per_group() > kOnchipPartsBwdChannels)) {
    r.parts = 0;
    return r;
  }
  r.part_rows = ceil_div(rows, need);  // balanced: no part of a few rows, none empty
  r.parts = int(ceil_div(rows, r.part_rows));
  // a cluster past the portable size only where the device runs one of this kernel (a GPC may
  // not hold 16 workgroups of 1024 threads); where no device answers (clusters of 2 neither),
  // the assumed target's
  if (r.parts > kClusterPortable && clusters_ && clusters_at_once(p, r.parts) == 0 && clusters_at_once(p, 2) > 0)
    r.parts = 0;
  return r;
}

std::int64_t Instance::parts_elements(const Problem& p) const {
  return columns(p) ? p.spatial_size() * spec_.vector : p.group_elements();
}

std::string Instance::parts_refused(const Problem& p) const {
  const bool backward = describe(p.op).backward;
  if (cluster_launch_max() < 2) return " (the device has no thread-block clusters to hold it in parts)";
  if (backward && columns(p)) return " (a backward's column is not held in parts)";
  if (parts_elements(p) < kOnchipPartsFromElements)
    return std::string(columns(p) ? " (columns" : " (groups") + " below " + std::to_string(kOnchipPartsFromElements) +
           " elements are not held in parts)";
  if (backward && p.channels_per_group() > kOnchipPartsBwdChannels)
    return " (a backward's groups of more than " + std::to_string(kOnchipPartsBwdChannels) +
           " channels are not held in parts)";
  return " in each of a cluster's " + std::to_string(onchip_parts_most(backward)) + " parts";
}

int Instance::onchip_at_once(const Problem& p, const OnchipParts& parts) const {
  return parts.parts < 2 || !clusters_ ? 0 : clusters_at_once(p, parts.parts);
}

std::int64_t Instance::onchip_clusters(const Problem& p) const {
  return columns(p) ? onchip_cl_workgroups(p.num_groups(), p.channels_per_group(), spec_.vector) : p.num_groups();
}

std::int64_t Instance::onchip_rounds(const Problem& p, const OnchipParts& parts) const {
  const int at_once = onchip_at_once(p, parts);
  return at_once > 0 ? ceil_div(onchip_clusters(p), at_once) : 0;
}

int Instance::slices(const Problem& p) const {
  const std::int64_t chunk = spec_.chunk_elements();
  const std::int64_t s = (p.group_elements() + chunk - 1) / chunk;
  return s > kMaxSlices ? -1 : int(s);
}

SplitRows Instance::split_rows(const Problem& p, int compute_units) const {
  if (!(describe(spec_.family).splits_group && describe(p.op).backward && p.layout == Layout::channels_first))
    return {};
  const std::int64_t cus = compute_units > 0 ? compute_units : kDefaultComputeUnits;
  return split_bwd_cf_rows(p.spatial_size(), p.channels_per_group(), spec_.vector, spec_.block, spec_.per_thread,
                           p.num_groups(), cus);
}

bool Instance::supports(const Problem& p, const Tensors* t, std::string* why, int compute_units) const {
  auto no = [why](std::string m) {
    if (why) *why = std::move(m);
    return false;
  };
  if (!(spec_.key() == Key::of(p))) return no("functional key " + Key::of(p).to_string() + " differs");
  const FamilyDescriptor& family = describe(spec_.family);
  if (!(family.ops & (1u << int(p.op)))) return no(std::string(to_string(spec_.family)) + " has no kernel for this op");
  if (describe(p.op).backward && !(family.backward_layouts & (1u << int(p.layout))))
    return no("the " + std::string(layout_words(p.layout)) + std::string(to_string(spec_.family)) +
              " backward is not written yet");
  if (!(family.layouts & (1u << int(p.layout))))
    return no("the " + std::string(layout_words(p.layout)) + std::string(to_string(spec_.family)) +
              " family is not written");
  if (p.uneven() && !family.uneven_groups)
    return no("the " + std::string(to_string(spec_.family)) + " family does not run uneven groups (C = " +
              std::to_string(p.c) + " is not a multiple of G = " + std::to_string(p.groups) + ")");
  if (family.persistent) return supports_resident(p, t, no, compute_units);
  if (family.streams) return supports_stream(p, t, no, compute_units);
  if (p.num_groups() > INT_MAX) return no("N*G exceeds the grid's 2^31-1 workgroups");
  const int v = spec_.vector;
  if (spans(p, t, v, family)) {
    // any spatial size and 16-byte phase, the runs peeled (families/grid.hpp); the onchip
    // forward and backward let a vector cross one channel's end at most (fwd_onchip_span,
    // bwd_onchip_run)
    if (std::string m = unpeelable(p, t, v); !m.empty()) return no(std::move(m));
    const bool backward = describe(p.op).backward;
    if (!backward && v * std::int64_t(size_of(p.x_dtype)) != kPeeledForwardVectorBytes)
      return no("a peeled forward takes " + std::to_string(kPeeledForwardVectorBytes) + "-byte vectors only");
    if ((!backward || family.holds_group) && p.spatial_size() < v)
      return no("spatial size " + std::to_string(p.spatial_size()) + " is below the vector " + std::to_string(v) +
                " (a peeled onchip or forward run's vector crosses one channel's end at most)");
    // (the forward's peeled group past one workgroup is held in parts, or not: below)
    if (const std::int64_t held = spec_.chunk_elements(); backward && family.holds_group && p.group_elements() > held)
      return no("the group's " + std::to_string(p.group_elements()) + " elements exceed the " + std::to_string(held) +
                " a peeled group holds on chip");
  } else if (columns(p)) {
    // a group narrower than the vector: a workgroup a column of V channels of a sample, its
    // rows block apart (families/onchip.hpp: fwd_onchip_columns, bwd_onchip_columns)
    if (v % p.channels_per_group() != 0)
      return no("C/G " + std::to_string(p.channels_per_group()) + " does not divide the vector " + std::to_string(v));
    if (p.c % v != 0) return no("C " + std::to_string(p.c) + " is not a multiple of the vector " + std::to_string(v));
    if (std::string m = misaligned(p, t, v); !m.empty()) return no(std::move(m));
    const std::int64_t held = std::int64_t(spec_.block) * spec_.per_thread;
    // (parts 1 where the op has no parts, the backward: the column must fit one workgroup)
    if (p.spatial_size() > held * std::max(1, onchip_parts(p).parts))
      return no("the " + std::to_string(p.spatial_size()) + " positions exceed the " + std::to_string(held) +
                " rows a workgroup of " + std::to_string(spec_.block) + " holds in a column" + parts_refused(p));
    return true;
  } else if (v > 1) {
    if (group_run(p) % v != 0)
      return no((p.layout == Layout::channels_first ? "spatial size " : "C/G ") + std::to_string(group_run(p)) +
                " is not a multiple of the vector " + std::to_string(v));
    if (p.layout == Layout::channels_last && p.last_group_channels() % v != 0)
      return no("the last group's " + std::to_string(p.last_group_channels()) +
                " channels are not a multiple of the vector " + std::to_string(v));
    if (std::string m = misaligned(p, t, v); !m.empty()) return no(std::move(m));
  }
  const OnchipParts parts = onchip_parts(p);
  if (family.holds_group && (parts.parts == 0 || (parts.parts == 1 && p.group_elements() > spec_.chunk_elements())))
    return no("the group's " + std::to_string(p.group_elements()) + " elements exceed the " +
              std::to_string(spec_.chunk_elements()) + " held on chip" + (parts.parts == 0 ? parts_refused(p) : ""));
  if (family.rows_channels_last && p.layout == Layout::channels_last) {
    const std::int64_t columns = p.channels_per_group() / v;
    const std::int64_t held = onchip_cl_rows(spec_.block, spec_.per_thread, columns);
    if (p.spatial_size() > held * parts.parts)
      return no("the group's " + std::to_string(p.spatial_size()) + " positions exceed the " + std::to_string(held) +
                " rows a workgroup of " + std::to_string(spec_.block) + " holds at " + std::to_string(columns) +
                " vectors a row");
  }
  if (family.splits_group && slices(p) < 0)
    return no("the group needs more than " + std::to_string(kMaxSlices) + " slices");
  if (family.splits_group) {
    // both passes run one-dimensional grids (families/split.hpp) of N*G x
    // slices workgroups, and the backward's first N*G x units (C/G channels-first, C/G/V
    // vector columns channels-last)
    const std::int64_t units = !describe(p.op).backward            ? 0
                               : p.layout == Layout::channels_first ? split_rows(p, compute_units).units
                                                                    : p.channels_per_group() / v;
    const std::int64_t per_group = std::max<std::int64_t>(units, slices(p));
    if (p.num_groups() * per_group > INT_MAX)
      return no("the grid of N*G x " + std::to_string(per_group) + " workgroups exceeds 2^31-1");
  }
  return true;
}

template <typename No>
bool Instance::supports_stream(const Problem& p, const Tensors* t, No no, int compute_units) const {
  const std::int64_t v = spec_.vector;
  if (p.num_groups() > INT_MAX) return no("N*G exceeds 2^31-1 groups");
  if (p.layout == Layout::channels_first) {
    // stream_fwd_cf.hpp: every share holds a 16-byte vector of the tensor's body, whose
    // vectors and a group's elements it counts in 32 bits, and a vector crosses one channel
    // end at most
    if (p.elements() < 2 * v)
      return no("the tensor's " + std::to_string(p.elements()) + " elements are fewer than two vectors of " +
                std::to_string(v));
    if (p.elements() / v >= INT_MAX) return no("the tensor has 2^31-1 vectors or more");
    if (p.group_elements() > INT_MAX) return no("a group exceeds 2^31-1 elements");
    if (p.spatial_size() < v)
      return no("the spatial size " + std::to_string(p.spatial_size()) + " is below the vector " + std::to_string(v));
    const std::int64_t rows = stream_cf_affine_rows(stream_cf_chunk(p, compute_units), spec_.vector, p.spatial_size());
    if (rows * 8 > kStreamCfTableBytes)
      return no("a workgroup's share touches " + std::to_string(rows) + " channel rows, more than the " +
                std::to_string(kStreamCfTableBytes / 8) + " staged");
    return same_phase(p, t, v, no);
  }
  // the kernel indexes rows (pixels) of a sample in 32 bits
  if (p.spatial_size() > INT_MAX) return no("the spatial size exceeds 2^31-1 positions");
  if (p.c % v != 0) return no("C " + std::to_string(p.c) + " is not a multiple of the vector " + std::to_string(v));
  const StreamShape shape = stream_cl_shape(p.c, spec_.vector, spec_.block);
  if (shape.cols > spec_.per_thread)
    return no("C/" + std::to_string(v) + " = " + std::to_string(p.c / v) + " vectors a row exceed the block of " +
              std::to_string(spec_.block) + " x " + std::to_string(spec_.per_thread));
  const bool backward = describe(p.op).backward;
  // the backward's phase 2 indexes (sample, channel) pairs, its phase 1 one item's channels in 32 bits
  if (backward && p.n * p.c > INT_MAX) return no("N*C exceeds 2^31-1");
  const std::int64_t smem = stream_cl_smem_floats(p.c, shape.lanes, backward) * 4;
  if (smem > kResidentMaxSmem)
    return no("C needs " + std::to_string(smem) + " bytes of shared memory, more than " +
              std::to_string(kResidentMaxSmem));
  if (std::string m = misaligned(p, t, v); !m.empty()) return no(std::move(m));
  return true;
}

// The channels-first forwards that peel (resident, stream) read x and write y with one 16-byte
// phase: the head peels both.
template <typename No>
bool Instance::same_phase(const Problem& p, const Tensors* t, std::int64_t v, No no) {
  const std::int64_t elem = std::int64_t(size_of(p.x_dtype));
  if (t && t->x && t->y && (address(t->x) % (v * elem)) != (address(t->y) % (v * elem)))
    return no("x and y differ in alignment modulo " + std::to_string(v * elem) + " bytes");
  if (t && ((t->x && address(t->x) % elem) || (t->y && address(t->y) % elem)))
    return no("x or y is not aligned to its element size");
  return true;
}

template <typename No>
bool Instance::supports_resident(const Problem& p, const Tensors* t, No no, int compute_units) const {
  const std::int64_t v = spec_.vector;
  const ResidentShape r = resident_shape(p);
  // Slices of a unit wait for each other, so they must be resident together: one workgroup per
  // compute unit always fits, more depends on occupancy, which only the launch knows.
  const int cus = compute_units > 0 ? compute_units : kDefaultComputeUnits;
  if (r.slices > cus && !r.streaming)
    return no("a " + std::string(p.layout == Layout::channels_first ? "group" : r.chunk < p.c ? "chunk of a sample" : "sample") + " needs " +
              std::to_string(r.slices) + " workgroups at once, more than the " + std::to_string(cus) +
              " compute units hold");
  if (p.layout == Layout::channels_first) {
    // the staged scale/shift: channels one slice touches
    const std::int64_t slice = std::int64_t(spec_.block) * spec_.per_thread * v;
    const std::int64_t touched = std::min(p.channels_per_group(), slice / p.spatial_size() + 2);
    if (touched > kResidentStageChannels)
      return no("a slice touches " + std::to_string(touched) + " channels, more than the " +
                std::to_string(kResidentStageChannels) + " staged");
    return same_phase(p, t, v, no);
  }
  if (p.c % v != 0) return no("C " + std::to_string(p.c) + " is not a multiple of the vector " + std::to_string(v));
  // the forward divides its item indices as 32-bit numbers (resident_fwd.hpp: div31)
  if (!describe(p.op).backward && r.items() > std::numeric_limits<std::int32_t>::max())
    return no(std::to_string(r.items()) + " items (chunks of a sample x slices), more than a 32-bit index holds");
  if (r.chunk / v > spec_.block)
    return no("C/" + std::to_string(v) + " = " + std::to_string(r.chunk / v) + " vectors a row" +
              (describe(p.op).backward ? "" : " (and of any chunk of whole groups)") + " exceed the block of " +
              std::to_string(spec_.block));
  // the backward has no bulk-copy stages (resident_bwd.hpp), nor has a forward of chunks
  // narrower than C (its rows are not one contiguous span)
  const OpDescriptor& op = describe(p.op);
  const std::int64_t smem =
      !op.backward ? resident_cl_smem_floats(r.chunk, r.chunk / p.channels_per_group(), r.row_lanes, r.slices) * 4 +
                         (r.chunk == p.c ? resident_stage_bytes(spec_.block, spec_.per_thread) : 0)
                   : resident_bwd_cl_smem_floats(p.c, p.groups, r.row_lanes) * 4;
  if (smem > kResidentMaxSmem)
    return no("C and G need " + std::to_string(smem) + " bytes of shared memory, more than " +
              std::to_string(kResidentMaxSmem));
  if (std::string m = misaligned(p, t, v); !m.empty()) return no(std::move(m));
  return true;
}

std::size_t Instance::workspace_bytes(const Problem& p, int compute_units) const {
  const FamilyDescriptor& family = describe(spec_.family);
  const OpDescriptor& op = describe(p.op);
  if (family.streams && p.layout == Layout::channels_first) {
    // the barrier counters, then the float4 slots of (share, group) pairs: of one wave, the
    // tensor, or of the waves its launcher may cut it into (stream_cf_slots)
    return counter_words_bytes(kStreamCounterWords) +
           std::size_t(stream_cf_slots(stream_items(p, compute_units).items, p.num_groups())) * 4 * sizeof(float);
  }
  if (family.streams) {
    // the barrier counters, then the partials and group_stats (stream_pairs)
    const StreamPairs pairs = stream_pairs(p, stream_items(p, compute_units).items);
    return counter_words_bytes(kStreamCounterWords) + (pairs.partials + pairs.group_stats) * 2 * sizeof(float);
  }
  if (family.persistent) {
    const ResidentShape r = resident_shape(p);
    // the backward: first the per-(n, c) sums S1, S2 for dgamma/dbeta
    const std::size_t sums = resident_sums_bytes(p);
    if (r.streaming) return sums + std::size_t(p.n) * std::size_t(p.groups) * 2 * sizeof(float);  // and A, B
    if (r.slices == 1) return sums;
    // arrival counters, then the partials of every slice: per group of its unit (mean, M2)
    // forward, (A, B) backward; channels-first, a unit is one group
    const std::size_t per_slice =
        p.layout == Layout::channels_first ? 2 : 2 * std::size_t(r.chunk / p.channels_per_group());
    return sums + unit_counter_bytes(r.units) + std::size_t(r.items()) * per_slice * sizeof(float);
  }
  if (!op.backward)
    return family.splits_group ? std::size_t(p.num_groups()) * std::size_t(slices(p)) * 3 * sizeof(float) : 0;
  // backward: the per-(n, c) sums S1, S2, which dgamma and dbeta are made of; an op without
  // them (dx) needs them only to carry A, B across a split family's two passes
  if (!((op.writes | op.writes_with_gamma) & kDgamma) && !family.splits_group) return 0;
  // the channels-first split's pieces of long rows follow, [N, C, pieces] pairs
  const std::int64_t pieces = split_rows(p, compute_units).pieces;
  return std::size_t(p.n) * std::size_t(p.c) * 2 * sizeof(float) * (pieces > 1 ? 1 + std::size_t(pieces) : 1);
}

std::size_t Instance::counter_bytes(const Problem& p, int) const {
  const FamilyDescriptor& family = describe(spec_.family);
  const OpDescriptor& op = describe(p.op);
  if (family.streams) return counter_words_bytes(kStreamCounterWords);
  // a count a group of a sample, for the last of its samples to add up dgamma and dbeta
  // (grid.hpp: gamma_beta_by_arrival); one sample has nothing to count
  if (family.gamma_beta_arrivals)
    return ((op.writes | op.writes_with_gamma) & kDgamma) && p.n > 1 ? unit_counter_bytes(p.groups) : 0;
  if (!family.persistent) return 0;
  // the slices of a unit exchange in one launch (the backward only to write dx: dgb's per-slice
  // sums are added by a kernel of their own)
  const ResidentShape r = resident_shape(p);
  const bool exchange = r.slices > 1 && !r.streaming && (!op.backward || (op.writes & kDx));
  return exchange ? unit_counter_bytes(r.units) : 0;
}

Status Instance::run(const Problem& p, const Tensors& t, void* workspace, hipStream_t stream, int compute_units,
                     void* zeroed_counters) const {
  const std::int64_t hw = p.spatial_size(), cg = p.channels_per_group();
  const bool cf = p.layout == Layout::channels_first;
  Params k{};
  k.x = t.x;
  k.y = t.y;
  k.gamma = t.gamma;
  k.beta = t.beta;
  k.mean = t.mean;
  k.rstd = t.rstd;
  k.dy = t.dy;
  k.dx = t.dx;
  // dgamma/dbeta only where the op writes them and affine is on
  const OpDescriptor& d = describe(p.op);
  const bool gamma_beta = ((d.writes | d.writes_with_gamma) & kDgamma) && t.gamma;
  k.dgamma = gamma_beta ? t.dgamma : nullptr;
  k.dbeta = gamma_beta ? t.dbeta : nullptr;
  k.workspace = static_cast<float*>(workspace);
  k.channels = p.c;
  k.groups_per_sample = p.groups;
  k.channels_per_group = cg;
  k.sample_stride = p.c * hw;
  k.group_stride = cf ? cg * hw : cg;
  k.row_stride = cf ? hw : p.c;
  k.vectors = cg * hw / spec_.vector;  // peeled (span): at least the body's vectors
  k.vectors_per_row = FastDivmod::make(std::uint64_t(std::max<std::int64_t>(1, group_run(p) / spec_.vector)));
  k.group_elements = p.group_elements();
  // the last group of a sample: wider where the groups are uneven (primitives/view.hpp: UnevenGroups)
  const std::int64_t last = p.last_group_channels();
  k.last_channels = last;
  k.last_vectors = last * hw / spec_.vector;
  k.last_vectors_per_row = cf ? k.vectors_per_row : FastDivmod::make(std::uint64_t(std::max<std::int64_t>(1, last / spec_.vector)));
  k.last_group_elements = last * hw;
  k.spatial_size = hw;
  k.spatial = FastDivmod::make(std::uint64_t(hw));
  k.groups_div = FastDivmod::make(std::uint64_t(p.groups));
  k.group_rcp = 1.0 / double(p.group_elements());
  k.phase = phase_of(p, t, spec_.vector);
  {
    const std::size_t bytes = std::size_t(spec_.vector) * size_of(p.gamma_dtype);
    k.affine_vectors = p.layout == Layout::channels_last && spec_.vector > 1 && address(t.gamma) % bytes == 0 &&
                       address(t.beta) % bytes == 0;
  }
  k.span = describe(spec_.family).persistent || describe(spec_.family).streams
               ? 0
               : spans(p, &t, spec_.vector, describe(spec_.family));
  k.num_groups = static_cast<std::int32_t>(p.num_groups());
  k.slices = describe(spec_.family).splits_group ? slices(p) : 1;
  if (const OnchipParts parts = onchip_parts(p); parts.parts > 1) {
    k.slices = parts.parts;
    k.part_rows = parts.part_rows;
  }
  k.split_rows = split_rows(p, compute_units);
  if (k.split_rows.pieces > 1) k.partials = k.workspace + p.n * p.c * 2;
  k.eps = p.eps;
  k.swish_beta = p.swish_beta;
  if (describe(spec_.family).persistent) {
    const ResidentShape r = resident_shape(p);
    k.slices = std::int32_t(r.slices);
    k.items = r.items();
    k.slices_div = FastDivmod::make(std::uint64_t(r.slices));
    k.cpg_div = FastDivmod::make(std::uint64_t(cg));
    k.slice_vectors = spec_.block * spec_.per_thread;
    k.row_lanes = r.row_lanes;
    k.chunk_channels = std::int32_t(r.chunk);
    // channels-last: the rows in equal slices, each at most row_lanes x per_thread (what the
    // slice count was made from), not full slices and a remainder: sd15_64x320's 4096 rows at
    // 408 a slice left 16 in the last of 11, and the cluster waited on ten slices of 408
    if (!cf) k.part_rows = ceil_div(hw, r.slices);
    k.pass = r.streaming ? 1 : 0;
    if (r.streaming) {
      k.partials = reinterpret_cast<float*>(static_cast<char*>(workspace) + resident_sums_bytes(p));
    } else if (r.slices > 1) {
      char* exchange = static_cast<char*>(workspace) + resident_sums_bytes(p);
      k.counters = reinterpret_cast<std::uint32_t*>(exchange);
      k.partials = reinterpret_cast<float*>(exchange + unit_counter_bytes(r.units));
    }
  }
  if (describe(spec_.family).streams) {
    // both layouts: the barrier counters first in the workspace, then the exchanged partials
    k.counters = static_cast<std::uint32_t*>(workspace);
    k.partials = reinterpret_cast<float*>(static_cast<char*>(workspace) + counter_words_bytes(kStreamCounterWords));
  }
  if (describe(spec_.family).streams && cf) {
    // the aligned body's vectors in equal shares, one a workgroup the device runs at once
    const std::int64_t v = spec_.vector, total = p.elements(), head = std::min<std::int64_t>((v - k.phase) % v, total);
    const std::int64_t chunk = stream_cf_chunk(p, compute_units);
    k.items = ceil_div((total - head) / v, chunk);
    k.slice_vectors = std::int32_t(chunk);
    k.slices_div = FastDivmod::make(std::uint64_t(chunk));
    k.spatial_rcp = 1.0 / double(hw);
    k.channels_rcp = 1.0 / double(p.c);
    k.affine_rows = std::int32_t(stream_cf_affine_rows(chunk, spec_.vector, hw));
    // one wave, the tensor, unless its launcher finds it more than the workgroups hold
    k.wave_groups = k.num_groups;
  } else if (describe(spec_.family).streams) {
    const StreamItems s = stream_items(p, compute_units);
    k.slices = std::int32_t(s.parts);
    k.items = s.items;
    k.part_rows = s.part_rows;
    k.slices_div = FastDivmod::make(std::uint64_t(s.parts));
    k.cpg_div = FastDivmod::make(std::uint64_t(cg));
    k.group_stats = k.partials + stream_pairs(p, s.items).partials * 2;
  }
  if (workspace_bytes(p, compute_units) && !workspace) return Status::error(StatusCode::invalid_argument, name_ + " needs a workspace");
  // (callers pass them where counter_bytes() is nonzero; a launch that counts nothing ignores them)
  if (zeroed_counters) {
    k.counters = static_cast<std::uint32_t*>(zeroed_counters);
    k.counters_zeroed = 1;
  }
  const hipError_t e = launch_(k, stream);
  if (e != hipSuccess)
    return Status::error(StatusCode::runtime_error, name_ + ": launch failed: " + hipGetErrorString(e));
  return Status::success();
}

}  // namespace hipgn
