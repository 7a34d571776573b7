// GPU test helpers: device buffers, the skip reason without a GPU, and one checked forward
// run of a problem (fresh inputs, poisoned outputs, float64 reference, per-dtype tolerances).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "hipgn/dispatcher.hpp"
#include "hipgn/reference.hpp"

namespace hipgn::test {

// Empty when a GPU is present; else why not (the tests' skip message).
const std::string& no_gpu_reason();

#define HIPGN_REQUIRE_GPU()                                                  \
  do {                                                                       \
    if (!::hipgn::test::no_gpu_reason().empty())                             \
      GTEST_SKIP() << "no GPU on this machine: " << ::hipgn::test::no_gpu_reason(); \
  } while (0)

class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }
  void upload(const void* host, std::size_t bytes, std::size_t offset = 0);
  std::vector<std::uint8_t> download() const;
  void poison();  // every byte 0xFF: NaN in f32, f16 and bf16

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

struct RunOptions {
  bool gamma = true, beta = true, save_stats = true;
  std::size_t misalign_elements = 0;  // offset x and y by this many elements
  bool misalign_affine = false;       // gamma and beta one element past an allocation's start
  double x_offset = 0.5;              // x = offset + U(-1, 1) * scale
  double x_scale = 2.0;
};

// Whether `inst` takes every tensor `elements` elements past a 16-byte boundary (as
// run_and_check offsets them): the resident family and the channels-first backward's peeled
// runs do, the instance tests then run a share of the corpus so.
bool takes_offset(const Instance& inst, const Problem& p, std::size_t elements);

// Uploads fresh random inputs for p, poisons the outputs, calls `launch` with the device
// tensors, and checks every output element (and mean/rstd) against the float64 reference.
// Returns false (with gtest failures recorded) on a mismatch.
using Launch = std::function<Status(const Problem&, const Tensors&)>;
bool run_and_check(const Problem& p, const RunOptions& o, const Launch& launch, const std::string& what);

// The same for a backward op: fresh x, dy, gamma, beta; mean and rstd from the float64
// forward, or, with `forward`, from our own forward (launched on the same inputs); poisoned
// dx, dgamma, dbeta; checks what the op writes, and that what it does not write stays poisoned.
bool run_and_check_bwd(const Problem& p, const RunOptions& o, const Launch& launch, const std::string& what,
                       const Launch* forward = nullptr);

// run_and_check or run_and_check_bwd, as the op's row (hipgn/op.hpp) says.
bool run_and_check_op(const Problem& p, const RunOptions& o, const Launch& launch, const std::string& what);
// One instance on one shape (run_and_check_op through inst.run). With `own_counters`, the
// launch gets zeroed arrival counters of its own, as the handle's run() launches it (no
// memset), and every word of them but the generations must be zero again after it, or the next
// launch on them would wait forever.
bool check_instance(const Instance& inst, const Problem& p, const RunOptions& o, bool own_counters,
                    const std::string& what);
// Shape i of the corpus on one instance (check_instance), with the variations every instance
// test shares on top of `o`: a third of the shapes one element off the 16-byte boundary, where
// the instance takes that; a fifth with gamma and beta off a vector's boundary (channels-last
// kernels load a vector's gamma and beta whole only where aligned: Params::affine_vectors);
// every other shape with arrival counters of its own, as the handle runs it. A failure names
// the instance, the problem and the variations.
bool check_corpus_shape(const Instance& inst, const Problem& p, RunOptions o, std::size_t i);

// Captures what `work` enqueues on a fresh stream into a graph, in the global capture mode
// (where an allocation or a synchronization by anyone fails the capture), then launches the
// graph `replays` times and waits: proof that `work` is capturable.
Status capture_and_replay(const std::function<Status(hipStream_t)>& work, int replays = 1);
// Several works, each captured as a graph of its own on one stream, then replayed side by side,
// each graph on a stream of its own, `replays` times: what a caller may do with graphs captured
// on one stream (so they must share no memory that a launch writes).
Status capture_and_replay(const std::vector<std::function<Status(hipStream_t)>>& works, int replays);

// Names of the registered instances of one op kind (forward, or any backward op), those whose
// spec `keep` takes where it is given.
std::vector<std::string> instance_names(bool backward, const std::function<bool(const InstanceSpec&)>& keep = {});

}  // namespace hipgn::test
