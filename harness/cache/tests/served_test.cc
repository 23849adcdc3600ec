// Which local file a server here reads for a remote name: decided by path components.
#include "harness/cache/served.h"

#include <string>

#include <gtest/gtest.h>

namespace loadbench {
namespace {

constexpr const char* kPrefix = "http://127.0.0.1:1/";

class ServedTest : public ::testing::Test {
 protected:
  void SetUp() override { RegisterServed(kPrefix, "/srv/data", ""); }
  void TearDown() override { UnregisterServed(kPrefix); }
};

TEST_F(ServedTest, DotsInsideANameAreServedHere) {
  // Two dots inside a component are part of the name, not a way out of the folder: the file
  // is served from here and must be made cold here.
  EXPECT_EQ(LocalFileOf(std::string(kPrefix) + "m..v2.wlf"), "/srv/data/m..v2.wlf");
  EXPECT_EQ(LocalFileOf(std::string(kPrefix) + "dir/x..y/m.wlf"), "/srv/data/dir/x..y/m.wlf");
}

TEST_F(ServedTest, AParentComponentIsNotTheServedFolder) {
  EXPECT_EQ(LocalFileOf(std::string(kPrefix) + "../m.wlf"), "");
  EXPECT_EQ(LocalFileOf(std::string(kPrefix) + "a/../../m.wlf"), "");
  EXPECT_EQ(LocalFileOf(std::string(kPrefix) + "a/.."), "");
}

TEST_F(ServedTest, OtherNames) {
  EXPECT_EQ(LocalFileOf("http://elsewhere.example/m.wlf"), "");
  EXPECT_EQ(LocalFileOf("/data/m.wlf"), "/data/m.wlf");
}

}  // namespace
}  // namespace loadbench
