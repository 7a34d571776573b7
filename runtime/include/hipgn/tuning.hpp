// The tuning database (MIOpen's PerfDb idea): per problem and device, the instance that timing
// found fastest. Dispatch consults it before the heuristic rules. It lives in a JSON file
// (HIPGN_TUNING_DB names the user's); a stale or corrupt file never breaks dispatch: entries
// this build cannot honour are ignored with a warning, a malformed file is reported and skipped.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "hipgn/problem.hpp"
#include "hipgn/registry.hpp"
#include "hipgn/status.hpp"

namespace hipgn {

// What a winner is recorded under: the problem's structure and the device's name. eps and
// the Swish slope change no instance's speed, so they are not part of it.
struct TuningKey {
  Op op = Op::fwd;
  std::int64_t n = 0, c = 0, groups = 0;
  std::vector<std::int64_t> spatial;
  DataType x_dtype = DataType::f32, gamma_dtype = DataType::f32;
  Layout layout = Layout::channels_first;
  Activation act = Activation::none;
  std::string device;

  static TuningKey of(const Problem&, const std::string& device);
  Problem problem() const;        // with the default eps and Swish slope
  std::string to_string() const;  // for messages: "fwd n2 c320 s64x64 g32 f16/f16 cl swish on NAME"
  bool operator<(const TuningKey&) const;
  bool operator==(const TuningKey&) const;
};

class TuningDb {
 public:
  struct Entry {
    std::string instance;
    double us = 0;  // the winner's median time; 0 when recorded without timing
  };

  // The file format's identity; a document naming another format or version is malformed.
  static constexpr const char* kFormat = "hipgn-tuning-db";
  static constexpr int kVersion = 1;

  // Reads a document. Malformed as a whole (not JSON, not this format or version): returns
  // an error and leaves the database unchanged. A malformed entry is skipped and described in
  // *warnings; well-formed entries are added (a later one replaces an earlier same key).
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
