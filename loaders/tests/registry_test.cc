#include <gtest/gtest.h>

#include "loaders/loader.h"

namespace loadbench {
namespace {

TEST(Registry, HasTheReferenceStrategies) {
  for (const char* name : {"fread", "mmap", "mmap_seq"}) {
    const StrategyInfo* s = FindStrategy(name);
    ASSERT_NE(s, nullptr) << name;
    EXPECT_FALSE(s->summary.empty());
    EXPECT_TRUE(s->unsupported_reason().empty()) << name << ": " << s->unsupported_reason();
  }
  EXPECT_EQ(FindStrategy("nosuch"), nullptr);
  auto all = Strategies();
  for (size_t i = 1; i < all.size(); ++i) EXPECT_LT(all[i - 1]->name, all[i]->name);
}

TEST(Registry, ParsesStrategyListsWithOptions) {
  std::vector<StrategySpec> specs;
  ASSERT_TRUE(ParseStrategyList("fread:buffer=4MiB,mmap,mmap_seq", &specs).ok());
  ASSERT_EQ(specs.size(), 3u);
  EXPECT_EQ(specs[0].name, "fread");
  EXPECT_EQ(specs[0].options.at("buffer"), "4MiB");
  EXPECT_EQ(specs[0].text, "fread:buffer=4MiB");
  EXPECT_EQ(specs[2].name, "mmap_seq");

  Params p;
  ASSERT_TRUE(Params::Resolve("fread", FindStrategy("fread")->options, specs[0].options, &p).ok());
  EXPECT_EQ(p.Bytes("buffer"), 4u << 20);
  EXPECT_EQ(p.ToJson().dump(), R"({"buffer":4194304})");
  ASSERT_TRUE(Params::Resolve("fread", FindStrategy("fread")->options, {}, &p).ok());
  EXPECT_EQ(p.Bytes("buffer"), 1u << 20);  // the declared default
}

TEST(Registry, RejectsBadStrategyLists) {
  struct Case {
    const char* text;
    const char* reason;
  } cases[] = {
      {"nosuch", "unknown strategy 'nosuch'"},
      {"fread,,mmap", "empty strategy name"},
      {"", "empty strategy name"},
      {"fread:buffer", "not key=value"},
      {"fread:=1", "not key=value"},
      {"fread:bogus=1", "unknown option 'bogus'"},
      {"fread:buffer=lots", "not a size"},
      {"fread:buffer=0", "out of range"},
      {"mmap:x=1", "options: none"},
  };
  for (const auto& c : cases) {
    std::vector<StrategySpec> specs;
    Status s = ParseStrategyList(c.text, &specs);
    EXPECT_EQ(s.code(), Status::Code::kBadInput) << c.text;
    EXPECT_NE(s.message().find(c.reason), std::string::npos) << c.text << ": " << s.message();
  }
}

}  // namespace
}  // namespace loadbench
