// One generated kernel instance: its spec (whose name is its identity everywhere), what
// problems it supports, its workspace, and how to launch it.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "hipgn/family.hpp"
#include "hipgn/params.hpp"
#include "hipgn/platform.hpp"
#include "hipgn/problem.hpp"
#include "hipgn/targets.hpp"

namespace hipgn {

// The functional key: instances with one key are interchangeable for a problem.
struct Key {
  Op op;
  DataType x_dtype, gamma_dtype;
  Layout layout;
  Activation act;
  bool operator==(const Key& o) const {
    return op == o.op && x_dtype == o.x_dtype && gamma_dtype == o.gamma_dtype && layout == o.layout && act == o.act;
  }
  bool operator<(const Key& o) const;
  std::string to_string() const;  // "fwd_f16_f32_cl_swish": codegen's bucket name
  static Key of(const Problem&);
};

// A group as rows of contiguous runs: channels-first a run is a channel's spatial positions,
// channels-last the group's C/G channels at one position (the last group's may be wider where
// groups are uneven: Problem::last_group_channels). A vector access must divide it.
std::int64_t group_run(const Problem& p);
// The same run in bytes of x (the heuristic's rules on narrow and wide runs).
std::int64_t run_bytes(const Problem& p);

struct InstanceSpec {
  Op op;
  DataType x_dtype, gamma_dtype;
  Layout layout;
  Activation act;
  Family family;
  int block;       // threads per workgroup
  int vector;      // elements per vector access
  int per_thread;  // onchip/split: vectors per thread; looped: vectors in flight

  Key key() const { return {op, x_dtype, gamma_dtype, layout, act}; }
  // Supports every valid problem of its key (the family's generic vector: no size limit, no
  // alignment need; codegen/families.py).
  bool generic() const { return describe(family).generic_vector == vector; }
  // Elements one workgroup holds on chip (onchip) or handles per slice (split).
  std::int64_t chunk_elements() const { return std::int64_t(block) * vector * per_thread; }
  // The name (codegen/vocabulary.py's NAME_FIELDS; generated: instance_name.cpp) and its parser.
  std::string name() const;
  static std::optional<InstanceSpec> parse(std::string_view name);
  bool operator==(const InstanceSpec& o) const { return name() == o.name(); }
};

// The name grammar in words, for messages: "gn_<op>_..._e<per thread>".
extern const char* const kInstanceNameGrammar;

using LaunchFn = hipError_t (*)(const Params&, hipStream_t);
// How many clusters of `parts` workgroups the device runs at once with the instance's kernel in
// parts of that kind (params.hpp: PartsKernel; kernels/include/hipgn/kernels/launch.hpp:
// Launcher::clusters_at_once); 0 where it has none, or no device runs one.
using ClustersFn = int (*)(int parts, PartsKernel kind);

// The onchip family holds a group in parts (Instance::onchip_parts) from groups of this many
// elements, either layout, either direction (the backward's measured in bench/NOTES.md, "The
// backward in parts"): a cluster's launch and exchange cost ~0.5-0.7 us, which only larger
// groups repay. Measured on an H100 (fp16 SiLU, L2-cold, bench.py --best, 2026-11-28; bench/
// NOTES.md, "A group in parts"), one workgroup a group against the fastest instance in parts:
// sd15_8x1280 (2560 elements) 3.1 us against 3.8, sd15_16x640 (5120) 4.5 against 4.6,
// sd15_8x2560 (5120) 4.1 against 4.1; sd15_32x320 (10240) 7.1 against 6.3, sd15_16x1280
// (10240) 5.3 against 5.0, sd15_32x640 (20480) 9.1 (bench/results before) against 7.4.
inline constexpr std::int64_t kOnchipPartsFromElements = 8192;

// Compute units assumed where no device was asked (listing without a GPU): the assumed
// target's (codegen/vocabulary.py: an H100 SXM).
inline constexpr int kDefaultComputeUnits = kAssumedTarget.compute_units;

class Instance {
 public:
  Instance(const InstanceSpec& spec, LaunchFn launch, ClustersFn clusters = nullptr)
      : spec_(spec), name_(spec.name()), launch_(launch), clusters_(clusters) {}
  const InstanceSpec& spec() const { return spec_; }
  const std::string& name() const { return name_; }

  // Whether this instance computes the problem. Tensors, when given, are checked for the
  // alignment vector access needs; without them 16-byte-aligned pointers are assumed. On
  // false, *why (if given) says which constraint failed.
  // compute_units: the device's (0: kDefaultComputeUnits), which bounds how many workgroups
  // may wait for each other.
  bool supports(const Problem&, const Tensors* tensors = nullptr, std::string* why = nullptr,
                int compute_units = 0) const;
  // compute_units (0: kDefaultComputeUnits) sets how the stream family cuts a problem into
  // items; workspace_bytes and run must be given the same.
  std::size_t workspace_bytes(const Problem&, int compute_units = 0) const;
  // Bytes of arrival counters the launch counts in (0: none): workgroups that wait for each
  // other (the stream family's grid barriers, the resident family's exchange), or the last of a
  // group's samples to finish (the onchip and looped backwards' dgamma/dbeta). The waiting ones
  // are in the workspace and zeroed before each launch, unless run() is given counters of its
  // own that are zero: every launch leaves them zero (kernels/.../primitives/exchange.hpp), so
  // those need zeroing once, where they are allocated, and the launch skips a memset (~2 us);
  // without them the onchip and looped backwards launch a dgamma/dbeta kernel of their own.
  // Every family's counts are at even words (params.hpp), so one buffer serves them all.
  std::size_t counter_bytes(const Problem&, int compute_units = 0) const;
  // Launches on stream. The caller validated the problem and checked supports().
  // zeroed_counters: null, or counter_bytes(p) bytes (16-byte aligned) that are zero (above).
  Status run(const Problem&, const Tensors&, void* workspace, hipStream_t stream, int compute_units = 0,
             void* zeroed_counters = nullptr) const;

  // The resident family's shape of a problem (kernels/include/hipgn/kernels/families/resident_fwd.hpp):
  // channels-first, a unit is a group and a slice block * per_thread body vectors;
  // channels-last, a unit is a sample's `chunk` channels (whole groups; the forward's may be
  // fewer than C, the backward's are all C) and a slice row_lanes * per_thread rows of them.
  // The heuristics weigh instances by it; support, workspace and launch follow it.
  struct ResidentShape {
    std::int64_t units = 0, slices = 0, chunk = 0;
    int row_lanes = 0;
    bool streaming = false;  // the backward: slices past kResidentBwdMaxSlices, in two passes
    std::int64_t items() const { return units * slices; }
  };
  ResidentShape resident_shape(const Problem&) const;

  // The stream family's items (kernels/include/hipgn/kernels/families/stream_fwd.hpp): each sample's
  // rows cut into `parts` of part_rows rows, as many items as the device runs workgroups at
  // once or a few fewer, so that each workgroup reads one part twice, the second time from L2.
  // Channels-first (stream_fwd_cf.hpp): `items` only, the most workgroups the device runs at
  // once, each a share of the flat tensor.
  struct StreamItems {
    std::int64_t parts = 0, part_rows = 0, items = 0;
  };
  StreamItems stream_items(const Problem&, int compute_units) const;

  // The onchip family's parts of a group (kernels/include/hipgn/kernels/families/onchip.hpp:
  // fwd_onchip_parts_kernel, bwd_onchip_parts_kernel): where the group has more units than one
  // workgroup of this instance holds (channels-last rows, channels-first vectors of its aligned
  // body), a thread-block cluster of `parts` workgroups a group, part_rows units each, if the
  // device has clusters (hipgn/clusters.hpp), the group is large enough
  // (kOnchipPartsFromElements) and, backward, channels-last, of at most kOnchipPartsBwdChannels
  // channels, in an op that writes dx. The forward's channels-last groups narrower than the
  // vector the same by columns (fwd_onchip_columns_parts_kernel): a cluster a column of V
  // channels, part_rows rows each, the column's V x HW elements against the threshold.
  // parts 1 is a workgroup a group (every other instance); parts 0, the group does not fit.
  // Support, launch and the heuristics follow it.
  struct OnchipParts {
    int parts = 1;
    std::int64_t part_rows = 0;
  };
  OnchipParts onchip_parts(const Problem&) const;
  // For the heuristics (a launch needs the parts alone): in how many rounds the device runs the
  // groups' clusters of `parts` (from onchip_parts), the groups over the clusters of this
  // instance's kernel it holds at once (its occupancy query, ClustersFn); 0 where the group is
  // not in parts or no device answers.
  std::int64_t onchip_rounds(const Problem&, const OnchipParts& parts) const;
  // The clusters of `parts` the device runs at once, which onchip_rounds divides by; 0 where
  // the group is not in parts or no device answers.
  int onchip_at_once(const Problem&, const OnchipParts& parts) const;
  // The clusters a launch in parts runs, which onchip_rounds divides: a cluster a group, or a
  // column of groups.
  std::int64_t onchip_clusters(const Problem&) const;
  // Whether this instance takes the problem by columns: a family that has them
  // (FamilyDescriptor::columns_channels_last), channels-last groups narrower than its vector
  // (params.hpp: onchip_cl_columns). Support, parts, launch and the heuristics ask it here.
  bool columns(const Problem&) const;

 private:
  // clusters_ (set) for this problem's kernel in clusters of `parts` (a peeled channels-first
  // forward and a channels-last one of columns have kernels of their own)
  int clusters_at_once(const Problem&, int parts) const;
  // What kOnchipPartsFromElements counts: a column's V x HW elements where the problem is taken
  // by columns, else the group's.
  std::int64_t parts_elements(const Problem&) const;
  // Why onchip_parts found no parts for a problem it does not hold whole (a support message's end).
  std::string parts_refused(const Problem&) const;
  int slices(const Problem&) const;
  // The channels-first split backward's first-pass units (params.hpp: split_bwd_cf_rows); the
  // default (a workgroup a channel row) for every other instance.
  SplitRows split_rows(const Problem&, int compute_units) const;
  // Bytes of `words` arrival counter words, padded to 16.
  static std::size_t counter_words_bytes(std::int64_t words);
  // Bytes of the arrival counters of `units` units (two words a unit: unit_counter_words), padded to 16.
  static std::size_t unit_counter_bytes(std::int64_t units);
  // Bytes of the resident backward's per-(item, channel) sums for dgamma/dbeta (ops dgb, bwd),
  // padded to 16; the counters and partials follow them.
  std::size_t resident_sums_bytes(const Problem&) const;
  template <typename No>
  bool supports_stream(const Problem&, const Tensors*, No no, int compute_units) const;
  std::int64_t stream_cf_chunk(const Problem&, int compute_units) const;
  template <typename No>
  static bool same_phase(const Problem&, const Tensors*, std::int64_t vector, No no);
  template <typename No>
  bool supports_resident(const Problem&, const Tensors*, No no, int compute_units) const;
  InstanceSpec spec_;
  std::string name_;
  LaunchFn launch_;
  ClustersFn clusters_;
};

}  // namespace hipgn
