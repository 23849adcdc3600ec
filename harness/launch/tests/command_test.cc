// The LOADBENCH_FD lines an exec command writes, as the command launcher reads them.
#include "harness/launch/command.h"

#include <gtest/gtest.h>

#include <string>

namespace loadbench {
namespace {

TEST(ParseExecReport, ReadsEveryLineKind) {
  ExecReport r;
  ASSERT_TRUE(ParseExecReport("ready 0.25\r\n\ndone 1.5\nchecksum 00ff00ff00ff00ff\n", &r).ok());
  EXPECT_EQ(r.ready_s, 0.25);
  EXPECT_EQ(r.done_s, 1.5);
  EXPECT_EQ(r.checksum, 0x00ff00ff00ff00ffULL);
  EXPECT_FALSE(r.unsupported.has_value());
  ExecReport u;
  ASSERT_TRUE(ParseExecReport("unsupported python3-torch is not installed\n", &u).ok());
  EXPECT_EQ(u.unsupported, "python3-torch is not installed");
  ExecReport empty;
  ASSERT_TRUE(ParseExecReport("", &empty).ok());
  EXPECT_FALSE(empty.done_s.has_value());
}

TEST(ParseExecReport, NamesTheFirstBadLine) {
  for (const char* bad : {"ready", "ready -1", "done 1s", "done nan", "checksum xyz",
                          "checksum 0123456789abcdef0", "unsupported", "hello"}) {
    ExecReport r;
    const Status s = ParseExecReport(std::string("done 1\n") + bad + "\nready 2\n", &r);
    EXPECT_EQ(s.code(), Status::Code::kFailed) << bad;
    EXPECT_EQ(s.message().find(std::string("LOADBENCH_FD line '") + bad + "'"), 0u) << s.message();
  }
}

}  // namespace
}  // namespace loadbench
