// Profiles: perf script's samples folded into stacks, the control handshake a worker makes, and
// perf itself attached to a process, turned on and off, and folded (skipped where perf cannot
// run here).
#include "harness/profile/profile.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace loadbench {
namespace {

// Samples as perf 6.1 prints them with --show-task-events -F comm,pid,tid,time,period,ip,sym,dso
// (from a fread load here, times on CLOCK_MONOTONIC): a COMM record perf makes at attach, two
// samples and a third with the same stack as the first.
constexpr const char* kScript =
    "loadbench     0/0         0.000000: PERF_RECORD_COMM: loadbench:4100/4100\n"
    "loadbench  4100/4100  100.001000:    1000000 \n"
    "\tffffffff8225fc43 pvm_irq_enable ([kernel.kallsyms])\n"
    "\tffffffff8226031d exc_page_fault ([kernel.kallsyms])\n"
    "\t    7f0e1c8a1b2c __memmove_avx512_unaligned_erms (/usr/lib/x86_64-linux-gnu/libc.so.6)\n"
    "\t    55d1c0a0b1c2 loadbench::UsePipeline::LoadModel(std::string const&) "
    "(/work/build/loadbench)\n"
    "\n"
    "loadbench  4100/4100  100.002000:    1000000 \n"
    "\t    7f0e1c8a0000 [unknown] (/usr/lib/x86_64-linux-gnu/libxxhash.so.0.8.1)\n"
    "\t    55d1c0a0b1c2 XXH3_64bits_update (/work/build/loadbench)\n"
    "\n"
    "loadbench  4100/4100  100.003000:     999000 \n"
    "\tffffffff8225fc43 pvm_irq_enable ([kernel.kallsyms])\n"
    "\tffffffff8226031d exc_page_fault ([kernel.kallsyms])\n"
    "\t    7f0e1c8a1b2c __memmove_avx512_unaligned_erms (/usr/lib/x86_64-linux-gnu/libc.so.6)\n"
    "\t    55d1c0a0b1c2 loadbench::UsePipeline::LoadModel(std::string const&) "
    "(/work/build/loadbench)\n";

TEST(FoldPerfScript, FoldsSamplesRootFirstWithKernelFramesMarked) {
  std::istringstream in(kScript);
  FoldedProfile p;
  ASSERT_TRUE(FoldPerfScript(in, std::nullopt, &p).ok());
  EXPECT_EQ(p.samples, 3u);
  EXPECT_EQ(p.period_ns, 2999000u);
  EXPECT_EQ(p.pid, 4100);
  ASSERT_EQ(p.stacks.size(), 2u);
  EXPECT_EQ(p.stacks.at("loadbench;loadbench::UsePipeline::LoadModel(std::string const&);"
                        "__memmove_avx512_unaligned_erms;exc_page_fault_[k];pvm_irq_enable_[k]"),
            2u);
  // A frame without a symbol is its object's file name.
  EXPECT_EQ(p.stacks.at("loadbench;XXH3_64bits_update;[libxxhash.so.0.8.1]"), 1u);
  ASSERT_EQ(p.threads.size(), 1u);
  EXPECT_EQ(p.threads.at(4100).samples, 3u);
}

TEST(FoldPerfScript, OnlyTheSamplesInTheWindowAreFolded) {
  // The window leaves out the second sample (a layer's release, say), and its edges count.
  std::istringstream in(kScript);
  FoldedProfile p;
  ASSERT_TRUE(FoldPerfScript(in, Window{{100.0, 100.001}, {100.0025, 100.003}}, &p).ok());
  EXPECT_EQ(p.samples, 2u);
  EXPECT_EQ(p.outside, 1u);
  EXPECT_EQ(p.period_ns, 1999000u);
  EXPECT_EQ(p.stacks.size(), 1u);
}

TEST(FoldPerfScript, ThreadNamesWithSpacesStayOneFrame) {
  std::istringstream in(
      "iou-wrk 12  7/9 5.5:   1000000 \n\tffffffff81 io_read ([kernel.kallsyms])\n");
  FoldedProfile p;
  ASSERT_TRUE(FoldPerfScript(in, std::nullopt, &p).ok());
  EXPECT_EQ(p.stacks.begin()->first, "iou-wrk_12;io_read_[k]");
  EXPECT_EQ(p.threads.at(9).name, "iou-wrk 12");
}

TEST(FoldPerfScript, RefusesWhatIsNotPerfScript) {
  FoldedProfile p;
  std::istringstream no_period("loadbench 1/1 2.0: \n\tffffffff81 f ([kernel.kallsyms])\n");
  EXPECT_EQ(FoldPerfScript(no_period, std::nullopt, &p).code(), Status::Code::kBadInput);
  std::istringstream no_time("loadbench 1000\n\tffffffff81 f ([kernel.kallsyms])\n");
  EXPECT_NE(FoldPerfScript(no_time, std::nullopt, &p).message().find("line 1 is not a sample"),
            std::string::npos);
  std::istringstream orphan("\tffffffff81 f ([kernel.kallsyms])\n");
  EXPECT_NE(FoldPerfScript(orphan, std::nullopt, &p).message().find("line 1 is not a frame"),
            std::string::npos);
  std::istringstream no_dso("loadbench 1/1 2.0: 1000\n\tffffffff81 f\n");
  EXPECT_EQ(FoldPerfScript(no_dso, std::nullopt, &p).code(), Status::Code::kBadInput);
}

// A pool's load as perf prints it: the main thread (100) starts two readers at 10.1 s, 0.1 s into
// a 1 s window; reader 101 is on a CPU 0.6 s of its 0.8 s, reader 102 0.2 s of its 0.4 s; the
// main thread, waiting for them, 0.1 s of the whole second. All three together: 0.9 s on CPU in
// 1 s of wall time, of 2.2 s of the threads' own time.
std::string PoolScript() {
  std::string s = "loadbench   100/100   10.100000: PERF_RECORD_FORK(100:101):(100:100)\n"
                  "loadbench   100/100   10.100000: PERF_RECORD_FORK(100:102):(100:100)\n";
  auto samples = [&s](int tid, double from, int n) {
    for (int i = 0; i < n; ++i) {
      s += fmt::format("loadbench   100/{} {:.6f}:   10000000 \n\t 55 f (/x/loadbench)\n\n", tid,
                       from + 0.01 * (i + 1));
    }
  };
  samples(100, 10.0, 10);
  samples(101, 10.1, 60);
  samples(102, 10.1, 20);
  s += "loadbench   100/101   10.900000: PERF_RECORD_EXIT(100:101):(100:100)\n";
  s += "loadbench   100/102   10.500000: PERF_RECORD_EXIT(100:102):(100:100)\n";
  return s;
}

TEST(ProfileFigures, SeveralThreadsAreSharesOfCpuTimeAndWaitPerThread) {
  std::istringstream in(PoolScript());
  FoldedProfile p;
  const Window window = {{10.0, 11.0}};
  ASSERT_TRUE(FoldPerfScript(in, window, &p).ok());
  const std::vector<ThreadTime> threads = ThreadTimes(p, window);
  ASSERT_EQ(threads.size(), 3u);
  EXPECT_NEAR(threads[0].in_window_s, 1.0, 1e-9);  // the main thread: the whole window
  EXPECT_NEAR(threads[1].in_window_s, 0.8, 1e-9);  // from its start to its exit
  EXPECT_NEAR(threads[2].in_window_s, 0.4, 1e-9);
  const nlohmann::ordered_json f = ProfileFigures(p, window);
  EXPECT_EQ(f["shares_of"], "cpu");
  EXPECT_EQ(f["threads"], 3);
  EXPECT_NEAR(f["window_s"].get<double>(), 1.0, 1e-9);
  // Each thread's waiting added up: 0.9 + 0.2 + 0.2, not the wall time less every thread's
  // samples (0.1 s here, and 0 once the threads' CPU time passes the wall time).
  EXPECT_NEAR(f["waiting_s"].get<double>(), 1.3, 1e-6);
  double per_thread = 0;
  for (const auto& t : f["per_thread"]) {
    per_thread += t["waiting_s"].get<double>();
    EXPECT_NEAR(t["in_window_s"].get<double>(),
                t["on_cpu_s"].get<double>() + t["waiting_s"].get<double>(), 1e-6);
  }
  EXPECT_NEAR(per_thread, f["waiting_s"].get<double>(), 1e-9);
}

TEST(ProfileFigures, OneThreadIsSharesOfWallTimeThatAddUp) {
  // The main thread alone: 0.1 s on CPU in the window's 1 s (two stretches), 0.9 s waiting,
  // which add up to the window's length, the wall time.
  std::string script;
  for (int i = 0; i < 10; ++i) {
    script += fmt::format("loadbench 100/100 {:.6f}:   10000000 \n\t 55 f (/x/loadbench)\n\n",
                          10.0 + 0.05 * (i + 1));
  }
  std::istringstream in(script);
  FoldedProfile p;
  const Window window = {{10.0, 10.24}, {10.26, 11.02}};
  ASSERT_TRUE(FoldPerfScript(in, window, &p).ok());
  EXPECT_EQ(p.outside, 1u);  // at 10.25 s, in the stretch the window leaves out
  const nlohmann::ordered_json f = ProfileFigures(p, window);
  EXPECT_EQ(f["shares_of"], "wall");
  EXPECT_EQ(f["threads"], 1);
  EXPECT_NEAR(f["window_s"].get<double>(), 1.0, 1e-9);
  const double on = static_cast<double>(p.period_ns) / 1e9;
  EXPECT_NEAR(on, 0.09, 1e-9);
  EXPECT_NEAR(on + f["waiting_s"].get<double>(), f["window_s"].get<double>(), 1e-9);
}

TEST(ProfileFigures, WithoutAWindowNoWaitingAndSharesOfCpuTime) {
  std::istringstream in(PoolScript());
  FoldedProfile p;
  ASSERT_TRUE(FoldPerfScript(in, std::nullopt, &p).ok());
  const nlohmann::ordered_json f = ProfileFigures(p, std::nullopt);
  EXPECT_TRUE(f["window_s"].is_null());
  EXPECT_TRUE(f["waiting_s"].is_null());
  EXPECT_EQ(f["shares_of"], "cpu");
  EXPECT_EQ(f["threads"], 3);
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
  const Status folded = FoldPerfData(perf, data, std::nullopt, &p);
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

double MonotonicNow() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// A child whose "load" is two threads, one spinning 300 ms and one asleep 300 ms, while its main
// thread waits for both; it sends its window (perf on, CLOCK_MONOTONIC) on `window_fd`.
pid_t ThreadedChild(int ctl_fd, int ack_fd, int go_fd, int window_fd) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  char c;
  if (::read(go_fd, &c, 1) != 1) ::_exit(1);
  if (!ProfileControl(ctl_fd, ack_fd, "enable")) ::_exit(2);
  const double window[2] = {MonotonicNow(), 0};
  std::thread spin([] { Spin(300); });
  std::thread sleep([] { std::this_thread::sleep_for(std::chrono::milliseconds(300)); });
  spin.join();
  sleep.join();
  const double end = MonotonicNow();
  if (!ProfileControl(ctl_fd, ack_fd, "disable")) ::_exit(3);
  const double sent[2] = {window[0], end};
  if (::write(window_fd, sent, sizeof sent) != sizeof sent) ::_exit(4);
  ::_exit(0);
}

TEST(Profiler, EachThreadOfARealProcessWaitsOnItsOwn) {
  std::string perf;
  if (Status s = FindProfiler(&perf); !s.ok()) GTEST_SKIP() << s.message();
  const std::string data = ::testing::TempDir() + "/profile_threads_test.perf.data";
  Profiler profiler;
  ASSERT_TRUE(profiler.Open().ok());
  int go[2], win[2];
  ASSERT_EQ(::pipe(go), 0);
  ASSERT_EQ(::pipe(win), 0);
  const pid_t child = ThreadedChild(profiler.worker_ctl(), profiler.worker_ack(), go[0], win[1]);
  ASSERT_GT(child, 0);
  ASSERT_TRUE(profiler.Start(perf, child, 1000, data).ok());
  ASSERT_EQ(::write(go[1], "g", 1), 1);
  int wstatus = 0;
  ASSERT_EQ(::waitpid(child, &wstatus, 0), child);
  ASSERT_TRUE(WIFEXITED(wstatus));
  if (WEXITSTATUS(wstatus) != 0) GTEST_SKIP() << "perf did not answer here: not permitted?";
  const Status finished = profiler.Finish(30);
  if (!finished.ok()) GTEST_SKIP() << finished.message();
  double sent[2];
  ASSERT_EQ(::read(win[0], sent, sizeof sent), static_cast<ssize_t>(sizeof sent));
  const Window window = {{sent[0], sent[1]}};
  FoldedProfile p;
  const Status folded = FoldPerfData(perf, data, window, &p);
  ASSERT_TRUE(folded.ok()) << folded.message();
  const nlohmann::ordered_json f = ProfileFigures(p, window);
  // perf saw both threads start and exit on the child's own clock: three threads, whose
  // waiting is each one's own, the sleeper's 300 ms and most of the main thread's wait included.
  EXPECT_EQ(f["threads"], 3) << f.dump();
  EXPECT_EQ(f["shares_of"], "cpu");
  const double on = static_cast<double>(p.period_ns) / 1e9;
  const double wall = sent[1] - sent[0];
  EXPECT_GT(f["waiting_s"].get<double>(), std::max(0.0, wall - on) + 0.2) << f.dump();
  for (const auto& t : f["per_thread"]) {
    EXPECT_GT(t["in_window_s"].get<double>(), 0.25) << f.dump();
    EXPECT_LE(t["in_window_s"].get<double>(), wall + 1e-6) << f.dump();
  }
  for (int fd : {go[0], go[1], win[0], win[1]}) ::close(fd);
  std::filesystem::remove(data);
  std::filesystem::remove(data + ".log");
}

}  // namespace
}  // namespace loadbench
