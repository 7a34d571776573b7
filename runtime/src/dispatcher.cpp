// The Dispatcher: device properties, per-stream workspace, tuning state, and dispatch.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "hipgn/dispatcher.hpp"

#ifndef HIPGN_BUILD_DTYPES
#define HIPGN_BUILD_OPS "?"
#define HIPGN_BUILD_DTYPES "?"
#define HIPGN_BUILD_LAYOUTS "?"
#define HIPGN_BUILD_ACTIVATIONS "?"
#endif

namespace hipgn {

namespace {

// The problem as `inst` runs it: p itself where the layouts agree (no copy on the launch path),
// else p in the instance's layout (in_layout: a spatial size of 1 runs in either), kept in *view.
const Problem& as_run(const Problem& p, const Instance& inst, Problem* view) {
  if (inst.spec().layout == p.layout) return p;
  return *view = in_layout(p, inst.spec().layout);
}

// What of the tensors an instance's support depends on (Instance::supports): each pointer's
// offset from a 64-byte boundary (every alignment and phase test is modulo at most 32 bytes:
// 8 elements of fp32) and whether it is given; all 0xff without tensors.
std::array<std::uint8_t, kTensorCount> placement_of(const Tensors* t) {
  std::array<std::uint8_t, kTensorCount> out;
  for (unsigned i = 0; i < kTensorCount; ++i) {
    const void* q = t ? tensor_pointer(*t, TensorBit(1u << i)) : nullptr;
    out[i] = !t ? 0xff : q ? std::uint8_t(reinterpret_cast<std::uintptr_t>(q) % 64) : 0x80;
  }
  return out;
}

}  // namespace

BuildConfig build_config() { return {HIPGN_BUILD_OPS, HIPGN_BUILD_DTYPES, HIPGN_BUILD_LAYOUTS, HIPGN_BUILD_ACTIVATIONS}; }

// Which configure option would build the problem's key.
std::string not_built_message(const Problem& p, const BuildConfig& cfg) {
  std::string m = "this build has no instance for " + Key::of(p).to_string() + " (x " +
                  std::string(to_string(p.x_dtype)) + ", gamma " + std::string(to_string(p.gamma_dtype)) + ", " +
                  (p.layout == Layout::channels_first ? "channels-first" : "channels-last") + ", activation " +
                  std::string(to_string(p.act)) + "); reconfigure with";
  auto has = [](std::string_view list, std::string_view item) {
    for (std::size_t s = 0; s <= list.size();) {
      std::size_t e = list.find_first_of(";,", s);
      if (e == std::string_view::npos) e = list.size();
      if (list.substr(s, e - s) == item) return true;
      s = e + 1;
    }
    return false;
  };
  const std::size_t before = m.size();
  auto need = [&](const char* option, const std::string& list, std::string_view item) {
    if (has(list, item)) return;
    std::string now(list);
    for (char& ch : now) ch = ch == ',' ? ';' : ch;
    m += std::string(" -D") + option + "=\"" + now + ";" + std::string(item) + "\"";
  };
  need("HIPGN_OPS", cfg.ops, to_string(p.op));
  need("HIPGN_DTYPES", cfg.dtypes, to_string(p.x_dtype));
  need("HIPGN_LAYOUTS", cfg.layouts, to_string(p.layout));
  need("HIPGN_ACTIVATIONS", cfg.activations, to_string(p.act));
  if (m.size() == before) m += " a HIPGN_INSTANCE_FILTER that keeps it";
  return m;
}

Status no_instance_status(const Registry& reg, const Problem& p, const Tensors* tensors, int compute_units) {
  const auto& bucket = reg.bucket(Key::of(p));
  if (bucket.empty()) return Status::error(StatusCode::not_built, not_built_message(p, build_config()));
  // Each family's distinct reasons, in registration order; families with the same reasons
  // share one clause, so a limit every instance hits (say, a grid dimension) reads once.
  std::vector<std::pair<std::string, std::vector<std::string>>> families;  // family -> reasons
  for (const Instance* inst : bucket) {
    std::string why;
    if (inst->supports(p, tensors, &why, compute_units))
      why = "supports it, but no heuristic rule picks this family for it";
    const std::string family(to_string(inst->spec().family));
    auto it = families.begin();
    while (it != families.end() && it->first != family) ++it;
    if (it == families.end()) it = families.insert(families.end(), {family, {}});
    bool seen = false;
    for (const std::string& r : it->second) seen = seen || r == why;
    if (!seen) it->second.push_back(why);
  }
  constexpr std::size_t kMaxReasons = 3;  // per family: enough to see the pattern, one line
  std::vector<std::pair<std::string, std::string>> clauses;  // families -> their reasons
  for (const auto& [family, reasons] : families) {
    std::string text;
    for (std::size_t i = 0; i < reasons.size() && i < kMaxReasons; ++i) text += (i ? "; " : "") + reasons[i];
    if (reasons.size() > kMaxReasons) text += "; and " + std::to_string(reasons.size() - kMaxReasons) + " more";
    auto it = clauses.begin();
    while (it != clauses.end() && it->second != text) ++it;
    if (it == clauses.end()) clauses.push_back({family, text});
    else it->first += ", " + family;
  }
  std::string m = "this build has " + std::to_string(bucket.size()) + " instances for " + Key::of(p).to_string() +
                  " but none supports " + p.to_string() + ":";
  for (std::size_t i = 0; i < clauses.size(); ++i)
    m += (i ? " | " : " ") + clauses[i].first + ": " + clauses[i].second;
  return Status::error(StatusCode::not_supported, m);
}

namespace {
// Device memory zeroed while a stream of this thread captures a graph, none of it in the graph:
// the thread's capture mode relaxed for the allocation (which a global-mode capture would
// otherwise refuse, as PyTorch's allocator does it) and the memset on a stream of its own. Null
// where that fails.
void* zeroed_outside_capture(std::size_t bytes) {
  hipStreamCaptureMode mode = hipStreamCaptureModeRelaxed;
  (void)hipThreadExchangeStreamCaptureMode(&mode);
  void* p = nullptr;
  hipStream_t s = nullptr;
  bool ok = hipMalloc(&p, bytes) == hipSuccess && hipStreamCreateWithFlags(&s, hipStreamNonBlocking) == hipSuccess;
  ok = ok && hipMemsetAsync(p, 0, bytes, s) == hipSuccess && hipStreamSynchronize(s) == hipSuccess;
  if (s) (void)hipStreamDestroy(s);
  if (!ok && p) (void)hipFree(p);
  (void)hipThreadExchangeStreamCaptureMode(&mode);
  (void)hipGetLastError();
  return ok ? p : nullptr;
}
}  // namespace

Status Dispatcher::create(std::unique_ptr<Dispatcher>* out) {
  int count = 0;
  const hipError_t e = hipGetDeviceCount(&count);
  if (e != hipSuccess || count == 0) {
    out->reset(new Dispatcher(DeviceInfo{}, false));
    (*out)->read_env_tuning_db();  // listing and choose() honour it without a GPU too
    return Status::error(StatusCode::no_device, std::string("no GPU: ") +
                                                    (e != hipSuccess ? hipGetErrorString(e) : "the runtime sees no device"));
  }
  int dev = 0;
  hipDeviceProp_t prop{};
  if (hipGetDevice(&dev) != hipSuccess || hipGetDeviceProperties(&prop, dev) != hipSuccess) {
    out->reset(new Dispatcher(DeviceInfo{}, false));
    return Status::error(StatusCode::runtime_error, "cannot read the device's properties");
  }
  DeviceInfo info;
  info.name = prop.name;
  info.compute_units = prop.multiProcessorCount;
  info.warp_size = prop.warpSize;
  info.l2_bytes = prop.l2CacheSize;
#if defined(HIPGN_PLATFORM_AMD)
  const std::string gcn(prop.gcnArchName);  // gfx90a:sramecc+:xnack-
  info.arch = gcn.substr(0, gcn.find(':'));
#else
  info.arch = "sm_" + std::to_string(prop.major * 10 + prop.minor);
#endif
#if defined(HIPGN_PLATFORM_AMD) || defined(HIPGN_NVIDIA_SYSTEM_HIP)
  // HIP 5.2's properties have no opt-in limit; on AMD a workgroup may take all of a CU's LDS
  info.shared_bytes_per_block = std::int64_t(prop.sharedMemPerBlock);
  info.shared_bytes_per_cu = std::int64_t(prop.maxSharedMemoryPerMultiProcessor);
#else
  info.shared_bytes_per_block = std::int64_t(prop.sharedMemPerBlockOptin);  // what a kernel may opt into
  info.shared_bytes_per_cu = std::int64_t(prop.sharedMemPerMultiprocessor);
#endif
  out->reset(new Dispatcher(info, true));
  (*out)->read_env_tuning_db();
  return Status::success();
}

void Dispatcher::read_env_tuning_db() {
  const char* path = std::getenv("HIPGN_TUNING_DB");
  if (!path || !*path) return;
  db_path_ = path;
  (void)load_tuning_db(db_path_);  // a bad file warns and is skipped: never fatal
}

Dispatcher::~Dispatcher() {
  for (auto& [stream, buf] : workspaces_) (void)hipFree(buf.first);
  for (auto& [stream, buf] : counters_) (void)hipFree(buf.first);
  for (auto& [key, buf] : captured_counters_) (void)hipFree(buf.first);
  for (void* p : outgrown_counters_) (void)hipFree(p);
}

const Instance* Dispatcher::choose(const Problem& p, const Tensors* tensors, Status* why) const {
  std::pair<TuningKey, Placement> key{TuningKey::of(p, info_.key()), placement_of(tensors)};
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!tuned_.empty()) {
      const auto it = tuned_.find(key.first);
      // a tuned instance that cannot take these tensors (misaligned, say) falls through
      Problem view;
      if (it != tuned_.end() && it->second->supports(as_run(p, *it->second, &view), tensors, nullptr, info_.cus()))
        return it->second;
    }
    if (const auto it = chosen_.find(key); it != chosen_.end()) return it->second;
  }
  const Instance* inst = heuristic_choice(registry(), info_, p, tensors);
  if (!inst) {
    if (why) *why = no_instance_status(registry(), p, tensors, info_.cus());
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (chosen_.size() >= 65536) chosen_.clear();  // endless dynamic shapes: start over rather than grow
  chosen_.emplace(std::move(key), inst);
  return inst;
}

const Instance* Dispatcher::named(const Problem& p, const std::string& name, const Tensors* tensors, Status* why) const {
  auto fail = [why](StatusCode code, std::string m) -> const Instance* {
    if (why) *why = Status::error(code, std::move(m));
    return nullptr;
  };
  const Instance* inst = registry().find(name);
  if (!inst) {
    if (!InstanceSpec::parse(name))
      return fail(StatusCode::unknown_instance,
                  "'" + name + "' is not an instance name (" + kInstanceNameGrammar + ")");
    return fail(StatusCode::unknown_instance, name + " is a valid name but this build did not compile it (preset " +
                                                  "or HIPGN_INSTANCE_FILTER); the build's manifest.json lists those it did");
  }
  std::string reason;
  Problem view;
  if (!inst->supports(as_run(p, *inst, &view), tensors, &reason, info_.cus()))
    return fail(StatusCode::not_supported, name + " does not support " + p.to_string() + ": " + reason);
  return inst;
}

Status Dispatcher::workspace_size(const Problem& p, const std::string& instance, std::size_t* bytes) const {
  *bytes = 0;
  if (Status s = validate(p); !s.ok()) return s;
  if (!instance.empty()) {
    const Instance* inst = registry().find(instance);
    if (!inst) return Status::error(StatusCode::unknown_instance, "no instance named " + instance + " in this build");
    std::string why;
    Problem view;
    const Problem& q = as_run(p, *inst, &view);
    if (!inst->supports(q, nullptr, &why, info_.cus()))
      return Status::error(StatusCode::not_supported, instance + " does not support " + p.to_string() + ": " + why);
    *bytes = inst->workspace_bytes(q, info_.cus());
    return Status::success();
  }
  // The largest need of the supporting instances: whatever choose() returns (tuned, or the
  // heuristic's for any alignment, of either layout where both run p) is among them. Every
  // need is small next to the tensors (forward split: 12 bytes per slice of a group; backward:
  // 8 bytes per (n, c); stream: 8 bytes per group of each of a few items a compute unit).
  const std::vector<const Instance*> all = supporting(p);
  if (all.empty()) return Status::error(StatusCode::not_built, not_built_message(p, build_config()));
  *bytes = largest_workspace(p, all);
  return Status::success();
}

std::size_t Dispatcher::largest_workspace(const Problem& p, const std::vector<const Instance*>& instances) const {
  std::size_t bytes = 0;
  for (const Instance* inst : instances) {
    Problem view;
    bytes = std::max(bytes, inst->workspace_bytes(as_run(p, *inst, &view), info_.cus()));
  }
  return bytes;
}

std::vector<const Instance*> Dispatcher::supporting(const Problem& p) const {
  std::vector<const Instance*> out;
  for (const Problem& q : layout_views(p))
    for (const Instance* inst : registry().bucket(Key::of(q)))
      if (inst->supports(q, nullptr, nullptr, info_.cus())) out.push_back(inst);
  return out;
}

std::size_t Dispatcher::workspace_bytes(const Problem& p, const std::string& instance) const {
  std::size_t bytes = 0;
  return workspace_size(p, instance, &bytes).ok() ? bytes : 0;
}

Status Dispatcher::workspace_for(hipStream_t stream, std::size_t bytes, void** ptr) {
  return buffer_for(workspaces_, stream, bytes, false, ptr);
}

Status Dispatcher::counters_for(hipStream_t stream, std::size_t bytes, void** ptr) {
  *ptr = nullptr;
  hipStreamCaptureStatus capture = hipStreamCaptureStatusNone;
  unsigned long long id = 0;
  if (hipStreamGetCaptureInfo(stream, &capture, &id) != hipSuccess) {
    (void)hipGetLastError();  // unknown: the launch zeroes counters of its own, right either way
    return Status::success();
  }
  if (capture == hipStreamCaptureStatusNone) return buffer_for(counters_, stream, bytes, true, ptr);
  std::lock_guard<std::mutex> lock(mutex_);
  auto& buf = captured_counters_[{id, stream}];
  if (buf.second < bytes) {
    if (buf.first) outgrown_counters_.push_back(buf.first);
    buf = {zeroed_outside_capture(bytes), bytes};
    if (!buf.first) buf.second = 0;
  }
  *ptr = buf.first;
  return Status::success();
}

Status Dispatcher::buffer_for(Buffers& buffers, hipStream_t stream, std::size_t bytes, bool zeroed, void** ptr) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& buf = buffers[stream];
  if (buf.second < bytes) {
    // Grows rarely (a new largest problem on this stream); hipFree waits for work in flight.
    if (buf.first) (void)hipFree(buf.first);
    buf = {nullptr, 0};
    hipError_t e = hipMalloc(&buf.first, bytes);
    // zeroed on the stream, before any launch that counts in them (stream order)
    if (e == hipSuccess && zeroed) e = hipMemsetAsync(buf.first, 0, bytes, stream);
    if (e != hipSuccess) {
      if (buf.first) (void)hipFree(buf.first);
      buf.first = nullptr;
      return Status::error(StatusCode::runtime_error, std::string(zeroed ? "counters" : "workspace") +
                                                          " allocation failed: " + hipGetErrorString(e));
    }
    buf.second = bytes;
  }
  *ptr = buf.first;
  return Status::success();
}

Status Dispatcher::select(const Problem& p, const Tensors& t, const std::string& instance, const Instance** out) const {
  Status s = validate(p, t);
  if (!s.ok()) return s;
  if (instance.empty()) {
    *out = choose(p, &t, &s);
    return *out ? Status::success() : s;
  }
  const Instance* inst = named(p, instance, &t, &s);
  if (!inst) return s;
  *out = inst;
  return Status::success();
}

Status Dispatcher::run(const Problem& p, const Tensors& t, hipStream_t stream, const std::string& instance) {
  const Instance* inst = nullptr;
  Status s = select(p, t, instance, &inst);
  if (!s.ok()) return s;
  if (!has_device_) return Status::error(StatusCode::no_device, "no GPU: this handle cannot launch");
  void* ws = nullptr;
  Problem view;
  const Problem& q = as_run(p, *inst, &view);
  if (const std::size_t bytes = inst->workspace_bytes(q, info_.cus())) {
    s = workspace_for(stream, bytes, &ws);
    if (!s.ok()) return s;
  }
  return launch(*inst, q, t, ws, stream);
}

Status Dispatcher::launch(const Instance& inst, const Problem& q, const Tensors& t, void* workspace, hipStream_t stream) {
  // the handle's counters, which stay zero: no memset before the launch
  void* counters = nullptr;
  if (const std::size_t bytes = inst.counter_bytes(q, info_.cus())) {
    const Status s = counters_for(stream, bytes, &counters);
    if (!s.ok()) return s;
  }
  return inst.run(q, t, workspace, stream, info_.cus(), counters);
}

Status Dispatcher::run_with_workspace(const Problem& p, const Tensors& t, void* workspace, std::size_t workspace_bytes,
                                  hipStream_t stream, const std::string& instance) {
  const Instance* inst = nullptr;
  Status s = select(p, t, instance, &inst);
  if (!s.ok()) return s;
  auto bad = [](std::string m) { return Status::error(StatusCode::invalid_argument, std::move(m)); };
  if (workspace_bytes && !workspace)
    return bad("the workspace is null but its size is " + std::to_string(workspace_bytes) + " bytes");
  // 16 bytes: what a vector access of the workspace may need; any allocator's pointer has it
  if (reinterpret_cast<std::uintptr_t>(workspace) % 16 != 0) return bad("the workspace is not 16-byte aligned");
  Problem view;
  const Problem& q = as_run(p, *inst, &view);
  const std::size_t need = inst->workspace_bytes(q, info_.cus());
  if (need > workspace_bytes)
    return bad(inst->name() + " needs a workspace of " + std::to_string(need) + " bytes for " + p.to_string() + "; " +
               std::to_string(workspace_bytes) + " given (workspace_size() says how many)");
  if (!has_device_) return Status::error(StatusCode::no_device, "no GPU: this handle cannot launch");
  // the caller's workspace, the handle's counters (as run()'s)
  return launch(*inst, q, t, need ? workspace : nullptr, stream);
}

Status Dispatcher::set_tuned(const Problem& p, const std::string& instance, double us) {
  if (Status s = validate(p); !s.ok()) return s;
  const Instance* inst = registry().find(instance);
  if (!inst) return Status::error(StatusCode::unknown_instance, "no instance named " + instance + " in this build");
  std::string why;
  Problem view;
  if (!inst->supports(as_run(p, *inst, &view), nullptr, &why, info_.cus()))
    return Status::error(StatusCode::not_supported, instance + " does not support " + p.to_string() + ": " + why);
  const TuningKey key = TuningKey::of(p, info_.key());
  std::lock_guard<std::mutex> lock(mutex_);
  db_.set(key, {instance, us, info_.name});
  tuned_[key] = inst;
  recorded_.insert(key);
  return Status::success();
}

Status Dispatcher::load_tuning_db(const std::string& path) {
  TuningDb file;
  std::vector<std::string> warnings;
  const Status s = file.load(path, &warnings);
  for (const std::string& w : warnings) warn_once("tuning database " + path + ": " + w);
  if (!s.ok()) {
    warn_once("tuning database " + path + " is skipped: " + s.message);
    return Status::error(s.code, "tuning database " + path + " is skipped: " + s.message);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [key, entry] : file.entries()) {
    db_.set(key, entry);
    std::string why;
    if (const Instance* inst = resolve(registry(), key, entry, &why)) {
      tuned_[key] = inst;
    } else {
      tuned_.erase(key);  // a stale entry replaces nothing: the heuristics decide
      warn_once("tuning database " + path + ": " + why);
    }
  }
  return Status::success();
}

Status Dispatcher::save_tuning_db(const std::string& path_in) const {
  const std::string path = path_in.empty() ? db_path_ : path_in;
  if (path.empty())
    return Status::error(StatusCode::invalid_argument, "no tuning database file: give a path or set HIPGN_TUNING_DB");
  // What the file holds now (another process may have added entries since this handle read
  // it), with this handle's winners over it. A malformed file is replaced: it held nothing usable.
  TuningDb merged;
  std::vector<std::string> warnings;
  if (Status s = merged.load(path, &warnings); !s.ok()) {
    warn_once("tuning database " + path + " is malformed (" + s.message + "); it is replaced");
    merged = TuningDb{};
  }
  for (const std::string& w : warnings) warn_once("tuning database " + path + ": " + w);  // what saving drops
  std::lock_guard<std::mutex> lock(mutex_);
  for (const TuningKey& key : recorded_) merged.set(key, *db_.find(key));
  return merged.save(path);
}

TuningDb Dispatcher::tuning_db() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return db_;
}

}  // namespace hipgn
