// The profiler's command line and exit codes. Every value either parses exactly (the whole
// text, in range) or is refused with one line naming the option and the value; parsing lives
// here, apart from the measuring in hipgn_profiler.cpp, so options can be added without
// touching the run.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hipgn/problem.hpp"

namespace hipgn::profiler {

// The exit codes, one per kind of outcome (also in --help and the README).
enum ExitCode : int {
  kExitOk = 0,            // every instance run verified (or listing only)
  kExitWrong = 1,         // an instance's output failed verification
  kExitBadInput = 2,      // refused before running: the command line, the problem, the instance
  kExitRuntimeError = 3,  // the GPU runtime failed, or the CSV could not be written
};

struct Options {
  Problem problem;
  std::string instance;  // empty: every supporting instance
  std::string csv;       // empty: no CSV
  int warmup = 10;
  int iters = 100;
  bool list_only = false;
  bool no_flush = false;
  bool tune = false;       // record the fastest verified instance in the tuning database
  std::string tuning_db;   // the database --tune writes (--tuning-db, else HIPGN_TUNING_DB)
};

// Parses the command line into *out. Returns -1 to go on, else the exit code to return now:
// kExitOk after --help, kExitBadInput after printing one line to stderr.
int parse_command_line(int argc, const char* const* argv, Options* out);

// Strict conversions: true and *out set when `text` is exactly a value in range, else false
// and *why says what is wrong with it.
bool parse_int64(std::string_view text, std::int64_t min, std::int64_t max, std::int64_t* out, std::string* why);
bool parse_float(std::string_view text, bool positive, float* out, std::string* why);
// Spatial sizes separated by ',' or 'x' ("64,64", "8x64x64"); empty text is no dimension.
bool parse_dims(std::string_view text, std::vector<std::int64_t>* out, std::string* why);
// Whether a file can be created or overwritten at `path`, checked before any work is done.
bool check_writable(const std::string& path, std::string* why);

}  // namespace hipgn::profiler
