// The C API: listing, the automatic choice, errors with messages, and a run on the GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "corpus.hpp"
#include "gpu.hpp"
#include "hipgn/family.hpp"
#include "hipgn/hipgn.h"

namespace hipgn::test {
namespace {

hipgn_problem_t sd15(hipgn_layout_t layout) {
  hipgn_problem_t p{};
  p.n = 2;
  p.c = 320;
  p.groups = 32;
  p.spatial_rank = 2;
  p.spatial[0] = p.spatial[1] = 64;
  p.x_dtype = p.gamma_dtype = HIPGN_F16;
  p.layout = layout;
  p.act = HIPGN_ACT_SWISH;
  p.eps = 1e-5f;
  p.swish_beta = 1.f;
  return p;
}

TEST(CApi, ListsTheRegistry) {
  ASSERT_EQ(hipgn_instance_count(), std::int64_t(Registry::global().all().size()));
  for (std::int64_t i = 0; i < hipgn_instance_count(); ++i)
    EXPECT_EQ(hipgn_instance_name(i), Registry::global().all()[std::size_t(i)].name());
  EXPECT_EQ(hipgn_instance_name(-1), nullptr);
  EXPECT_EQ(hipgn_instance_name(hipgn_instance_count()), nullptr);
}

TEST(CApi, ChoosesAndReportsErrors) {
  hipgn_handle_t h = nullptr;
  const hipgn_status_t created = hipgn_create(&h);
  ASSERT_TRUE(created == HIPGN_STATUS_SUCCESS || created == HIPGN_STATUS_NO_DEVICE);
  ASSERT_NE(h, nullptr);
  hipgn_problem_t p = sd15(HIPGN_CHANNELS_LAST);
  const char* name = nullptr;
  if (!Registry::global().bucket({Op::fwd, DataType::f16, DataType::f16, Layout::channels_last, Activation::swish}).empty()) {
    ASSERT_EQ(hipgn_choose_instance(h, &p, &name), HIPGN_STATUS_SUCCESS) << hipgn_last_error();
    EXPECT_NE(Registry::global().find(name), nullptr);
  }
  p.groups = 7;
  EXPECT_EQ(hipgn_choose_instance(h, &p, &name), HIPGN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(hipgn_last_error(), "not divisible by G = 7"), nullptr) << hipgn_last_error();
  // asked for, uneven groups are a valid problem, run by a generic instance
  p.uneven_groups = 1;
  if (!Registry::global().bucket({Op::fwd, DataType::f16, DataType::f16, Layout::channels_last, Activation::swish}).empty()) {
    ASSERT_EQ(hipgn_choose_instance(h, &p, &name), HIPGN_STATUS_SUCCESS) << hipgn_last_error();
    EXPECT_TRUE(describe(Registry::global().find(name)->spec().family).uneven_groups) << name;
  }
  p.groups = p.c + 1;
  EXPECT_EQ(hipgn_choose_instance(h, &p, &name), HIPGN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(hipgn_last_error(), "exceeds C"), nullptr) << hipgn_last_error();
  p = sd15(HIPGN_CHANNELS_LAST);
  p.spatial_rank = 9;
  EXPECT_EQ(hipgn_groupnorm_fwd(h, &p, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr),
            HIPGN_STATUS_INVALID_ARGUMENT);
  p = sd15(HIPGN_CHANNELS_LAST);
  EXPECT_EQ(hipgn_groupnorm_fwd(h, &p, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr),
            HIPGN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(hipgn_last_error(), "x is null"), nullptr) << hipgn_last_error();
  EXPECT_EQ(hipgn_groupnorm_fwd(nullptr, &p, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr),
            HIPGN_STATUS_INVALID_ARGUMENT);
  // each entry point takes its own ops
  p = sd15(HIPGN_CHANNELS_LAST);
  EXPECT_EQ(hipgn_groupnorm_bwd(h, &p, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                nullptr, nullptr),
            HIPGN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(hipgn_last_error(), "hipgn_groupnorm_bwd needs op"), nullptr) << hipgn_last_error();
  p.op = HIPGN_OP_BWD;
  EXPECT_EQ(hipgn_groupnorm_fwd(h, &p, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr),
            HIPGN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(hipgn_groupnorm_bwd(h, &p, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                nullptr, nullptr),
            HIPGN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(hipgn_last_error(), "x is null"), nullptr) << hipgn_last_error();
  hipgn_destroy(h);
}

// The C API explains a refusal in the C++ API's words: the same status and message for a
// problem past the grid's group limit, a named instance that cannot run the problem, and a
// well-formed name this build did not compile.
TEST(CApi, SaysWhatTheCppApiSays) {
  hipgn_handle_t h = nullptr;
  hipgn_create(&h);
  ASSERT_NE(h, nullptr);
  std::unique_ptr<Handle> cpp;
  Handle::create(&cpp);
  hipgn_problem_t p = sd15(HIPGN_CHANNELS_LAST);
  p.n = 70000;
  p.c = p.groups = 32768;
  p.spatial_rank = 0;
  Problem same;
  same.n = p.n;
  same.c = p.c;
  same.groups = p.groups;
  same.x_dtype = same.gamma_dtype = DataType::f16;
  same.layout = Layout::channels_last;
  same.act = Activation::swish;
  Status want;
  const Instance* inst = cpp->dispatcher().choose(same, nullptr, &want);
  const char* name = nullptr;
  const hipgn_status_t got = hipgn_choose_instance(h, &p, &name);
  if (inst) {
    ASSERT_EQ(got, HIPGN_STATUS_SUCCESS) << hipgn_last_error();
    EXPECT_EQ(std::string(name), inst->name());
  } else {
    EXPECT_EQ(int(got), int(want.code));
    EXPECT_EQ(std::string(hipgn_last_error()), std::string(to_string(want.code)) + ": " + want.message);
    EXPECT_NE(want.code, StatusCode::not_built) << want.message;
  }
  // a named instance of the wrong key: the instance's own reason, through both APIs
  p = sd15(HIPGN_CHANNELS_LAST);
  for (const Instance& other : Registry::global().all()) {
    if (other.spec().op != Op::fwd || other.spec().layout != Layout::channels_first) continue;
    std::vector<char> buf(1 << 16);
    const hipgn_status_t s = hipgn_groupnorm_fwd(h, &p, buf.data(), buf.data(), nullptr, nullptr, nullptr, nullptr,
                                                 other.name().c_str(), nullptr);
    EXPECT_EQ(s, HIPGN_STATUS_NOT_SUPPORTED);
    EXPECT_NE(std::strstr(hipgn_last_error(), "does not support"), nullptr) << hipgn_last_error();
    EXPECT_NE(std::strstr(hipgn_last_error(), "functional key"), nullptr) << hipgn_last_error();
    break;
  }
  EXPECT_EQ(hipgn_groupnorm_fwd(h, &p, &p, &p, nullptr, nullptr, nullptr, nullptr, "gn_fwd_f16_f16_cl_swish_looped_b999_v1_e1",
                                nullptr),
            HIPGN_STATUS_UNKNOWN_INSTANCE);
  EXPECT_NE(std::strstr(hipgn_last_error(), "did not compile it"), nullptr) << hipgn_last_error();
  hipgn_destroy(h);
}

TEST(CApi, BackwardRunsOnTheGpu) {
  HIPGN_REQUIRE_GPU();
  hipgn_handle_t h = nullptr;
  ASSERT_EQ(hipgn_create(&h), HIPGN_STATUS_SUCCESS);
  for (hipgn_op_t op : {HIPGN_OP_DX, HIPGN_OP_DGB, HIPGN_OP_BWD}) {
    hipgn_problem_t cp = sd15(HIPGN_CHANNELS_FIRST);
    cp.op = op;
    Problem p = make_problem({2, 320, {64, 64}, 32}, DataType::f16, DataType::f16, Layout::channels_first,
                             Activation::swish);
    p.op = Op(op);
    if (Registry::global().bucket(Key::of(p)).empty()) continue;
    run_and_check_bwd(p, RunOptions{}, [&](const Problem&, const Tensors& t) {
      const hipgn_status_t s = hipgn_groupnorm_bwd(h, &cp, t.dy, t.x, t.mean, t.rstd, t.gamma, t.beta, t.dx,
                                                   t.dgamma, t.dbeta, nullptr, nullptr);
      return s == HIPGN_STATUS_SUCCESS ? Status::success() : Status::error(StatusCode(s), hipgn_last_error());
    }, "C API " + p.to_string());
  }
  hipgn_destroy(h);
}

TEST(CApi, RunsOnTheGpu) {
  HIPGN_REQUIRE_GPU();
  hipgn_handle_t h = nullptr;
  ASSERT_EQ(hipgn_create(&h), HIPGN_STATUS_SUCCESS);
  for (hipgn_layout_t layout : {HIPGN_CHANNELS_FIRST, HIPGN_CHANNELS_LAST}) {
    const hipgn_problem_t cp = sd15(layout);
    const Problem p = make_problem({2, 320, {64, 64}, 32}, DataType::f16, DataType::f16, Layout(layout),
                                      Activation::swish);
    if (Registry::global().bucket(Key::of(p)).empty()) continue;
    run_and_check(p, RunOptions{}, [&](const Problem&, const Tensors& t) {
      const hipgn_status_t s = hipgn_groupnorm_fwd(h, &cp, t.x, t.y, t.gamma, t.beta, t.mean, t.rstd, nullptr, nullptr);
      return s == HIPGN_STATUS_SUCCESS ? Status::success() : Status::error(StatusCode(s), hipgn_last_error());
    }, "C API");
  }
  hipgn_destroy(h);
}

}  // namespace
}  // namespace hipgn::test
