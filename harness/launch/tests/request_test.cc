#include "harness/launch/request.h"

#include <gtest/gtest.h>

#include "loaders/use/spec.h"

namespace loadbench {
namespace {

ResolvedSpec Resolved(const std::string& text) {
  std::vector<StrategySpec> specs;
  ResolvedSpec r;
  EXPECT_TRUE(ParseStrategyList(text, &specs).ok()) << text;
  EXPECT_TRUE(ResolveSpec(specs.at(0), &r).ok()) << text;
  return r;
}

WorkerRequest Full() {
  WorkerRequest w;
  w.file = "/data/m.wlf";
  w.strategy = Resolved("fread:chunk=4MiB:consume=forward:instances=2");
  w.counters = {"cycles", "instructions"};
  w.expect_checksum = 0xfedcba9876543210ull;
  EXPECT_TRUE(ParsePattern("tp:1", &w.pattern).ok());
  w.part = 2, w.parts = 4, w.reader = 2, w.readers = 4;
  w.result_fd = 3, w.hold_fd = 4, w.start_fd = 7, w.profile_ctl_fd = 5, w.profile_ack_fd = 6;
  return w;
}

TEST(WorkerRequest, ComesBackAsItWasWritten) {
  const WorkerRequest w = Full();
  // Through text, as the worker gets it.
  const auto j = nlohmann::ordered_json::parse(RequestJson(w).dump());
  WorkerRequest back;
  ASSERT_TRUE(ReadWorkerRequest(j, &back).ok());
  EXPECT_EQ(RequestJson(back), RequestJson(w));
  EXPECT_EQ(back.strategy.info, w.strategy.info);
  EXPECT_EQ(back.strategy.params.Bytes("chunk"), 4u << 20);
  EXPECT_EQ(back.strategy.use.consume, "forward");
  EXPECT_EQ(back.strategy.use.instances, 2);
  EXPECT_EQ(back.expect_checksum, 0xfedcba9876543210ull);
  EXPECT_EQ(back.pattern.kind, ReadPattern::Kind::kTp);
  EXPECT_EQ(back.pattern.dim, 1);
  EXPECT_EQ(back.part, 2);
  EXPECT_EQ(back.start_fd, 7);
}

TEST(WorkerRequest, WithoutAChecksumOrAStrategy) {
  WorkerRequest w;
  w.file = "m.wlf";
  WorkerRequest back;
  ASSERT_TRUE(ReadWorkerRequest(RequestJson(w), &back).ok());
  EXPECT_FALSE(back.expect_checksum);
  EXPECT_EQ(back.strategy.info, nullptr);
}

// What a broken request is refused for, named: the first key missing or wrong.
TEST(WorkerRequest, NamesWhatIsWrong) {
  const nlohmann::ordered_json good = RequestJson(Full());
  const struct {
    const char* key;
    nlohmann::ordered_json value;  // null: the key removed
    const char* says;
  } cases[] = {
      {"file", nullptr, "no file"},
      {"file", 7, "file: 7 is not a string"},
      {"part", "2", "part: \"2\" is not a number"},
      {"part", 4, "part 4 of 4"},
      {"pattern", "diagonal", "diagonal"},
      {"expect_checksum", nullptr, "no expect_checksum"},
  };
  for (const auto& c : cases) {
    nlohmann::ordered_json j = good;
    if (c.value.is_null()) {
      j.erase(c.key);
    } else {
      j[c.key] = c.value;
    }
    WorkerRequest back;
    const Status s = ReadWorkerRequest(j, &back);
    EXPECT_EQ(s.code(), Status::Code::kBadInput) << c.key;
    EXPECT_NE(s.message().find(c.says), std::string::npos) << s.message();
  }
  WorkerRequest back;
  EXPECT_EQ(ReadWorkerRequest(nlohmann::ordered_json::array(), &back).code(),
            Status::Code::kBadInput);
}

// The strategy comes back only as one that is registered, with every option of its own and of
// the use options, each of its kind and in its range.
TEST(WorkerRequest, ChecksTheStrategysOptions) {
  const nlohmann::ordered_json good = RequestJson(Full());
  const struct {
    const char* path;  // into "strategy"
    nlohmann::ordered_json value;
    const char* says;
  } cases[] = {
      {"/name", "freed", "unknown strategy 'freed'"},
      {"/params/chunk", "4MiB", "option chunk: not an integer"},
      {"/params/chunk", 0, "option chunk: 0 is out of range"},
      {"/params/extra", 1, "options given, it has"},
      {"/use/consume", "eat", "option consume: 'eat' is not one of"},
      {"/use/instances", 9, "option instances: 9 is out of range"},
  };
  for (const auto& c : cases) {
    nlohmann::ordered_json j = good;
    j["strategy"][nlohmann::ordered_json::json_pointer(c.path)] = c.value;
    WorkerRequest back;
    const Status s = ReadWorkerRequest(j, &back);
    EXPECT_EQ(s.code(), Status::Code::kBadInput) << c.path;
    EXPECT_NE(s.message().find(c.says), std::string::npos) << c.path << ": " << s.message();
  }
}

}  // namespace
}  // namespace loadbench
