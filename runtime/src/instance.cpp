// Instance names (the grammar of codegen/spec.py), support checks, workspace and launch.
#include "hipgn/instance.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <tuple>
#include <cstdio>
#include <string>
#include <vector>

namespace hipgn {

bool Key::operator<(const Key& o) const {
  auto t = [](const Key& k) { return std::make_tuple(int(k.op), int(k.x_dtype), int(k.gamma_dtype), int(k.layout), int(k.act)); };
  return t(*this) < t(o);
}

std::string Key::to_string() const {
  std::string s;
  for (std::string_view part : {hipgn::to_string(op), hipgn::to_string(x_dtype), hipgn::to_string(gamma_dtype),
                                hipgn::to_string(layout), hipgn::to_string(act)})
    s.append(s.empty() ? "" : "_").append(part);
  return s;
}

Key Key::of(const Problem& p) { return {p.op, p.x_dtype, p.gamma_dtype, p.layout, p.act}; }

std::string InstanceSpec::name() const {
  return "gn_" + key().to_string() + "_" + std::string(hipgn::to_string(family)) + "_b" + std::to_string(block) +
         "_v" + std::to_string(vector) + "_e" + std::to_string(per_thread);
}

std::optional<InstanceSpec> InstanceSpec::parse(std::string_view name) {
  std::vector<std::string_view> f;
  for (std::size_t start = 0;;) {
    const std::size_t end = name.find('_', start);
    f.push_back(name.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  auto number = [](std::string_view s, char prefix, int& out) {
    if (s.size() < 2 || s[0] != prefix || s.size() > 6) return false;
    out = 0;
    for (char ch : s.substr(1)) {
      if (ch < '0' || ch > '9') return false;
      out = out * 10 + (ch - '0');
    }
    return true;
  };
  InstanceSpec s{};
  if (f.size() != 10 || f[0] != "gn" || !hipgn::parse(f[1], s.op) || !hipgn::parse(f[2], s.x_dtype) ||
      !hipgn::parse(f[3], s.gamma_dtype) || !hipgn::parse(f[4], s.layout) || !hipgn::parse(f[5], s.act) ||
      !hipgn::parse(f[6], s.family) || !number(f[7], 'b', s.block) || !number(f[8], 'v', s.vector) ||
      !number(f[9], 'e', s.per_thread))
    return std::nullopt;
  if (s.name() != name) return std::nullopt;  // e.g. leading zeros: one spelling per spec
  return s;
}

namespace {
// The group is rows x cols with cols contiguous: channels-first cols are the spatial
// positions, channels-last cols the group's channels.
std::int64_t cols(const Problem& p) {
  return p.layout == Layout::channels_first ? p.spatial_size() : p.channels_per_group();
}
constexpr std::int64_t kMaxSlices = 65535;  // the grid's y limit on both vendors
std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
std::uintptr_t address(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }
}  // namespace

std::size_t Instance::resident_counter_bytes(std::int64_t units) { return (std::size_t(units) * 4 + 15) / 16 * 16; }
std::size_t Instance::resident_sums_bytes(const Problem& p) const {
  const ResidentShape r = resident_shape(p);
  if (p.op == Op::fwd || (p.op == Op::dx && !r.streaming)) return 0;
  return (std::size_t(r.items()) * std::size_t(p.c) * 2 * sizeof(float) + 15) / 16 * 16;
}

Instance::ResidentShape Instance::resident_shape(const Problem& p) const {
  ResidentShape r;
  const std::int64_t v = spec_.vector;
  if (p.layout == Layout::channels_first) {
    r.units = p.num_groups();
    r.slices = std::max<std::int64_t>(1, ceil_div(p.group_elements() / v, std::int64_t(spec_.block) * spec_.per_thread));
  } else {
    r.units = p.n;
    r.row_lanes = int(std::max<std::int64_t>(1, spec_.block / std::max<std::int64_t>(1, p.c / v)));
    r.slices = ceil_div(p.spatial_size(), std::int64_t(r.row_lanes) * spec_.per_thread);
    r.streaming = p.op != Op::fwd && r.slices > kResidentBwdMaxSlices;
  }
  return r;
}

int Instance::slices(const Problem& p) const {
  const std::int64_t chunk = spec_.chunk_elements();
  const std::int64_t s = (p.group_elements() + chunk - 1) / chunk;
  return s > kMaxSlices ? -1 : int(s);
}

bool Instance::supports(const Problem& p, const Tensors* t, std::string* why, int compute_units) const {
  auto no = [why](std::string m) {
    if (why) *why = std::move(m);
    return false;
  };
  if (!(spec_.key() == Key::of(p))) return no("functional key " + Key::of(p).to_string() + " differs");
  if (spec_.family == Family::resident) return supports_resident(p, t, no, compute_units);
  if (p.num_groups() > INT_MAX) return no("N*G exceeds the grid's 2^31-1 workgroups");
  const int v = spec_.vector;
  if (v > 1) {
    if (cols(p) % v != 0)
      return no((p.layout == Layout::channels_first ? "spatial size " : "C/G ") + std::to_string(cols(p)) +
                " is not a multiple of the vector " + std::to_string(v));
    const std::size_t align = std::size_t(v) * size_of(p.x_dtype);
    auto misaligned = [align](const void* ptr) { return reinterpret_cast<std::uintptr_t>(ptr) % align != 0; };
    if (t && (misaligned(t->x) || (p.op == Op::fwd ? misaligned(t->y) : misaligned(t->dy) || misaligned(t->dx))))
      return no(std::string(p.op == Op::fwd ? "x or y" : "x, dy or dx") + " is not aligned to " +
                std::to_string(align) + " bytes");
  }
  if (spec_.family == Family::onchip && p.group_elements() > spec_.chunk_elements())
    return no("the group's " + std::to_string(p.group_elements()) + " elements exceed the " +
              std::to_string(spec_.chunk_elements()) + " held on chip");
  if (spec_.family == Family::split && slices(p) < 0)
    return no("the group needs more than " + std::to_string(kMaxSlices) + " slices");
  if (spec_.family == Family::split && p.op != Op::fwd && p.channels_per_group() > kMaxSlices)
    return no("C/G exceeds the " + std::to_string(kMaxSlices) + " workgroups of a grid column");
  return true;
}

template <typename No>
bool Instance::supports_resident(const Problem& p, const Tensors* t, No no, int compute_units) const {
  const std::int64_t v = spec_.vector, elem = std::int64_t(size_of(p.x_dtype));
  const ResidentShape r = resident_shape(p);
  // Slices of a unit wait for each other, so they must be resident together: one workgroup per
  // compute unit always fits, more depends on occupancy, which only the launch knows.
  const int cus = compute_units > 0 ? compute_units : kDefaultComputeUnits;
  if (r.slices > cus && !r.streaming)
    return no("a " + std::string(p.layout == Layout::channels_first ? "group" : "sample") + " needs " +
              std::to_string(r.slices) + " workgroups at once, more than the " + std::to_string(cus) +
              " compute units hold");
  if (p.op != Op::fwd && p.layout == Layout::channels_first)
    return no("the channels-first resident backward is not written yet");
  if (p.layout == Layout::channels_first) {
    // the staged scale/shift: channels one slice touches
    const std::int64_t slice = std::int64_t(spec_.block) * spec_.per_thread * v;
    const std::int64_t touched = std::min(p.channels_per_group(), slice / p.spatial_size() + 2);
    if (touched > kResidentStageChannels)
      return no("a slice touches " + std::to_string(touched) + " channels, more than the " +
                std::to_string(kResidentStageChannels) + " staged");
    // x and y are read and written with the same 16-byte phase: the head peels both
    if (t && t->x && t->y && (address(t->x) % (v * elem)) != (address(t->y) % (v * elem)))
      return no("x and y differ in alignment modulo " + std::to_string(v * elem) + " bytes");
    if (t && ((t->x && address(t->x) % elem) || (t->y && address(t->y) % elem)))
      return no("x or y is not aligned to its element size");
    return true;
  }
  if (p.c % v != 0) return no("C " + std::to_string(p.c) + " is not a multiple of the vector " + std::to_string(v));
  if (p.c / v > spec_.block)
    return no("C/" + std::to_string(v) + " = " + std::to_string(p.c / v) + " vectors a row exceed the block of " +
              std::to_string(spec_.block));
  // the backward has no bulk-copy stages (resident_bwd.hpp)
  const std::int64_t smem = p.op == Op::fwd ? resident_cl_smem_floats(p.c, p.groups, r.row_lanes) * 4 +
                                                   resident_stage_bytes(spec_.block, spec_.per_thread)
                                             : resident_bwd_cl_smem_floats(p.c, p.groups, r.row_lanes) * 4;
  if (smem > kResidentMaxSmem)
    return no("C and G need " + std::to_string(smem) + " bytes of shared memory, more than " +
              std::to_string(kResidentMaxSmem));
  const std::size_t align = std::size_t(v * elem);
  auto misaligned = [align](const void* ptr) { return address(ptr) % align != 0; };
  if (t && (misaligned(t->x) || (p.op == Op::fwd ? misaligned(t->y) : misaligned(t->dy) || misaligned(t->dx))))
    return no(std::string(p.op == Op::fwd ? "x or y" : "x, dy or dx") + " is not aligned to " +
              std::to_string(align) + " bytes");
  return true;
}

std::size_t Instance::workspace_bytes(const Problem& p) const {
  if (spec_.family == Family::resident) {
    const ResidentShape r = resident_shape(p);
    // the backward: first the per-(n, c) sums S1, S2 for dgamma/dbeta
    const std::size_t sums = resident_sums_bytes(p);
    if (r.streaming) return sums + std::size_t(p.n) * std::size_t(p.groups) * 2 * sizeof(float);  // and A, B
    if (r.slices == 1) return sums;
    // arrival counters, then the partials of every slice: per group (mean, M2) forward, (A, B)
    // backward; channels-first, a unit is one group
    const std::size_t per_slice = p.layout == Layout::channels_first ? 2 : 2 * std::size_t(p.groups);
    return sums + resident_counter_bytes(r.units) + std::size_t(r.items()) * per_slice * sizeof(float);
  }
  if (p.op == Op::fwd)
    return spec_.family == Family::split ? std::size_t(p.num_groups()) * std::size_t(slices(p)) * 3 * sizeof(float) : 0;
  // backward: the per-(n, c) sums S1, S2; op dx needs them only to carry A, B across the
  // split family's two passes
  if (p.op == Op::dx && spec_.family != Family::split) return 0;
  return std::size_t(p.n) * std::size_t(p.c) * 2 * sizeof(float);
}

Status Instance::run(const Problem& p, const Tensors& t, void* workspace, hipStream_t stream) const {
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
  const bool gamma_beta = (p.op == Op::dgb || p.op == Op::bwd) && t.gamma;
  k.dgamma = gamma_beta ? t.dgamma : nullptr;
  k.dbeta = gamma_beta ? t.dbeta : nullptr;
  k.workspace = static_cast<float*>(workspace);
  k.channels = p.c;
  k.groups_per_sample = p.groups;
  k.channels_per_group = cg;
  k.sample_stride = p.c * hw;
  k.group_stride = cf ? cg * hw : cg;
  k.row_stride = cf ? hw : p.c;
  k.vectors = cg * hw / spec_.vector;
  k.vectors_per_row = FastDivmod::make(std::uint64_t(cols(p) / spec_.vector));
  k.num_groups = static_cast<std::int32_t>(p.num_groups());
  k.slices = spec_.family == Family::split ? slices(p) : 1;
  k.eps = p.eps;
  k.swish_beta = p.swish_beta;
  if (spec_.family == Family::resident) {
    const ResidentShape r = resident_shape(p);
    k.slices = std::int32_t(r.slices);
    k.items = r.items();
    k.slices_div = FastDivmod::make(std::uint64_t(r.slices));
    k.groups_div = FastDivmod::make(std::uint64_t(p.groups));
    k.cpg_div = FastDivmod::make(std::uint64_t(cg));
    k.group_elements = p.group_elements();
    k.spatial_size = hw;
    k.spatial = FastDivmod::make(std::uint64_t(hw));
    k.slice_vectors = spec_.block * spec_.per_thread;
    k.row_lanes = r.row_lanes;
    k.phase = int((address(t.x) / size_of(p.x_dtype)) % std::uintptr_t(spec_.vector));
    k.pass = r.streaming ? 1 : 0;
    if (r.streaming) {
      k.partials = reinterpret_cast<float*>(static_cast<char*>(workspace) + resident_sums_bytes(p));
    } else if (r.slices > 1) {
      char* exchange = static_cast<char*>(workspace) + resident_sums_bytes(p);
      k.counters = reinterpret_cast<std::uint32_t*>(exchange);
      k.partials = reinterpret_cast<float*>(exchange + resident_counter_bytes(r.units));
    }
  }
  if (workspace_bytes(p) && !workspace) return Status::error(StatusCode::invalid_argument, name_ + " needs a workspace");
  const hipError_t e = launch_(k, stream);
  if (e != hipSuccess)
    return Status::error(StatusCode::runtime_error, name_ + ": launch failed: " + hipGetErrorString(e));
  return Status::success();
}

}  // namespace hipgn
