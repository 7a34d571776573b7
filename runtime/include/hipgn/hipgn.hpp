// hipgn's C++ API: a Handle per device holds device properties, workspace and tuning state;
// run() validates, picks an instance (tuned, named, or by heuristics) and launches the
// problem's op: forward, backward data, backward gamma/beta, or the fused backward.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "hipgn/heuristics.hpp"
#include "hipgn/instance.hpp"
#include "hipgn/platform.hpp"
#include "hipgn/problem.hpp"
#include "hipgn/registry.hpp"
#include "hipgn/status.hpp"

namespace hipgn {

// The instance selection this library was configured with (CMake's HIPGN_DTYPES, ...), as
// ';'- or ','-separated lists; error messages name the option that would build a missing key.
struct BuildConfig {
  std::string ops, dtypes, layouts, activations;
};
BuildConfig build_config();
std::string not_built_message(const Problem&, const BuildConfig&);
// Why no instance of the registry runs the problem: not_built when its key was not compiled
// (naming the option to add), else not_supported with each family's own reasons, so a caller
// of the C or the C++ API learns what a kernel lacks rather than a guess.
Status no_instance_status(const Registry&, const Problem&, const Tensors* tensors = nullptr);

class Handle {
 public:
  // A handle on the current GPU. Without a GPU, *out is still a usable handle for listing
  // and heuristics (device().compute_units == 0) and the status says no_device.
  static Status create(std::unique_ptr<Handle>* out);
  // A handle for a device described by hand: heuristics and listing only, no launches. A
  // registry other than this build's (tests, embedders with their own instances) may be given.
  explicit Handle(DeviceInfo info, const Registry* registry = &Registry::global())
      : info_(std::move(info)), has_device_(false), registry_(registry) {}
  ~Handle();
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

  const DeviceInfo& device() const { return info_; }
  bool has_device() const { return has_device_; }
  const Registry& registry() const { return *registry_; }

  // The instance run() would use: the tuned one if recorded for this problem, else the
  // heuristic's. Null with a status when none can run it.
  const Instance* choose(const Problem&, const Tensors* tensors, Status* why = nullptr) const;
  // The instance named `name` if it runs the problem; else null, and *why says whether the
  // name is malformed, valid but not compiled in this build, or built but unsupporting (and
  // the instance's own reason).
  const Instance* named(const Problem&, const std::string& name, const Tensors* tensors, Status* why) const;

  // Runs p.op on the tensors (problem.hpp says which each op reads and writes). `instance`:
  // empty for the automatic choice, else a name. Writes nothing when it returns an error.
  // Thread-safe; the workspace is per stream.
  Status run(const Problem&, const Tensors&, hipStream_t stream = nullptr,
                 const std::string& instance = "");

  std::size_t workspace_bytes(const Problem&, const std::string& instance = "") const;

  // Tuning state: a problem's chosen instance, consulted before the heuristics.
  Status set_tuned(const Problem&, const std::string& instance);

 private:
  Handle(DeviceInfo info, bool has_device) : info_(std::move(info)), has_device_(has_device) {}
  Status workspace_for(hipStream_t, std::size_t bytes, void** ptr);

  DeviceInfo info_;
  bool has_device_;
  const Registry* registry_ = &Registry::global();
  mutable std::mutex mutex_;
  std::map<hipStream_t, std::pair<void*, std::size_t>> workspaces_;
  std::map<std::string, std::string> tuned_;  // Problem::to_string() -> instance name
};

}  // namespace hipgn
