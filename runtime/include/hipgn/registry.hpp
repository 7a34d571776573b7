// The registry of compiled instances, filled by the generated register_all(): explicit, so a
// static link keeps every instance and no static initializer runs in an unknown order.
#pragma once

#include <deque>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "hipgn/instance.hpp"

namespace hipgn {

class Registry {
 public:
  // Adds an instance; `name` is the generator's spelling and must equal spec.name().
  // `clusters`: the instance's clusters_at_once (the generated registration passes it; a test
  // registry may not, as if no device answered).
  void add(const InstanceSpec& spec, std::string_view name, LaunchFn launch, ClustersFn clusters = nullptr);

  const std::deque<Instance>& all() const { return all_; }
  // The instances of one functional key, in registration order; empty if none were built.
  const std::vector<const Instance*>& bucket(const Key&) const;
  const Instance* find(std::string_view name) const;
  std::vector<Key> keys() const;

  // The process-wide registry of this build, filled once on first use (thread-safe).
  static const Registry& global();

 private:
  std::deque<Instance> all_;  // a deque: pointers into it stay valid as it grows
  std::map<Key, std::vector<const Instance*>> buckets_;
  std::map<std::string, const Instance*, std::less<>> by_name_;
};

// Generated (templates/register_all.cpp.j2): registers every instance this build compiled.
void register_all(Registry&);

}  // namespace hipgn
