#include <gtest/gtest.h>

#include "loaders/strategy/registry.h"
#include "loaders/use/spec.h"

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
  ASSERT_TRUE(ParseStrategyList("fread:chunk=4MiB,mmap,mmap_seq", &specs).ok());
  ASSERT_EQ(specs.size(), 3u);
  EXPECT_EQ(specs[0].name, "fread");
  EXPECT_EQ(specs[0].options.at("chunk"), "4MiB");
  EXPECT_EQ(specs[0].text, "fread:chunk=4MiB");
  EXPECT_EQ(specs[2].name, "mmap_seq");

  Params p;
  ASSERT_TRUE(Params::Resolve("fread", FindStrategy("fread")->options, specs[0].options, &p).ok());
  EXPECT_EQ(p.Bytes("chunk"), 4u << 20);
  EXPECT_EQ(p.Choice("buffer"), "malloc");
  EXPECT_EQ(p.ToJson().dump(), R"({"buffer":"malloc","chunk":4194304})");
  ASSERT_TRUE(Params::Resolve("fread", FindStrategy("fread")->options, {}, &p).ok());
  EXPECT_EQ(p.Bytes("chunk"), 1u << 20);  // the declared default
}

TEST(Registry, AllStandsForEveryStrategyWithDefaults) {
  std::vector<StrategySpec> specs;
  ASSERT_TRUE(ParseStrategyList("all", &specs).ok());
  ASSERT_EQ(specs.size(), Strategies().size());
  for (size_t i = 0; i < specs.size(); ++i) {
    EXPECT_EQ(specs[i].name, Strategies()[i]->name);
    EXPECT_TRUE(specs[i].options.empty());
  }
}

TEST(Registry, ChoiceAndIntegerOptionsAreChecked) {
  const std::vector<OptionSpec> specs = {
      {"mode", OptionSpec::Kind::kChoice, "off", "", kOnOff},
      {"n", OptionSpec::Kind::kInt, "4", "", {}, 1, 64},
  };
  Params p;
  ASSERT_TRUE(Params::Resolve("s", specs, {{"mode", "on"}, {"n", "64"}}, &p).ok());
  EXPECT_TRUE(p.On("mode"));
  EXPECT_EQ(p.Int("n"), 64);
  Status s = Params::Resolve("s", specs, {{"mode", "yes"}}, &p);
  EXPECT_EQ(s.code(), Status::Code::kBadInput);
  EXPECT_NE(s.message().find("'yes' is not one of off|on"), std::string::npos) << s.message();
  s = Params::Resolve("s", specs, {{"n", "0"}}, &p);
  EXPECT_NE(s.message().find("0 is out of range (1 to 64)"), std::string::npos) << s.message();
}

TEST(Registry, FlagNamesAreListedInOrder) {
  EXPECT_EQ(FlagNames(0), "");
  EXPECT_EQ(FlagNames(kAllocates | kEager), "eager,allocates");
}

TEST(Registry, RejectsBadStrategyLists) {
  struct Case {
    const char* text;
    const char* reason;
  } cases[] = {
      {"nosuch", "unknown strategy 'nosuch'"},
      {"fread,,mmap", "empty strategy name"},
      {"", "empty strategy name"},
      {"fread:chunk", "not key=value"},
      {"fread:buffer=huge", "not one of malloc|thp|hugetlb"},
      {"fread:=1", "not key=value"},
      {"fread:bogus=1", "unknown option 'bogus'"},
      {"fread:chunk=lots", "not a size"},
      {"fread:chunk=0", "out of range"},
      {"mmap_seq:x=1", "options: none"},
  };
  for (const auto& c : cases) {
    std::vector<StrategySpec> specs;
    Status s = ParseStrategyList(c.text, &specs);
    EXPECT_EQ(s.code(), Status::Code::kBadInput) << c.text;
    EXPECT_NE(s.message().find(c.reason), std::string::npos) << c.text << ": " << s.message();
  }
}

// A CUDA strategy named in a build without the toolkit says it is not built and why; in a build
// with it, it exists whether or not a GPU is present.
TEST(StrategyList, ACudaStrategyIsNotBuiltOrExists) {
  EXPECT_EQ(NotBuiltReason("nosuch"), "strategy 'nosuch' does not exist in this build");
  std::vector<StrategySpec> specs;
  const Status s = ParseStrategyList("cuda_bounce", &specs);
  if (CudaNotBuiltReason().empty()) {
    EXPECT_TRUE(s.ok()) << s.message();
    ASSERT_NE(FindStrategy("cuda_bounce"), nullptr);
  } else {
    EXPECT_EQ(s.code(), Status::Code::kBadInput);
    EXPECT_NE(s.message().find("is not built"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(CudaNotBuiltReason()), std::string::npos) << s.message();
    EXPECT_EQ(FindStrategy("cuda_bounce"), nullptr);
  }
}

}  // namespace
}  // namespace loadbench
