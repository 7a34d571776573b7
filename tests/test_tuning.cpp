// The tuning database: its file format (round trip, malformed documents and entries), its
// check against the registry (stale entries ignored with a warning, once), HIPGN_TUNING_DB,
// saving that keeps other entries, the C API; on a GPU, tuning itself.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "corpus.hpp"
#include "hipgn/family.hpp"
#include "gpu.hpp"
#include "hipgn/hipgn.h"
#include "hipgn/dispatcher.hpp"

namespace hipgn::test {
namespace {

// A temporary file name unique to the test (warnings name the file: each test sees its own).
std::string temp_path(const std::string& tag) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return ::testing::TempDir() + "hipgn_" + info->test_suite_name() + "_" + info->name() + "_" + tag + ".json";
}

void write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::trunc) << text;
}

std::string read(const std::string& path) {
  std::ostringstream o;
  o << std::ifstream(path).rdbuf();
  return o.str();
}

// A key this build compiled, with its generic instance (supports every problem) and, if
// built, an onchip instance (supports only groups that fit on chip).
struct Built {
  Key key{};
  const Instance* generic = nullptr;
  const Instance* onchip = nullptr;
};

Built some_forward_key() {
  Built b;
  for (const Key& k : Registry::global().keys()) {
    if (k.op != Op::fwd) continue;
    b = Built{k};
    for (const Instance* i : Registry::global().bucket(k)) {
      if (i->spec().generic()) b.generic = i;
      if (i->spec().family == Family::onchip) b.onchip = i;
    }
    if (b.onchip) break;
  }
  return b;
}

Problem problem_of(const Key& k, Shape s) {
  Problem p = make_problem(s, k.x_dtype, k.gamma_dtype, k.layout, k.act);
  p.op = k.op;
  return p;
}

std::string entry_json(const TuningKey& k, const std::string& instance, double us = 1.5) {
  TuningDb db;
  db.set(k, {instance, us, "dev"});
  const std::string doc = db.dump();
  // the entries array's one element
  const auto a = doc.find('['), b = doc.rfind(']');
  return doc.substr(a + 1, b - a - 1);
}

std::string document(const std::vector<std::string>& entries, int version = TuningDb::kVersion) {
  std::string list;
  for (const auto& e : entries) list += (list.empty() ? "" : ",") + e;
  return "{\"format\": \"hipgn-tuning-db\", \"version\": " + std::to_string(version) + ", \"entries\": [" + list +
         "]}";
}

// The device most tests describe by hand, and parts that share its architecture or its
// compute-unit count but not both.
const DeviceInfo kDevice{"dev", 132, 32, "sm_90"};
const TargetKey kDev = kDevice.key();
const TargetKey kPcie{"sm_90", 114};
const TargetKey kMi210{"gfx90a", 104};

TEST(TuningDb, KeyIgnoresEpsAndSwishSlopeOnly) {
  Problem a = make_problem({2, 320, {64, 64}, 32}, DataType::f16, DataType::f32, Layout::channels_last,
                           Activation::swish);
  Problem b = a;
  b.eps = 1e-6f;
  b.swish_beta = 1.7f;
  EXPECT_EQ(TuningKey::of(a, kDev), TuningKey::of(b, kDev));
  EXPECT_FALSE(TuningKey::of(a, kDev) == TuningKey::of(a, kPcie)) << "one arch, other compute units";
  EXPECT_FALSE(TuningKey::of(a, kDev) == TuningKey::of(a, TargetKey{"gfx90a", 132})) << "other arch, same count";
  for (auto change : std::vector<void (*)(Problem&)>{
           [](Problem& p) { p.op = Op::bwd; }, [](Problem& p) { p.n = 3; }, [](Problem& p) { p.c = 640; },
           [](Problem& p) { p.groups = 16; }, [](Problem& p) { p.spatial = {4096}; },
           [](Problem& p) { p.x_dtype = DataType::bf16; }, [](Problem& p) { p.gamma_dtype = DataType::f16; },
           [](Problem& p) { p.layout = Layout::channels_first; }, [](Problem& p) { p.act = Activation::none; }}) {
    Problem c = a;
    change(c);
    EXPECT_FALSE(TuningKey::of(a, kDev) == TuningKey::of(c, kDev)) << c.to_string();
  }
  EXPECT_EQ(TuningKey::of(a, kDev).problem().to_string(), TuningKey::of(a, kMi210).problem().to_string());
  EXPECT_EQ(TuningKey::of(a, kDev).to_string(), "fwd n2 c320 s64x64 g32 f16/f32 cl swish on sm_90 x132");
}

TEST(TuningDb, RoundTripsThroughItsDocument) {
  TuningDb db;
  Problem p = make_problem({2, 320, {64, 64}, 32}, DataType::f16, DataType::f32, Layout::channels_last,
                           Activation::swish);
  db.set(TuningKey::of(p, kDev), {"gn_fwd_f16_f32_cl_swish_split_b256_v8_e4", 12.25, "NVIDIA H100 80GB HBM3"});
  p.op = Op::bwd;
  p.spatial = {};
  db.set(TuningKey::of(p, kDev), {"gn_bwd_f16_f32_cl_swish_looped_b256_v1_e4", 0, "NVIDIA H100 80GB HBM3"});
  db.set(TuningKey::of(p, kPcie), {"gn_bwd_f16_f32_cl_swish_looped_b256_v1_e4", 0});  // no name: none written
  p.spatial = {3, 5, 7};
  db.set(TuningKey::of(p, {"gfx90a", 110}), {"gn_bwd_f16_f32_cl_swish_looped_b256_v1_e4", 3, "AMD Instinct MI250X"});
  db.set(TuningKey::of(p, {"none", 0}), {"gn_bwd_f16_f32_cl_swish_looped_b256_v1_e4", 3, "none"});  // no device
  TuningDb back;
  std::vector<std::string> warnings;
  ASSERT_TRUE(back.parse(db.dump(), &warnings).ok());
  EXPECT_TRUE(warnings.empty());
  ASSERT_EQ(back.size(), db.size());
  for (const auto& [key, entry] : db.entries()) {
    const TuningDb::Entry* e = back.find(key);
    ASSERT_NE(e, nullptr) << key.to_string();
    EXPECT_EQ(e->instance, entry.instance);
    EXPECT_EQ(e->us, entry.us);
    EXPECT_EQ(e->device, entry.device);
  }
  EXPECT_EQ(back.dump(), db.dump());
  EXPECT_NE(db.dump().find("{\"arch\":\"sm_90\",\"compute_units\":114,\"op\":\"bwd\""), std::string::npos) << db.dump();
}

TEST(TuningDb, MalformedDocumentsAreRejectedWhole) {
  TuningDb db;
  const Problem p = make_problem({2, 64, {8, 8}, 32}, DataType::f32, DataType::f32, Layout::channels_first,
                                 Activation::none);
  db.set(TuningKey::of(p, kDev), {"gn_keep_me", 1});
  const std::pair<const char*, const char*> cases[] = {
      {"{\"format\": \"hipgn-tuning-db\", \"version\": 2, \"entries\": [", "not valid JSON"},
      {"", "not valid JSON"},
      {"[]", "not a JSON object"},
      {"{\"version\": 1, \"entries\": []}", "\"format\""},
      {"{\"format\": \"miopen\", \"version\": 1, \"entries\": []}", "\"format\""},
      {"{\"format\": \"hipgn-tuning-db\", \"version\": 3, \"entries\": []}", "version 3"},
      {"{\"format\": \"hipgn-tuning-db\", \"version\": 0, \"entries\": []}", "reads version 2"},
      {"{\"format\": \"hipgn-tuning-db\", \"entries\": []}", "version missing"},
      {"{\"format\": \"hipgn-tuning-db\", \"version\": 2, \"entries\": {}}", "\"entries\""},
      {"{\"format\": \"hipgn-tuning-db\", \"version\": 2}", "\"entries\""},
      {"{\"format\": \"hipgn-tuning-db\", \"version\": 1}", "\"entries\""},
  };
  for (const auto& [text, says] : cases) {
    std::vector<std::string> warnings;
    const Status s = db.parse(text, &warnings);
    EXPECT_EQ(s.code, StatusCode::invalid_argument) << text;
    EXPECT_NE(s.message.find(says), std::string::npos) << text << " -> " << s.message;
    ASSERT_EQ(db.size(), 1u) << "a rejected document must leave the database as it was";
    EXPECT_EQ(db.entries().begin()->second.instance, "gn_keep_me");
  }
}

TEST(TuningDb, MalformedEntriesAreSkippedWithAWarning) {
  const Problem p = make_problem({2, 64, {8, 8}, 32}, DataType::f16, DataType::f16, Layout::channels_last,
                                 Activation::swish);
  const TuningKey key = TuningKey::of(p, kDev);
  const std::string good = entry_json(key, "gn_good");
  auto with = [&](const std::string& from, const std::string& to) {
    std::string e = good;
    const auto at = e.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return e.replace(at, from.size(), to);
  };
  const std::pair<std::string, const char*> bad[] = {
      {"42", "not a JSON object"},
      {with("\"op\":\"fwd\"", "\"op\":\"forward\""), "\"op\" has an unknown value"},
      {with("\"op\":\"fwd\",", ""), "\"op\" is missing"},
      {with("\"n\":2", "\"n\":0"), "\"n\""},
      {with("\"n\":2", "\"n\":2.5"), "\"n\""},
      {with("\"c\":64", "\"c\":\"64\""), "\"c\""},
      {with("\"layout\":\"cl\"", "\"layout\":\"nhwc\""), "\"layout\""},
      {with("\"x_dtype\":\"f16\"", "\"x_dtype\":\"f64\""), "\"x_dtype\""},
      {with("\"instance\":\"gn_good\"", "\"instance\":7"), "\"instance\""},
      {with("\"us\":1.5", "\"us\":-1"), "\"us\""},
      {with("\"arch\":\"sm_90\",", ""), "\"arch\" is missing"},
      {with("\"arch\":\"sm_90\"", "\"arch\":\"\""), "\"arch\" is empty"},
      {with("\"compute_units\":132", "\"compute_units\":-1"), "\"compute_units\""},
      {with("\"compute_units\":132,", ""), "\"compute_units\" is missing"},
      {with("\"device\":\"dev\"", "\"device\":7"), "\"device\" is not a string"},
  };
  std::vector<std::string> entries{good};
  for (const auto& [e, says] : bad) entries.push_back(e);
  // a well-formed entry after the bad ones is read too
  Problem q = p;
  q.n = 4;
  entries.push_back(entry_json(TuningKey::of(q, kDev), "gn_also_good"));
  TuningDb db;
  std::vector<std::string> warnings;
  ASSERT_TRUE(db.parse(document(entries), &warnings).ok());
  ASSERT_EQ(db.size(), 2u);
  EXPECT_EQ(db.find(key)->instance, "gn_good");
  EXPECT_EQ(db.find(TuningKey::of(q, kDev))->instance, "gn_also_good");
  ASSERT_EQ(warnings.size(), std::size(bad));
  for (std::size_t i = 0; i < std::size(bad); ++i) {
    EXPECT_NE(warnings[i].find("entry " + std::to_string(i + 1) + " is malformed"), std::string::npos) << warnings[i];
    EXPECT_NE(warnings[i].find(bad[i].second), std::string::npos) << warnings[i] << " should say " << bad[i].second;
  }
}

TEST(TuningDb, RepeatedKeysKeepTheLaterEntry) {
  const TuningKey key = TuningKey::of(
      make_problem({1, 32, {5}, 8}, DataType::f32, DataType::f32, Layout::channels_first, Activation::none), kDev);
  TuningDb db;
  std::vector<std::string> warnings;
  ASSERT_TRUE(db.parse(document({entry_json(key, "gn_first"), entry_json(key, "gn_second")}), &warnings).ok());
  EXPECT_EQ(db.find(key)->instance, "gn_second");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("repeats"), std::string::npos) << warnings[0];
}

TEST(TuningDb, MissingFileIsEmptyUnreadableIsAnError) {
  TuningDb db;
  std::vector<std::string> warnings;
  EXPECT_TRUE(db.load(temp_path("absent"), &warnings).ok());
  EXPECT_EQ(db.size(), 0u);
  EXPECT_FALSE(db.load(::testing::TempDir(), &warnings).ok()) << "a directory is not a database";
}

TEST(TuningDb, ResolveChecksTheRegistry) {
  const Built b = some_forward_key();
  if (!b.generic) GTEST_SKIP() << "no forward instances in this build";
  const Problem small = problem_of(b.key, {2, 64, {8, 8}, 32});
  std::string why;
  EXPECT_EQ(resolve(Registry::global(), TuningKey::of(small, kDev), {b.generic->name(), 1}, &why), b.generic);
  EXPECT_EQ(resolve(Registry::global(), TuningKey::of(small, kDev), {"gn_fwd_f16_f16_cl_swish_onchip_b999_v8_e4", 1},
                    &why),
            nullptr);
  EXPECT_NE(why.find("is not in this build"), std::string::npos) << why;
  // an instance of another functional key: the problem's op differs
  Problem other = small;
  other.op = Op::bwd;
  EXPECT_EQ(resolve(Registry::global(), TuningKey::of(other, kDev), {b.generic->name(), 1}, &why), nullptr);
  EXPECT_NE(why.find("does not support"), std::string::npos) << why;
  if (b.onchip) {  // a group far past what one workgroup holds on chip
    const Problem big = problem_of(b.key, {1, 64, {512, 512}, 1});
    EXPECT_EQ(resolve(Registry::global(), TuningKey::of(big, kDev), {b.onchip->name(), 1}, &why), nullptr);
    EXPECT_NE(why.find("does not support"), std::string::npos) << why;
    EXPECT_NE(why.find("on chip"), std::string::npos) << why;
  }
  // sizes an entry can carry that validate() rejects: more groups than channels (C % G != 0
  // alone is an uneven-groups problem's entry, resolved below)
  Problem invalid = small;
  invalid.groups = invalid.c + 1;
  EXPECT_EQ(resolve(Registry::global(), TuningKey::of(invalid, kDev), {b.generic->name(), 1}, &why), nullptr);
  EXPECT_NE(why.find("not a valid problem"), std::string::npos) << why;
  // an uneven-groups problem's entry resolves to an instance of a family that runs them only
  Problem uneven = small;
  uneven.groups = 7;
  uneven.uneven_groups = true;
  if (describe(b.generic->spec().family).uneven_groups)
    EXPECT_EQ(resolve(Registry::global(), TuningKey::of(uneven, kDev), {b.generic->name(), 1}, &why), b.generic)
        << why;
  if (b.onchip) {
    EXPECT_EQ(resolve(Registry::global(), TuningKey::of(uneven, kDev), {b.onchip->name(), 1}, &why), nullptr);
    EXPECT_NE(why.find("uneven groups"), std::string::npos) << why;
  }
}

// The instance a handle's automatic choice picks for p without tuning.
const Instance* heuristic(const Dispatcher& h, const Problem& p) { return heuristic_choice(h.registry(), h.device(), p); }

TEST(TuningDb, StaleEntriesAreIgnoredWithOneWarning) {
  const Built b = some_forward_key();
  if (!b.generic || !b.onchip) GTEST_SKIP() << "needs a forward key with an onchip and a generic instance";
  const DeviceInfo dev{"test device", 132, 32, "sm_90"};
  const Problem small = problem_of(b.key, {2, 64, {8, 8}, 32});
  const Problem big = problem_of(b.key, {1, 64, {512, 512}, 1});
  Problem third = small;
  third.n = 3;
  const std::string path = temp_path("stale");
  write(path, document({entry_json(TuningKey::of(small, dev.key()), b.generic->name()),
                        entry_json(TuningKey::of(big, dev.key()), b.onchip->name()),  // no longer fits
                        entry_json(TuningKey::of(third, dev.key()), "gn_fwd_f32_f32_cf_none_gone_b1_v1_e1")}));
  ::testing::internal::CaptureStderr();
  Dispatcher h(dev), h2(dev);
  EXPECT_TRUE(h.load_tuning_db(path).ok());
  EXPECT_TRUE(h2.load_tuning_db(path).ok());
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(h.choose(small, nullptr), b.generic) << "the honoured entry wins over the rules";
  EXPECT_EQ(h.choose(big, nullptr), heuristic(h, big)) << "a stale entry leaves the rules to decide";
  EXPECT_EQ(h.choose(third, nullptr), heuristic(h, third));
  auto count = [&](const std::string& s) {
    std::size_t n = 0;
    for (std::size_t at = err.find(s); at != std::string::npos; at = err.find(s, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("does not support"), 1u) << err;
  EXPECT_EQ(count("is not in this build"), 1u) << err;
  EXPECT_EQ(count("hipgn: tuning database " + path), 2u) << "one line per stale entry, once per process:\n" << err;
  EXPECT_EQ(h.tuning_db().size(), 3u) << "stale entries are kept (for saving back), not used";
}

TEST(TuningDb, MalformedFileIsReportedAndSkipped) {
  const Built b = some_forward_key();
  if (!b.generic) GTEST_SKIP() << "no forward instances in this build";
  const std::string path = temp_path("broken");
  write(path, "{\"format\": \"hipgn-tuning-db\", \"version\": 1, \"entries\": [{\"op\": ");
  const Problem p = problem_of(b.key, {2, 64, {8, 8}, 32});
  Dispatcher h(kDevice);
  ::testing::internal::CaptureStderr();
  const Status s = h.load_tuning_db(path);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(s.code, StatusCode::invalid_argument);
  EXPECT_NE(err.find(path + " is skipped: not valid JSON"), std::string::npos) << err;
  EXPECT_EQ(h.choose(p, nullptr), heuristic(h, p));
}

TEST(TuningDb, EnvironmentVariableIsReadAtCreation) {
  const Built b = some_forward_key();
  if (!b.generic) GTEST_SKIP() << "no forward instances in this build";
  const Problem p = problem_of(b.key, {2, 64, {8, 8}, 32});
  std::unique_ptr<Dispatcher> probe;
  (void)Dispatcher::create(&probe);  // for the device's target; no GPU: "none", 0
  const std::string path = temp_path("env");
  write(path, document({entry_json(TuningKey::of(p, probe->device().key()), b.generic->name())}));
  ASSERT_EQ(setenv("HIPGN_TUNING_DB", path.c_str(), 1), 0);
  std::unique_ptr<Dispatcher> h;
  (void)Dispatcher::create(&h);
  EXPECT_EQ(h->tuning_db_path(), path);
  EXPECT_EQ(h->choose(p, nullptr), b.generic);
  // a malformed file named by the variable: creation still succeeds, dispatch is the rules'
  write(path, "not json");
  ::testing::internal::CaptureStderr();
  std::unique_ptr<Dispatcher> h2;
  const Status created = Dispatcher::create(&h2);
  const std::string err = ::testing::internal::GetCapturedStderr();
  unsetenv("HIPGN_TUNING_DB");
  EXPECT_TRUE(created.ok() || created.code == StatusCode::no_device) << created.message;
  ASSERT_NE(h2, nullptr);
  EXPECT_NE(err.find("is skipped"), std::string::npos) << err;
  EXPECT_EQ(h2->choose(p, nullptr), heuristic(*h2, p));
}

TEST(TuningDb, SaveAddsThisHandlesWinnersToTheFile) {
  const Built b = some_forward_key();
  if (!b.generic) GTEST_SKIP() << "no forward instances in this build";
  const Problem p = problem_of(b.key, {2, 64, {8, 8}, 32});
  const std::string path = temp_path("save");
  // the file already holds another target's winner (another process wrote it)
  const TuningKey elsewhere = TuningKey::of(p, kMi210);
  write(path, document({entry_json(elsewhere, "gn_whatever_that_build_had")}));
  Dispatcher h(kDevice);
  EXPECT_EQ(h.save_tuning_db().code, StatusCode::invalid_argument) << "no path and no HIPGN_TUNING_DB";
  EXPECT_EQ(h.set_tuned(p, "gn_no_such_instance").code, StatusCode::unknown_instance);
  ASSERT_TRUE(h.set_tuned(p, b.generic->name(), 4.5).ok());
  ASSERT_TRUE(h.save_tuning_db(path).ok());
  TuningDb back;
  ASSERT_TRUE(back.load(path, nullptr).ok());
  ASSERT_EQ(back.size(), 2u) << read(path);
  EXPECT_EQ(back.find(elsewhere)->instance, "gn_whatever_that_build_had");
  EXPECT_EQ(back.find(TuningKey::of(p, kDev))->instance, b.generic->name());
  EXPECT_EQ(back.find(TuningKey::of(p, kDev))->us, 4.5);
  EXPECT_EQ(back.find(TuningKey::of(p, kDev))->device, "dev") << "the device's name, for readers";
  // a malformed file is replaced by what this handle knows, with a warning
  write(path, "garbage");
  ::testing::internal::CaptureStderr();
  ASSERT_TRUE(h.save_tuning_db(path).ok());
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("is replaced"), std::string::npos) << err;
  TuningDb again;
  ASSERT_TRUE(again.load(path, nullptr).ok());
  EXPECT_EQ(again.size(), 1u);
  // a handle that loads the file honours it
  Dispatcher h2(kDevice);
  ASSERT_TRUE(h2.load_tuning_db(path).ok());
  EXPECT_EQ(h2.choose(p, nullptr), b.generic);
}

// A winner is timed on one target: another part of the same architecture (an H100 PCIe's 114
// SMs against an SXM's 132) or another architecture with the same count dispatches by its own
// rules; a device of the same target under another name honours it.
TEST(TuningDb, WinnersApplyOnlyOnTheTargetTheyWereTimedOn) {
  const Built b = some_forward_key();
  if (!b.generic) GTEST_SKIP() << "no forward instances in this build";
  const Problem p = problem_of(b.key, {2, 64, {8, 8}, 32});
  const std::string path = temp_path("targets");
  std::remove(path.c_str());
  Dispatcher sxm(kDevice);
  ASSERT_TRUE(sxm.set_tuned(p, b.generic->name()).ok());
  ASSERT_TRUE(sxm.save_tuning_db(path).ok());
  const DeviceInfo others[] = {{"H100 PCIe", kPcie.compute_units, 32, kPcie.arch},
                               {"gfx90a with 132", 132, 64, "gfx90a"},
                               {"MI210", kMi210.compute_units, 64, kMi210.arch}};
  for (const DeviceInfo& other : others) {
    Dispatcher h(other);
    ASSERT_TRUE(h.load_tuning_db(path).ok());
    EXPECT_EQ(h.tuning_db().size(), 1u) << "kept, for saving back";
    EXPECT_EQ(h.choose(p, nullptr), heuristic(h, p)) << other.name << " (" << other.key().to_string() << ")";
  }
  Dispatcher renamed(DeviceInfo{"another name, the same part", 132, 32, "sm_90"});
  ASSERT_TRUE(renamed.load_tuning_db(path).ok());
  EXPECT_EQ(renamed.choose(p, nullptr), b.generic);
  // a winner recorded on another part leaves this part's own in the file
  Dispatcher pcie(others[0]);
  ASSERT_TRUE(pcie.set_tuned(p, b.generic->name(), 2).ok());
  ASSERT_TRUE(pcie.save_tuning_db(path).ok());
  TuningDb back;
  ASSERT_TRUE(back.load(path, nullptr).ok());
  EXPECT_EQ(back.size(), 2u) << read(path);
  EXPECT_NE(back.find(TuningKey::of(p, kDev)), nullptr);
  EXPECT_NE(back.find(TuningKey::of(p, kPcie)), nullptr);
}

// Version 1 keyed winners by the device's display name: read, its entries ignored with one
// warning a process (tuning_db.cpp says why), and replaced by version 2 when saved to.
TEST(TuningDb, Version1FilesAreIgnoredWithOneWarning) {
  const Built b = some_forward_key();
  if (!b.generic) GTEST_SKIP() << "no forward instances in this build";
  const Problem p = problem_of(b.key, {2, 64, {8, 8}, 32});
  const std::string path = temp_path("v1");
  // an entry as version 1 wrote it: under this device's own name ("device", last), no target
  std::string v1 = entry_json(TuningKey::of(p, kDev), b.generic->name());
  const std::string target = "\"arch\":\"sm_90\",\"compute_units\":132,";
  v1.erase(v1.find(target), target.size());
  write(path, document({v1}, 1));
  TuningDb db;
  std::vector<std::string> warnings;
  ASSERT_TRUE(db.load(path, &warnings).ok());
  EXPECT_EQ(db.size(), 0u);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("version 1 keys winners by the device's name"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("its 1 entries are ignored"), std::string::npos) << warnings[0];
  ::testing::internal::CaptureStderr();
  Dispatcher h(kDevice), h2(kDevice);
  EXPECT_TRUE(h.load_tuning_db(path).ok()) << "a version 1 file is not malformed";
  EXPECT_TRUE(h2.load_tuning_db(path).ok());
  ASSERT_TRUE(h.set_tuned(p, b.generic->name(), 3).ok());
  ASSERT_TRUE(h.save_tuning_db(path).ok());
  const std::string err = ::testing::internal::GetCapturedStderr();
  std::size_t said = 0;
  for (std::size_t at = err.find("version 1"); at != std::string::npos; at = err.find("version 1", at + 1)) ++said;
  EXPECT_EQ(said, 1u) << "once a process:\n" << err;
  EXPECT_EQ(h2.choose(p, nullptr), heuristic(h2, p)) << "the rules decide until re-tuned";
  TuningDb saved;
  warnings.clear();
  ASSERT_TRUE(saved.load(path, &warnings).ok());
  EXPECT_TRUE(warnings.empty()) << "saved as version 2";
  ASSERT_EQ(saved.size(), 1u) << read(path);
  EXPECT_EQ(saved.find(TuningKey::of(p, kDev))->instance, b.generic->name());
}

TEST(TuningDb, CApiRecordsSavesAndLoads) {
  EXPECT_EQ(hipgn_api_version(), HIPGN_API_VERSION);
  const Built b = some_forward_key();
  if (!b.generic) GTEST_SKIP() << "no forward instances in this build";
  hipgn_handle_t h = nullptr;
  const hipgn_status_t created = hipgn_create(&h);
  ASSERT_TRUE(created == HIPGN_STATUS_SUCCESS || created == HIPGN_STATUS_NO_DEVICE);
  EXPECT_STRNE(hipgn_device_name(h), "");
  hipgn_problem_t cp{};
  cp.op = HIPGN_OP_FWD;
  cp.n = 2;
  cp.c = 64;
  cp.groups = 32;
  cp.spatial_rank = 2;
  cp.spatial[0] = cp.spatial[1] = 8;
  cp.x_dtype = hipgn_dtype_t(b.key.x_dtype);
  cp.gamma_dtype = hipgn_dtype_t(b.key.gamma_dtype);
  cp.layout = hipgn_layout_t(b.key.layout);
  cp.act = hipgn_activation_t(b.key.act);
  cp.eps = 1e-5f;
  cp.swish_beta = 1.f;
  EXPECT_EQ(hipgn_set_tuned(h, &cp, "gn_missing"), HIPGN_STATUS_UNKNOWN_INSTANCE);
  ASSERT_EQ(hipgn_set_tuned(h, &cp, b.generic->name().c_str()), HIPGN_STATUS_SUCCESS) << hipgn_last_error();
  const char* chosen = nullptr;
  ASSERT_EQ(hipgn_choose_instance(h, &cp, &chosen), HIPGN_STATUS_SUCCESS);
  EXPECT_EQ(chosen, b.generic->name());
  const std::string path = temp_path("capi");
  std::remove(path.c_str());
  ASSERT_EQ(hipgn_tuning_db_save(h, path.c_str()), HIPGN_STATUS_SUCCESS) << hipgn_last_error();
  hipgn_handle_t h2 = nullptr;
  (void)hipgn_create(&h2);
  ASSERT_EQ(hipgn_tuning_db_load(h2, path.c_str()), HIPGN_STATUS_SUCCESS) << hipgn_last_error();
  ASSERT_EQ(hipgn_choose_instance(h2, &cp, &chosen), HIPGN_STATUS_SUCCESS);
  EXPECT_EQ(chosen, b.generic->name());
  write(path, "[");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(hipgn_tuning_db_load(h2, path.c_str()), HIPGN_STATUS_INVALID_ARGUMENT);
  ::testing::internal::GetCapturedStderr();
  EXPECT_NE(std::string(hipgn_last_error()).find("is skipped"), std::string::npos) << hipgn_last_error();
  EXPECT_EQ(hipgn_tuning_db_load(h2, nullptr), HIPGN_STATUS_INVALID_ARGUMENT);
  hipgn_destroy(h);
  hipgn_destroy(h2);
}

TEST(Tune, WithoutAGpuSaysSo) {
  if (no_gpu_reason().empty()) GTEST_SKIP() << "a GPU is present: Tune.RecordsTheFastest runs instead";
  const Built b = some_forward_key();
  if (!b.generic) GTEST_SKIP() << "no forward instances in this build";
  std::unique_ptr<Dispatcher> h;
  (void)Dispatcher::create(&h);
  TuneResult r;
  EXPECT_EQ(h->tune(problem_of(b.key, {2, 64, {8, 8}, 32}), nullptr, &r).code, StatusCode::no_device);
}

TEST(Tune, RecordsTheFastest) {
  HIPGN_REQUIRE_GPU();
  std::unique_ptr<Dispatcher> h;
  ASSERT_TRUE(Dispatcher::create(&h).ok());
  int tuned = 0;
  for (const Key& k : Registry::global().keys()) {
    if (!(k.x_dtype == DataType::f16 && k.layout == Layout::channels_last && k.act == Activation::swish)) continue;
    const Problem p = problem_of(k, {2, 320, {32, 32}, 32});
    TuneResult r;
    const Status s = h->tune(p, nullptr, &r);
    ASSERT_TRUE(s.ok()) << p.to_string() << ": " << s.message;
    std::size_t supporting = 0;
    for (const Instance* i : Registry::global().bucket(k)) supporting += i->supports(p);
    EXPECT_EQ(r.timings.size(), supporting);
    for (const auto& [name, us] : r.timings) {
      EXPECT_GT(us, 0) << name << " failed to run";
      EXPECT_GE(us, r.us) << name << " beat the winner " << r.instance;
    }
    const Instance* winner = Registry::global().find(r.instance);
    ASSERT_NE(winner, nullptr);
    EXPECT_TRUE(winner->supports(p));
    EXPECT_EQ(h->choose(p, nullptr), winner);
    EXPECT_EQ(h->tuning_db().find(TuningKey::of(p, h->device().key()))->us, r.us);
    // what the winner computes is right, through dispatch
    run_and_check_op(p, RunOptions{}, [&](const Problem& q, const Tensors& t) { return h->run(q, t); }, "tuned");
    ++tuned;
  }
  if (!tuned) GTEST_SKIP() << "no f16 channels-last Swish instances in this build";
  hipgn_handle_t ch = nullptr;
  ASSERT_EQ(hipgn_create(&ch), HIPGN_STATUS_SUCCESS);
  hipgn_problem_t cp{};
  cp.n = 1;
  cp.c = 64;
  cp.groups = 8;
  cp.spatial_rank = 1;
  cp.spatial[0] = 1000;
  cp.x_dtype = cp.gamma_dtype = HIPGN_F16;
  cp.layout = HIPGN_CHANNELS_LAST;
  cp.act = HIPGN_ACT_SWISH;
  cp.eps = 1e-5f;
  cp.swish_beta = 1.f;
  const char* winner = nullptr;
  double us = 0;
  ASSERT_EQ(hipgn_tune(ch, &cp, nullptr, &winner, &us), HIPGN_STATUS_SUCCESS) << hipgn_last_error();
  EXPECT_GT(us, 0);
  const char* chosen = nullptr;
  ASSERT_EQ(hipgn_choose_instance(ch, &cp, &chosen), HIPGN_STATUS_SUCCESS);
  EXPECT_STREQ(chosen, winner);
  hipgn_destroy(ch);
}

}  // namespace
}  // namespace hipgn::test
