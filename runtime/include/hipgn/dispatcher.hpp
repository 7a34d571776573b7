// The dispatch layer behind the public Handle (hipgn/hipgn.hpp): a Dispatcher per device holds
// device properties, workspace and tuning state; run() validates, picks an instance (tuned,
// named, or by heuristics) and launches the problem's op. Internal: not installed; hipgn's own
// profiler and tests use it to ask which instance runs and why, or to dispatch for a device
// described by hand.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "hipgn/heuristics.hpp"
#include "hipgn/hipgn.hpp"
#include "hipgn/instance.hpp"
#include "hipgn/op.hpp"
#include "hipgn/platform.hpp"
#include "hipgn/problem.hpp"
#include "hipgn/registry.hpp"
#include "hipgn/status.hpp"
#include "hipgn/tuning.hpp"

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
Status no_instance_status(const Registry&, const Problem&, const Tensors* tensors = nullptr, int compute_units = 0);

class Dispatcher {
 public:
  // On the current GPU, as Handle::create (device().compute_units == 0 without one).
  static Status create(std::unique_ptr<Dispatcher>* out);
  // For a device described by hand: heuristics and listing only, no launches. A
  // registry other than this build's (tests, embedders with their own instances) may be given.
  explicit Dispatcher(DeviceInfo info, const Registry* registry = &Registry::global())
      : info_(std::move(info)), has_device_(false), registry_(registry) {}
  ~Dispatcher();
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  const DeviceInfo& device() const { return info_; }
  bool has_device() const { return has_device_; }
  const Registry& registry() const { return *registry_; }

  // The instance run() would use: the tuned one if recorded for this problem (and it
  // supports these tensors), else the heuristic's. Null with a status when none can run it.
  const Instance* choose(const Problem&, const Tensors* tensors, Status* why = nullptr) const;
  // The instance named `name` if it runs the problem; else null, and *why says whether the
  // name is malformed, valid but not compiled in this build, or built but unsupporting (and
  // the instance's own reason).
  const Instance* named(const Problem&, const std::string& name, const Tensors* tensors, Status* why) const;

  // Every built instance that runs the problem, whatever its tensors' alignment, in registry
  // order: of both layouts where the problem runs in either (layout_views). What tune() times,
  // the profiler lists, and workspace_size(p, "") covers.
  std::vector<const Instance*> supporting(const Problem&) const;

  // As Handle's (hipgn/hipgn.hpp), which forwards here.
  Status run(const Problem&, const Tensors&, hipStream_t stream = nullptr, const std::string& instance = "");
  Status run_with_workspace(const Problem&, const Tensors&, void* workspace, std::size_t workspace_bytes,
                            hipStream_t stream = nullptr, const std::string& instance = "");
  Status workspace_size(const Problem&, const std::string& instance, std::size_t* bytes) const;
  std::size_t workspace_bytes(const Problem&, const std::string& instance = "") const;
  Status set_tuned(const Problem&, const std::string& instance, double us = 0);
  Status tune(const Problem&, hipStream_t stream, TuneResult* out, const TuneOptions& options = {});
  Status load_tuning_db(const std::string& path);
  Status save_tuning_db(const std::string& path = "") const;
  const std::string& tuning_db_path() const { return db_path_; }
  // Every entry read or recorded, honoured or not.
  TuningDb tuning_db() const;

 private:
  Dispatcher(DeviceInfo info, bool has_device) : info_(std::move(info)), has_device_(has_device) {}
  using Buffers = std::map<hipStream_t, std::pair<void*, std::size_t>>;
  Status workspace_for(hipStream_t, std::size_t bytes, void** ptr);
  // Arrival counters for one launch on the stream, zero and left zero by it (Instance::
  // counter_bytes), so run() and run_with_workspace() launch without their memset: the stream's
  // own while it runs work as it comes (stream order keeps its launches apart); while it
  // captures a graph, the capture's own on that stream (a graph may be replayed on any stream,
  // beside another graph captured on this one; a capture's launches on one stream run in
  // order). *ptr is null where they cannot be had: the launch zeroes counters in its workspace.
  Status counters_for(hipStream_t, std::size_t bytes, void** ptr);
  Status buffer_for(Buffers&, hipStream_t, std::size_t bytes, bool zeroed, void** ptr);
  // inst.run() on the handle's counters (counters_for), with `workspace` (the handle's or the
  // caller's): what run() and run_with_workspace() end with.
  Status launch(const Instance& inst, const Problem& q, const Tensors& t, void* workspace, hipStream_t stream);
  // The largest workspace any of `instances` (supporting(p)'s) needs for p.
  std::size_t largest_workspace(const Problem& p, const std::vector<const Instance*>& instances) const;
  // Validates and picks the instance: the named one, or the automatic choice.
  Status select(const Problem&, const Tensors&, const std::string& instance, const Instance** out) const;
  void read_env_tuning_db();

  DeviceInfo info_;
  bool has_device_;
  const Registry* registry_ = &Registry::global();
  mutable std::mutex mutex_;
  Buffers workspaces_;
  Buffers counters_;
  // counters of captured launches, a buffer a (capture id, stream), and those a capture
  // outgrew: kept until the handle goes, since the graphs that use them may live as long
  std::map<std::pair<unsigned long long, hipStream_t>, std::pair<void*, std::size_t>> captured_counters_;
  std::vector<void*> outgrown_counters_;
  // The heuristic's choices, each under its problem and its tensors' placement (placement_of):
  // the choice is a function of those alone, so no tuning or database change invalidates it,
  // and a lookup costs a fraction of the rules' walk (4-6 us a call on the H200; bench/NOTES.md,
  // "The operator's host time, piece by piece").
  using Placement = std::array<std::uint8_t, kTensorCount>;
  mutable std::map<std::pair<TuningKey, Placement>, const Instance*> chosen_;
  TuningDb db_;                                 // every entry read or recorded
  std::map<TuningKey, const Instance*> tuned_;  // those this build honours: what choose() consults
  std::set<TuningKey> recorded_;                // recorded by this handle: what save adds to a file
  std::string db_path_;
};

}  // namespace hipgn
