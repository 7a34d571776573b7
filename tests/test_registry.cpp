// Registry invariants: names unique and parse back, every bucket has its generic instance,
// and the build's manifest lists exactly the registered instances.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "corpus.hpp"
#include "hipgn/params.hpp"
#include "hipgn/registry.hpp"

namespace hipgn {
namespace {

using test::make_problem;

TEST(Registry, HasInstances) {
  EXPECT_GT(Registry::global().all().size(), 0u);
  std::printf("hipgn: registry holds %zu instances in %zu buckets\n", Registry::global().all().size(),
              Registry::global().keys().size());
}

TEST(Registry, NamesAreUniqueAndParseBack) {
  std::set<std::string> seen;
  for (const Instance& inst : Registry::global().all()) {
    EXPECT_TRUE(seen.insert(inst.name()).second) << inst.name();
    const auto parsed = InstanceSpec::parse(inst.name());
    ASSERT_TRUE(parsed.has_value()) << inst.name();
    EXPECT_EQ(parsed->name(), inst.name());
    EXPECT_TRUE(*parsed == inst.spec());
    EXPECT_EQ(Registry::global().find(inst.name()), &inst);
  }
}

TEST(Registry, ParseRejectsMalformedNames) {
  for (const char* bad : {"", "gn", "gn_fwd_f16_f16_cf_none_onchip_b256_v8", "gn_fwd_f16_f16_cf_none_onchip_b256_v8_e4_x",
                          "gn_fwd_f64_f16_cf_none_onchip_b256_v8_e4", "gn_fwd_f16_f16_cf_none_onchip_b0256_v8_e4",
                          "gn_fwd_f16_f16_xx_none_onchip_b256_v8_e4", "gn_fwd_f16_f16_cf_none_onchip_b256_v8_ex"})
    EXPECT_FALSE(InstanceSpec::parse(bad).has_value()) << bad;
}

TEST(Registry, EveryBucketHasAGenericInstance) {
  for (const Key& key : Registry::global().keys()) {
    bool generic = false;
    for (const Instance* inst : Registry::global().bucket(key)) {
      EXPECT_TRUE(inst->spec().key() == key);
      generic = generic || inst->spec().generic();
    }
    EXPECT_TRUE(generic) << key.to_string() << " has no generic instance";
  }
}

TEST(Registry, ManifestListsTheRegisteredInstances) {
  std::ifstream in(HIPGN_MANIFEST_PATH);
  ASSERT_TRUE(in) << "cannot read " << HIPGN_MANIFEST_PATH;
  const auto manifest = nlohmann::json::parse(in);
  std::set<std::string> listed, registered;
  for (const auto& item : manifest.at("instances")) listed.insert(item.at("name").get<std::string>());
  for (const Instance& inst : Registry::global().all()) registered.insert(inst.name());
  EXPECT_EQ(listed, registered);
  EXPECT_EQ(manifest.at("count").get<std::size_t>(), registered.size());
}

// Instance::run hands the kernels the last group's sizes (Params::last_*): wider where the groups
// are uneven, the others' where they are even, which is how the looped launcher tells the two
// apart (families/looped.hpp). Checked on the launch's Params, captured without a GPU.
Params g_captured;
hipError_t capture(const Params& p, hipStream_t) {
  g_captured = p;
  return hipSuccess;
}

TEST(Instance, RunFillsTheLastGroupsSizes) {
  const Tensors t{reinterpret_cast<const void*>(4096), reinterpret_cast<void*>(1 << 20)};
  for (Layout layout : {Layout::channels_first, Layout::channels_last}) {
    const Instance inst(InstanceSpec{Op::fwd, DataType::f16, DataType::f16, layout, Activation::none, Family::looped,
                                     256, 2, 1},
                        &capture);
    const bool cf = layout == Layout::channels_first;
    // C = 322, G = 32: 31 groups of 10 channels and a last one of 12, over 5 x 8 positions
    const Problem uneven = make_problem({2, 322, {5, 8}, 32}, DataType::f16, DataType::f16, layout, Activation::none);
    std::string why;
    ASSERT_TRUE(inst.supports(uneven, &t, &why)) << why;
    g_captured = Params{};
    ASSERT_TRUE(inst.run(uneven, t, nullptr, nullptr).ok());
    EXPECT_EQ(g_captured.channels_per_group, 10);
    EXPECT_EQ(g_captured.last_channels, 12);
    EXPECT_EQ(g_captured.vectors, 10 * 40 / 2);
    EXPECT_EQ(g_captured.last_vectors, 12 * 40 / 2);
    EXPECT_EQ(g_captured.group_elements, 10 * 40);
    EXPECT_EQ(g_captured.last_group_elements, 12 * 40);
    // a row is a channel's 40 positions (channels-first) or a position's 10 or 12 channels
    EXPECT_EQ(g_captured.vectors_per_row.divisor, cf ? 20u : 5u);
    EXPECT_EQ(g_captured.last_vectors_per_row.divisor, cf ? 20u : 6u);
    // even groups: the last group's sizes are everyone's
    const Problem even = make_problem({2, 320, {5, 8}, 32}, DataType::f16, DataType::f16, layout, Activation::none);
    ASSERT_TRUE(inst.run(even, t, nullptr, nullptr).ok());
    EXPECT_EQ(g_captured.last_channels, g_captured.channels_per_group);
    EXPECT_EQ(g_captured.last_vectors, g_captured.vectors);
    EXPECT_EQ(g_captured.last_group_elements, g_captured.group_elements);
    EXPECT_EQ(g_captured.last_vectors_per_row.divisor, g_captured.vectors_per_row.divisor);
    EXPECT_EQ(g_captured.last_vectors_per_row.multiplier, g_captured.vectors_per_row.multiplier);
  }
}

// The channels-last resident family cuts a unit's rows into equal slices (Params::part_rows),
// each at most what a workgroup holds (row_lanes x per_thread), not full slices and a short last
// one; and its forward, which indexes items with ints, refuses a launch of 2^31 items or more.
TEST(Instance, ResidentSlicesAreEqualChannelsLast) {
  const Tensors t{reinterpret_cast<const void*>(4096), reinterpret_cast<void*>(1 << 20)};
  const Instance inst(InstanceSpec{Op::fwd, DataType::f16, DataType::f16, Layout::channels_last, Activation::none,
                                   Family::resident, 256, 8, 8},
                      &capture);
  // sd15_64x320: chunks of 40 channels (5 vectors a row, 51 lanes), 4096 rows in 11 slices
  const Problem sd = make_problem({2, 320, {64, 64}, 32}, DataType::f16, DataType::f16, Layout::channels_last,
                                  Activation::none);
  std::string why;
  ASSERT_TRUE(inst.supports(sd, &t, &why)) << why;
  g_captured = Params{};
  std::vector<char> workspace(inst.workspace_bytes(sd, 132));
  ASSERT_TRUE(inst.run(sd, t, workspace.data(), nullptr, 132).ok());
  EXPECT_EQ(g_captured.row_lanes, 51);
  EXPECT_EQ(g_captured.chunk_channels, 40);
  EXPECT_EQ(g_captured.slices, 11);
  EXPECT_EQ(g_captured.part_rows, 373);  // ceil(4096 / 11); full slices were 408, the last 16
  EXPECT_EQ(g_captured.items, 2 * 8 * 11);
  // a prime spatial size: slices of ceil(HW / slices) rows, the last shorter and not empty
  const Problem odd = make_problem({1, 96, {97, 89}, 32}, DataType::f16, DataType::f16, Layout::channels_last,
                                   Activation::none);
  ASSERT_TRUE(inst.supports(odd, &t, &why)) << why;
  workspace.resize(inst.workspace_bytes(odd, 132));
  ASSERT_TRUE(inst.run(odd, t, workspace.data(), nullptr, 132).ok());
  const std::int64_t hw = 97 * 89, rows = g_captured.part_rows, slices = g_captured.slices;
  EXPECT_EQ(rows, (hw + slices - 1) / slices);
  EXPECT_LE(rows, std::int64_t(g_captured.row_lanes) * 8);
  EXPECT_GE(rows * slices, hw);
  EXPECT_LT(rows * (slices - 1), hw);
  // 2^25 samples of 8 chunks in 11 slices: past 2^31 items (2^30 groups)
  const Problem many = make_problem({1 << 25, 320, {64, 64}, 32}, DataType::f16, DataType::f16,
                                    Layout::channels_last, Activation::none);
  EXPECT_FALSE(inst.supports(many, nullptr, &why));
  EXPECT_NE(why.find("32-bit index"), std::string::npos) << why;
}

}  // namespace
}  // namespace hipgn
