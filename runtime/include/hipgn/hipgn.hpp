// hipgn's C++ API: a Handle per device holds device properties, workspace and tuning state;
// run() validates, picks an instance (tuned, named, or by heuristics) and launches the
// problem's op: forward, backward data, backward gamma/beta, or the fused backward.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "hipgn/heuristics.hpp"
#include "hipgn/instance.hpp"
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

// What Handle::tune measured for one problem: every supporting instance's median time.
struct TuneResult {
  std::string instance;  // the winner, now recorded as the problem's tuned choice
  double us = 0;         // its median time
  std::vector<std::pair<std::string, double>> timings;  // every instance timed (us; < 0: failed)
};

struct TuneOptions {
  int warmup = 3;   // runs before timing each instance
  int iters = 15;   // timed runs; the median is kept
  bool flush_l2 = true;  // as the profiler: each timed run starts from a cold cache
};

class Handle {
 public:
  // A handle on the current GPU. Without a GPU, *out is still a usable handle for listing
  // and heuristics (device().compute_units == 0) and the status says no_device. Either way,
  // the tuning database named by HIPGN_TUNING_DB, if set, is read (load_tuning_db).
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

  // The instance run() would use: the tuned one if recorded for this problem (and it
  // supports these tensors), else the heuristic's. Null with a status when none can run it.
  const Instance* choose(const Problem&, const Tensors* tensors, Status* why = nullptr) const;
  // The instance named `name` if it runs the problem; else null, and *why says whether the
  // name is malformed, valid but not compiled in this build, or built but unsupporting (and
  // the instance's own reason).
  const Instance* named(const Problem&, const std::string& name, const Tensors* tensors, Status* why) const;

  // Runs p.op on the tensors (problem.hpp says which each op reads and writes). `instance`:
  // empty for the automatic choice, else a name. Writes nothing when it returns an error.
  // Thread-safe; the workspace, where the instance needs one, is the handle's, kept per stream
  // (allocated the first time a stream needs it, so not capturable in a graph then).
  Status run(const Problem&, const Tensors&, hipStream_t stream = nullptr, const std::string& instance = "");

  // run() with the caller's workspace: the library allocates nothing, so the call can be
  // captured in a graph and the memory can come from the caller's allocator (PyTorch's
  // caching allocator, say). `workspace` holds `workspace_bytes` bytes (16-byte aligned; any
  // content: the kernels initialize what they use); workspace_size() says how many are needed.
  Status run_with_workspace(const Problem&, const Tensors&, void* workspace, std::size_t workspace_bytes,
                            hipStream_t stream = nullptr, const std::string& instance = "");

  // Workspace bytes for the problem. With `instance` empty: enough for any instance the
  // automatic choice can return for it, tuned or heuristic, whatever the pointers' alignment
  // (the largest need among the instances supporting it); else that instance's need.
  Status workspace_size(const Problem&, const std::string& instance, std::size_t* bytes) const;
  // workspace_size(), 0 on an error.
  std::size_t workspace_bytes(const Problem&, const std::string& instance = "") const;

  // --- tuning ---------------------------------------------------------------------------------
  // Records a problem's instance (and its time, if measured), consulted before the heuristics
  // and written by save_tuning_db(). The instance must exist and support the problem.
  Status set_tuned(const Problem&, const std::string& instance, double us = 0);
  // Times every instance supporting the problem on this handle's device (buffers of its own,
  // filled with random values; not capturable) and records the fastest (set_tuned).
  Status tune(const Problem&, hipStream_t stream, TuneResult* out, const TuneOptions& options = {});
  // Adds a database file's entries: those this build cannot honour (no such instance, or it
  // does not support the problem) are ignored with a warning on stderr (once per process); a
  // malformed file is reported there and skipped: the returned status says so, dispatch is as before.
  Status load_tuning_db(const std::string& path);
  // Adds the winners recorded by this handle to the file (created if missing), keeping the
  // entries already there for other problems and devices; path empty: HIPGN_TUNING_DB's.
  Status save_tuning_db(const std::string& path = "") const;
  // The database file HIPGN_TUNING_DB named at creation ("" if none).
  const std::string& tuning_db_path() const { return db_path_; }
  // Every entry read or recorded, honoured or not.
  TuningDb tuning_db() const;

 private:
  Handle(DeviceInfo info, bool has_device) : info_(std::move(info)), has_device_(has_device) {}
  Status workspace_for(hipStream_t, std::size_t bytes, void** ptr);
  // Validates and picks the instance: the named one, or the automatic choice.
  Status select(const Problem&, const Tensors&, const std::string& instance, const Instance** out) const;
  void read_env_tuning_db();

  DeviceInfo info_;
  bool has_device_;
  const Registry* registry_ = &Registry::global();
  mutable std::mutex mutex_;
  std::map<hipStream_t, std::pair<void*, std::size_t>> workspaces_;
  TuningDb db_;                                 // every entry read or recorded
  std::map<TuningKey, const Instance*> tuned_;  // those this build honours: what choose() consults
  std::set<TuningKey> recorded_;                // recorded by this handle: what save adds to a file
  std::string db_path_;
};

}  // namespace hipgn
