// Program IR: names, group families and structural validation.
#include "strategies/program/program.h"

#include <gtest/gtest.h>

namespace {

using program::Op;

TEST(ProgramTest, DtypeSizesAndNamesRoundTrip) {
  EXPECT_EQ(program::dtype_bytes(program::DType::kBF16), 2u);
  EXPECT_EQ(program::dtype_bytes(program::DType::kFP32), 4u);
  EXPECT_EQ(program::dtype_bytes(program::DType::kFP8), 1u);
  for (auto dtype : {program::DType::kBF16, program::DType::kFP16, program::DType::kFP32, program::DType::kFP8}) {
    EXPECT_EQ(program::dtype_from_name(program::dtype_name(dtype)), dtype);
  }
  EXPECT_EQ(program::algorithm_from_name("ring"), program::Algorithm::kRing);
  EXPECT_FALSE(program::algorithm_from_name("butterfly").has_value());
}

TEST(ProgramTest, GroupFamiliesMustBeDisjointAndInRange) {
  const auto family = program::make_group_family("dp", 4, {{0, 2}, {1, 3}});
  EXPECT_EQ(family.instance_of_rank, (std::vector<std::int32_t>{0, 1, 0, 1}));
  EXPECT_EQ(family.index_in_instance, (std::vector<std::int32_t>{0, 0, 1, 1}));
  EXPECT_THROW(program::make_group_family("dp", 4, {{0, 1}, {1, 2}}), std::invalid_argument);
  EXPECT_THROW(program::make_group_family("dp", 4, {{0, 4}}), std::invalid_argument);
}

program::Program two_rank_program(std::int64_t bytes_on_rank1) {
  program::Program p;
  p.world_size = 2;
  p.streams = {"compute", "comm"};
  p.group_families.push_back(program::make_group_family("dp", 2, {{0, 1}}));
  p.placement = {0, 1};
  for (std::int64_t bytes : {std::int64_t{100}, bytes_on_rank1}) {
    auto rank = std::make_shared<program::RankProgram>();
    rank->ops.push_back(Op{"fwd", 0, {}, program::ComputeOp{}});
    program::CollectiveOp all_reduce;
    all_reduce.bytes = bytes;
    rank->ops.push_back(Op{"ar", 1, {0}, all_reduce});
    p.ranks.push_back(rank);
  }
  return p;
}

TEST(ProgramTest, AWellFormedProgramValidates) {
  EXPECT_TRUE(program::validate(two_rank_program(100)).empty());
}

TEST(ProgramTest, ValidationFindsMismatchedCollectives) {
  const auto problems = program::validate(two_rank_program(200));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("different sequence"), std::string::npos);
}

TEST(ProgramTest, ValidationFindsForwardDependenciesAndUnknownStreams) {
  program::Program p = two_rank_program(100);
  auto broken = std::make_shared<program::RankProgram>(*p.ranks[0]);
  broken->ops[0].deps = {1};
  broken->ops[0].stream = 7;
  p.ranks[0] = broken;
  const auto problems = program::validate(p);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_NE(problems[0].find("unknown stream"), std::string::npos);
  EXPECT_NE(problems[1].find("not an earlier op"), std::string::npos);
}

}  // namespace
