// Heuristic dispatch: an ordered table of rules (data, in heuristics.cpp, each with the reason
// behind its thresholds) and a short function that reads it.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include "hipgn/registry.hpp"

namespace hipgn {

// Which part a device is, for what is measured per part (tuned winners): its architecture and
// its compute units. One architecture comes in parts of several counts (an H100 PCIe has 114
// SMs, an SXM 132), and the count moves what wins: split against one workgroup a group, how
// many workgroups a resident grid holds.
struct TargetKey {
  std::string arch;
  int compute_units = 0;
  std::string to_string() const { return arch + " x" + std::to_string(compute_units); }  // sm_90 x132
  bool operator<(const TargetKey& o) const {
    return arch != o.arch ? arch < o.arch : compute_units < o.compute_units;
  }
  bool operator==(const TargetKey& o) const { return arch == o.arch && compute_units == o.compute_units; }
};

// The device the rules weigh: its own counts where there is one (Dispatcher::create), else
// those of its target, or of the assumed target (hipgn/targets.hpp, from codegen/vocabulary.py).
struct DeviceInfo {
  std::string name = "none";  // the display name: shown, never a key
  int compute_units = 0;  // 0: unknown (no GPU); the accessors below then take the target's
  int warp_size = 32;
  std::string arch = "none";  // as the runtime reports it (sm_90, gfx90a, ...); "none" without a device
  std::int64_t l2_bytes = 0;
  std::int64_t shared_bytes_per_block = 0;  // the most a workgroup may ask for (NVIDIA: with opt-in)
  std::int64_t shared_bytes_per_cu = 0;
  static constexpr int kAssumedComputeUnits = kDefaultComputeUnits;
  // The known target of this device's architecture, or the assumed one.
  const Target& target() const {
    const Target* t = find_target(arch);
    return t ? *t : kAssumedTarget;
  }
  // What tuned winners are recorded under: as the device reports itself, never the assumed part.
  TargetKey key() const { return {arch, compute_units}; }
  // The counts thresholds weigh: the device's own where it reported one (a runtime may report
  // 0: HIP 5's L2), else its target's.
  int cus() const { return own_or(compute_units, target().compute_units); }
  std::int64_t l2() const { return own_or(l2_bytes, target().l2_bytes); }
  std::int64_t shared_per_block() const { return own_or(shared_bytes_per_block, target().shared_bytes_per_block); }
  std::int64_t shared_per_cu() const { return own_or(shared_bytes_per_cu, target().shared_bytes_per_cu); }

 private:
  template <typename T>
  static T own_or(T own, T of_target) { return own > 0 ? own : of_target; }
};

struct Rule {
  Family family;
  double max_groups_per_cu;           // the rule applies while N*G / CUs is below this
  std::int64_t min_group_elements;    // and the group holds at least this many elements
  const char* why;
  std::int64_t max_group_elements = std::numeric_limits<std::int64_t>::max();  // and at most this many
  int layouts = kAnyLayout;           // and the layout is one of these (bits of Layout)
  std::int64_t max_channels = std::numeric_limits<std::int64_t>::max();  // and C is at most this
  double min_groups_per_cu = 0;       // and N*G / CUs is at least this
  // and x holds at least min and below max bytes a compute unit (the size against the device)
  double min_bytes_per_cu = 0, max_bytes_per_cu = std::numeric_limits<double>::infinity();
  int min_vector_bytes = 0;           // and the family's best instance moves this many bytes an access
  std::int64_t min_channels = 0;      // and C is at least this
  // and a group's contiguous run (channels-last its C/G channels, every group's; channels-first
  // its H x W positions) spans a multiple of this many bytes: vectors of that width fit it
  int group_run_bytes = 0;
  int min_run_bytes = 0;              // and that run spans at least this many bytes
  int x_dtypes = kAnyDtype;           // and x's type is one of these (bits of DataType)
  // and of the family's instances those holding at most this many elements a workgroup (a chunk)
  std::int64_t max_chunk_elements = std::numeric_limits<std::int64_t>::max();
  std::int64_t min_chunk_elements = 0;  // and at least this many
  static constexpr int kAnyLayout = 3, kChannelsFirst = 1, kChannelsLast = 2;
  static constexpr int kAnyDtype = ~0;

  Rule bytes_per_cu(double min, double max) const {
    Rule r = *this;
    r.min_bytes_per_cu = min, r.max_bytes_per_cu = max;
    return r;
  }
  Rule vector_bytes(int bytes) const {
    Rule r = *this;
    r.min_vector_bytes = bytes;
    return r;
  }
  Rule chunks_of_at_most(std::int64_t elements) const {
    Rule r = *this;
    r.max_chunk_elements = elements;
    return r;
  }
  Rule chunks_of(std::int64_t elements) const {
    Rule r = chunks_of_at_most(elements);
    r.min_chunk_elements = elements;
    return r;
  }
  Rule group_runs(int bytes) const {
    Rule r = *this;
    r.group_run_bytes = bytes;
    return r;
  }
  Rule runs_from(int bytes) const {
    Rule r = *this;
    r.min_run_bytes = bytes;
    return r;
  }
  Rule channels_from(std::int64_t c) const {
    Rule r = *this;
    r.min_channels = c;
    return r;
  }
  Rule only(std::initializer_list<DataType> types) const {
    Rule r = *this;
    r.x_dtypes = 0;
    for (DataType t : types) r.x_dtypes |= 1 << int(t);
    return r;
  }
};

// The rules for an op on a target: the tables measured on the arch the target names
// (Target::rules), one for the forward, one for the three backward ops.
const std::vector<Rule>& rules(Op op, const Target& target);
// The arches with measured tables (each target's Target::rules is one of them).
std::vector<std::string_view> measured_rule_targets();

// The instance the rules pick among those of the problem's key that support it (tensors, when
// given, for alignment); null when none does (nothing built for the key). *rule_why, if
// given, receives the reason of the rule that chose. A problem of spatial size 1 may get an
// instance of the other layout, which runs it as in_layout(p, its layout).
const Instance* heuristic_choice(const Registry&, const DeviceInfo&, const Problem&,
                                 const Tensors* tensors = nullptr, std::string* rule_why = nullptr);

}  // namespace hipgn
