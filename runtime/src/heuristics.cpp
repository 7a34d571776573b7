// Forward dispatch rules: data first, then the short function that reads them.
#include "hipgn/heuristics.hpp"

#include <limits>

namespace hipgn {

const std::vector<Rule>& rules() {
  static const std::vector<Rule> rules = {
      // Fewer groups than compute units: one workgroup per group leaves most of them idle
      // (Stable Diffusion at N=2, G=32 is 64 groups on 132 SMs). Below 16K elements a group
      // is a few waves of loads and splitting it costs more (a second launch, partials) than
      // the idle units lose.
      {Family::split, 1.0, 16384, "fewer groups than compute units: several workgroups per group"},
      // The group fits in registers: x is read once, the floor of 2 passes over memory.
      {Family::onchip, std::numeric_limits<double>::infinity(), 0, "the group fits on chip: x read once"},
      // Anything else loops over the group, reading x twice.
      {Family::looped, std::numeric_limits<double>::infinity(), 0, "the group loops: x read twice"},
  };
  return rules;
}

namespace {
// Within a rule's family, is a better than b for this problem?
bool better(const Instance& a, const Instance& b, const Problem& p, int cus) {
  const InstanceSpec &x = a.spec(), &y = b.spec();
  // 16-byte accesses move the most bytes per instruction: the widest vector that fits wins.
  if (x.vector != y.vector) return x.vector > y.vector;
  switch (x.family) {
    case Family::onchip:
      // the tightest fit leaves the fewest threads idle
      if (x.chunk_elements() != y.chunk_elements()) return x.chunk_elements() < y.chunk_elements();
      return x.block < y.block;
    case Family::split: {
      // the largest slices that still give two workgroups per compute unit: enough to fill
      // the GPU while keeping the partials (and the second pass's merge) few
      auto workgroups = [&](const InstanceSpec& s) {
        return p.num_groups() * ((p.group_elements() + s.chunk_elements() - 1) / s.chunk_elements());
      };
      const bool xf = workgroups(x) >= 2 * cus, yf = workgroups(y) >= 2 * cus;
      if (xf != yf) return xf;
      if (x.chunk_elements() != y.chunk_elements())
        return xf ? x.chunk_elements() > y.chunk_elements() : x.chunk_elements() < y.chunk_elements();
      return x.block < y.block;
    }
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
  for (const Rule& rule : rules()) {
    if (groups_per_cu >= rule.max_groups_per_cu || p.group_elements() < rule.min_group_elements) continue;
    const Instance* best = nullptr;
    for (const Instance* inst : bucket)
      if (inst->spec().family == rule.family && inst->supports(p, tensors) && (!best || better(*inst, *best, p, cus)))
        best = inst;
    if (best) {
      if (rule_why) *rule_why = rule.why;
      return best;
    }
  }
  return nullptr;
}

}  // namespace hipgn
