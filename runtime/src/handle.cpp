// The Handle: device properties, per-stream workspace, tuning state, and dispatch.
#include <string>
#include <utility>
#include <vector>

#include "hipgn/hipgn.hpp"

#ifndef HIPGN_BUILD_DTYPES
#define HIPGN_BUILD_OPS "?"
#define HIPGN_BUILD_DTYPES "?"
#define HIPGN_BUILD_LAYOUTS "?"
#define HIPGN_BUILD_ACTIVATIONS "?"
#endif

namespace hipgn {

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

Status no_instance_status(const Registry& reg, const Problem& p, const Tensors* tensors) {
  const auto& bucket = reg.bucket(Key::of(p));
  if (bucket.empty()) return Status::error(StatusCode::not_built, not_built_message(p, build_config()));
  // Each family's distinct reasons, in registration order; families with the same reasons
  // share one clause, so a limit every instance hits (say, a grid dimension) reads once.
  std::vector<std::pair<std::string, std::vector<std::string>>> families;  // family -> reasons
  for (const Instance* inst : bucket) {
    std::string why;
    if (inst->supports(p, tensors, &why)) why = "supports it, but no heuristic rule picks this family for it";
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

Status Handle::create(std::unique_ptr<Handle>* out) {
  int count = 0;
  const hipError_t e = hipGetDeviceCount(&count);
  if (e != hipSuccess || count == 0) {
    out->reset(new Handle(DeviceInfo{}, false));
    return Status::error(StatusCode::no_device, std::string("no GPU: ") +
                                                    (e != hipSuccess ? hipGetErrorString(e) : "the runtime sees no device"));
  }
  int dev = 0;
  hipDeviceProp_t prop{};
  if (hipGetDevice(&dev) != hipSuccess || hipGetDeviceProperties(&prop, dev) != hipSuccess) {
    out->reset(new Handle(DeviceInfo{}, false));
    return Status::error(StatusCode::runtime_error, "cannot read the device's properties");
  }
  DeviceInfo info;
  info.name = prop.name;
  info.compute_units = prop.multiProcessorCount;
  info.warp_size = prop.warpSize;
  out->reset(new Handle(info, true));
  return Status::success();
}

Handle::~Handle() {
  for (auto& [stream, buf] : workspaces_) (void)hipFree(buf.first);
}

const Instance* Handle::choose(const Problem& p, const Tensors* tensors, Status* why) const {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = tuned_.find(p.to_string());
    if (it != tuned_.end()) {
      const Instance* inst = registry().find(it->second);
      if (inst && inst->supports(p, tensors)) return inst;  // else (say, misaligned) fall through
    }
  }
  const Instance* inst = heuristic_choice(registry(), info_, p, tensors);
  if (!inst && why) *why = no_instance_status(registry(), p, tensors);
  return inst;
}

const Instance* Handle::named(const Problem& p, const std::string& name, const Tensors* tensors, Status* why) const {
  auto fail = [why](StatusCode code, std::string m) -> const Instance* {
    if (why) *why = Status::error(code, std::move(m));
    return nullptr;
  };
  const Instance* inst = registry().find(name);
  if (!inst) {
    if (!InstanceSpec::parse(name))
      return fail(StatusCode::unknown_instance,
                  "'" + name + "' is not an instance name (gn_<op>_<x dtype>_<gamma dtype>_<layout>_<act>_<family>"
                  "_b<block>_v<vector>_e<per thread>)");
    return fail(StatusCode::unknown_instance, name + " is a valid name but this build did not compile it (preset " +
                                                  "or HIPGN_INSTANCE_FILTER); the build's manifest.json lists those it did");
  }
  std::string reason;
  if (!inst->supports(p, tensors, &reason))
    return fail(StatusCode::not_supported, name + " does not support " + p.to_string() + ": " + reason);
  return inst;
}

std::size_t Handle::workspace_bytes(const Problem& p, const std::string& instance) const {
  const Instance* inst = instance.empty() ? choose(p, nullptr) : registry().find(instance);
  return inst ? inst->workspace_bytes(p) : 0;
}

Status Handle::set_tuned(const Problem& p, const std::string& instance) {
  const Instance* inst = registry().find(instance);
  if (!inst) return Status::error(StatusCode::unknown_instance, "no instance named " + instance + " in this build");
  std::string why;
  if (!inst->supports(p, nullptr, &why))
    return Status::error(StatusCode::not_supported, instance + " does not support " + p.to_string() + ": " + why);
  std::lock_guard<std::mutex> lock(mutex_);
  tuned_[p.to_string()] = instance;
  return Status::success();
}

Status Handle::workspace_for(hipStream_t stream, std::size_t bytes, void** ptr) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& buf = workspaces_[stream];
  if (buf.second < bytes) {
    // Grows rarely (a new largest problem on this stream); hipFree waits for work in flight.
    if (buf.first) (void)hipFree(buf.first);
    buf = {nullptr, 0};
    const hipError_t e = hipMalloc(&buf.first, bytes);
    if (e != hipSuccess)
      return Status::error(StatusCode::runtime_error, std::string("workspace allocation failed: ") + hipGetErrorString(e));
    buf.second = bytes;
  }
  *ptr = buf.first;
  return Status::success();
}

Status Handle::run(const Problem& p, const Tensors& t, hipStream_t stream, const std::string& instance) {
  Status s = validate(p, t);
  if (!s.ok()) return s;
  const Instance* inst = nullptr;
  if (!instance.empty()) {
    inst = named(p, instance, &t, &s);
    if (!inst) return s;
  } else {
    inst = choose(p, &t, &s);
    if (!inst) return s;
  }
  if (!has_device_) return Status::error(StatusCode::no_device, "no GPU: this handle cannot launch");
  void* ws = nullptr;
  if (const std::size_t bytes = inst->workspace_bytes(p)) {
    s = workspace_for(stream, bytes, &ws);
    if (!s.ok()) return s;
  }
  return inst->run(p, t, ws, stream);
}

}  // namespace hipgn
