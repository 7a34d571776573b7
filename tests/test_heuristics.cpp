// Heuristics: every problem of a large random corpus gets an instance that supports it, and
// the rules pick the family they say they pick on the shapes that motivated them.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "corpus.hpp"
#include "hipgn/clusters.hpp"
#include "hipgn/dispatcher.hpp"
#include "hipgn/family.hpp"
#include <cmath>

namespace hipgn::test {
namespace {

const DeviceInfo kH100{"H100 (assumed)", 132, 32, "sm_90"};

TEST(Heuristics, RandomCorpusAlwaysGetsASupportingInstance) {
  std::mt19937_64 rng(test_seed());
  auto pick = [&](auto... v) {
    const std::int64_t a[] = {v...};
    return a[rng() % sizeof...(v)];
  };
  const auto keys = Registry::global().keys();
  ASSERT_FALSE(keys.empty());
  for (int i = 0; i < 20000; ++i) {
    const Key key = keys[rng() % keys.size()];
    Problem p;
    p.x_dtype = key.x_dtype;
    p.gamma_dtype = key.gamma_dtype;
    p.layout = key.layout;
    p.act = key.act;
    p.groups = pick(1, 2, 3, 4, 7, 8, 16, 32, 64);
    p.c = p.groups * pick(1, 2, 3, 4, 5, 8, 10, 16, 30, 40, 64, 160);
    p.n = pick(1, 2, 3, 8, 32);
    if (p.groups > 1 && rng() % 8 == 0) {  // uneven groups: the last group wider
      p.c += std::int64_t(rng() % std::uint64_t(p.groups - 1)) + 1;
      p.uneven_groups = true;
    }
    const int rank = int(rng() % 4);
    for (int r = 0; r < rank; ++r) p.spatial.push_back(pick(1, 2, 3, 7, 8, 13, 16, 31, 64, 97, 128));
    // random alignment: one element off, or 16-byte aligned
    const std::uintptr_t base = 4096 + (rng() % 2 ? size_of(p.x_dtype) : 0);
    p.op = key.op;
    Tensors t;
    t.x = t.dy = t.gamma = reinterpret_cast<const void*>(base);
    t.y = t.dx = t.dgamma = t.dbeta = reinterpret_cast<void*>(base + 1024 * 1024);
    t.mean = t.rstd = reinterpret_cast<float*>(4096);
    ASSERT_TRUE(validate(p, t).ok()) << validate(p, t).message;
    const Instance* inst = heuristic_choice(Registry::global(), kH100, p, &t);
    ASSERT_NE(inst, nullptr) << p.to_string();
    std::string why;  // the instance may be of the other layout where the spatial size is 1 (in_layout)
    ASSERT_TRUE(inst->supports(in_layout(p, inst->spec().layout), &t, &why))
        << inst->name() << " chosen for " << p.to_string() << ": " << why;
  }
}

const Instance* choose(const Shape& s, Layout layout, DataType dt = DataType::f16, Op op = Op::fwd) {
  Problem p = make_problem(s, dt, dt, layout, Activation::swish);
  p.op = op;
  return heuristic_choice(Registry::global(), kH100, p);
}

bool built(Family f, DataType dt = DataType::f16, Layout layout = Layout::channels_first) {
  for (const Instance* i : Registry::global().bucket({Op::fwd, dt, dt, layout, Activation::swish}))
    if (i->spec().family == f) return true;
  return false;
}

// Whether this device launches thread-block clusters, which hold the onchip family's large
// groups in parts (Instance::onchip_parts): with HIPGN_CLUSTERS=0 it does not, and those groups
// take the other families.
bool clusters() { return cluster_launch_max() >= 2; }
// Whether they hold the forward's groups in more parts than a portable cluster's 8 (an H100's
// or H200's 16; HIPGN_CLUSTERS=portable keeps 8).
bool wide_clusters() { return cluster_launch_max() > kClusterPortable; }

// Whether some built instance of a family that family_ok takes supports the problem (presets
// differ in reach); reaches: of family f.
// (A rule's expectation holds where its family reaches the shape: the minimal preset's one
// instance a family often does not, and the heuristic rightly takes another.)
template <typename Pred>
bool any_reaches(Pred family_ok, const Shape& s, Layout layout, Op op, DataType dt = DataType::f16) {
  Problem p = make_problem(s, dt, dt, layout, Activation::swish);
  p.op = op;
  for (const Instance* i : Registry::global().bucket(Key::of(p)))
    if (family_ok(i->spec().family) && i->supports(p, nullptr, nullptr, kH100.compute_units)) return true;
  return false;
}
bool reaches(Family f, const Shape& s, Layout layout, Op op = Op::fwd, DataType dt = DataType::f16) {
  return any_reaches([&](Family g) { return g == f; }, s, layout, op, dt);
}

TEST(Heuristics, ChannelsFirstForwardIsResidentOrSplitBelow96KbACuThenStream) {
  if (!built(Family::resident)) GTEST_SKIP() << "no resident instance in this build";
  // SD 64x64 C=320 (5.2 MB, 39 KB a compute unit of 132, groups of 40960): resident; SD 32x32
  // C=1920 (7.9 MB, 58 KB, groups of 61440), VAE 64x64 C=512 (65536) and SD 64x64 C=640 (10.5 MB,
  // 78 KB, 81920): split (kSplitCfFwdGroupElements); det 25x42 C=2048 (8.6 MB, 64 KB: no 16-byte
  // rows for split), ResNet 56x56 N=32 (51 MB) and 512 groups of 4M elements: stream
  // (heuristics.cpp, kStreamCfFwdBytesPerCu). Where the device has clusters, the groups of up to
  // 64K elements are the onchip family's, in parts, and SD 64x64 C=640's too where a cluster
  // holds 16 (parts of 8K elements, kOnchipCfFwdLargeGroupPartElements), and det 25x42 C=2048's
  // and ResNet 56x56 N=32's in parts of 16K (kOnchipCfFwdHeldPartElements), and odd 1-D 8191
  // C=256's (16.8 MB, 124 KB, groups of 65528) in two of 32K (kOnchipCfFwdLargePartElements).
  struct Case {
    Shape s;
    Family want;
  };
  const Family parts_or = clusters() ? Family::onchip : Family::resident;
  const Family parts_or_split = clusters() ? Family::onchip : Family::split;
  for (const Case& c : {Case{Shape{2, 320, {64, 64}, 32}, parts_or}, Case{Shape{2, 1920, {32, 32}, 32}, parts_or_split},
                        Case{Shape{1, 512, {64, 64}, 32}, parts_or_split}, Case{Shape{2, 640, {64, 64}, 32}, wide_clusters() ? Family::onchip : Family::split},
                        Case{Shape{2, 2048, {25, 42}, 32}, clusters() ? Family::onchip : Family::stream},
                        Case{Shape{32, 256, {56, 56}, 32}, clusters() ? Family::onchip : Family::stream},
                        Case{Shape{4, 256, {8191}, 32}, clusters() ? Family::onchip : Family::stream},
                        Case{Shape{16, 1024, {1024, 128}, 32}, Family::stream}}) {
    if (!reaches(c.want, c.s, Layout::channels_first)) continue;  // a smaller preset
    const Instance* inst = choose(c.s, Layout::channels_first);
    ASSERT_NE(inst, nullptr);
    EXPECT_EQ(inst->spec().family, c.want) << inst->name();
    EXPECT_EQ(inst->spec().vector, 8) << "16-byte accesses where the shape allows";
  }
}

TEST(Heuristics, SmallForwardsTakeAWorkgroupPerGroup) {
  // channels-first, groups of 1024 (instance_norm 32x32 C=64 G=64) and 256 (1x32x8x8, G=8):
  // onchip; channels-last, C/G = 1 at 0.26 MB: onchip too, a workgroup a column of channels
  // (the stream family's fixed cost would dominate)
  struct Case {
    Shape s;
    Layout layout;
    Family want;
  };
  for (const Case& c : {Case{Shape{2, 64, {32, 32}, 64}, Layout::channels_first, Family::onchip},
                        Case{Shape{1, 32, {8, 8}, 8}, Layout::channels_first, Family::onchip},
                        Case{Shape{2, 64, {32, 32}, 64}, Layout::channels_last, Family::onchip}}) {
    if (!reaches(c.want, c.s, c.layout)) continue;  // a smaller preset
    const Instance* inst = choose(c.s, c.layout);
    ASSERT_NE(inst, nullptr);
    EXPECT_EQ(inst->spec().family, c.want) << inst->name();
  }
}

// A channels-first problem of spatial size 1 is channels-last in memory, and goes to the
// channels-last rules where they are built: hw1_512 (8x512, G = 32, 16-element groups) to the
// channels-last onchip family (2.7 us against the channels-first looped family's 3.3). With
// spatial sizes above 1, or without channels-last instances, the layout stays.
// Uneven groups (Problem::uneven_groups) go to a family that runs them, for every key and
// shape; every other family's instances decline, saying why (the reason dispatch and an
// explicit choice report).
TEST(Heuristics, UnevenGroupsGoToFamiliesThatRunThem) {
  int chosen = 0, refused = 0;
  for (const Key& key : Registry::global().keys())
    for (const Shape& s : {Shape{2, 322, {64, 64}, 32}, Shape{2, 10, {7, 3}, 3}, Shape{8, 1283, {}, 32},
                           Shape{1, 36, {2, 3, 5}, 5}, Shape{4, 960, {16, 16}, 31}}) {
      Problem p = make_problem(s, key.x_dtype, key.gamma_dtype, key.layout, key.act);
      p.op = key.op;
      ASSERT_TRUE(p.uneven_groups && p.uneven()) << p.to_string();
      ASSERT_TRUE(validate(p).ok()) << validate(p).message;
      const Instance* inst = heuristic_choice(Registry::global(), kH100, p);
      ASSERT_NE(inst, nullptr) << p.to_string();
      EXPECT_TRUE(describe(inst->spec().family).uneven_groups) << inst->name() << " for " << p.to_string();
      ++chosen;
      for (const Instance* i : Registry::global().bucket(key)) {
        if (describe(i->spec().family).uneven_groups) continue;
        std::string why;
        EXPECT_FALSE(i->supports(p, nullptr, &why)) << i->name();
        EXPECT_NE(why.find("does not run uneven groups"), std::string::npos) << i->name() << ": " << why;
        ++refused;
      }
    }
  EXPECT_GT(chosen, 0);
  EXPECT_GT(refused, 0);
  // the same sizes with the groups even again run anywhere: the flag alone changes nothing
  Problem even = make_problem({2, 320, {64, 64}, 32}, DataType::f16, DataType::f16, Layout::channels_last,
                              Activation::swish);
  even.uneven_groups = true;
  EXPECT_FALSE(even.uneven());
  const Instance* a = heuristic_choice(Registry::global(), kH100, even);
  even.uneven_groups = false;
  EXPECT_EQ(a, heuristic_choice(Registry::global(), kH100, even));
}

// The channels-last resident backward: the fewest slices, except where they leave more than
// half the compute units idle (heuristics.cpp, better_resident; bench/heuristic_check.py). Since
// the stream family took the channels-last backward below 32 KB a compute unit (bench/NOTES.md,
// "What the heuristic sent off the suite"), dispatch reaches these shapes' resident instances
// only where no other family's does: asked here of a registry of the bucket's resident ones.
TEST(Heuristics, ResidentChannelsLastBackwardSpreadsFewSamples) {
  const Shape layer_norm{2, 64, {32, 32}, 1}, sd{8, 960, {16, 16}, 40};
  if (!reaches(Family::resident, layer_norm, Layout::channels_last, Op::bwd)) GTEST_SKIP() << "no resident backward";
  auto problem = [](const Shape& s) {
    Problem p = make_problem(s, DataType::f16, DataType::f16, Layout::channels_last, Activation::swish);
    p.op = Op::bwd;
    return p;
  };
  Registry residents_only;
  std::vector<const Instance*> residents;
  for (const Instance* i : Registry::global().bucket(Key::of(problem(layer_norm))))
    if (i->spec().family == Family::resident) residents_only.add(i->spec(), i->name(), nullptr);
  for (const Instance& i : residents_only.all()) residents.push_back(&i);
  auto supporting = [&](const Problem& p) {
    std::vector<const Instance*> out;
    for (const Instance* i : residents)
      if (i->supports(p, nullptr, nullptr, kH100.compute_units)) out.push_back(i);
    return out;
  };
  // 2 samples of 1024 rows at C = 64: the most workgroups of the block (measured: 256 x 2, 32
  // workgroups, 11.7 us; 256 x 4, 16, 13.0)
  const Problem lp = problem(layer_norm);
  const Instance* ln = heuristic_choice(residents_only, kH100, lp);
  ASSERT_NE(ln, nullptr);
  EXPECT_EQ(ln->spec().family, Family::resident) << ln->name();
  for (const Instance* i : supporting(lp))
    if (i->spec().block == ln->spec().block && i->spec().vector == ln->spec().vector)
      EXPECT_GE(ln->resident_shape(lp).items(), i->resident_shape(lp).items()) << ln->name() << " over " << i->name();
  // past half the compute units the fewest slices (sd15_32x960: 512 x 4 29.2 us, 512 x 2 36.6)
  const Problem sp = problem(sd);
  const Instance* s = heuristic_choice(residents_only, kH100, sp);
  ASSERT_NE(s, nullptr);
  for (const Instance* i : supporting(sp))
    if (i->spec().vector == s->spec().vector && 2 * i->resident_shape(sp).items() >= kH100.compute_units)
      EXPECT_LE(s->resident_shape(sp).slices, i->resident_shape(sp).slices) << s->name() << " over " << i->name();
}

TEST(Heuristics, SpatialSizeOneRunsAsChannelsLast) {
  const Shape hw1{8, 512, {1}, 32};
  if (!reaches(Family::onchip, hw1, Layout::channels_last)) GTEST_SKIP() << "no channels-last onchip instance";
  for (const Shape& s : {hw1, Shape{8, 512, {}, 32}}) {
    const Instance* inst = choose(s, Layout::channels_first);
    ASSERT_NE(inst, nullptr);
    EXPECT_EQ(inst->spec().layout, Layout::channels_last) << inst->name();
    EXPECT_EQ(inst->spec().family, Family::onchip) << inst->name();
  }
  // the views, and a handle's explicit choice of the other layout's instance
  const Problem p1 = make_problem(hw1, DataType::f16, DataType::f16, Layout::channels_first, Activation::swish);
  const std::vector<Problem> views = layout_views(p1);
  ASSERT_EQ(views.size(), 2u);
  EXPECT_EQ(views[0].layout, Layout::channels_first);
  EXPECT_EQ(views[1].layout, Layout::channels_last);
  EXPECT_EQ(layout_views(make_problem(Shape{8, 512, {2}, 32}, DataType::f16, DataType::f16, Layout::channels_first,
                                      Activation::swish))
                .size(),
            1u);
  const Instance* chosen = heuristic_choice(Registry::global(), kH100, p1);
  ASSERT_NE(chosen, nullptr);
  Dispatcher h(kH100);
  Status why;
  EXPECT_EQ(h.named(p1, chosen->name(), nullptr, &why), chosen) << why.message;
  std::size_t bytes = 0;
  EXPECT_TRUE(h.workspace_size(p1, chosen->name(), &bytes).ok());
  EXPECT_TRUE(h.set_tuned(p1, chosen->name()).ok());
  // (a build narrowed to channels-last has no instance for a spatial size of 2 channels-first)
  if (const Instance* two = choose(Shape{8, 512, {2}, 32}, Layout::channels_first))
    EXPECT_EQ(two->spec().layout, Layout::channels_first) << two->name();
  else
    EXPECT_FALSE(built(Family::looped, DataType::f16, Layout::channels_first));
  // a registry of channels-first instances only keeps the layout
  Registry reg;
  const LaunchFn never = [](const Params&, hipStream_t) { return hipErrorInvalidValue; };
  const char* name = "gn_fwd_f16_f16_cf_swish_looped_b256_v1_e4";
  reg.add(*InstanceSpec::parse(name), name, never);
  const Problem p = make_problem(hw1, DataType::f16, DataType::f16, Layout::channels_first, Activation::swish);
  const Instance* only = heuristic_choice(reg, kH100, p);
  ASSERT_NE(only, nullptr);
  EXPECT_EQ(only->name(), name);
}

// The tie-breaks inside a family (heuristics.cpp: better), each on the shapes whose every-instance
// timings set it (bench/results/latest.json); skipped where the preset lacks the instances.
// The built instances of family f in p's bucket alone, their cluster query answered by `clusters`
// (none is launched): a family's tie-break asked on its own.
Registry family_registry(const Problem& p, Family f, ClustersFn clusters = nullptr) {
  Registry r;
  const LaunchFn never = [](const Params&, hipStream_t) { return hipErrorInvalidValue; };
  for (const Instance* i : Registry::global().bucket(Key::of(p)))
    if (i->spec().family == f) r.add(i->spec(), i->name(), never, clusters);
  return r;
}

const Instance* choose_named(const Shape& s, Layout layout, std::initializer_list<const char*> need,
                             DataType dt = DataType::f16) {
  const Problem p = make_problem(s, dt, dt, layout, Activation::swish);
  for (const char* n : need)
    if (!Registry::global().find(n)) return nullptr;
  return heuristic_choice(Registry::global(), kH100, p);
}

TEST(Heuristics, OnchipForwardSpreadsTheGroupOverTheMostThreadsThatEachGetAVector) {
  // channels-last det 7x11 C=256 (77 vectors of 8): no block is that small, so the smallest, 128
  // (SD 16x16 C=640, 1280 vectors of 4, took 512 x 4 x 8 over 1024 x 4 x 8 until 512 x 4 x 4
  // loaded its slots at once: OnchipChannelsLastForwardTakesSlotsLoadedAtOnceFirst)
  struct Case {
    Shape s;
    const char* want;
    const char* other;
  };
  for (const Case& c : {Case{Shape{2, 256, {7, 11}, 32}, "gn_fwd_f16_f16_cl_swish_onchip_b128_v8_e1",
                             "gn_fwd_f16_f16_cl_swish_onchip_b512_v8_e8"}}) {
    const Instance* inst = choose_named(c.s, Layout::channels_last, {c.want, c.other});
    if (!inst) GTEST_SKIP() << "the preset lacks " << c.want << " or " << c.other;
    EXPECT_EQ(inst->name(), c.want);
  }
}

TEST(Heuristics, OnchipChannelsLastForwardTakesEightByteVectorsForLargeGroups) {
  // from 4096 elements a group, 8-byte vectors before 16-byte ones where no instance whose slots
  // load at once holds the group (the next test): SD 16x16 C=1280 (10240) 512 x 4 x 8, SD 16x16
  // C=2560 (20480) 1024 x 4 x 8 (the one 8-byte instance that holds it whole); SD 8x8 C=1280
  // (2560) takes four slots at once, 256 x 4 x 4 (the next test). Where the device has
  // clusters, groups of 8K elements or more take an instance of 16 values a thread in parts
  // first, whatever its vector: SD 16x16 C=1280 and C=2560 256 x 8 x 2 in 3 and 6 parts
  // (bench/NOTES.md, "Sixteen values a thread"); tiny (C/G = 4) and SD 32x32 C=640 take four
  // slots at once (the test of that name)
  const char* v4 = "gn_fwd_f16_f16_cl_swish_onchip_b512_v4_e8";
  const char* v4_1024 = "gn_fwd_f16_f16_cl_swish_onchip_b1024_v4_e8";
  const char* v8 = "gn_fwd_f16_f16_cl_swish_onchip_b512_v8_e8";
  const char* v8_small = "gn_fwd_f16_f16_cl_swish_onchip_b256_v8_e2";
  const Instance* mid = choose_named(Shape{2, 1280, {16, 16}, 32}, Layout::channels_last, {v4, v4_1024, v8, v8_small});
  if (!mid) GTEST_SKIP() << "the preset lacks the onchip 8-byte and 16-byte instances";
  EXPECT_EQ(mid->name(), clusters() ? v8_small : v4);
  // (where the device has clusters, 256 x 8 x 2 in six parts: 16 values a thread)
  const char* v4_parts = "gn_fwd_f16_f16_cl_swish_onchip_b256_v4_e8";
  EXPECT_EQ(choose_named(Shape{2, 2560, {16, 16}, 32}, Layout::channels_last, {v4_1024, v4_parts, v8_small})->name(),
            clusters() ? v8_small : v4_1024);
}

TEST(Heuristics, ChannelsLastStreamForwardTakesOneColumnWhereTheRowAllows) {
  // sd15_64x960 (116 KB a compute unit) and sdxl_128x320 (155 KB): e1 (bench/NOTES.md); C = 8192
  // (1024 column vectors of 8, past one a thread of 512): e2
  const char* e1 = "gn_fwd_f16_f16_cl_swish_stream_b512_v8_e1";
  const char* e2 = "gn_fwd_f16_f16_cl_swish_stream_b512_v8_e2";
  const Instance* small = choose_named(Shape{2, 960, {64, 64}, 32}, Layout::channels_last, {e1, e2});
  if (!small) GTEST_SKIP() << "the preset lacks " << e1 << " or " << e2;
  EXPECT_EQ(small->name(), e1);
  EXPECT_EQ(choose_named(Shape{2, 320, {128, 128}, 32}, Layout::channels_last, {e1, e2})->name(), e1);
  EXPECT_EQ(choose_named(Shape{2, 8192, {64, 64}, 32}, Layout::channels_last, {e1, e2})->name(), e2);
}

TEST(Heuristics, ResidentOneSliceTiesGoToMoreThreads) {
  // channels-first SD 16x16 C=640, 5120-element groups: 512 x 4 and 256 x 8 both hold one (fp32;
  // the onchip family takes such groups first, so the resident instances alone)
  const char* want = "gn_fwd_f32_f32_cf_swish_resident_b512_v4_e4";
  const Problem p = make_problem(Shape{2, 640, {16, 16}, 32}, DataType::f32, DataType::f32, Layout::channels_first,
                                 Activation::swish);
  if (!Registry::global().find(want) || !Registry::global().find("gn_fwd_f32_f32_cf_swish_resident_b256_v4_e8"))
    GTEST_SKIP() << "the preset lacks the resident 512 x 4 and 256 x 8 instances";
  const Registry resident = family_registry(p, Family::resident);  // outlives the choice it holds
  const Instance* inst = heuristic_choice(resident, kH100, p);
  ASSERT_NE(inst, nullptr);
  EXPECT_EQ(inst->name(), want);
}

TEST(Heuristics, ResidentChannelsFirstPrefersFewerRoundsOfClusters) {
  if (clusters()) GTEST_SKIP() << "the onchip forward in parts takes these shapes where the device has clusters "
                                  "(heuristics_without_clusters runs this test)";
  // sd15_32x1920 (64 groups of 61440): 512 x 8 in 2 slices (14.8 us) beats 256 x 8 in 4, whose
  // clusters the device holds in two rounds (20.3), on an H100 (bench/NOTES.md, "Clusters");
  // the split rule takes that shape now, so the same case at C = 1792 (groups of 57344, below
  // the rule: 4 slices of 256 x 8 against 2 of 512 x 8)
  const char* want = "gn_fwd_f16_f16_cf_swish_resident_b512_v8_e8";
  const Instance* inst = choose_named(Shape{2, 1792, {32, 32}, 32}, Layout::channels_first,
                                      {want, "gn_fwd_f16_f16_cf_swish_resident_b256_v8_e8"});
  if (!inst) GTEST_SKIP() << "the preset lacks the resident 512 x 8 and 256 x 8 instances";
  EXPECT_EQ(inst->name(), want);
  // sd15_64x320 (64 groups of 40960): 256 x 4's 320 items fit one round (11.9 us; 512 x 8 13.4)
  const char* four = "gn_fwd_f16_f16_cf_swish_resident_b256_v8_e4";
  const Instance* sd = choose_named(Shape{2, 320, {64, 64}, 32}, Layout::channels_first, {four});
  ASSERT_NE(sd, nullptr);
  EXPECT_EQ(sd->name(), four);
}

TEST(Heuristics, ResidentChannelsFirstTakesClustersOfUpTo8ThatFillTheDevice) {
  if (clusters()) GTEST_SKIP() << "the onchip forward in parts takes this shape where the device has clusters "
                                  "(heuristics_without_clusters runs this test)";
  // g16_32x640 (32 groups of 40960): 256 x 4, 5 slices and 160 items (8.6 us), not 256 x 2,
  // 10 slices and 320 items (9.3), nor 256 x 8, 3 slices and 96 items (9.5); H100 (kResidentCfPortableSlices)
  const char* want = "gn_fwd_f16_f16_cf_swish_resident_b256_v8_e4";
  const Instance* inst = choose_named(Shape{2, 640, {32, 32}, 16}, Layout::channels_first,
                                      {want, "gn_fwd_f16_f16_cf_swish_resident_b256_v8_e2", "gn_fwd_f16_f16_cf_swish_resident_b256_v8_e8"});
  if (!inst) GTEST_SKIP() << "the preset lacks the resident 256 x 2, x 4 and x 8 instances";
  EXPECT_EQ(inst->name(), want);
}

TEST(Heuristics, SplitForwardTakesSmallSlicesOnlyForTinyTensors) {
  // layer_norm_32x64 (2 groups of 65536, 0.26 MB: 2 KB a compute unit), both layouts, where the
  // device has no clusters: 128 x 1, 1024-element slices (5.5 us against 256 x 4's 6.5, and
  // channels-first the resident family's 6.2); with clusters the onchip forward in parts: of 16,
  // 3.9 / 4.1 us, of 8 a tie with split, 5.4 / 5.4; vae_64x512 (32 groups of 65536, 4.2 MB):
  // 256 x 4, 8192-element slices (kSplitFwdSmallSliceElements; the next test has the 4096-element
  // slices)
  const char* small = "gn_fwd_f16_f16_cf_swish_split_b128_v8_e1";
  if (!choose_named(Shape{2, 64, {32, 32}, 1}, Layout::channels_first,
                    {small, "gn_fwd_f16_f16_cf_swish_split_b256_v8_e4", "gn_fwd_f16_f16_cl_swish_split_b128_v8_e1"}))
    GTEST_SKIP() << "the preset lacks the split 128 x 1 and 256 x 4 forwards (both layouts)";
  EXPECT_EQ(choose(Shape{2, 64, {32, 32}, 1}, Layout::channels_first)->name(),
            wide_clusters() ? "gn_fwd_f16_f16_cf_swish_onchip_b256_v8_e2"
            : clusters()    ? "gn_fwd_f16_f16_cf_swish_onchip_b256_v8_e4"
                            : small);
  // (bench/NOTES.md, "A group in parts" and "Sixteen parts")
  EXPECT_EQ(choose(Shape{2, 64, {32, 32}, 1}, Layout::channels_last)->name(),
            wide_clusters() ? "gn_fwd_f16_f16_cl_swish_onchip_b256_v8_e2"
            : clusters()    ? "gn_fwd_f16_f16_cl_swish_onchip_b256_v8_e4"
                            : "gn_fwd_f16_f16_cl_swish_split_b128_v8_e1");
  if (!clusters())  // (else the onchip forward in parts)
    EXPECT_EQ(choose(Shape{1, 512, {64, 64}, 32}, Layout::channels_first)->name(), "gn_fwd_f16_f16_cf_swish_split_b256_v8_e4");
}

TEST(Heuristics, SplitForwardTakes4096ElementSlicesOutsideTheBandOf8192) {
  // the 8192-element grid's workgroups a compute unit (132 here): g16_32x640 1.2 and
  // det_25x42x2048 4.4, sdxl_32x2560 4.8 (past a wave of four): 128 x 4; vae_64x512 1.9
  // (channels-first) and sd15_32x1280 2.4: 256 x 4 (kSplitFwdCoarseFromSlicesPerCu, kSplitFwdCoarseBelowSlicesPerCu)
  const char* fine = "gn_fwd_f16_f16_cl_swish_split_b128_v8_e4";
  const char* coarse = "gn_fwd_f16_f16_cl_swish_split_b256_v8_e4";
  if (!choose_named(Shape{2, 640, {32, 32}, 16}, Layout::channels_last, {fine, coarse}))
    GTEST_SKIP() << "the preset lacks the split 128 x 4 and 256 x 4 forwards";
  // (the channels-last ones below 72 KB a compute unit, and sdxl's of 16-byte C/G below 96 KB,
  // take the onchip forward in parts where the device has clusters:
  // SmallChannelsLastTensorsOfLargeGroupsTakeAClusterAGroup)
  if (!clusters()) {
    EXPECT_EQ(choose(Shape{2, 640, {32, 32}, 16}, Layout::channels_last)->name(), fine);
    EXPECT_EQ(choose(Shape{2, 2048, {25, 42}, 32}, Layout::channels_last)->name(), fine);
    EXPECT_EQ(choose(Shape{2, 1280, {32, 32}, 32}, Layout::channels_last)->name(), coarse);
    EXPECT_EQ(choose(Shape{2, 2560, {32, 32}, 32}, Layout::channels_last)->name(), fine);
  }
  // (a channels-last build has none; where a cluster holds 16, the onchip forward in parts of 8K:
  // ChannelsFirstGroupsOf8KTo64KTakeAClusterAGroup)
  if (!wide_clusters() && Registry::global().find("gn_fwd_f16_f16_cf_swish_split_b128_v8_e4"))
    EXPECT_EQ(choose(Shape{2, 2560, {32, 32}, 32}, Layout::channels_first)->name(),
              "gn_fwd_f16_f16_cf_swish_split_b128_v8_e4");
  if (!clusters() && Registry::global().find("gn_fwd_f16_f16_cf_swish_split_b256_v8_e4"))  // (else the onchip forward in parts)
    EXPECT_EQ(choose(Shape{1, 512, {64, 64}, 32}, Layout::channels_first)->name(),
              "gn_fwd_f16_f16_cf_swish_split_b256_v8_e4");
}

TEST(Heuristics, ChannelsFirstStreamForwardTakesOneWorkgroupACuUpTo140Kb) {
  // det_50x84x1024 (17.2 MB, 127 KB a compute unit): 512 x e2; sdxl_128x320 (21 MB, 155 KB) and
  // vae_256x512 (67 MB): 512 x e1 (heuristics.cpp, kStreamCfFwdOneGroupBytesPerCu)
  for (const auto& [s, per_thread] : {std::pair{Shape{2, 1024, {50, 84}, 32}, 2}, std::pair{Shape{2, 320, {128, 128}, 32}, 1},
                                      std::pair{Shape{1, 512, {256, 256}, 32}, 1}}) {
    const Problem p = make_problem(s, DataType::f16, DataType::f16, Layout::channels_first, Activation::swish);
    bool both = false;
    for (const Instance* i : Registry::global().bucket(Key::of(p)))
      both |= i->spec().family == Family::stream && i->spec().per_thread == 2;
    if (!both) GTEST_SKIP() << "no channels-first stream instance of per_thread 2 in this build";
    const Instance* inst = heuristic_choice(Registry::global(), kH100, p);
    ASSERT_NE(inst, nullptr);
    ASSERT_EQ(inst->spec().family, Family::stream) << inst->name();
    EXPECT_EQ(inst->spec().per_thread, per_thread) << inst->name();
    EXPECT_EQ(inst->spec().block, 512) << inst->name();
  }
}

TEST(Heuristics, ResidentHoldsAGroupInOneSliceWhenItCan) {
  if (!built(Family::resident)) GTEST_SKIP() << "no resident instance in this build";
  // ResNet 7x7 C=2048: groups of 3136; among the resident instances (the onchip family takes
  // the shape where built: ChannelsFirstSmallGroupsStayOnChipWhateverTheSpatialSize), the
  // smallest that holds one wins
  const Problem p = make_problem({32, 2048, {7, 7}, 32}, DataType::f16, DataType::f16, Layout::channels_first,
                                 Activation::swish);
  Registry resident;
  const LaunchFn never = [](const Params&, hipStream_t) { return hipErrorInvalidValue; };
  for (const Instance* i : Registry::global().bucket(Key::of(p)))
    if (i->spec().family == Family::resident) resident.add(i->spec(), i->name(), never);
  const Instance* inst = heuristic_choice(resident, kH100, p);
  ASSERT_NE(inst, nullptr);
  ASSERT_EQ(inst->spec().family, Family::resident);
  EXPECT_GE(inst->spec().chunk_elements() * inst->spec().vector, p.group_elements());
  for (const Instance* i : Registry::global().bucket(Key::of(p)))
    if (i->spec().family == Family::resident && i->spec().vector == 8 &&
        i->spec().chunk_elements() * 8 >= p.group_elements())
      EXPECT_LE(inst->spec().chunk_elements(), i->spec().chunk_elements()) << i->name();
}

// Channels-first groups of up to 4096 elements in a small tensor stay in one workgroup each,
// whatever the spatial size: the onchip forward peels runs the vector does not divide
// (fwd_onchip_span; H100, fp16 SiLU, L2-cold, every instance: r50_7x2048_n32, 49 positions,
// onchip 10.5 us against resident 16.6; det_7x11x256, 77: 2.9 against 4.7; det_13x21x256, 273:
// 3.9 against 4.9).
TEST(Heuristics, ChannelsFirstSmallGroupsStayOnChipWhateverTheSpatialSize) {
  for (const Shape& s : {Shape{32, 2048, {7, 7}, 32}, Shape{2, 256, {7, 11}, 32}, Shape{2, 256, {13, 21}, 32}}) {
    if (!reaches(Family::onchip, s, Layout::channels_first)) continue;  // a smaller preset
    const Instance* inst = choose(s, Layout::channels_first);
    ASSERT_NE(inst, nullptr);
    EXPECT_EQ(inst->spec().family, Family::onchip) << inst->name();
  }
}

// Channels-first small tensors of 16-bit values: a workgroup per group of up to 8192 elements,
// each thread two vectors of it, and 512 threads up to the onchip family's 32K, whatever the
// spatial size (heuristics.cpp; bench.py --best, H100, 2026-11-27: sd15_16x640 256 x 8 x 4 4.48
// / 4.52 us against 512 x 8 x 8 4.69 / 5.13 and resident 5.18 / 5.22; sd15_32x640 512 x 8 x 8
// 7.2 / 7.3 against resident 8.8 / 8.7; odd_31x31_c640, the span kernel, 8.1 / 7.8 against
// 8.6 / 8.7).
TEST(Heuristics, ChannelsFirstSmallGroupsOf16BitValuesStayOnChip) {
  const Shape sd16{2, 640, {16, 16}, 32}, sd32{2, 640, {32, 32}, 32}, odd{2, 640, {31, 31}, 32};
  if (!Registry::global().find("gn_fwd_f16_f16_cf_swish_onchip_b256_v8_e4") ||
      !Registry::global().find("gn_fwd_bf16_bf16_cf_swish_onchip_b256_v8_e4") ||
      !Registry::global().find("gn_fwd_bf16_bf16_cf_swish_onchip_b512_v8_e8") ||
      !reaches(Family::onchip, sd32, Layout::channels_first) || !reaches(Family::resident, sd32, Layout::channels_first))
    GTEST_SKIP() << "this build lacks the default preset's channels-first onchip and resident instances";
  // 5120-element groups: 256 threads, two vectors each; 20480 (and 19220, where H x W takes no
  // 16-byte vector: the span kernel's 16-byte body): 512 threads; where the device has
  // clusters, both in five parts of 256 x 8 x 2 (bench/NOTES.md, "A group in parts" and "A
  // peeled group in parts")
  struct Case {
    Shape s;
    int block;
  };
  for (const Case& c : {Case{sd16, 256}, Case{sd32, clusters() ? 256 : 512}, Case{odd, clusters() ? 256 : 512}})
    for (DataType dt : {DataType::f16, DataType::bf16}) {
      const Instance* inst = choose(c.s, Layout::channels_first, dt);
      ASSERT_NE(inst, nullptr);
      EXPECT_EQ(inst->spec().family, Family::onchip) << inst->name();
      EXPECT_EQ(inst->spec().block, c.block) << inst->name();
      EXPECT_EQ(inst->spec().vector, 8) << inst->name();
    }
}

TEST(Heuristics, SmallChannelsLastGroupsStayOnChip) {
  if (!built(Family::onchip, DataType::f16, Layout::channels_last))
    GTEST_SKIP() << "no channels-last onchip instance in this build";
  // SD 16x16 C=1280 (10240-element groups), ResNet 7x7 C=2048 (3136): a workgroup per group
  for (const Shape& s : {Shape{2, 1280, {16, 16}, 32}, Shape{32, 2048, {7, 7}, 32}}) {
    if (!reaches(Family::onchip, s, Layout::channels_last)) continue;  // a smaller preset
    const Instance* inst = choose(s, Layout::channels_last);
    ASSERT_NE(inst, nullptr);
    EXPECT_EQ(inst->spec().family, Family::onchip) << inst->name();
  }
}

TEST(Heuristics, LargeChannelsLastGroupsStream) {
  if (!reaches(Family::stream, {2, 320, {128, 128}, 32}, Layout::channels_last))
    GTEST_SKIP() << "no stream instance of this build reaches SDXL 128x128 channels-last";
  const Instance* inst = choose({2, 320, {128, 128}, 32}, Layout::channels_last);
  ASSERT_NE(inst, nullptr);
  EXPECT_EQ(inst->spec().family, Family::stream) << inst->name();
}

// The channels-last forward's small tensors (under 96 KB of x a compute unit) go to the onchip
// family where it holds the group with vectors of 8 bytes or more, then to split where few
// groups' C/G channels are 16-byte vectors spanning 32 bytes or more, below 48 KB to the resident
// family; the rest stream.
TEST(Heuristics, SmallChannelsLastTensorsOfWideGroupsSplit) {
  // det 25x42 C=2048 (8.6 MB, 65 KB a compute unit, C/G = 64), sdxl 32x32 C=2560 (78 KB, C/G =
  // 80), sd15_32x1280 (C/G = 40), g16_32x640 (C/G = 40) and layer_norm_32x64 (C/G = 64, a tiny
  // tensor), vae_64x512 (C/G = 16, 32-byte runs, 31 KB): split (kSplitClFwdRunBytes); not at
  // C/G = 20 (sd15_64x640, 78 KB) or 60 (sd15_32x1920, 58 KB), which stream where the device
  // has no clusters. Where it has them, those below 72 KB a compute unit are the onchip
  // family's, in parts, and so are those of 8-byte C/G below 96 KB (sdxl 32x32 C=2560,
  // sd15_64x640; the test below).
  const Layout cl = Layout::channels_last;
  if (!reaches(Family::split, {2, 2048, {25, 42}, 32}, cl) || !reaches(Family::stream, {2, 640, {64, 64}, 32}, cl))
    GTEST_SKIP() << "no split or stream instance of this build reaches the shapes";
  std::vector<Shape> split;
  if (!clusters())
    for (const Shape& s : {Shape{2, 2560, {32, 32}, 32}, Shape{2, 2048, {25, 42}, 32}, Shape{2, 1280, {32, 32}, 32},
                           Shape{2, 640, {32, 32}, 16}, Shape{2, 64, {32, 32}, 1}, Shape{1, 512, {64, 64}, 32}})
      split.push_back(s);
  for (const Shape& s : split) {
    const Instance* inst = choose(s, cl);
    ASSERT_NE(inst, nullptr);
    EXPECT_EQ(inst->spec().family, Family::split) << inst->name();
    EXPECT_EQ(inst->spec().vector, 8) << inst->name();
  }
  if (!clusters()) {
    EXPECT_EQ(choose({2, 640, {64, 64}, 32}, cl)->spec().family, Family::stream);
    EXPECT_EQ(choose({2, 1920, {32, 32}, 32}, cl)->spec().family, Family::stream);
  }
}

// The fp16 op (the forward unless said) of s in this layout dispatches to `want` (where the
// preset has it), which holds a group in `parts` parts (Instance::onchip_parts).
void expect_parts(const Shape& s, Layout layout, const char* want, int parts, Op op = Op::fwd) {
  if (!Registry::global().find(want)) return;  // a smaller preset
  const Instance* inst = choose(s, layout, DataType::f16, op);
  ASSERT_NE(inst, nullptr);
  EXPECT_EQ(inst->name(), want);
  Problem p = make_problem(s, DataType::f16, DataType::f16, layout, Activation::swish);
  p.op = op;
  EXPECT_EQ(inst->onchip_parts(p).parts, parts) << inst->name();
}

// Whether the device answers how many rounds of clusters the fp16 instance `name` runs s in
// (Instance::onchip_rounds: only a device does), which decides between onchip configurations;
// false where the preset lacks it.
bool answers_rounds(const char* name, const Shape& s, Layout layout, Op op = Op::fwd) {
  const Instance* inst = Registry::global().find(name);
  if (!inst) return false;
  Problem p = make_problem(s, DataType::f16, DataType::f16, layout, Activation::swish);
  p.op = op;
  return inst->onchip_rounds(p, inst->onchip_parts(p)) > 0;
}

TEST(Heuristics, SmallChannelsLastTensorsOfLargeGroupsTakeAClusterAGroup) {
  // where the device has clusters, groups past what one workgroup holds, below 72 KB of x a
  // compute unit, with 8-byte vectors: the onchip forward in parts, the instance whose slots
  // the part fills most, then the fewest parts, or the most below a group a quarter of the
  // compute units (bench/NOTES.md, "A group in parts"): sd15_32x1920 1024 x 4 x 8 in 2 parts;
  // sd15_16x1280 (10240 elements) 256 x 8 x 2 in 3 (16 values a thread first); C/G of 16-byte
  // vectors the instances whose slots load at once first (the next test); not sd15_64x320 (C/G =
  // 10: 4-byte vectors), which stays resident. Past 72 KB, below 96, C/G of 16-byte vectors:
  // sdxl 32x32 C=2560 (78 KB, C/G = 80) 256 x 8 x 4 in 11 parts (H200: 16.3 us against split
  // 17.3-18.8), or where the device answers rounds (the H200: 62 clusters of 6 at once, the
  // second round's 2 uncounted, against 37 of 11) 256 x 8 x 8 in 6 (14.76 us against 15.21,
  // bench/NOTES.md, "Two rounds, fewer in the second"); C/G of 8-byte vectors too, the
  // 256-thread instance with its rows held as loaded first (sd15_64x640, 78 KB, C/G = 20: 256 x
  // 4 x 8 in 11, 17.0 us against stream 18.8).
  if (!clusters()) GTEST_SKIP() << "the device has no thread-block clusters (or HIPGN_CLUSTERS=0)";
  const Layout cl = Layout::channels_last;
  expect_parts(Shape{2, 1920, {32, 32}, 32}, cl, "gn_fwd_f16_f16_cl_swish_onchip_b1024_v4_e8", 2);
  expect_parts(Shape{2, 1280, {16, 16}, 32}, cl, "gn_fwd_f16_f16_cl_swish_onchip_b256_v8_e2", 3);
  if (wide_clusters()) {  // (a portable cluster holds it in fewer parts of a larger instance, unmeasured)
    const char* e8 = "gn_fwd_f16_f16_cl_swish_onchip_b256_v8_e8";
    const bool rounds = answers_rounds(e8, {2, 2560, {32, 32}, 32}, cl);
    expect_parts(Shape{2, 2560, {32, 32}, 32}, cl, rounds ? e8 : "gn_fwd_f16_f16_cl_swish_onchip_b256_v8_e4",
                 rounds ? 6 : 11);
    // 16 groups: parts past 8 where clusters of 8 would not fill the compute units once
    // (odd_97x89_c160_g8, 172660 elements a group: 512 x 4 x 8 in 11, not 1024 x 4 x 8 in 6)
    expect_parts(Shape{2, 160, {97, 89}, 8}, cl, "gn_fwd_f16_f16_cl_swish_onchip_b512_v4_e8", 11);
  }
  if (wide_clusters())
    expect_parts(Shape{2, 640, {64, 64}, 32}, cl, "gn_fwd_f16_f16_cl_swish_onchip_b256_v4_e8", 11);
  if (reaches(Family::resident, {2, 320, {64, 64}, 32}, cl))  // (else the onchip family is the build's best)
    EXPECT_NE(choose({2, 320, {64, 64}, 32}, cl)->spec().family, Family::onchip);
}

TEST(Heuristics, ChannelsLastTensorsOfGroupsOf32ByteRunsTakeAClusterAGroupUpTo160Kb) {
  // from 96 KB to 160 KB of x a compute unit, 16-bit groups whose C/G channels are 32 bytes or
  // more of 16-byte vectors: the onchip forward in parts, 256 x 8 x 8 with its rows held as
  // loaded (H200, bench/results/h200; heuristics.cpp, kOnchipPartsClFwdWideBytesPerCu):
  // vae_128x512 in 16 parts, det_50x84x1024 in 9, sdxl_64x1280 in 11; not 16-byte runs
  // (odd_1d_8191_c256, C/G = 8) nor past 160 KB (det_100x168x512, 254 KB), which stream, as do
  // all of them where clusters hold no more than a portable 8 parts (no instance of at most
  // kOnchipPartsClFwdMostChunkElements holds the groups then)
  const Layout cl = Layout::channels_last;
  const char* held = "gn_fwd_f16_f16_cl_swish_onchip_b256_v8_e8";
  std::vector<Shape> stream = {Shape{4, 256, {8191}, 32}, Shape{2, 512, {100, 168}, 32}};
  const Shape vae{1, 512, {128, 128}, 32}, det{2, 1024, {50, 84}, 32}, sdxl{2, 1280, {64, 64}, 32};
  if (wide_clusters()) {
    expect_parts(vae, cl, held, 16);
    expect_parts(det, cl, held, 9);
    expect_parts(sdxl, cl, held, 11);
  } else {
    stream.insert(stream.end(), {vae, det, sdxl});
  }
  for (const Shape& s : stream)
    if (reaches(Family::stream, s, cl))  // (a smaller preset)
      EXPECT_EQ(choose(s, cl)->spec().family, Family::stream);
}

TEST(Heuristics, OnchipChannelsLastForwardTakesSlotsLoadedAtOnceFirst) {
  // 16-bit values: the instances whose slots a thread all load at once (kOnchipAtOnceSlots)
  // first where they hold the group whole, and in parts those of 16-byte vectors, or of 256
  // threads in up to 8 parts (bench/NOTES.md, "Four slots at once"). Whole: SD 8x8 C=2560 (5120
  // elements) 256 x 8 x 4, not the 8-byte 512 x 4 x 8; SD 16x16 C=640 (5120, C/G = 20) 512 x 4 x
  // 4; tiny (C/G = 4) 256 x 4 x 4. Where the device has clusters: g16_32x640 and sd15_32x1280
  // 256 x 8 x 4 in 6 parts, vae_64x512 in 8, with clusters of 16 det_25x42x2048 in 9 (of 8, 512
  // x 4 x 8 in 5: 256 x 8 x 4 needs 9); sd15_32x640 (C/G = 20) 256 x 4 x 4 in 6, sd15_16x1920
  // (C/G = 60) in 4, sd15_32x320 (C/G = 10) 256 x 2 x 4 in 6; not sd15_32x960, whose 256 x 2 x 4
  // needs 16 parts: 256 x 2 x 8 in 8. Among those that hold a group below 8K elements whole with
  // 8- or 16-byte vectors, the tighter fit, then the more slots: ResNet 7x7 C=2048 (3136
  // elements), detection 13x21 C=256 (2184) and SD 8x8 C=1280 (2560) 256 x 4 x 4, not 256 x 8 x
  // 2, 256 x 8 x 4 or 512 x 4 x 4 (H200: bench/NOTES.md, "Whole groups at once")
  const char* e4 = "gn_fwd_f16_f16_cl_swish_onchip_b256_v8_e4";
  const char* v4 = "gn_fwd_f16_f16_cl_swish_onchip_b512_v4_e8";
  const char* v4_e4 = "gn_fwd_f16_f16_cl_swish_onchip_b256_v4_e4";
  const char* v4_e4_512 = "gn_fwd_f16_f16_cl_swish_onchip_b512_v4_e4";
  const char* v2_e4 = "gn_fwd_f16_f16_cl_swish_onchip_b256_v2_e4";
  const Instance* whole = choose_named(Shape{2, 2560, {8, 8}, 32}, Layout::channels_last, {e4, v4, v4_e4, v4_e4_512, v2_e4});
  if (!whole) GTEST_SKIP() << "the preset lacks the onchip forwards of four slots or 512 x 4 x 8";
  EXPECT_EQ(whole->name(), e4);
  EXPECT_EQ(choose(Shape{2, 640, {16, 16}, 32}, Layout::channels_last)->name(), v4_e4_512);
  EXPECT_EQ(choose(Shape{1, 32, {8, 8}, 8}, Layout::channels_last)->name(), v4_e4);
  for (const Shape& s : {Shape{32, 2048, {7, 7}, 32}, Shape{2, 256, {13, 21}, 32}, Shape{2, 1280, {8, 8}, 32}}) {
    EXPECT_EQ(choose(s, Layout::channels_last)->name(), v4_e4);
    const char* bf16 = "gn_fwd_bf16_bf16_cl_swish_onchip_b256_v4_e4";
    if (Registry::global().find(bf16)) EXPECT_EQ(choose(s, Layout::channels_last, DataType::bf16)->name(), bf16);
  }
  const char* e4_bf16 = "gn_fwd_bf16_bf16_cl_swish_onchip_b256_v8_e4";
  if (const Instance* bf16 = choose_named(Shape{2, 2560, {8, 8}, 32}, Layout::channels_last, {e4_bf16}, DataType::bf16))
    EXPECT_EQ(bf16->name(), e4_bf16);
  if (!clusters()) return;
  const Layout cl = Layout::channels_last;
  expect_parts(Shape{2, 640, {32, 32}, 16}, cl, e4, 6);
  expect_parts(Shape{2, 1280, {32, 32}, 32}, cl, e4, 6);
  expect_parts(Shape{1, 512, {64, 64}, 32}, cl, e4, 8);
  if (wide_clusters()) {
    // where the device answers the rounds of clusters (only a device does), fewer rounds first:
    // 256 x 8 x 8 in 5 parts (bench/NOTES.md, "Rounds before the slots at once")
    const char* e8 = "gn_fwd_f16_f16_cl_swish_onchip_b256_v8_e8";
    const bool rounds = answers_rounds(e8, {2, 2048, {25, 42}, 32}, cl);
    expect_parts(Shape{2, 2048, {25, 42}, 32}, cl, rounds ? e8 : e4, rounds ? 5 : 9);
  } else
    expect_parts(Shape{2, 2048, {25, 42}, 32}, cl, v4, 5);
  expect_parts(Shape{2, 640, {32, 32}, 32}, cl, v4_e4, 6);
  expect_parts(Shape{2, 1920, {16, 16}, 32}, cl, v4_e4, 4);
  expect_parts(Shape{2, 320, {32, 32}, 32}, cl, v2_e4, 6);
  expect_parts(Shape{2, 960, {32, 32}, 32}, cl, "gn_fwd_f16_f16_cl_swish_onchip_b256_v2_e8", 8);
}

TEST(Heuristics, ChannelsFirstGroupsOf8KTo64KTakeAClusterAGroup) {
  // where the device has clusters, channels-first groups of 16-bit values from 8192 to 65536
  // elements in a small tensor: the onchip forward in parts, the fewest rounds of clusters
  // first where a device answers them, then no more than a portable cluster's 8 parts but for
  // groups too few to fill the compute units so, then two parts of 8K slots at least 7/8 full,
  // then those nearest 8 KB (4096 elements), then the instance whose slots the part fills most,
  // then the most parts (bench/NOTES.md, "A group in parts", "Sixteen parts", "The parameters'
  // lines, late", "Two rounds, fewer in the second" and "Two parts of 8K"): sd15_32x640 256 x 8
  // x 2 in 5; sd15_32x1280 and sd15_64x320 256 x 8 x 4 in 5 (in 10 of 256 x 8 x 2 fp16's 64
  // groups' clusters take two rounds where the device answers, and 10 is past 8); vae_64x512
  // (32 groups) 256 x 8 x 4 in 8; sd15_16x1920 (15360 elements) 256 x 8 x 4 in 2 (not 256 x 8
  // x 2 in 4, nor 128 x 8 x 1 in 15, whose slots are fuller), sd15_16x1280 (10240) 256 x 8 x 2
  // in 3; layer_norm_32x64 (2 groups, 2 KB a compute unit) 256 x 8 x 2 in 16, else 256 x 8 x 4
  // in 8; sd15_64x640 and sdxl_32x2560 (81920 elements, 78 KB a compute unit) 256 x 8 x 4 in 10
  // where clusters hold 16 (parts of 8K, kOnchipCfFwdLargeGroupPartElements), else split (their
  // parts of 16K lost there); det_25x42x2048 (65 KB, 67200 elements, rows that peel) 256 x 8 x
  // 8 in 5 (parts of 16K, kOnchipCfFwdHeldPartElements, their vectors held as loaded)
  if (!clusters()) GTEST_SKIP() << "the device has no thread-block clusters (or HIPGN_CLUSTERS=0)";
  if (!built(Family::onchip)) GTEST_SKIP() << "no fp16 channels-first onchip forward in this build";
  const Layout cf = Layout::channels_first;
  const bool wide = wide_clusters();
  const char* e2 = "gn_fwd_f16_f16_cf_swish_onchip_b256_v8_e2";
  const char* e4 = "gn_fwd_f16_f16_cf_swish_onchip_b256_v8_e4";
  expect_parts(Shape{2, 640, {32, 32}, 32}, cf, e2, 5);
  expect_parts(Shape{2, 1280, {32, 32}, 32}, cf, e4, 5);
  expect_parts(Shape{2, 320, {64, 64}, 32}, cf, e4, 5);
  expect_parts(Shape{1, 512, {64, 64}, 32}, cf, e4, 8);
  expect_parts(Shape{2, 1920, {16, 16}, 32}, cf, e4, 2);
  expect_parts(Shape{2, 1280, {16, 16}, 32}, cf, e2, 3);
  expect_parts(Shape{2, 64, {32, 32}, 1}, cf, wide ? e2 : e4, wide ? 16 : 8);
  for (const Shape& s : {Shape{2, 640, {64, 64}, 32}, Shape{2, 2560, {32, 32}, 32}}) {
    if (wide)
      expect_parts(s, cf, e4, 10);
    else
      EXPECT_NE(choose(s, cf)->spec().family, Family::onchip);
  }
  expect_parts(Shape{2, 2048, {25, 42}, 32}, cf, "gn_fwd_f16_f16_cf_swish_onchip_b256_v8_e8", 5);
  // odd_1d_8191_c256 (124 KB a compute unit, 128 groups of 65528, rows that peel): 512 x 8 x 8
  // in 2 parts (kOnchipCfFwdLargePartElements)
  expect_parts(Shape{4, 256, {8191}, 32}, cf, "gn_fwd_f16_f16_cf_swish_onchip_b512_v8_e8", 2);
}

TEST(Heuristics, RowsFirstTimedOnTheH200TakeTheirFastestFamily) {
  // bench/NOTES.md, "Sixteen parts" (H200, bench.py --best): channels-first fp32 groups of up
  // to 64K elements the onchip family whatever the size (sd15_16x1280 5.0 us against resident
  // 7.1, r50_56x256_n32 at 103 MB 63.7 against stream 87.8), and channels-last ones ("fp32's
  // onchip forward", below); where clusters exist, 16-bit
  // channels-first groups up to 256K in parts (odd_97x89_c160_g8: 10.5 against resident 12.8);
  // a channels-last backward of one large group from 8 KB a compute unit streams
  // (odd_1d_8191_c128_g1: 13.9 against resident 34.5)
  const Layout cf = Layout::channels_first, cl = Layout::channels_last;
  if (built(Family::onchip, DataType::f32)) {
    EXPECT_EQ(choose({2, 1280, {16, 16}, 32}, cf, DataType::f32)->spec().family, Family::onchip);
    EXPECT_EQ(choose({32, 256, {56, 56}, 32}, cf, DataType::f32)->spec().family, Family::onchip);
    // its parts nearest 8 KB where rounds tie: 256 x 4 x 2 in 5 parts of 2048 (4.97 us against
    // 256 x 4 x 4 in 3 5.10)
    const char* e2 = "gn_fwd_f32_f32_cf_swish_onchip_b256_v4_e2";
    if (clusters() && Registry::global().find(e2))
      EXPECT_EQ(choose({2, 1280, {16, 16}, 32}, cf, DataType::f32)->name(), e2);
  }
  // channels-last fp32 the same up to 64K elements where clusters hold the parts, the parts of
  // at most 16 values a thread (sd15_64x320 256 x 2 x 8 in 10 parts 15.5 us against stream
  // 17.2; r50_56x256_n32 256 x 4 x 4 or 256 x 2 x 8 79.4-79.5 against stream 87.7 and 1024 x 4 x
  // 8 whole 83.2; bench/NOTES.md, "fp32's onchip forward")
  const Shape sd15{2, 320, {64, 64}, 32}, r50{32, 256, {56, 56}, 32};
  if (clusters() && reaches(Family::onchip, sd15, cl, Op::fwd, DataType::f32)) {
    const Instance* sd = choose(sd15, cl, DataType::f32);
    EXPECT_EQ(sd->spec().family, Family::onchip);
    const char* ten = "gn_fwd_f32_f32_cl_swish_onchip_b256_v2_e8";  // 10 parts
    if (wide_clusters() && Registry::global().find(ten)) EXPECT_EQ(sd->name(), ten);
  }
  if (clusters() && reaches(Family::onchip, r50, cl, Op::fwd, DataType::f32)) {
    const Instance* inst = choose(r50, cl, DataType::f32);
    EXPECT_EQ(inst->spec().family, Family::onchip);
    EXPECT_LE(inst->spec().per_thread * inst->spec().vector, 16) << inst->name();
  }
  if (clusters() && built(Family::onchip)) EXPECT_EQ(choose({2, 160, {97, 89}, 8}, cf)->spec().family, Family::onchip);
  if (reaches(Family::stream, {1, 128, {8191}, 1}, Layout::channels_last, Op::bwd))
    EXPECT_EQ(choose({1, 128, {8191}, 1}, Layout::channels_last, DataType::f16, Op::bwd)->spec().family,
              Family::stream);
}

// The H200's answers for sd15_32x1920's channels-first onchip forwards (the test below), but
// for clusters of 8, which it runs kEight of.
template <int kEight>
int h200_clusters(int parts, PartsKernel) {
  return parts <= 2 ? 66 : parts <= 4 ? 92 : parts <= 8 ? kEight : 37;
}

TEST(Heuristics, GroupsInPartsTakeTheFewestRoundsOfClustersTheDeviceRuns) {
  // sd15_32x1920 channels-first (64 groups of 61440), with the H200's occupancy query's answers
  // for these kernels (bench/parts_rounds.py; bench/NOTES.md, "Two rounds, fewer in the
  // second"): 66 clusters of 2 at once, 92 of 4, 62 of 8, 37 of 15. 256 x 8 x 4 in 8 parts takes
  // two rounds, the second of 2 clusters, which the rounds counted leave out
  // (kOnchipLastRoundUncountedShare): it ties 256 x 8 x 8 in 4 and 512 x 8 x 8 in 2 at one round
  // and wins on its parts nearest 8 KB (9.88 / 10.07 us against 11.96 / 11.66 and 11.05 / 10.73,
  // bf16 / fp16). Where the device runs 56 of 8, the second round's 8 count and a one-round
  // instance wins (the one of parts nearer 8 KB, 256 x 8 x 8); where no device answers, the
  // parts nearest 8 KB among those of at most 8 parts, 256 x 8 x 4 (not 256 x 8 x 2 in 15).
  if (!clusters()) GTEST_SKIP() << "the device has no thread-block clusters (or HIPGN_CLUSTERS=0)";
  const char* most = "gn_fwd_f16_f16_cf_swish_onchip_b256_v8_e4";
  const char* four = "gn_fwd_f16_f16_cf_swish_onchip_b256_v8_e8";
  const Problem p = make_problem({2, 1920, {32, 32}, 32}, DataType::f16, DataType::f16, Layout::channels_first,
                                 Activation::swish);
  if (!Registry::global().find(four) || !Registry::global().find(most)) GTEST_SKIP() << "a smaller preset";
  const Registry answered = family_registry(p, Family::onchip, h200_clusters<62>),
                 fewer = family_registry(p, Family::onchip, h200_clusters<56>),
                 silent = family_registry(p, Family::onchip);
  const Instance* inst = heuristic_choice(answered, kH100, p);
  ASSERT_NE(inst, nullptr);
  EXPECT_EQ(inst->name(), most);
  EXPECT_EQ(inst->onchip_parts(p).parts, 8);
  EXPECT_EQ(inst->onchip_rounds(p, inst->onchip_parts(p)), 2);
  inst = heuristic_choice(fewer, kH100, p);
  ASSERT_NE(inst, nullptr);
  EXPECT_EQ(inst->name(), four);
  EXPECT_EQ(inst->onchip_rounds(p, inst->onchip_parts(p)), 1);
  inst = heuristic_choice(silent, kH100, p);
  ASSERT_NE(inst, nullptr);
  EXPECT_EQ(inst->name(), most);
  EXPECT_EQ(inst->onchip_rounds(p, inst->onchip_parts(p)), 0);
}

TEST(Heuristics, ChannelsLastBackwardOfFewWideGroupsTakesAClusterAGroup) {
  // where the device has clusters, channels-last groups past 32K elements of C/G spanning 64
  // bytes or more, below 60 KB of x a compute unit: the onchip backward in parts, 4-byte vectors
  // from 8192 elements, parts that cover half the compute units from 16K, then the fewest, or
  // the most below a group a quarter of the compute units (bench/NOTES.md, "The backward in
  // parts"): sd15_32x1920 and sd15_32x1280 512 x 2 x 32 in 2, g16_32x640 (32 groups) 512 x 2 x
  // 16 in 3; within onchip's first rule sd15_32x640 (20480 elements) 512 x 2 x 16 in 2 and
  // sd15_16x1280 (10240) 512 x 2 x 16 whole; but where both instances' workgroups fill less
  // than half the compute units the more workgroups first, before the vectors: layer_norm_32x64
  // (2 groups of 65536) 256 x 8 x 4 in 8 (16 workgroups against 512 x 2 x 16 in 4's 8; bench/
  // NOTES.md, "Few workgroups in parts"). Runs of 32 bytes too (bench/NOTES.md, "Runs of 32 bytes"):
  // vae_64x512 512 x 2 x 32 in 2 where the device answers the rounds of clusters (it runs 512 x
  // 2 x 16 in 4 in two), else the most parts, 512 x 2 x 16 in 4. Not sd15_64x320 (20-byte
  // runs), nor det 25x42 C=2048 (65 KB). Within onchip's first rule, groups of runs narrower
  // than 32 bytes spread as those of 16K elements do (bench/NOTES.md, "The channels-last
  // backward of 20-byte runs in parts"): sd15_32x320 (10240 elements, 20-byte runs) 256 x 2 x 8
  // in 3, where sd15_16x1280 (10240, 80-byte runs) stays whole (above), as does sd15_32x320 of
  // four samples, whose 128 whole groups already cover half the compute units.
  if (!clusters()) GTEST_SKIP() << "the device has no thread-block clusters (or HIPGN_CLUSTERS=0)";
  const Layout cl = Layout::channels_last;
  expect_parts(Shape{2, 320, {32, 32}, 32}, cl, "gn_bwd_f16_f16_cl_swish_onchip_b256_v2_e8", 3, Op::bwd);
  expect_parts(Shape{4, 320, {32, 32}, 32}, cl, "gn_bwd_f16_f16_cl_swish_onchip_b512_v2_e16", 1, Op::bwd);
  expect_parts(Shape{2, 1920, {32, 32}, 32}, cl, "gn_bwd_f16_f16_cl_swish_onchip_b512_v2_e32", 2, Op::bwd);
  expect_parts(Shape{2, 1280, {32, 32}, 32}, cl, "gn_bwd_f16_f16_cl_swish_onchip_b512_v2_e32", 2, Op::bwd);
  expect_parts(Shape{2, 640, {32, 32}, 16}, cl, "gn_bwd_f16_f16_cl_swish_onchip_b512_v2_e16", 3, Op::bwd);
  expect_parts(Shape{2, 640, {32, 32}, 32}, cl, "gn_bwd_f16_f16_cl_swish_onchip_b512_v2_e16", 2, Op::bwd);
  expect_parts(Shape{2, 1280, {16, 16}, 32}, cl, "gn_bwd_f16_f16_cl_swish_onchip_b512_v2_e16", 1, Op::bwd);
  expect_parts(Shape{2, 64, {32, 32}, 1}, cl, "gn_bwd_f16_f16_cl_swish_onchip_b256_v8_e4", 8, Op::bwd);
  const Shape vae{1, 512, {64, 64}, 32};
  const bool rounds = answers_rounds("gn_bwd_f16_f16_cl_swish_onchip_b512_v2_e16", vae, cl, Op::bwd);
  expect_parts(vae, cl, rounds ? "gn_bwd_f16_f16_cl_swish_onchip_b512_v2_e32" : "gn_bwd_f16_f16_cl_swish_onchip_b512_v2_e16",
               rounds ? 2 : 4, Op::bwd);
  for (const Shape& s : {Shape{2, 320, {64, 64}, 32}, Shape{2, 2048, {25, 42}, 32}})
    if (const Instance* inst = choose(s, cl, DataType::f16, Op::bwd))  // (a channels-first build has none)
      EXPECT_NE(inst->spec().family, Family::onchip) << inst->name();
}

// The channels-last backward of many small groups of wide runs (rule "channels-last, many small
// groups of wide runs"; bench/NOTES.md, "Channel sums in teams, channels-last"): ResNet 7x7
// C=2048 at N=32 (1024 groups of 3136, 128-byte runs of 16-bit values) onchip 256 x 2 x 8, the
// fewest threads and 4-byte vectors, fp16 and bf16; not 16-byte runs (ResNet 56x56 C=256 at N=32).
TEST(Heuristics, ChannelsLastBackwardOfManySmallWideGroupsStaysOnChip) {
  const Shape resnet7{32, 2048, {7, 7}, 32}, resnet56{32, 256, {56, 56}, 32};
  const Layout cl = Layout::channels_last;
  for (DataType dt : {DataType::f16, DataType::bf16}) {
    const std::string want = std::string("gn_bwd_") + (dt == DataType::f16 ? "f16_f16" : "bf16_bf16") +
                             "_cl_swish_onchip_b256_v2_e8";
    if (!Registry::global().find(want)) GTEST_SKIP() << "the preset lacks " << want;
    const Instance* inst = choose(resnet7, cl, dt, Op::bwd);
    ASSERT_NE(inst, nullptr);
    EXPECT_EQ(inst->name(), want);
    if (!reaches(Family::stream, resnet56, cl, Op::bwd)) continue;  // a preset without it
    const Instance* wide = choose(resnet56, cl, dt, Op::bwd);
    ASSERT_NE(wide, nullptr);
    EXPECT_NE(wide->spec().family, Family::onchip) << wide->name();
  }
}

TEST(Heuristics, SmallChannelsLastTensorsGoResident) {
  // sd15_64x320 (5 MB, C/G = 10): 256 x 8 (176 items, a unit a cluster); odd_97x89_c96_cg3
  // too, at 104 items (three quarters of the compute units). (g16_32x640's 256 x 4, where 256 x
  // 8 would make 88 items, layer_norm_32x64's 256 x 2 and vae_64x512's 256 x 8 were this test's
  // too, before the split rule took them.)
  struct Case {
    Shape s;
    const char* want;
  };
  for (const Case& c : {Case{Shape{2, 320, {64, 64}, 32}, "gn_fwd_f16_f16_cl_swish_resident_b256_v8_e8"},
                        Case{Shape{2, 96, {97, 89}, 32}, "gn_fwd_f16_f16_cl_swish_resident_b256_v8_e8"}}) {
    if (!Registry::global().find(c.want) || !built(Family::stream, DataType::f16, Layout::channels_last))
      continue;  // a smaller preset
    const Instance* inst = choose(c.s, Layout::channels_last);
    ASSERT_NE(inst, nullptr);
    EXPECT_EQ(inst->name(), c.want);
  }
  // onchip keeps the small tensors' groups of up to 32K elements whatever their vector
  // (sd15_16x2560, 20480 elements of 16-byte vectors; sd15_16x640 and sd15_32x320, C/G = 20
  // and 10: 4-byte vectors; sd15_32x960, 30720 elements); from 48 KB a compute unit the older
  // families (sd15_64x960, C/G = 30: stream) and, at 10x the channels' bytes a compute unit, stream even
  // with C/G = 40
  const DataType f16 = DataType::f16;
  const Layout cl = Layout::channels_last;
  if (!built(Family::stream, f16, cl) || !built(Family::onchip, f16, cl))
    GTEST_SKIP() << "this build lacks the older channels-last families";
  for (const Shape& s : {Shape{2, 2560, {16, 16}, 32}, Shape{2, 640, {16, 16}, 32}, Shape{2, 320, {32, 32}, 32},
                         Shape{2, 960, {32, 32}, 32}})
    if (reaches(Family::onchip, s, cl)) EXPECT_EQ(choose(s, cl)->spec().family, Family::onchip) << s.c;
  EXPECT_EQ(choose({2, 960, {64, 64}, 32}, Layout::channels_last)->spec().family, Family::stream);
  EXPECT_EQ(choose({2, 1280, {96, 96}, 32}, Layout::channels_last)->spec().family, Family::stream);
  // a tiny tensor of groups narrower than the vector (instance_norm_32x64, C/G = 1): onchip, a
  // column a workgroup or a cluster, the most workgroups: where the device has clusters 128 x 8
  // x 1, a column of 8 channels in 8 parts (fwd_onchip_columns_parts_kernel: 128 workgroups);
  // else 2-channel columns (fwd_onchip_columns: 64), of 256 threads (the fewest) the tightest,
  // 256 x 2 x 4 (unmeasured without clusters: 256 x 2 x 8 before that instance was built). C/G =
  // 3 divides no vector: looped
  if (clusters())
    expect_parts(Shape{2, 64, {32, 32}, 64}, cl, "gn_fwd_f16_f16_cl_swish_onchip_b128_v8_e1", 8);
  else
    EXPECT_EQ(choose({2, 64, {32, 32}, 64}, cl)->name(), "gn_fwd_f16_f16_cl_swish_onchip_b256_v2_e4");
  // the backward has no columns in parts: a column must fit one workgroup (128 x 8 x 1 holds 128
  // of the 1024 rows)
  if (const Instance* one = Registry::global().find("gn_bwd_f16_f16_cl_swish_onchip_b128_v8_e1")) {
    Problem q = make_problem({2, 64, {32, 32}, 64}, f16, f16, cl, Activation::swish);
    q.op = Op::bwd;
    std::string why;
    EXPECT_FALSE(one->supports(q, nullptr, &why));
    EXPECT_NE(why.find("1024 positions exceed the 128 rows a workgroup of 128 holds in a column"), std::string::npos)
        << why;
  }
  // the backward's columns the same way (bwd_onchip_columns), where the build has them
  if (Registry::global().find("gn_bwd_f16_f16_cl_swish_onchip_b256_v2_e8")) {
    const Instance* bwd = choose({2, 64, {32, 32}, 64}, Layout::channels_last, f16, Op::bwd);
    ASSERT_NE(bwd, nullptr);
    EXPECT_EQ(bwd->name(), "gn_bwd_f16_f16_cl_swish_onchip_b256_v2_e8");
  }
  if (!built(Family::looped, f16, cl)) return;
  EXPECT_EQ(choose({2, 48, {32, 32}, 16}, Layout::channels_last)->spec().family, Family::looped);
}

// The channels-last backward (bench/NOTES.md, "The stream backward"): the stream family from 32
// KB of x a compute unit, split first for few groups at C >= 1024 with 16-byte vectors.
TEST(Heuristics, ChannelsLastBackwardStreamsFromFourMegabytes) {
  // SD 64x64 C=320: 5.2 MB, 40 KB a compute unit
  if (!reaches(Family::stream, {2, 320, {64, 64}, 32}, Layout::channels_last, Op::bwd))
    GTEST_SKIP() << "no backward stream instance of this build reaches SD 64x64 channels-last";
  const Instance* inst = choose({2, 320, {64, 64}, 32}, Layout::channels_last, DataType::f16, Op::bwd);
  ASSERT_NE(inst, nullptr);
  EXPECT_EQ(inst->spec().family, Family::stream) << inst->name();
  // VAE 64x64 C=512, N=1: 4.19 MB, just under 32 KB a compute unit, 32 groups of 65536: the
  // few-large-groups rule streams from 8 KB (stream 21.9 us, resident 26.8, split 26.9) where
  // the device has no clusters (where it has them, the onchip backward in parts takes it:
  // ChannelsLastBackwardOfFewWideGroupsTakesAClusterAGroup)
  if (clusters() || !reaches(Family::stream, {1, 512, {64, 64}, 32}, Layout::channels_last, Op::bwd)) return;
  const Instance* small = choose({1, 512, {64, 64}, 32}, Layout::channels_last, DataType::f16, Op::bwd);
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(small->spec().family, Family::stream) << small->name();
}

TEST(Heuristics, ChannelsLastBackwardSplitsFewWideGroupsFromC1024) {
  // SD 32x32 C=1280: 5.2 MB, 64 groups of C/G = 40
  if (clusters())
    GTEST_SKIP() << "the onchip backward in parts takes this shape where the device has clusters "
                    "(heuristics_without_clusters runs this test)";
  if (!reaches(Family::split, {2, 1280, {32, 32}, 32}, Layout::channels_last, Op::bwd))
    GTEST_SKIP() << "no backward split instance of this build reaches SD 32x32 C=1280 channels-last";
  const Instance* inst = choose({2, 1280, {32, 32}, 32}, Layout::channels_last, DataType::f16, Op::bwd);
  ASSERT_NE(inst, nullptr);
  EXPECT_EQ(inst->spec().family, Family::split) << inst->name();
  EXPECT_EQ(inst->spec().vector, 8) << inst->name();
}

// A rule's cases: each shape's choice is of `want` (or, with `avoid`, not of it), where the build
// has an instance of `want` that reaches the shape (smaller presets skip the case).
struct FamilyCase {
  Shape s;
  Family want;
  bool avoid = false;
};
void expect_families(std::initializer_list<FamilyCase> cases, Layout layout, Op op) {
  Problem any = make_problem({2, 64, {8, 8}, 32}, DataType::f16, DataType::f16, layout, Activation::swish);
  any.op = op;
  if (Registry::global().bucket(Key::of(any)).empty()) GTEST_SKIP() << "this build has no instance of the op and layout";
  for (const FamilyCase& c : cases) {
    // a smaller preset: no instance of `want`, or (avoid) none of a family other than it and the
    // looped one (a build narrowed to one family and the generic instance rightly takes it)
    const bool applies = c.avoid ? any_reaches([&](Family g) { return g != c.want && g != Family::looped; }, c.s, layout, op)
                                 : reaches(c.want, c.s, layout, op);
    if (!applies) continue;
    const Instance* inst = choose(c.s, layout, DataType::f16, op);
    ASSERT_NE(inst, nullptr);
    if (c.avoid) EXPECT_NE(inst->spec().family, c.want) << inst->name();
    else EXPECT_EQ(inst->spec().family, c.want) << inst->name();
  }
}

// ... below 48 KB a compute unit (heuristics.cpp, kSplitClBwdWideBytesPerCu): det 25x42 C=2048
// (8.6 MB, 65 KB) and SDXL 32x32 C=2560 (10.5 MB, 80 KB) stream (25.2 against split 26.1 us,
// and level).
TEST(Heuristics, ChannelsLastBackwardStreamsFewWideGroupsFrom48KbACu) {
  expect_families({FamilyCase{{2, 2048, {25, 42}, 32}, Family::stream}, FamilyCase{{2, 2560, {32, 32}, 32}, Family::stream}},
                  Layout::channels_last, Op::bwd);
}

// The channels-last backward of few groups (heuristics.cpp: the onchip rule, kSplitClBwdBytesPerCu;
// bench/NOTES.md, "Backward dispatch from every instance's time", "The channels-last onchip
// backward by rows").
TEST(Heuristics, SmallChannelsLastBackwardsHoldOrStreamFewGroupsAndLoopTinyOnes) {
  expect_families({// sd15_16x640 (C/G = 20, 5120 elements) and sd15_32x320 (10240) in a workgroup each;
                   // g16_32x640 (C/G = 40, 40960 elements, past 32K; 20 KB a compute unit): stream,
                   // or where the device has clusters the onchip backward in parts
                   FamilyCase{{2, 640, {16, 16}, 32}, Family::onchip},
                   FamilyCase{{2, 640, {32, 32}, 16}, clusters() ? Family::onchip : Family::stream},
                   FamilyCase{{2, 320, {32, 32}, 32}, Family::onchip},
                   // instance_norm_32x64 (C/G = 1): onchip, a workgroup a column of channels
                   // (bwd_onchip_columns); C/G = 3 (no vector for onchip or split): looped
                   FamilyCase{{2, 64, {32, 32}, 64}, Family::onchip}, FamilyCase{{2, 48, {32, 32}, 16}, Family::looped},
                   // layer_norm_32x64 (2 groups of 65536): neither split into many slices nor looped
                   FamilyCase{{2, 64, {32, 32}, 1}, Family::split, true},
                   FamilyCase{{2, 64, {32, 32}, 1}, Family::looped, true},
                   // vae_64x512 (31 KB a compute unit): not split, not resident
                   FamilyCase{{1, 512, {64, 64}, 32}, Family::split, true},
                   FamilyCase{{1, 512, {64, 64}, 32}, Family::resident, true}},
                  Layout::channels_last, Op::bwd);
}

// The channels-last onchip backward walks rows as the forward does, and takes its instance by
// the same tie-break: the widest vector, then the most threads up to 512 that each get a
// vector, else the fewest (heuristics.cpp, better(); bench/NOTES.md, "The channels-last onchip
// backward by rows").
TEST(Heuristics, OnchipChannelsLastBackwardTakesTheForwardsThreads) {
  struct Case {
    Shape s;
    const char* want;
  };
  // sd15_16x640 7.8 us against 1024 threads' 9.7; sd15_32x640 the one instance that holds it;
  // hw1_512 5.1 against 512 x 8 x 4's 8.6; sd15_16x1280 (10240 elements, from 8192 4-byte
  // vectors first) 8.6 against 512 x 8 x 4's 9.2; sd15_8x2560 256 x 8 x 4 since the channel sums
  // went to teams of lanes, 6.58 against 512 x 8 x 4's 7.12 (H200; it was 8.4 against 7.8 on an
  // H100 before them; bench/NOTES.md, "Channel sums in teams, channels-last")
  for (const Case& c : {Case{{2, 640, {16, 16}, 32}, "gn_bwd_f16_f16_cl_swish_onchip_b512_v2_e16"},
                        Case{{2, 1280, {16, 16}, 32}, "gn_bwd_f16_f16_cl_swish_onchip_b512_v2_e16"},
                        Case{{2, 2560, {8, 8}, 32}, "gn_bwd_f16_f16_cl_swish_onchip_b256_v8_e4"},
                        Case{{2, 640, {32, 32}, 32}, "gn_bwd_f16_f16_cl_swish_onchip_b1024_v2_e16"},
                        Case{{8, 512, {1}, 32}, "gn_bwd_f16_f16_cl_swish_onchip_b128_v8_e1"}}) {
    if (!Registry::global().find(c.want)) continue;  // a smaller preset
    const Instance* inst = choose(c.s, Layout::channels_last, DataType::f16, Op::bwd);
    ASSERT_NE(inst, nullptr);
    EXPECT_EQ(inst->name(), c.want);
  }
}

// The channels-first backward reads peeled runs (families/grid.hpp): a spatial size the vector
// does not divide still gets 16-byte vectors, not the generic scalar instance.
TEST(Heuristics, OddSpatialChannelsFirstBackwardKeepsWideVectors) {
  // 127x127 C=320 (split) and ResNet 7x7 C=2048 at N=32 (3136-element groups: onchip)
  for (const Shape& s : {Shape{1, 320, {127, 127}, 32}, Shape{32, 2048, {7, 7}, 32}}) {
    const Instance* inst = choose(s, Layout::channels_first, DataType::f16, Op::bwd);
    if (!inst) GTEST_SKIP() << "no backward instances in this build";
    if (!reaches(Family::split, s, Layout::channels_first, Op::bwd) &&
        !reaches(Family::onchip, s, Layout::channels_first, Op::bwd))
      continue;  // a preset without them
    EXPECT_EQ(inst->spec().vector, 8) << inst->name();
  }
}

// The channels-first backward: onchip below 32 KB of x a compute unit where it holds a group of
// up to 2304 elements (detection 13x21 C=256, 0.3 MB), split past that (SD 8x8 C=1280, 0.3 MB,
// groups of 2560); from 32 KB a compute unit onchip where it holds the group (ResNet 7x7 C=2048
// at N=32, 6.4 MB, groups of 3136: its channel sums in teams of lanes), split where it does not
// (ResNet 56x56 C=256 at N=32, 51 MB, 1024 groups: not looped).
TEST(Heuristics, ChannelsFirstBackwardFromMidSizesSplitsWhatOnchipCannotHold) {
  const Shape small{2, 256, {13, 21}, 32}, sd8{2, 1280, {8, 8}, 32}, resnet7{32, 2048, {7, 7}, 32},
      resnet56{32, 256, {56, 56}, 32};
  if (!reaches(Family::onchip, small, Layout::channels_first, Op::bwd) ||
      !reaches(Family::split, sd8, Layout::channels_first, Op::bwd) ||
      !reaches(Family::onchip, resnet7, Layout::channels_first, Op::bwd) ||
      !reaches(Family::split, resnet56, Layout::channels_first, Op::bwd))
    GTEST_SKIP() << "no onchip or split channels-first backward of these shapes in this build";
  for (const Shape& s : {small, resnet7}) {
    const Instance* a = choose(s, Layout::channels_first, DataType::f16, Op::bwd);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->spec().family, Family::onchip) << a->name();
  }
  for (const Shape& s : {sd8, resnet56}) {
    const Instance* b = choose(s, Layout::channels_first, DataType::f16, Op::bwd);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->spec().family, Family::split) << b->name();
  }
}

TEST(Heuristics, ResidentChannelsLastForwardUnitsAreChunksOfWholeGroups) {
  // A unit is chunk channels of a sample: whole groups, whole vectors, a row a workgroup covers;
  // the widest whose slices fit one cluster (kClusterSlicesMax), else the narrowest. The
  // backward keeps whole samples.
  int checked = 0;
  for (const Shape& s : {Shape{2, 320, {64, 64}, 32}, Shape{2, 640, {64, 64}, 32}, Shape{1, 120, {7, 31, 37}, 40},
                         Shape{32, 256, {56, 56}, 32}, Shape{2, 1280, {32, 32}, 32}, Shape{3, 30, {97}, 1}}) {
    for (Op op : {Op::fwd, Op::bwd}) {
      const Problem p = make_problem(s, DataType::f16, DataType::f16, Layout::channels_last, Activation::swish);
      Problem q = p;
      q.op = op;
      for (const Instance* i : Registry::global().bucket(Key::of(q))) {
        if (i->spec().family != Family::resident) continue;
        const Instance::ResidentShape r = i->resident_shape(q);
        const std::int64_t v = i->spec().vector, cpg = q.channels_per_group();
        SCOPED_TRACE(i->name() + " C=" + std::to_string(q.c) + " G=" + std::to_string(q.groups));
        ASSERT_GT(r.chunk, 0);
        EXPECT_EQ(q.c % r.chunk, 0);
        EXPECT_EQ(r.units, q.n * (q.c / r.chunk));
        EXPECT_EQ(r.slices, (q.spatial_size() + std::int64_t(r.row_lanes) * i->spec().per_thread - 1) /
                                (std::int64_t(r.row_lanes) * i->spec().per_thread));
        if (op != Op::fwd) {
          EXPECT_EQ(r.chunk, q.c);
          continue;
        }
        if (q.c % v != 0) continue;
        EXPECT_EQ(r.chunk % cpg, 0);
        EXPECT_EQ(r.chunk % v, 0);
        // no wider chunk of whole groups and vectors fits one cluster where this one does not,
        // or is narrower where none does
        for (std::int64_t w = std::lcm(cpg, v); w <= q.c; w += std::lcm(cpg, v)) {
          if (q.c % w != 0 || w / v > i->spec().block || w == r.chunk) continue;
          const std::int64_t lanes = std::max<std::int64_t>(1, i->spec().block / (w / v));
          const std::int64_t slices = (q.spatial_size() + lanes * i->spec().per_thread - 1) / (lanes * i->spec().per_thread);
          if (r.slices <= kClusterSlicesMax) EXPECT_FALSE(w > r.chunk && slices <= kClusterSlicesMax) << w;
          else EXPECT_GT(w, r.chunk) << w;
        }
        ++checked;
      }
    }
  }
  if (checked == 0) GTEST_SKIP() << "no channels-last resident forward instance in this build";
  // sd15_64x320, 512 x 8 vectors: 80 channels (8 groups), 11 slices of 408 rows
  const Problem sd = make_problem({2, 320, {64, 64}, 32}, DataType::f16, DataType::f16, Layout::channels_last,
                                  Activation::swish);
  for (const Instance* i : Registry::global().bucket(Key::of(sd)))
    if (i->name() == "gn_fwd_f16_f16_cl_swish_resident_b512_v8_e8") {
      const Instance::ResidentShape r = i->resident_shape(sd);
      EXPECT_EQ(r.chunk, 80);
      EXPECT_EQ(r.slices, 11);
      EXPECT_EQ(r.units, 8);
    }
}

TEST(Heuristics, ChannelsLastSamplesTooLargeForResidentSplit) {
  // VAE 256x256 C=512: one 32M-element sample; the resident forward could cut it into chunks
  // of a few groups, each still 32 workgroups, but the two streaming passes are the measured
  // choice there (heuristics.cpp)
  if (!built(Family::stream, DataType::f16, Layout::channels_last))
    GTEST_SKIP() << "this build has no channels-last stream instances to prefer";
  const Instance* inst = choose({1, 512, {256, 256}, 32}, Layout::channels_last);
  ASSERT_NE(inst, nullptr);
  EXPECT_NE(inst->spec().family, Family::resident) << inst->name();
}

TEST(Heuristics, MisalignedTensorsGetVectorOne) {
  const Problem p = make_problem({2, 320, {64, 64}, 32}, DataType::f16, DataType::f16, Layout::channels_last,
                                    Activation::swish);
  if (Registry::global().bucket(Key::of(p)).empty()) GTEST_SKIP() << "this build has no channels-last fp16 forward";
  const Tensors t{reinterpret_cast<const void*>(4098), reinterpret_cast<void*>(1 << 20)};
  const Instance* inst = heuristic_choice(Registry::global(), kH100, p, &t);
  ASSERT_NE(inst, nullptr);
  EXPECT_EQ(inst->spec().vector, 1) << inst->name();
}

// The dispatcher remembers the heuristic's choices (Dispatcher::chosen_) under the problem and
// its tensors' placement: a misaligned x after an aligned one still gets a vector of one, the
// aligned tensors their first choice again, and a tuned instance overrides a remembered choice.
TEST(Heuristics, RememberedChoicesKeepTheTensorsPlacementAndYieldToTuning) {
  const Problem p = make_problem({2, 320, {64, 64}, 32}, DataType::f16, DataType::f16, Layout::channels_last,
                                 Activation::swish);
  if (Registry::global().bucket(Key::of(p)).empty()) GTEST_SKIP() << "this build has no channels-last fp16 forward";
  Dispatcher h(kH100);
  const Tensors aligned{reinterpret_cast<const void*>(4096), reinterpret_cast<void*>(1 << 20)};
  const Tensors misaligned{reinterpret_cast<const void*>(4098), reinterpret_cast<void*>(1 << 20)};
  const Instance* first = h.choose(p, &aligned);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first, heuristic_choice(Registry::global(), kH100, p, &aligned));
  EXPECT_GT(first->spec().vector, 1) << first->name();
  const Instance* odd = h.choose(p, &misaligned);
  ASSERT_NE(odd, nullptr);
  EXPECT_EQ(odd->spec().vector, 1) << odd->name();
  EXPECT_EQ(h.choose(p, &aligned), first);
  EXPECT_EQ(h.choose(p, &misaligned), odd);
  ASSERT_TRUE(h.set_tuned(p, odd->name()).ok());
  EXPECT_EQ(h.choose(p, &aligned), odd);
}

TEST(Heuristics, RulesEndWithACatchAll) {
  for (const Target& target : kTargets)
    for (Op op : {Op::fwd, Op::dx, Op::dgb, Op::bwd}) {
      const auto& table = rules(op, target);
      ASSERT_FALSE(table.empty());
      EXPECT_EQ(table.back().family, Family::looped);
      EXPECT_EQ(table.back().min_group_elements, 0);
      EXPECT_TRUE(std::isinf(table.back().max_groups_per_cu));
      for (const Rule& r : table) EXPECT_NE(std::string(r.why), "");
    }
}

// Each target dispatches by the tables its vocabulary row names: sm_90 by its own (measured on
// an H100), the AMD targets by sm_90's, their declared fallback until an AMD GPU measures them.
TEST(Heuristics, EachTargetReadsTheTablesItNames) {
  const std::vector<std::string_view> measured = measured_rule_targets();
  for (const Target& target : kTargets) {
    EXPECT_NE(std::find(measured.begin(), measured.end(), target.rules), measured.end())
        << target.arch << " names rule tables " << target.rules << " that heuristics.cpp lacks";
    const Target* source = find_target(target.rules);
    ASSERT_NE(source, nullptr) << target.rules;
    EXPECT_EQ(source->rules, target.rules) << "tables are named by the target they were measured on";
    for (Op op : {Op::fwd, Op::bwd}) EXPECT_EQ(&rules(op, target), &rules(op, *source)) << target.arch;
  }
  EXPECT_EQ(find_target("sm_90")->rules, "sm_90");
  for (const char* amd : {"gfx90a", "gfx1100"}) EXPECT_EQ(find_target(amd)->rules, "sm_90") << amd;
  // a device of an architecture hipgn does not know dispatches as the assumed part
  DeviceInfo other;
  other.arch = "sm_100";
  EXPECT_EQ(&rules(Op::fwd, other.target()), &rules(Op::fwd, kAssumedTarget));
}

// Thresholds in groups per compute unit read the device's own count: 120 groups are fewer than
// an H100 SXM's 132 SMs (the rule of fewer groups than compute units) but not an H100 PCIe's
// 114 (the split rule of any groups past what the onchip backward holds), though both are sm_90.
TEST(Heuristics, ThresholdsReadTheDevicesOwnComputeUnits) {
  Problem p = make_problem({4, 960, {16, 16}, 30}, DataType::f16, DataType::f16, Layout::channels_first,
                           Activation::swish);
  p.op = Op::bwd;  // 120 groups of 8192 elements, past the backward's on-chip 4096
  bool split_built = false;
  for (const Instance* i : Registry::global().bucket(Key::of(p))) split_built |= i->spec().family == Family::split;
  if (!split_built) GTEST_SKIP() << "no backward split instance in this build";
  const DeviceInfo pcie{"H100 PCIe", 114, 32, "sm_90"};
  std::string sxm_why, pcie_why;
  const Instance* sxm_choice = heuristic_choice(Registry::global(), kH100, p, nullptr, &sxm_why);
  const Instance* pcie_choice = heuristic_choice(Registry::global(), pcie, p, nullptr, &pcie_why);
  ASSERT_NE(sxm_choice, nullptr);
  ASSERT_NE(pcie_choice, nullptr);
  EXPECT_EQ(sxm_choice->spec().family, Family::split) << sxm_choice->name();
  EXPECT_NE(sxm_why.find("fewer groups than compute units"), std::string::npos) << sxm_why;
  EXPECT_EQ(pcie_why.find("fewer groups than compute units"), std::string::npos) << pcie_why;
}

// Without a device's own counts, its target's (codegen/vocabulary.py) serve; without a known
// target, the assumed part's.
TEST(Heuristics, CountsComeFromTheDeviceElseItsTarget) {
  DeviceInfo mi;
  mi.arch = "gfx90a";
  EXPECT_EQ(mi.cus(), find_target("gfx90a")->compute_units);
  EXPECT_EQ(mi.l2(), find_target("gfx90a")->l2_bytes);
  EXPECT_EQ(mi.shared_per_block(), find_target("gfx90a")->shared_bytes_per_block);
  EXPECT_EQ(mi.shared_per_cu(), find_target("gfx90a")->shared_bytes_per_cu);
  mi.compute_units = 110;  // an MI250X GCD reports its own
  mi.l2_bytes = 0;         // HIP 5 reports no L2: the target's stands in
  EXPECT_EQ(mi.cus(), 110);
  EXPECT_EQ(mi.l2(), find_target("gfx90a")->l2_bytes);
  const DeviceInfo none;
  EXPECT_EQ(none.cus(), kAssumedTarget.compute_units);
  EXPECT_EQ(none.shared_per_block(), kAssumedTarget.shared_bytes_per_block);
}

TEST(Heuristics, BackwardSplitsGroupsTooLargeForChip) {
  // SD 16x16 at C=1280: 64 groups of 10240 elements, past the backward's 4096 on chip
  Problem p = make_problem({2, 1280, {16, 16}, 32}, DataType::f16, DataType::f16, Layout::channels_first,
                           Activation::swish);
  p.op = Op::bwd;
  const Instance* inst = heuristic_choice(Registry::global(), kH100, p);
  if (!inst) GTEST_SKIP() << "no backward instances in this build";
  bool split_built = false;
  for (const Instance* i : Registry::global().bucket(Key::of(p))) split_built |= i->spec().family == Family::split;
  if (split_built) EXPECT_EQ(inst->spec().family, Family::split) << inst->name();
}

TEST(Heuristics, TunedChoiceOverridesRules) {
  Dispatcher h(kH100);
  const Problem p = make_problem({2, 320, {64, 64}, 32}, DataType::f16, DataType::f16, Layout::channels_first,
                                    Activation::swish);
  const auto& bucket = Registry::global().bucket(Key::of(p));
  if (bucket.empty()) GTEST_SKIP() << "f16 channels-first swish not built";
  const Instance* generic = nullptr;
  for (const Instance* i : bucket)
    if (i->spec().generic()) generic = i;
  ASSERT_NE(generic, nullptr);
  ASSERT_TRUE(h.set_tuned(p, generic->name()).ok());
  EXPECT_EQ(h.choose(p, nullptr), generic);
  EXPECT_EQ(h.set_tuned(p, "gn_no_such_instance").code, StatusCode::unknown_instance);
}

// The targets table (codegen/vocabulary.py): the assumed part where there is no device, each
// known part by the architecture the runtime reports.
TEST(Heuristics, TargetsAreData) {
  EXPECT_EQ(DeviceInfo{}.target().arch, kAssumedTarget.arch);
  EXPECT_EQ(DeviceInfo::kAssumedComputeUnits, kAssumedTarget.compute_units);
  ASSERT_NE(find_target("gfx90a"), nullptr);
  EXPECT_EQ(find_target("gfx90a")->wavefront, 64);
  EXPECT_EQ(find_target("sm_90")->wavefront, 32);
  EXPECT_EQ(find_target("gfx000"), nullptr);
  DeviceInfo mi;
  mi.arch = "gfx1100";
  EXPECT_EQ(mi.target().platform, "amd");
}

}  // namespace
}  // namespace hipgn::test
