// The tuning database's key, its JSON file (nlohmann-json, private to the library: nothing of
// it appears in a public header) and the check of its entries against the registry.
#include "hipgn/tuning.hpp"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <tuple>

#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

namespace hipgn {

using json = nlohmann::ordered_json;  // keeps the fields in the order written: readable files

TuningKey TuningKey::of(const Problem& p, const TargetKey& target) {
  TuningKey k;
  k.op = p.op;
  k.n = p.n;
  k.c = p.c;
  k.groups = p.groups;
  k.spatial = p.spatial;
  k.x_dtype = p.x_dtype;
  k.gamma_dtype = p.gamma_dtype;
  k.layout = p.layout;
  k.act = p.act;
  k.target = target;
  return k;
}

Problem TuningKey::problem() const {
  Problem p;
  p.op = op;
  p.n = n;
  p.c = c;
  p.groups = groups;
  p.spatial = spatial;
  p.x_dtype = x_dtype;
  p.gamma_dtype = gamma_dtype;
  p.layout = layout;
  p.act = act;
  // C % G != 0 is valid only for an uneven-groups problem, so the key needs no field of its own
  p.uneven_groups = p.uneven();
  return p;
}

std::string TuningKey::to_string() const {
  std::ostringstream o;
  o << hipgn::to_string(op) << " n" << n << " c" << c << " s";
  for (std::size_t i = 0; i < spatial.size(); ++i) o << (i ? "x" : "") << spatial[i];
  if (spatial.empty()) o << "1";
  o << " g" << groups << " " << hipgn::to_string(x_dtype) << "/" << hipgn::to_string(gamma_dtype) << " "
    << hipgn::to_string(layout) << " " << hipgn::to_string(act) << " on " << target.to_string();
  return o.str();
}

namespace {
auto tie(const TuningKey& k) {
  return std::tie(k.target, k.op, k.x_dtype, k.gamma_dtype, k.layout, k.act, k.n, k.c, k.groups, k.spatial);
}
}  // namespace

bool TuningKey::operator<(const TuningKey& o) const { return tie(*this) < tie(o); }
bool TuningKey::operator==(const TuningKey& o) const { return tie(*this) == tie(o); }

const TuningDb::Entry* TuningDb::find(const TuningKey& key) const {
  const auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second;
}

namespace {

// One entry of the document; false with *why on a missing or mistyped field.
bool read_entry(const json& e, TuningKey* key, TuningDb::Entry* entry, std::string* why) {
  if (!e.is_object()) {
    *why = "not a JSON object";
    return false;
  }
  auto field = [&](const char* name) -> const json* {
    const auto it = e.find(name);
    return it == e.end() ? nullptr : &*it;
  };
  auto text = [&](const char* name, std::string* out) {
    const json* v = field(name);
    if (!v || !v->is_string()) {
      *why = std::string("field \"") + name + "\" is missing or not a string";
      return false;
    }
    *out = v->get<std::string>();
    return true;
  };
  auto count = [&](const json* v, const std::string& name, std::int64_t* out, std::int64_t least = 1) {
    if (!v || !v->is_number_integer() || v->get<std::int64_t>() < least) {
      *why = "field \"" + name + "\" is missing or not an integer >= " + std::to_string(least);
      return false;
    }
    *out = v->get<std::int64_t>();
    return true;
  };
  std::string op, x_dtype, gamma_dtype, layout, act;
  if (!text("arch", &key->target.arch) || !text("op", &op) || !text("x_dtype", &x_dtype) ||
      !text("gamma_dtype", &gamma_dtype) || !text("layout", &layout) || !text("act", &act) ||
      !text("instance", &entry->instance))
    return false;
  if (key->target.arch.empty()) {
    *why = "field \"arch\" is empty";
    return false;
  }
  // 0: recorded by a handle without a device (DeviceInfo's "none", 0)
  std::int64_t cus = 0;
  if (!count(field("compute_units"), "compute_units", &cus, 0)) return false;
  key->target.compute_units = int(cus);
  entry->device.clear();
  if (const json* device = field("device")) {  // informative: may be absent
    if (!device->is_string()) {
      *why = "field \"device\" is not a string";
      return false;
    }
    entry->device = device->get<std::string>();
  }
  auto named = [&](const char* name, const std::string& value, auto& out) {
    if (hipgn::parse(value, out)) return true;
    *why = std::string("field \"") + name + "\" has an unknown value \"" + value + "\"";
    return false;
  };
  if (!named("op", op, key->op) || !named("x_dtype", x_dtype, key->x_dtype) ||
      !named("gamma_dtype", gamma_dtype, key->gamma_dtype) || !named("layout", layout, key->layout) ||
      !named("act", act, key->act))
    return false;
  if (!count(field("n"), "n", &key->n) || !count(field("c"), "c", &key->c) ||
      !count(field("groups"), "groups", &key->groups))
    return false;
  const json* spatial = field("spatial");
  if (!spatial || !spatial->is_array()) {
    *why = "field \"spatial\" is missing or not an array";
    return false;
  }
  key->spatial.clear();
  for (std::size_t i = 0; i < spatial->size(); ++i) {
    std::int64_t d = 0;
    if (!count(&(*spatial)[i], "spatial[" + std::to_string(i) + "]", &d)) return false;
    key->spatial.push_back(d);
  }
  entry->us = 0;
  if (const json* us = field("us")) {
    if (!us->is_number() || !(us->get<double>() >= 0)) {
      *why = "field \"us\" is not a number >= 0";
      return false;
    }
    entry->us = us->get<double>();
  }
  return true;
}

}  // namespace

Status TuningDb::parse(const std::string& text, std::vector<std::string>* warnings) {
  auto bad = [](std::string m) { return Status::error(StatusCode::invalid_argument, std::move(m)); };
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    return bad(std::string("not valid JSON (") + e.what() + ")");
  }
  if (!doc.is_object()) return bad("not a hipgn tuning database: the document is not a JSON object");
  const auto format = doc.find("format");
  if (format == doc.end() || !format->is_string() || format->get<std::string>() != kFormat)
    return bad(std::string("not a hipgn tuning database: \"format\" is not \"") + kFormat + "\"");
  const auto version = doc.find("version");
  const bool by_name = version != doc.end() && version->is_number_integer() && *version == kVersionByName;
  if (!by_name &&
      (version == doc.end() || !version->is_number_integer() || version->get<std::int64_t>() != kVersion))
    return bad("tuning database version " + (version == doc.end() ? std::string("missing") : version->dump()) +
               ": this build reads version " + std::to_string(kVersion));
  const auto list = doc.find("entries");
  if (list == doc.end() || !list->is_array()) return bad("\"entries\" is missing or not an array");
  if (by_name) {
    // Version 1 keyed a winner by the device's display name ("NVIDIA H100 80GB HBM3"), which
    // names neither the architecture nor the compute units: the same name cannot tell which
    // target it was timed on, and mapping names to targets would take a hand-kept list of
    // product names. Its entries are not migrated but ignored, the heuristics deciding until
    // they are re-tuned; a wrong winner costs more than the rules' choice, and re-timing is
    // cheap. The document stays readable (not "malformed"), so that the reason is given and
    // saving replaces it with version 2.
    if (warnings)
      warnings->push_back("version " + std::to_string(kVersionByName) + " keys winners by the device's name, not " +
                          "its target (architecture and compute units): its " + std::to_string(list->size()) +
                          " entries are ignored, and dropped when this build saves to the file; re-tune them " +
                          "(hipgn_profiler --tune, Handle::tune, hipgn.torch.tune)");
    return Status::success();
  }
  std::map<TuningKey, Entry> read;
  for (std::size_t i = 0; i < list->size(); ++i) {
    TuningKey key;
    Entry entry;
    std::string why;
    if (!read_entry((*list)[i], &key, &entry, &why)) {
      if (warnings) warnings->push_back("entry " + std::to_string(i) + " is malformed (" + why + "); ignored");
      continue;
    }
    if (read.count(key) && warnings)
      warnings->push_back("entry " + std::to_string(i) + " repeats " + key.to_string() + "; the later one is kept");
    read[key] = entry;
  }
  for (auto& [key, entry] : read) entries_[key] = std::move(entry);
  return Status::success();
}

Status TuningDb::load(const std::string& path, std::vector<std::string>* warnings) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::success();  // not written yet: an empty database
    return Status::error(StatusCode::invalid_argument, "cannot read: " + std::string(std::strerror(errno)));
  }
  if (S_ISDIR(st.st_mode)) return Status::error(StatusCode::invalid_argument, "cannot read: it is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::error(StatusCode::invalid_argument, "cannot read: " + std::string(std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  return parse(text.str(), warnings);
}

std::string TuningDb::dump() const {
  // one entry per line: a file that diffs and greps well
  std::string lines;
  for (const auto& [key, entry] : entries_) {
    json e;
    e["arch"] = key.target.arch;
    e["compute_units"] = key.target.compute_units;
    e["op"] = std::string(hipgn::to_string(key.op));
    e["n"] = key.n;
    e["c"] = key.c;
    e["spatial"] = key.spatial;
    e["groups"] = key.groups;
    e["x_dtype"] = std::string(hipgn::to_string(key.x_dtype));
    e["gamma_dtype"] = std::string(hipgn::to_string(key.gamma_dtype));
    e["layout"] = std::string(hipgn::to_string(key.layout));
    e["act"] = std::string(hipgn::to_string(key.act));
    e["instance"] = entry.instance;
    e["us"] = entry.us;
    if (!entry.device.empty()) e["device"] = entry.device;
    lines += (lines.empty() ? "\n  " : ",\n  ") + e.dump();
  }
  return std::string("{\"format\": \"") + kFormat + "\", \"version\": " + std::to_string(kVersion) +
         ", \"entries\": [" + lines + (lines.empty() ? "]}\n" : "\n]}\n");
}

Status TuningDb::save(const std::string& path) const {
  // the temporary file sits beside the target, so that rename() stays on one file system;
  // named per process and per call, so that concurrent savers never share one
  static std::atomic<unsigned> calls{0};
  const std::string tmp = path + ".tmp" + std::to_string(::getpid()) + "." + std::to_string(calls++);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return Status::error(StatusCode::invalid_argument, "cannot write " + tmp + ": " + std::strerror(errno));
    out << dump();
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      return Status::error(StatusCode::runtime_error, "writing " + tmp + " failed");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    return Status::error(StatusCode::invalid_argument, "cannot replace " + path + ": " + why);
  }
  return Status::success();
}

const Instance* resolve(const Registry& registry, const TuningKey& key, const TuningDb::Entry& entry,
                        std::string* why) {
  const Instance* inst = registry.find(entry.instance);
  if (!inst) {
    if (why) *why = key.to_string() + ": instance " + entry.instance + " is not in this build; ignored";
    return nullptr;
  }
  const Problem p = in_layout(key.problem(), inst->spec().layout);
  if (Status s = validate(p); !s.ok()) {
    if (why) *why = key.to_string() + ": not a valid problem (" + s.message + "); ignored";
    return nullptr;
  }
  std::string reason;
  if (!inst->supports(p, nullptr, &reason, key.target.compute_units)) {  // on the entry's own target
    if (why) *why = key.to_string() + ": " + entry.instance + " does not support it (" + reason + "); ignored";
    return nullptr;
  }
  return inst;
}

void warn_once(const std::string& message) {
  static std::mutex mutex;
  static std::set<std::string> seen;
  std::lock_guard<std::mutex> lock(mutex);
  if (seen.insert(message).second) std::fprintf(stderr, "hipgn: %s\n", message.c_str());
}

}  // namespace hipgn
