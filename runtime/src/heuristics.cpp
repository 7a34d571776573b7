// Dispatch rules: data first, then the short function that reads them.
#include "hipgn/heuristics.hpp"

#include <limits>

namespace hipgn {

const std::vector<Rule>& rules(Op op) {
  constexpr double kAny = std::numeric_limits<double>::infinity();
  static const std::vector<Rule> forward = {
      // Fewer groups than compute units: one workgroup per group leaves most of them idle
      // (Stable Diffusion at N=2, G=32 is 64 groups on 132 SMs). Below 16K elements a group
      // is a few waves of loads and splitting it costs more (a second launch, partials) than
      // the idle units lose.
      {Family::split, 1.0, 16384, "fewer groups than compute units: several workgroups per group"},
      // The group fits in registers: x is read once, the floor of 2 passes over memory.
      {Family::onchip, kAny, 0, "the group fits on chip: x read once"},
      // Anything else loops over the group, reading x twice.
      {Family::looped, kAny, 0, "the group loops: x read twice"},
  };
  static const std::vector<Rule> backward = {
      // The backward's onchip instances hold at most 4096 elements (x and dy in registers,
      // per-channel sums in shared memory), so groups past that otherwise loop in one
      // workgroup. Measured on an H100, fp16 SiLU, N=2, C=1280, 16x16, G=32 (64 groups of
      // 10240): split 21.6 us against looped 79.9 us channels-first, 21.9 against 31.3 last.
      {Family::split, 1.0, 4096, "fewer groups than compute units: several workgroups per group"},
      {Family::onchip, kAny, 0, "the group fits on chip: x and dy read once"},
      {Family::looped, kAny, 0, "the group loops: x and dy read twice"},
  };
  return op == Op::fwd ? forward : backward;
}

namespace {
// Within a rule's family, is a better than b for this problem?
bool better(const Instance& a, const Instance& b) {
  const InstanceSpec &x = a.spec(), &y = b.spec();
  // 16-byte accesses move the most bytes per instruction: the widest vector that fits wins.
  if (x.vector != y.vector) return x.vector > y.vector;
  switch (x.family) {
    case Family::onchip:
      // the tightest fit leaves the fewest threads idle
      if (x.chunk_elements() != y.chunk_elements()) return x.chunk_elements() < y.chunk_elements();
      return x.block < y.block;
    case Family::split:
      // the smallest slices, so the most workgroups in flight: measured on an H100, fp16
      // SiLU forward, slices of 8K elements beat 16K at N=2, C=320, 64x64 (21.0 against
      // 33.3 us) and at N=1, C=512, 256x256 (153.9 against 188.7 us)
      if (x.chunk_elements() != y.chunk_elements()) return x.chunk_elements() < y.chunk_elements();
      return x.block < y.block;
    case Family::looped:
      // more loads in flight per workgroup hide more latency
      if (x.chunk_elements() != y.chunk_elements()) return x.chunk_elements() > y.chunk_elements();
      return x.block < y.block;
  }
  return false;
}
}  // namespace

const Instance* heuristic_choice(const Registry& reg, const DeviceInfo& dev, const Problem& p,
                                 const Tensors* tensors, std::string* rule_why) {
  const auto& bucket = reg.bucket(Key::of(p));
  const int cus = dev.compute_units > 0 ? dev.compute_units : DeviceInfo::kAssumedComputeUnits;
  const double groups_per_cu = double(p.num_groups()) / cus;
  for (const Rule& rule : rules(p.op)) {
    if (groups_per_cu >= rule.max_groups_per_cu || p.group_elements() < rule.min_group_elements) continue;
    const Instance* best = nullptr;
    for (const Instance* inst : bucket)
      if (inst->spec().family == rule.family && inst->supports(p, tensors) && (!best || better(*inst, *best)))
        best = inst;
    if (best) {
      if (rule_why) *rule_why = rule.why;
      return best;
    }
  }
  return nullptr;
}

}  // namespace hipgn
