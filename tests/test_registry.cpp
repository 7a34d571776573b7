// Registry invariants: names unique and parse back, every bucket has its generic instance,
// and the build's manifest lists exactly the registered instances.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <set>

#include "hipgn/registry.hpp"

namespace hipgn {
namespace {

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

}  // namespace
}  // namespace hipgn
