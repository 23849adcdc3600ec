// The cleanup of what ended commands left, as root runs it: it reads only its own user's journal
// folder, and follows only lines that name something this tool makes. Each case is what an
// unprivileged user, or a journal line naming another's file or cgroup, could once make a root
// command remove or kill.
#include "harness/leftovers/leftovers.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "harness/process/cgroup.h"
#include "harness/process/child.h"
#include "loaders/base/proc_fields.h"
#include "tests/support/saved_env.h"
#include "tests/support/wlf_fixture.h"

namespace loadbench {
namespace {

namespace fs = std::filesystem;

bool Exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

bool Alive(pid_t pid) {
  const std::vector<std::string> stat = ProcStatFields(pid);
  return stat.size() > 3 && stat[3] != "Z";
}

std::string Joined(const std::vector<std::string>& lines) { return fmt::format("{}", lines); }

// A lock folder as /run/lock is: in /tmp, writable by every user, sticky; the test's own.
class LeftoversTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/lb-leftovers-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    locks_ = tmpl;
    ASSERT_EQ(::chmod(locks_.c_str(), 01777), 0);
    ::setenv("LOADBENCH_LOCK_DIR", locks_.c_str(), 1);
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(locks_, ignored);
  }

  // Runs `body` in a child that ends without cleaning up, as a SIGKILL would leave it.
  static pid_t Ended(const std::function<void()>& body) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      body();
      ::_exit(0);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return pid;
  }

  test::SavedEnv env_{{"LOADBENCH_LOCK_DIR"}};
  std::string locks_;
  test::TempDir dir_;
};

// The audit's reproduction: an unprivileged user writes a journal naming root's file where the
// journals once were, and where they are now, before root ever made that folder.
TEST_F(LeftoversTest, AJournalAnotherUserWroteIsNeverFollowed) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root, to be another user in a child";
  const std::string victim = dir_.File("victim");
  std::ofstream(victim) << "root's";
  Ended([&] {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(1);
    for (const std::string folder : {"leftovers", "leftovers-0"}) {
      const std::string d = locks_ + "/" + folder;
      ::mkdir(d.c_str(), 01777);
      std::ofstream(d + "/999999-1") << "+\tfile\t" << victim << "\n";
    }
  });
  std::vector<std::string> refused;
  const std::vector<std::string> said = CleanLeftovers(&refused);
  EXPECT_TRUE(Exists(victim)) << Joined(said);
  EXPECT_TRUE(said.empty()) << Joined(said);
  ASSERT_EQ(refused.size(), 1u) << Joined(refused);
  EXPECT_NE(refused[0].find("owned by uid 65534, not by this user (uid 0)"), std::string::npos)
      << refused[0];
}

TEST_F(LeftoversTest, ASymlinkedJournalFolderIsRefused) {
  const std::string elsewhere = dir_.File("elsewhere"), victim = dir_.File("victim");
  ASSERT_EQ(::mkdir(elsewhere.c_str(), 0700), 0);
  std::ofstream(victim) << "kept";
  std::ofstream(elsewhere + "/999999-1") << "+\tfile\t" << victim << "\n";
  const std::string folder = fmt::format("{}/leftovers-{}", locks_, ::geteuid());
  ASSERT_EQ(::symlink(elsewhere.c_str(), folder.c_str()), 0);
  std::vector<std::string> refused;
  EXPECT_TRUE(CleanLeftovers(&refused).empty());
  EXPECT_TRUE(Exists(victim));
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_NE(refused[0].find("a symbolic link or not a folder"), std::string::npos) << refused[0];
  // Nothing is journaled there either.
  Ended([&] { TrackLeftover(Leftover::kFile, TempSibling(victim)); });
  EXPECT_EQ(std::distance(fs::directory_iterator(elsewhere), fs::directory_iterator()), 1);
}

TEST_F(LeftoversTest, TheJournalFolderIsThisUsersAlone) {
  Ended([&] { TrackLeftover(Leftover::kFile, TempSibling(dir_.File("m"))); });
  struct stat st {};
  ASSERT_EQ(::lstat(fmt::format("{}/leftovers-{}", locks_, ::geteuid()).c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  EXPECT_EQ(st.st_uid, ::geteuid());
  std::vector<std::string> refused;
  (void)CleanLeftovers(&refused);
  EXPECT_TRUE(refused.empty()) << Joined(refused);
}

// A journal of this user's own still names only what the tool makes: a file under its own
// temporary name, not any file.
TEST_F(LeftoversTest, AFileLineIsFollowedOnlyForTheProcesssTemporaryName) {
  const std::string precious = dir_.File("precious"), model = dir_.File("model.wlf");
  std::ofstream(precious) << "not a leftover";
  const pid_t pid = Ended([&] {
    TrackLeftover(Leftover::kFile, precious);
    TrackLeftover(Leftover::kFile, model + ".tmp.1");  // another process's temporary name
    TrackLeftover(Leftover::kFile, TempSibling(model));
    std::ofstream(TempSibling(model)) << "half";
  });
  std::ofstream(model + ".tmp.1") << "another's";
  const std::vector<std::string> said = CleanLeftovers();
  ASSERT_EQ(said.size(), 1u);
  EXPECT_NE(said[0].find("did not touch " + precious), std::string::npos) << said[0];
  EXPECT_NE(said[0].find("did not touch " + model + ".tmp.1"), std::string::npos) << said[0];
  EXPECT_NE(said[0].find(fmt::format("partly written file {}.tmp.{}", model, pid)),
            std::string::npos)
      << said[0];
  EXPECT_TRUE(Exists(precious));
  EXPECT_TRUE(Exists(model + ".tmp.1"));
  EXPECT_FALSE(Exists(fmt::format("{}.tmp.{}", model, pid)));
  EXPECT_TRUE(CleanLeftovers().empty()) << "the journal goes with its lines";
}

// A cgroup line kills a group's tasks: only for a group this tool made, never another.
TEST_F(LeftoversTest, ACgroupLineNamingAnotherGroupKillsNothing) {
  if (const std::string why = MemoryCgroupUnsupportedReason(); !why.empty()) GTEST_SKIP() << why;
  std::unique_ptr<MemoryCgroup> ours;
  ASSERT_TRUE(MemoryCgroup::Create(0, &ours).ok());
  const std::string parent = ours->path().substr(0, ours->path().rfind('/'));
  const std::string other = fmt::format("{}/lb-test-other-{}", parent, ::getpid());
  ASSERT_EQ(::mkdir(other.c_str(), 0755), 0);
  const pid_t sleeper = ::fork();
  if (sleeper == 0) {
    ::pause();
    ::_exit(0);
  }
  std::ofstream(other + "/cgroup.procs") << sleeper;
  Ended([&] { TrackLeftover(Leftover::kCgroup, other); });
  const std::vector<std::string> said = CleanLeftovers();
  const bool alive = Alive(sleeper);
  ::kill(sleeper, SIGKILL);
  ::waitpid(sleeper, nullptr, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ::rmdir(other.c_str());
  EXPECT_TRUE(alive) << Joined(said);
  ASSERT_EQ(said.size(), 1u);
  EXPECT_NE(said[0].find("did not touch " + other), std::string::npos) << said[0];
}

// A node's folder goes with its cluster's journal, whether or not its namespace is still there.
TEST_F(LeftoversTest, ANodesFolderIsRemovedWhenItsNamespaceIsGone) {
  std::string folder;
  const pid_t pid = Ended([&] {
    const std::string netns = fmt::format("loadbench-{}c0-n0", ::getpid());
    TrackLeftover(Leftover::kNetns, netns);  // never made, as if deleted already
    std::string made;
    if (!MakeJournaledFolder(netns, &made).ok()) ::_exit(1);
    std::ofstream(made + "/orte-session") << "x";
  });
  for (const auto& e : fs::directory_iterator("/tmp")) {
    if (e.path().filename().string().starts_with(fmt::format("loadbench-{}c0-n0-", pid))) {
      folder = e.path();
    }
  }
  ASSERT_FALSE(folder.empty());
  const std::vector<std::string> said = CleanLeftovers();
  EXPECT_FALSE(Exists(folder)) << Joined(said);
  ASSERT_EQ(said.size(), 1u);
  EXPECT_NE(said[0].find("folder " + folder), std::string::npos) << said[0];
}

// netns-exec's side: a namespace is entered only when a loadbench command above lists it, with
// the folder it made for it.
TEST_F(LeftoversTest, OnlyANamespaceAnAncestorJournaledIsEntered) {
  const std::string netns = fmt::format("loadbench-{}c9-n0", ::getpid());
  TrackLeftover(Leftover::kNetns, netns);
  std::string folder;
  ASSERT_TRUE(MakeJournaledFolder(netns, &folder).ok());
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    const JournalLines listed = AncestorJournalListing(Leftover::kNetns, netns);
    const bool with_folder = std::find(listed.begin(), listed.end(),
                                       std::pair{Leftover::kFolder, folder}) != listed.end();
    // Listed: past the check, to the namespace itself (never made here).
    const Status ours = ExecShellInNetns(netns, "true");
    const Status other = ExecShellInNetns(netns + "x", "true");
    const std::string text = fmt::format("{}|{}|{}", with_folder, ours.message(), other.message());
    (void)!::write(pipe_fds[1], text.data(), text.size());
    ::_exit(other.code() == Status::Code::kBadInput ? 0 : 1);
  }
  ::close(pipe_fds[1]);
  char buf[512] = {};
  (void)!::read(pipe_fds[0], buf, sizeof buf - 1);
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << buf;
  EXPECT_EQ(std::string(buf),
            fmt::format("true|/run/netns/{}: No such file or directory|{}x: not a node of a "
                        "cluster that a loadbench command above this one "
                        "made (none lists it with its folder in its journal)",
                        netns, netns));
  EXPECT_TRUE(RemoveJournaledFolder(folder).ok());
  UntrackLeftover(Leftover::kNetns, netns);
}

}  // namespace
}  // namespace loadbench
