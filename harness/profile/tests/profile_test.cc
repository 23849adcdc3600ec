// Profiles: perf script's samples folded into stacks, the control handshake a worker makes, and
// perf itself attached to a process, turned on and off, and folded (skipped where perf cannot
// run here).
#include "harness/profile/profile.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace loadbench {
namespace {

// Two samples as perf 6.1 prints them with -F comm,period,ip,sym,dso (from a fread load here),
// and a third with the same stack as the first.
constexpr const char* kScript =
    "loadbench  1000000 \n"
    "\tffffffff8225fc43 pvm_irq_enable ([kernel.kallsyms])\n"
    "\tffffffff8226031d exc_page_fault ([kernel.kallsyms])\n"
    "\t    7f0e1c8a1b2c __memmove_avx512_unaligned_erms (/usr/lib/x86_64-linux-gnu/libc.so.6)\n"
    "\t    55d1c0a0b1c2 loadbench::UsePipeline::LoadModel(std::string const&) "
    "(/work/build/loadbench)\n"
    "\n"
    "loadbench  1000000 \n"
    "\t    7f0e1c8a0000 [unknown] (/usr/lib/x86_64-linux-gnu/libxxhash.so.0.8.1)\n"
    "\t    55d1c0a0b1c2 XXH3_64bits_update (/work/build/loadbench)\n"
    "\n"
    "loadbench  999000 \n"
    "\tffffffff8225fc43 pvm_irq_enable ([kernel.kallsyms])\n"
    "\tffffffff8226031d exc_page_fault ([kernel.kallsyms])\n"
    "\t    7f0e1c8a1b2c __memmove_avx512_unaligned_erms (/usr/lib/x86_64-linux-gnu/libc.so.6)\n"
    "\t    55d1c0a0b1c2 loadbench::UsePipeline::LoadModel(std::string const&) "
    "(/work/build/loadbench)\n";

TEST(FoldPerfScript, FoldsSamplesRootFirstWithKernelFramesMarked) {
  std::istringstream in(kScript);
  FoldedProfile p;
  ASSERT_TRUE(FoldPerfScript(in, &p).ok());
  EXPECT_EQ(p.samples, 3u);
  EXPECT_EQ(p.period_ns, 2999000u);
  ASSERT_EQ(p.stacks.size(), 2u);
  EXPECT_EQ(p.stacks.at("loadbench;loadbench::UsePipeline::LoadModel(std::string const&);"
                        "__memmove_avx512_unaligned_erms;exc_page_fault_[k];pvm_irq_enable_[k]"),
            2u);
  // A frame without a symbol is its object's file name.
  EXPECT_EQ(p.stacks.at("loadbench;XXH3_64bits_update;[libxxhash.so.0.8.1]"), 1u);
}

TEST(FoldPerfScript, ThreadNamesWithSpacesStayOneFrame) {
  std::istringstream in("iou-wrk 12  1000000 \n\tffffffff81 io_read ([kernel.kallsyms])\n");
  FoldedProfile p;
  ASSERT_TRUE(FoldPerfScript(in, &p).ok());
  EXPECT_EQ(p.stacks.begin()->first, "iou-wrk_12;io_read_[k]");
}

TEST(FoldPerfScript, RefusesWhatIsNotPerfScript) {
  FoldedProfile p;
  std::istringstream no_period("loadbench\n\tffffffff81 f ([kernel.kallsyms])\n");
  EXPECT_EQ(FoldPerfScript(no_period, &p).code(), Status::Code::kBadInput);
  std::istringstream orphan("\tffffffff81 f ([kernel.kallsyms])\n");
  EXPECT_NE(FoldPerfScript(orphan, &p).message().find("line 1 is not a frame"), std::string::npos);
  std::istringstream no_dso("loadbench 1000\n\tffffffff81 f\n");
  EXPECT_EQ(FoldPerfScript(no_dso, &p).code(), Status::Code::kBadInput);
}

TEST(ProfileControl, WaitsForTheAckAndSaysWhenNoOneAnswers) {
  int ctl[2], ack[2];
  ASSERT_EQ(::pipe(ctl), 0);
  ASSERT_EQ(::pipe(ack), 0);
  ASSERT_EQ(::write(ack[1], "ack\n", 4), 4);
  EXPECT_TRUE(ProfileControl(ctl[1], ack[0], "enable"));
  char buf[16] = {};
  ASSERT_EQ(::read(ctl[0], buf, sizeof buf), 7);
  EXPECT_EQ(std::string(buf), "enable\n");
  ::close(ack[1]);  // the profiler is gone: EOF, not a wait
  EXPECT_FALSE(ProfileControl(ctl[1], ack[0], "disable"));
  ::close(ctl[0]);  // and its end of the control pipe too: EPIPE, not SIGPIPE
  const auto old = ::signal(SIGPIPE, SIG_IGN);
  EXPECT_FALSE(ProfileControl(ctl[1], ack[0], "disable"));
  ::signal(SIGPIPE, old);
  ::close(ctl[1]);
  ::close(ack[0]);
}

TEST(WriteFolded, OneLinePerStack) {
  const std::string path = ::testing::TempDir() + "/profile_test.folded";
  FoldedProfile p;
  p.stacks = {{"a;b", 3}, {"a;c_[k]", 1}};
  ASSERT_TRUE(WriteFolded(path, p).ok());
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "a;b 3\na;c_[k] 1\n");
  std::filesystem::remove(path);
  EXPECT_EQ(WriteFolded("/nonexistent-dir/x.folded", p).code(), Status::Code::kNotWritten);
}

void Spin(int ms) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  volatile uint64_t x = 0;
  while (std::chrono::steady_clock::now() < until) x = x + 1;
}

// A child that works 300 ms before its "timed region", 300 ms in it and 300 ms after, turning
// the profiler on and off around the middle part as a worker does.
pid_t SpinningChild(int ctl_fd, int ack_fd, int go_fd) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  char c;
  if (::read(go_fd, &c, 1) != 1) ::_exit(1);
  Spin(300);
  if (!ProfileControl(ctl_fd, ack_fd, "enable")) ::_exit(2);
  Spin(300);
  if (!ProfileControl(ctl_fd, ack_fd, "disable")) ::_exit(3);
  Spin(300);
  ::_exit(0);
}

TEST(Profiler, SamplesOnlyBetweenEnableAndDisable) {
  std::string perf;
  if (Status s = FindProfiler(&perf); !s.ok()) GTEST_SKIP() << s.message();
  const std::string data = ::testing::TempDir() + "/profile_test.perf.data";
  Profiler profiler;
  ASSERT_TRUE(profiler.Open().ok());
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  const pid_t child = SpinningChild(profiler.worker_ctl(), profiler.worker_ack(), go[0]);
  ASSERT_GT(child, 0);
  Status started = profiler.Start(perf, child, 1000, data);
  ASSERT_TRUE(started.ok()) << started.message();
  ASSERT_EQ(::write(go[1], "g", 1), 1);
  int wstatus = 0;
  ASSERT_EQ(::waitpid(child, &wstatus, 0), child);
  ASSERT_TRUE(WIFEXITED(wstatus));
  if (WEXITSTATUS(wstatus) != 0) GTEST_SKIP() << "perf did not answer here: not permitted?";
  const Status finished = profiler.Finish(30);
  if (!finished.ok()) GTEST_SKIP() << finished.message();
  FoldedProfile p;
  const Status folded = FoldPerfData(perf, data, &p);
  ASSERT_TRUE(folded.ok()) << folded.message();
  // The 300 ms between enable and disable at 1 kHz, give or take the VM's timer; not the
  // 900 ms the child spun in all.
  EXPECT_GT(p.samples, 100u);
  EXPECT_LT(p.samples, 550u);
  ::close(go[0]);
  ::close(go[1]);
  std::filesystem::remove(data);
  std::filesystem::remove(data + ".log");
}

}  // namespace
}  // namespace loadbench
