// Each storage kind made as root with a small model: the files read back identical through
// PathOf, the device's counters move on a cold read, env.json's entry says what was made, and
// once removed nothing is left (no mount, no loop device bound, no folder, no journal line). A
// kind this machine cannot make skips, saying why; fuse mounts an nginx of harness/net.
#include <algorithm>
#include <cstring>
#include <memory>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "harness/net/server.h"
#include "harness/storage/tests/storage_fixture.h"

namespace loadbench {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

ServerSpec Nginx(const std::string& root) {
  ServerSpec spec;
  spec.kind = "http";
  spec.root = root;
  return spec;
}

class StorageKindTest : public test::StorageTest {
 protected:
  // `text` made with the model, read back, counted and removed.
  void MakeReadRemove(const std::string& text, const Storage::Made& extra = {}) {
    StorageSpec spec;
    ASSERT_TRUE(ParseStorage(text, &spec).ok()) << text;
    const std::vector<std::string> files = WriteModel(16 * kMiB);
    if (const std::string why = StorageUnavailable(spec, 17 * kMiB); !why.empty()) {
      GTEST_SKIP() << text << ": " << why;
    }
    Storage::Made how = extra;
    how.who = "storage test";
    how.files = files;
    const JournalLines before = Listed();  // a server's
    std::unique_ptr<Storage> s;
    Status st = Storage::Make(spec, how, &s);
    ASSERT_TRUE(st.ok()) << text << ": " << st.message();
    JournalLines made;
    for (const auto& line : Listed()) {
      if (std::find(before.begin(), before.end(), line) == before.end()) made.push_back(line);
    }
    EXPECT_FALSE(made.empty());
    CheckReadBack(*s, files, spec.loop_backed());
    CheckEnv(*s, spec);
    s.reset();
    ExpectGone(made);
    EXPECT_EQ(Listed(), before) << "every journal line of the storage struck off";
  }

  // s3rver serving the folder `root_` as bucket "models", holding the model's files (s3rver's
  // store: KEY._S3rver_object); its keys in the environment for rclone.
  void StartS3(const std::vector<std::string>& files) {
    ServerSpec spec;
    spec.kind = "s3";
    spec.root = s3_.path();
    spec.buckets = {"models"};
    Status st = Server::Start(spec, &server_);
    if (st.code() == Status::Code::kUnsupported) GTEST_SKIP() << st.message();
    ASSERT_TRUE(st.ok()) << st.message();
    for (const std::string& f : files) {
      const std::string key = f.substr(dir_.path().size() + 1);
      const std::string object = server_->ObjectFile("models", key);
      std::filesystem::create_directories(std::filesystem::path(object).parent_path());
      std::filesystem::copy_file(f, object);
    }
    ::setenv("AWS_ACCESS_KEY_ID", kS3rverKey, 1);
    ::setenv("AWS_SECRET_ACCESS_KEY", kS3rverKey, 1);
  }

  Storage::Made S3Mount() const {
    Storage::Made how;
    how.server_url = "s3://models";
    how.s3_endpoint = server_->endpoint();
    how.served_root = dir_.path();
    return how;
  }

  test::SavedEnv keys_{{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"}};
  test::TempDir s3_;
  std::unique_ptr<Server> server_;

  static void CheckReadBack(const Storage& s, const std::vector<std::string>& files, bool loop) {
    EXPECT_EQ(loop, !s.device().empty());
    const std::optional<DeviceStat> before = s.Stat();
    EXPECT_EQ(before.has_value(), loop);
    for (const std::string& f : files) {
      const std::string on = s.PathOf(f);
      EXPECT_NE(on, f);
      test::DropPages(on);
      const std::string read = test::ReadWhole(on);
      EXPECT_EQ(read.size(), test::ReadWhole(f).size()) << on;
      EXPECT_TRUE(read == test::ReadWhole(f)) << on << " differs from " << f;
    }
    if (!loop) return;
    const std::optional<DeviceStat> after = s.Stat();
    ASSERT_TRUE(after.has_value());
    EXPECT_GT(after->reads, before->reads);
    EXPECT_GT(after->read_sectors, before->read_sectors);
  }

  static void CheckEnv(const Storage& s, const StorageSpec& spec) {
    const nlohmann::ordered_json env = s.Env();
    EXPECT_EQ(env["kind"], spec.kind);
    EXPECT_EQ(env["label"], spec.label);
    EXPECT_GT(env["made_s"].get<double>(), 0.0);
    EXPECT_FALSE(env["mount_options"].get<std::string>().empty());
    if (spec.loop_backed()) {
      EXPECT_EQ(env["loop"]["device"], s.device());
      EXPECT_EQ(env["loop"]["dio"], true) << env.dump();
      EXPECT_GT(env["bytes"].get<uint64_t>(), 16 * kMiB);
      EXPECT_FALSE(env["mkfs"]["version"].get<std::string>().empty()) << env.dump();
    } else {
      EXPECT_TRUE(env["loop"].is_null());
    }
  }
};

TEST_F(StorageKindTest, Ext4) { MakeReadRemove("ext4"); }
TEST_F(StorageKindTest, Xfs) { MakeReadRemove("xfs"); }
TEST_F(StorageKindTest, BtrfsCompressed) { MakeReadRemove("btrfs:compress=zstd"); }
TEST_F(StorageKindTest, Squashfs) { MakeReadRemove("squashfs"); }
TEST_F(StorageKindTest, SquashfsUncompressed) { MakeReadRemove("squashfs:compress=none"); }
TEST_F(StorageKindTest, Erofs) { MakeReadRemove("erofs"); }
TEST_F(StorageKindTest, ErofsLz4) { MakeReadRemove("erofs:compress=lz4"); }
TEST_F(StorageKindTest, Overlay) { MakeReadRemove("overlay"); }
TEST_F(StorageKindTest, Tmpfs) { MakeReadRemove("tmpfs"); }

TEST_F(StorageKindTest, FuseOverS3) {
  StartS3(WriteModel(16 * kMiB));
  if (server_ == nullptr) return;
  MakeReadRemove("fuse:cache=full:chunk=1MiB", S3Mount());
}

TEST_F(StorageKindTest, FuseOverS3WithoutCache) {
  StartS3(WriteModel(16 * kMiB));
  if (server_ == nullptr) return;
  MakeReadRemove("fuse", S3Mount());
}

TEST_F(StorageKindTest, PathOfAFuseMountKeepsTheNameUnderTheServedFolder) {
  std::filesystem::create_directory(dir_.File("sub"));
  std::ofstream(dir_.File("sub/a.json")) << "{}";
  StartS3({dir_.File("sub/a.json")});
  if (server_ == nullptr) return;
  StorageSpec spec;
  ASSERT_TRUE(ParseStorage("fuse", &spec).ok());
  if (const std::string why = StorageUnavailable(spec, 0); !why.empty()) GTEST_SKIP() << why;
  std::unique_ptr<Storage> s;
  Storage::Made how = S3Mount();
  how.files = {dir_.File("sub/a.json")};
  Status st = Storage::Make(spec, how, &s);
  ASSERT_TRUE(st.ok()) << st.message();
  const std::string mount = s->PathOf(dir_.path());
  EXPECT_TRUE(mount.starts_with("/tmp/loadbench-mnt-")) << mount;
  EXPECT_EQ(s->PathOf(dir_.File("sub/a.json")), mount + "/sub/a.json");
  EXPECT_EQ(test::ReadWhole(mount + "/sub/a.json"), "{}");
  EXPECT_TRUE(s->device().empty());
  EXPECT_FALSE(s->Stat().has_value());
  EXPECT_EQ(s->Env()["fs"], "fuse.rclone");
}

// rclone finds files in folder listings, which harness/net's nginx does not serve (autoindex
// off): the mount is refused, naming why, and nothing of it is left.
TEST_F(StorageKindTest, FuseOverAnHttpServerWithoutListingsIsRefused) {
  std::unique_ptr<Server> server;
  Status st = Server::Start(Nginx(dir_.path()), &server);
  if (st.code() == Status::Code::kUnsupported) GTEST_SKIP() << st.message();
  ASSERT_TRUE(st.ok()) << st.message();
  StorageSpec spec;
  ASSERT_TRUE(ParseStorage("fuse", &spec).ok());
  if (const std::string why = StorageUnavailable(spec, 0); !why.empty()) GTEST_SKIP() << why;
  const JournalLines before = Listed();
  Storage::Made how;
  how.files = WriteModel(4096);
  how.server_url = server->endpoint() + "/";
  how.served_root = dir_.path();
  std::unique_ptr<Storage> s;
  st = Storage::Make(spec, how, &s);
  EXPECT_EQ(st.code(), Status::Code::kIOError);
  EXPECT_NE(st.message().find("autoindex on"), std::string::npos) << st.message();
  EXPECT_EQ(Listed(), before);
}

TEST_F(StorageKindTest, AFailureHalfWayLeavesNothing) {
  StorageSpec spec;
  ASSERT_TRUE(ParseStorage("fuse", &spec).ok());
  if (const std::string why = StorageUnavailable(spec, 0); !why.empty()) GTEST_SKIP() << why;
  std::unique_ptr<Storage> s;
  // Nothing answers there: rclone mounts (it lists lazily) or ends; either way a bad URL kind is
  // refused after the folders were made, and they go.
  Storage::Made how;
  how.server_url = "ftp://127.0.0.1:1/";
  Status st = Storage::Make(spec, how, &s);
  EXPECT_EQ(st.code(), Status::Code::kBadInput) << st.message();
  EXPECT_EQ(s, nullptr);
  EXPECT_TRUE(Listed().empty());
}

TEST_F(StorageKindTest, HereIsNotMade) {
  StorageSpec spec;
  std::unique_ptr<Storage> s;
  Storage::Made how;
  how.files = WriteModel(4096);
  EXPECT_EQ(Storage::Make(spec, how, &s).code(), Status::Code::kBadInput);
}

}  // namespace
}  // namespace loadbench
