// The first-touch measurement: the user's own writes fault every page in the first pass; after
// any of the kernel's ways of populating memory the first pass takes no fault (the kernel mapped
// every page), whatever it costs; bad sources say why instead of giving a figure.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "harness/probe/probe_measure.h"
#include "tests/support/wlf_fixture.h"

namespace loadbench::probe {
namespace {

using Json = nlohmann::ordered_json;
constexpr uint64_t kBytes = 8u << 20;
constexpr long kPages = kBytes / 4096;

class FirstTouchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ofstream out(file_, std::ios::binary);
    const std::string block(1 << 20, 'x');
    for (int i = 0; i < 8; ++i) out << block;
  }
  test::TempDir dir_;
  const std::string file_ = dir_.File("scratch");
};

void ExpectFigures(const Json& j) {
  for (const char* key : {"first_s_per_gib", "populate_s_per_gib", "second_s_per_gib"}) {
    ASSERT_TRUE(j[key].is_number()) << key << ": " << j.dump(2);
  }
  EXPECT_GT(j["first_s_per_gib"].get<double>(), 0) << j.dump(2);
  EXPECT_EQ(j["bytes"], kBytes);
}

TEST_F(FirstTouchTest, UserWritesFaultEveryPageInTheFirstPass) {
  const Json j = FirstTouch(FirstTouchBy::kUserWrite, "", kBytes, 3);
  ExpectFigures(j);
  EXPECT_GE(j["first_faults"].get<long>(), kPages) << j.dump(2);
  EXPECT_LT(j["populate_faults"].get<long>(), kPages / 100) << j.dump(2);
}

TEST_F(FirstTouchTest, AfterTheKernelPopulatedTheFirstPassTakesNoFault) {
  for (FirstTouchBy how :
       {FirstTouchBy::kMapPopulate, FirstTouchBy::kPopulateWrite, FirstTouchBy::kRead}) {
    SCOPED_TRACE(FirstTouchName(how));
    const Json j = FirstTouch(how, file_, kBytes, 3);
    ExpectFigures(j);
    EXPECT_EQ(j["first_faults"], 0) << j.dump(2);
  }
}

TEST_F(FirstTouchTest, DirectReadGivesAFigureOrSaysWhyNot) {
  const Json j = FirstTouch(FirstTouchBy::kDirectRead, file_, kBytes, 1);
  if (j.contains("reason")) {  // a filesystem without O_DIRECT (tmpfs)
    EXPECT_NE(j["reason"].get<std::string>().find("scratch"), std::string::npos) << j.dump(2);
    EXPECT_TRUE(j["first_s_per_gib"].is_null());
    return;
  }
  ExpectFigures(j);
  EXPECT_EQ(j["first_faults"], 0) << j.dump(2);
}

TEST_F(FirstTouchTest, ASourceTooShortOrMissingIsNoFigure) {
  Json j = FirstTouch(FirstTouchBy::kRead, file_, kBytes * 2, 1);
  EXPECT_TRUE(j["first_s_per_gib"].is_null());
  EXPECT_NE(j.value("reason", "").find("shorter than 16777216 bytes"), std::string::npos)
      << j.dump(2);
  j = FirstTouch(FirstTouchBy::kDirectRead, dir_.File("missing"), kBytes, 1);
  EXPECT_TRUE(j["first_s_per_gib"].is_null());
  EXPECT_NE(j.value("reason", "").find("missing"), std::string::npos) << j.dump(2);
}

}  // namespace
}  // namespace loadbench::probe
