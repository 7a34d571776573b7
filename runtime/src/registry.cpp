// The registry: filled once by the generated register_all().
#include "hipgn/registry.hpp"

#include <cstdio>
#include <cstdlib>

namespace hipgn {

void Registry::add(const InstanceSpec& spec, std::string_view name, LaunchFn launch, ClustersFn clusters) {
  // The generator and the runtime spell names by the same grammar; a mismatch is a build bug.
  if (spec.name() != name || by_name_.count(name)) {
    std::fprintf(stderr, "hipgn: registry: instance %.*s is %s\n", int(name.size()), name.data(),
                 by_name_.count(name) ? "registered twice" : "misnamed (generator and runtime disagree)");
    std::abort();
  }
  all_.emplace_back(spec, launch, clusters);
  const Instance* inst = &all_.back();
  buckets_[spec.key()].push_back(inst);
  by_name_.emplace(inst->name(), inst);
}

const std::vector<const Instance*>& Registry::bucket(const Key& key) const {
  static const std::vector<const Instance*> kEmpty;
  const auto it = buckets_.find(key);
  return it == buckets_.end() ? kEmpty : it->second;
}

const Instance* Registry::find(std::string_view name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::vector<Key> Registry::keys() const {
  std::vector<Key> out;
  for (const auto& [key, list] : buckets_) out.push_back(key);
  return out;
}

const Registry& Registry::global() {
  static const Registry registry = [] {
    Registry r;
    register_all(r);
    return r;
  }();
  return registry;
}

}  // namespace hipgn
