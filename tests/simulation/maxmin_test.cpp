// Max-min fair sharing on small cases solved by hand.
#include "sim/net/maxmin.h"

#include <gtest/gtest.h>

namespace {

TEST(MaxMinTest, EqualFlowsShareALinkEqually) {
  sim::MaxMinSolver solver;
  const auto link = solver.add_constraint(90);
  const auto a = solver.add_variable(1, {link});
  const auto b = solver.add_variable(1, {link});
  const auto c = solver.add_variable(1, {link});
  solver.solve();
  for (auto v : {a, b, c}) EXPECT_DOUBLE_EQ(solver.rate(v), 30);
}

// Two identical flows folded into one variable that lists the link twice get what each would
// alone: a third of the link, as the third flow does.
TEST(MaxMinTest, AConstraintListedTwiceCarriesTheVariableTwice) {
  sim::MaxMinSolver solver;
  const auto link = solver.add_constraint(90);
  const auto pair = solver.add_variable(1, {link, link});
  const auto single = solver.add_variable(1, {link});
  solver.solve();
  EXPECT_DOUBLE_EQ(solver.rate(pair), 30);
  EXPECT_DOUBLE_EQ(solver.rate(single), 30);
}

TEST(MaxMinTest, ABottleneckedFlowLeavesItsShareToTheOthers) {
  // Link 1 (cap 10) carries A and B; link 2 (cap 100) carries B and C.
  // A and B get 5 each on link 1; C takes what link 2 has left: 95.
  sim::MaxMinSolver solver;
  const auto link1 = solver.add_constraint(10);
  const auto link2 = solver.add_constraint(100);
  const auto a = solver.add_variable(1, {link1});
  const auto b = solver.add_variable(1, {link1, link2});
  const auto c = solver.add_variable(1, {link2});
  solver.solve();
  EXPECT_DOUBLE_EQ(solver.rate(a), 5);
  EXPECT_DOUBLE_EQ(solver.rate(b), 5);
  EXPECT_DOUBLE_EQ(solver.rate(c), 95);
}

TEST(MaxMinTest, WeightsScaleShares) {
  sim::MaxMinSolver solver;
  const auto link = solver.add_constraint(30);
  const auto heavy = solver.add_variable(2, {link});
  const auto light = solver.add_variable(1, {link});
  solver.solve();
  EXPECT_DOUBLE_EQ(solver.rate(heavy), 20);
  EXPECT_DOUBLE_EQ(solver.rate(light), 10);
}

TEST(MaxMinTest, RemovingAVariableFreesItsShareAndItsId) {
  sim::MaxMinSolver solver;
  const auto link = solver.add_constraint(60);
  const auto a = solver.add_variable(1, {link});
  const auto b = solver.add_variable(1, {link});
  solver.solve();
  EXPECT_DOUBLE_EQ(solver.rate(b), 30);
  solver.remove_variable(a);
  solver.solve();
  EXPECT_DOUBLE_EQ(solver.rate(b), 60);
  EXPECT_EQ(solver.variable_count(), 1u);
  EXPECT_EQ(solver.add_variable(1, {link}), a);  // the id is reused
}

TEST(MaxMinTest, AParkingLot) {
  // Three links of capacity 1 in a row; one long flow crosses all three, one short flow on
  // each link: every flow gets 1/2 (the textbook parking-lot example).
  sim::MaxMinSolver solver;
  std::vector<sim::MaxMinSolver::ConstraintId> links;
  for (int i = 0; i < 3; ++i) links.push_back(solver.add_constraint(1));
  const auto long_flow = solver.add_variable(1, links);
  std::vector<sim::MaxMinSolver::VariableId> short_flows;
  for (auto link : links) short_flows.push_back(solver.add_variable(1, {link}));
  solver.solve();
  EXPECT_DOUBLE_EQ(solver.rate(long_flow), 0.5);
  for (auto v : short_flows) EXPECT_DOUBLE_EQ(solver.rate(v), 0.5);
}

TEST(MaxMinTest, ABoundedFlowLeavesTheRestToTheOthers) {
  // Link 1 (cap 100) carries A (bound 20), B and C; C also crosses link 2 (cap 30), with D.
  // A stops at its bound, 20; link 2 then gives C and D 15 each; B takes link 1's rest, 65.
  sim::MaxMinSolver solver;
  const auto link1 = solver.add_constraint(100);
  const auto link2 = solver.add_constraint(30);
  const auto a = solver.add_variable(1, {link1}, 20);
  const auto b = solver.add_variable(1, {link1});
  const auto c = solver.add_variable(1, {link1, link2});
  const auto d = solver.add_variable(1, {link2});
  solver.solve();
  EXPECT_DOUBLE_EQ(solver.rate(a), 20);
  EXPECT_DOUBLE_EQ(solver.rate(b), 65);
  EXPECT_DOUBLE_EQ(solver.rate(c), 15);
  EXPECT_DOUBLE_EQ(solver.rate(d), 15);
}

TEST(MaxMinTest, ABoundAboveTheFairShareChangesNothing) {
  sim::MaxMinSolver solver;
  const auto link = solver.add_constraint(60);
  const auto a = solver.add_variable(1, {link}, 40);
  const auto b = solver.add_variable(1, {link});
  const auto free_of_links = solver.add_variable(1, {}, 7);
  solver.solve();
  EXPECT_DOUBLE_EQ(solver.rate(a), 30);
  EXPECT_DOUBLE_EQ(solver.rate(b), 30);
  EXPECT_DOUBLE_EQ(solver.rate(free_of_links), 7);  // no link: its bound alone
}

}  // namespace
