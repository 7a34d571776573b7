// hipgn's C++ API: a Handle per device holds device properties, workspace and tuning state;
// run() validates, picks an instance (tuned, named, or by heuristics) and launches the
// problem's op: forward, backward data, backward gamma/beta, or the fused backward.
//
// This header and those it includes (problem.hpp, status.hpp, types.hpp) are the whole public
// layer: they name no GPU runtime type, so a program that includes the real HIP or CUDA headers
// beside them builds. Streams are passed as void* (a hipStream_t or cudaStream_t converts to
// it; nullptr is the default stream).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "hipgn/problem.hpp"
#include "hipgn/status.hpp"
#include "hipgn/types.hpp"

namespace hipgn {

class Dispatcher;  // the internal dispatch layer (runtime/include/hipgn/dispatcher.hpp)

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
  // and choosing (its device has no compute units) and the status says no_device. Either way,
  // the tuning database named by HIPGN_TUNING_DB, if set, is read (load_tuning_db).
  static Status create(std::unique_ptr<Handle>* out);
  // A handle over a dispatcher made by hipgn's own tools and tests (a device described by hand).
  explicit Handle(std::unique_ptr<Dispatcher> dispatcher);
  ~Handle();
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

  // Runs p.op on the tensors (problem.hpp says which each op reads and writes). `instance`:
  // empty for the automatic choice, else a name. Writes nothing when it returns an error.
  // Thread-safe; the workspace, where the instance needs one, is the handle's, kept per stream
  // (allocated the first time a stream needs it, so not capturable in a graph then; graphs
  // captured on one stream share it, so replay those one at a time). The arrival counters of
  // instances that count (workgroups waiting for each other, or the last of a group's samples)
  // are zeroed once and left zero by every launch, so no memset precedes a launch: kept per
  // stream, and while the stream captures a graph per capture (made at its first need).
  Status run(const Problem&, const Tensors&, void* stream = nullptr, const std::string& instance = "");

  // run() with the caller's workspace, from the caller's allocator (PyTorch's caching
  // allocator, say), and the handle's counters as run() takes them: the call can be captured
  // (the counters a capture needs are made outside its graph), and graphs replayed side by side
  // share nothing. `workspace` holds `workspace_bytes` bytes (16-byte aligned; any content: the
  // kernels initialize what they use); workspace_size() says how many are needed.
  Status run_with_workspace(const Problem&, const Tensors&, void* workspace, std::size_t workspace_bytes,
                            void* stream = nullptr, const std::string& instance = "");

  // Workspace bytes for the problem. With `instance` empty: enough for any instance the
  // automatic choice can return for it, tuned or heuristic, whatever the pointers' alignment
  // (the largest need among the instances supporting it); else that instance's need.
  Status workspace_size(const Problem&, const std::string& instance, std::size_t* bytes) const;
  // workspace_size(), 0 on an error.
  std::size_t workspace_bytes(const Problem&, const std::string& instance = "") const;

  // The name of the instance run() would use for the problem with 16-byte-aligned tensors;
  // on an error, why none can run it.
  Status instance_for(const Problem&, std::string* name) const;
  // The device's display name ("none" without a GPU): shown, not a tuning key.
  const std::string& device_name() const;
  // The device's target, which tuned winners are keyed by: its architecture as the runtime
  // reports it (sm_90, gfx90a; "none" without a GPU) and its compute units (0 without one).
  const std::string& device_arch() const;
  int device_compute_units() const;

  // --- tuning ---------------------------------------------------------------------------------
  // Records a problem's instance (and its time, if measured), consulted before the heuristics
  // and written by save_tuning_db(). The instance must exist and support the problem.
  Status set_tuned(const Problem&, const std::string& instance, double us = 0);
  // Times every instance supporting the problem on this handle's device (buffers of its own,
  // filled with random values; not capturable) and records the fastest (set_tuned).
  Status tune(const Problem&, void* stream, TuneResult* out, const TuneOptions& options = {});
  // Adds a database file's entries: those this build cannot honour (no such instance, or it
  // does not support the problem) are ignored with a warning on stderr (once per process); a
  // malformed file is reported there and skipped: the returned status says so, dispatch is as before.
  Status load_tuning_db(const std::string& path);
  // Adds the winners recorded by this handle to the file (created if missing), keeping the
  // entries already there for other problems and targets; path empty: HIPGN_TUNING_DB's.
  Status save_tuning_db(const std::string& path = "") const;
  // The database file HIPGN_TUNING_DB named at creation ("" if none).
  const std::string& tuning_db_path() const;

  // The dispatch layer underneath, for hipgn's own profiler and tests (its header is not installed).
  Dispatcher& dispatcher() const { return *dispatcher_; }

 private:
  std::unique_ptr<Dispatcher> dispatcher_;
};

}  // namespace hipgn
