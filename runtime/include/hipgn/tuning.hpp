// The tuning database (MIOpen's PerfDb idea): per problem and target, the instance that timing
// found fastest. Dispatch consults it before the heuristic rules. It lives in a JSON file
// (HIPGN_TUNING_DB names the user's); a stale or corrupt file never breaks dispatch: entries
// this build cannot honour are ignored with a warning, a malformed file is reported and skipped.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "hipgn/heuristics.hpp"
#include "hipgn/problem.hpp"
#include "hipgn/registry.hpp"
#include "hipgn/status.hpp"

namespace hipgn {

// What a winner is recorded under: the problem's structure and the target it was timed on
// (architecture and compute units, DeviceInfo::key()). eps and the Swish slope change no
// instance's speed, so they are not part of it; nor is the device's display name, which does
// not say which target a device is.
struct TuningKey {
  Op op = Op::fwd;
  std::int64_t n = 0, c = 0, groups = 0;
  std::vector<std::int64_t> spatial;
  DataType x_dtype = DataType::f32, gamma_dtype = DataType::f32;
  Layout layout = Layout::channels_first;
  Activation act = Activation::none;
  TargetKey target;

  static TuningKey of(const Problem&, const TargetKey& target);
  Problem problem() const;        // with the default eps and Swish slope
  std::string to_string() const;  // for messages: "fwd n2 c320 s64x64 g32 f16/f16 cl swish on sm_90 x132"
  bool operator<(const TuningKey&) const;
  bool operator==(const TuningKey&) const;
};

class TuningDb {
 public:
  struct Entry {
    std::string instance;
    double us = 0;  // the winner's median time; 0 when recorded without timing
    std::string device;  // the display name of the device it was timed on: for readers, not a key
  };

  // The file format's identity; a document naming another format or version is malformed,
  // except kVersionByName, which is read (parse() says how).
  static constexpr const char* kFormat = "hipgn-tuning-db";
  static constexpr int kVersion = 2;
  static constexpr int kVersionByName = 1;  // winners keyed by the device's display name

  // Reads a document. Malformed as a whole (not JSON, not this format or version): returns
  // an error and leaves the database unchanged. A malformed entry is skipped and described in
  // *warnings; well-formed entries are added (a later one replaces an earlier same key). A
  // version 1 document is well formed but adds nothing: one warning says its entries are
  // ignored and should be re-tuned (tuning_db.cpp says why).
  Status parse(const std::string& text, std::vector<std::string>* warnings);
  // parse() of a file's content; a file that does not exist is an empty database (success).
  Status load(const std::string& path, std::vector<std::string>* warnings);
  // The document: entries sorted by key, so that files diff well.
  std::string dump() const;
  // Writes dump() to path through a temporary file renamed over it: a reader never sees half.
  Status save(const std::string& path) const;

  const Entry* find(const TuningKey&) const;
  void set(const TuningKey& key, Entry entry) { entries_[key] = std::move(entry); }
  const std::map<TuningKey, Entry>& entries() const { return entries_; }
  std::size_t size() const { return entries_.size(); }

 private:
  std::map<TuningKey, Entry> entries_;
};

// The instance an entry names, if the registry has it and it supports the key's problem;
// else null, with *why saying which (the warning's text).
const Instance* resolve(const Registry&, const TuningKey&, const TuningDb::Entry&, std::string* why);

// Prints "hipgn: <message>" on stderr the first time this process sees the message: a stale
// database warns once, not once per handle or per call.
void warn_once(const std::string& message);

}  // namespace hipgn
