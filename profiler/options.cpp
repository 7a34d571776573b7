// The profiler's command line: CLI11 for the option structure, and strict parsers built on
// std::from_chars that take the whole text or refuse it, because CLI11's own conversions
// accept "64.5" as 64 and saturate past 2^63 without a word.
#include "options.hpp"

#include <CLI/CLI.hpp>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iterator>
#include <limits>

namespace hipgn::profiler {

namespace {
std::string in_quotes(std::string_view text) { return "'" + std::string(text) + "'"; }
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
}  // namespace

bool parse_int64(std::string_view text, std::int64_t min, std::int64_t max, std::int64_t* out, std::string* why) {
  std::int64_t v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  const std::string range = " (" + std::to_string(min) + " to " + std::to_string(max) + ")";
  if (text.empty()) return *why = "an empty value is not an integer", false;
  if (ec == std::errc::result_out_of_range) return *why = in_quotes(text) + " is out of range" + range, false;
  if (ec != std::errc() || ptr != end) return *why = in_quotes(text) + " is not an integer", false;
  if (v < min || v > max) return *why = in_quotes(text) + " is out of range" + range, false;
  *out = v;
  return true;
}

bool parse_float(std::string_view text, bool positive, float* out, std::string* why) {
  float v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty()) return *why = "an empty value is not a number", false;
  if (ec == std::errc::result_out_of_range) return *why = in_quotes(text) + " is outside the float range", false;
  if (ec != std::errc() || ptr != end) return *why = in_quotes(text) + " is not a number", false;
  if (!std::isfinite(v)) return *why = in_quotes(text) + " is not finite", false;
  if (positive && !(v > 0)) return *why = in_quotes(text) + " must be greater than 0", false;
  *out = v;
  return true;
}

bool parse_dims(std::string_view text, std::vector<std::int64_t>* out, std::string* why) {
  std::vector<std::int64_t> dims;
  if (!text.empty()) {
    for (std::size_t start = 0, index = 1;; ++index) {
      const std::size_t stop = std::min(text.find_first_of(",x", start), text.size());
      const std::string_view item = text.substr(start, stop - start);
      std::int64_t d = 0;
      std::string item_why;
      if (item.empty())
        return *why = in_quotes(text) + ": dimension " + std::to_string(index) + " is empty", false;
      if (!parse_int64(item, 1, kMax, &d, &item_why))
        return *why = in_quotes(text) + ": dimension " + std::to_string(index) + ": " + item_why, false;
      dims.push_back(d);
      if (stop == text.size()) break;
      start = stop + 1;
    }
  }
  *out = std::move(dims);
  return true;
}

bool check_writable(const std::string& path, std::string* why) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p(path);
  if (path.empty()) return *why = "an empty path", false;
  if (fs::is_directory(p, ec)) return *why = in_quotes(path) + " is a folder, not a file", false;
  const fs::path folder = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  if (!fs::exists(folder, ec)) return *why = in_quotes(path) + ": the folder " + folder.string() + " does not exist", false;
  if (!fs::is_directory(folder, ec)) return *why = in_quotes(path) + ": " + folder.string() + " is not a folder", false;
  const bool exists = fs::exists(p, ec);
  if (::access(exists ? p.c_str() : folder.c_str(), exists ? W_OK : W_OK | X_OK) != 0)
    return *why = in_quotes(path) + ": cannot write " + (exists ? "it" : "in " + folder.string()) + ": " +
                  std::strerror(errno),
           false;
  return true;
}

namespace {
using Parser = std::function<bool(const std::string&, std::string*)>;

// An option whose text goes through `parse`; a refusal throws CLI11's ValidationError, which
// names the option, so every bad value reads "--option: 'value' is ...".
CLI::Option* add_strict(CLI::App& app, const std::string& names, const std::string& label, const std::string& help,
                        const std::string& type, const std::string& default_text, Parser parse) {
  CLI::Option* opt = app.add_option_function<std::string>(
      names,
      [label, parse](const std::string& text) {
        std::string why;
        if (!parse(text, &why)) throw CLI::ValidationError(label, why);
      },
      help);
  opt->type_name(type);
  if (!default_text.empty()) opt->default_str(default_text);
  return opt;
}

// An enum's choices and their meanings, from the vocabulary (hipgn/types.hpp).
template <typename E>
std::vector<std::string> choices() {
  return {std::begin(Names<E>::all), std::end(Names<E>::all)};
}
template <typename E>
std::string described() {
  std::string text;
  for (std::size_t i = 0; i < std::size(Names<E>::all); ++i)
    text.append(i ? ", " : "").append(Names<E>::all[i]).append(" (").append(Names<E>::docs[i]).append(")");
  return text;
}

constexpr const char* kExitCodes =
    "Exit status: 0 every instance run verified (or listed); 1 an instance failed verification;\n"
    "2 bad input, refused before running (an option's value, the problem, --instance, or a problem\n"
    "this build has no instance for); 3 a runtime error (the GPU runtime, or writing --csv).";
}  // namespace

int parse_command_line(int argc, const char* const* argv, Options* out) {
  CLI::App app{"hipgn_profiler: run, verify and time every instance that supports a GroupNorm problem"};
  app.footer(kExitCodes);
  Options o;
  Problem& p = o.problem;
  p.n = 2;
  p.c = 320;
  p.groups = 32;
  p.spatial = {64, 64};
  p.x_dtype = p.gamma_dtype = DataType::f16;
  p.layout = Layout::channels_last;
  p.act = Activation::swish;
  std::string op(to_string(p.op)), dtype(to_string(p.x_dtype)), gamma_dtype, layout(to_string(p.layout)),
      act(to_string(p.act));
  auto size = [](std::int64_t* target) {
    return [target](const std::string& t, std::string* why) { return parse_int64(t, 1, kMax, target, why); };
  };
  // a count of runs: a bound keeps the timing vectors reasonable
  auto runs = [](int* target, int min) {
    return [target, min](const std::string& t, std::string* why) {
      std::int64_t v = 0;
      if (!parse_int64(t, min, 1000000, &v, why)) return false;
      *target = int(v);
      return true;
    };
  };
  app.add_option("--op", op, described<Op>())->check(CLI::IsMember(choices<Op>()))->capture_default_str();
  add_strict(app, "-n,--batch", "--batch", "N, at least 1", "INT", "2", size(&p.n));
  add_strict(app, "-c,--channels", "--channels", "C, at least 1", "INT", "320", size(&p.c));
  add_strict(app, "-s,--spatial", "--spatial", "spatial sizes, each at least 1: 64,64 or 8x64x64 (empty: none)",
             "DIMS", "64,64", [&p](const std::string& t, std::string* why) { return parse_dims(t, &p.spatial, why); });
  add_strict(app, "-g,--groups", "--groups", "G, at least 1, dividing C (or not, with --uneven-groups)", "INT", "32",
             size(&p.groups));
  app.add_flag("--uneven-groups", p.uneven_groups,
               "let G leave a remainder of C: groups of C/G channels (floored), the last one the rest (Caffe2's)");
  app.add_option("--dtype", dtype, "x/y dtype: " + described<DataType>())
      ->check(CLI::IsMember(choices<DataType>()))
      ->capture_default_str();
  app.add_option("--gamma-dtype", gamma_dtype, "gamma/beta dtype: the x dtype (default) or f32")
      ->check(CLI::IsMember(choices<DataType>()));
  app.add_option("--layout", layout, described<Layout>())->check(CLI::IsMember(choices<Layout>()))->capture_default_str();
  app.add_option("--act", act, described<Activation>())->check(CLI::IsMember(choices<Activation>()))->capture_default_str();
  add_strict(app, "--swish-beta", "--swish-beta", "s in z * sigmoid(s z), finite", "FLOAT", "1",
             [&p](const std::string& t, std::string* why) { return parse_float(t, false, &p.swish_beta, why); });
  add_strict(app, "--eps", "--eps", "epsilon, finite and > 0", "FLOAT", "1e-05",
             [&p](const std::string& t, std::string* why) { return parse_float(t, true, &p.eps, why); });
  app.add_option("--instance", o.instance, "profile only this instance (a name --list shows)");
  add_strict(app, "--warmup", "--warmup", "runs before timing, 0 to 1000000", "INT", "10", runs(&o.warmup, 0));
  add_strict(app, "--iters", "--iters", "timed runs (the median is reported), 1 to 1000000", "INT", "100",
             runs(&o.iters, 1));
  app.add_flag("--no-flush", o.no_flush, "do not flush the L2 between timed runs");
  add_strict(app, "--csv", "--csv", "also write the table as CSV to this file (its folder must exist)", "FILE", "",
             [&o](const std::string& t, std::string* why) {
               if (!check_writable(t, why)) return false;
               o.csv = t;
               return true;
             });
  app.add_flag("--list", o.list_only, "list the supporting instances and the heuristic's choice; run nothing");
  app.add_flag("--tune", o.tune,
               "record the fastest verified instance in the tuning database (--tuning-db or HIPGN_TUNING_DB), "
               "under this device's architecture and compute units");
  add_strict(app, "--tuning-db", "--tuning-db", "the tuning database file --tune writes (default: $HIPGN_TUNING_DB)",
             "FILE", "", [&o](const std::string& t, std::string* why) {
               if (!check_writable(t, why)) return false;
               o.tuning_db = t;
               return true;
             });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e) == 0 ? kExitOk : kExitBadInput;  // --help
    std::fprintf(stderr, "hipgn_profiler: %s\n", e.what());
    return kExitBadInput;
  }
  // IsMember above admits only these spellings, so the conversions cannot fail.
  hipgn::parse(op, p.op);
  hipgn::parse(dtype, p.x_dtype);
  hipgn::parse(gamma_dtype.empty() ? dtype : gamma_dtype, p.gamma_dtype);
  hipgn::parse(layout, p.layout);
  hipgn::parse(act, p.act);
  if (o.tune && o.tuning_db.empty()) {
    const char* env = std::getenv("HIPGN_TUNING_DB");
    if (!env || !*env) {
      std::fprintf(stderr, "hipgn_profiler: --tune needs a database file: --tuning-db PATH or HIPGN_TUNING_DB\n");
      return kExitBadInput;
    }
    o.tuning_db = env;
  }
  *out = std::move(o);
  return -1;
}

}  // namespace hipgn::profiler
