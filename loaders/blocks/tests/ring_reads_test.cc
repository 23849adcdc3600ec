// ReadRequests, the ring read loop driven by a source of reads: every read arrives once, whole,
// in its destination, never more in flight than its slots, one at a time or in batches; an
// O_DIRECT read of a file's last block, rounded up, arrives with the file's bytes; a short
// read is asked again for the rest; a read that meets the file's end early is "truncated"; a
// failed read names its file; after an error nothing more is asked for and what is in flight
// is reaped.
#include "loaders/blocks/ring_reads.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "loaders/base/file_io.h"
#include "loaders/base/io_ring.h"
#include "tests/support/wlf_fixture.h"

namespace loadbench {
namespace {

constexpr uint64_t kBlock = 4096;

// A ring of `entries`, or the test skipped with the reason.
#define INIT_RING_OR_SKIP(ring, entries)               \
  if (const int ret = (ring).Init(entries); ret < 0) { \
    GTEST_SKIP() << RingSetupFailure(-ret);            \
  }

// Reads `size` bytes of `fd` from offset 0 in `chunk`-byte reads into `dst` (chunks rounded up
// to `align`, the last one needing only the file's bytes), checking that no slot is handed out
// while its read is in flight and, when the reads succeed, that each arrived once with what it
// needed.
Status ReadAll(io_uring* ring, const RingRules& rules, int fd, const std::string& path,
               uint64_t size, uint64_t chunk, std::byte* dst, RingReadCounts* counts) {
  std::vector<bool> busy(rules.slots, false);
  std::vector<int> arrivals((size + chunk - 1) / chunk, 0);
  uint64_t next = 0;
  const RingSource source = [&](size_t slot, RingRead* read) {
    EXPECT_LT(slot, rules.slots);
    EXPECT_FALSE(busy.at(slot)) << "slot " << slot << " handed out while in flight";
    if (next >= size) return false;
    const uint64_t need = std::min(chunk, size - next);
    const uint64_t len = (need + rules.align - 1) / rules.align * rules.align;
    *read = {.fd = fd, .offset = next, .dst = dst + next, .len = len, .need = need, .path = path};
    busy[slot] = true;
    next += need;
    return true;
  };
  const RingArrived arrived = [&](size_t slot, const RingRead& read, uint64_t got) {
    EXPECT_TRUE(busy.at(slot));
    busy[slot] = false;
    EXPECT_GE(got, read.need);
    EXPECT_LE(got, read.len);
    ++arrivals.at(read.offset / chunk);
    return Status::Ok();
  };
  const Status st = ReadRequests(ring, rules, source, arrived, counts);
  if (st.ok()) {
    for (size_t i = 0; i < arrivals.size(); ++i) EXPECT_EQ(arrivals[i], 1) << "chunk " << i;
  }
  return st;
}

TEST(RingReadsTest, EveryReadArrivesOnceWholeInItsDestination) {
  test::TempDir dir;
  const std::string path = dir.File("data");
  const uint64_t size = 1000 * 1000 + 7;  // on no chunk boundary
  const std::vector<std::byte> want = test::WriteRandom(path, size, 1);
  UniqueFd fd;
  ASSERT_TRUE(OpenReadOnly(path, 0, &fd).ok());
  for (const bool reap_one : {false, true}) {
    for (const size_t slots : {size_t{1}, size_t{3}, size_t{16}}) {
      SCOPED_TRACE(testing::Message() << "slots " << slots << " reap_one " << reap_one);
      IoRing ring;
      INIT_RING_OR_SKIP(ring, static_cast<unsigned>(slots));
      std::vector<std::byte> got(size);
      RingReadCounts counts;
      const Status st = ReadAll(ring.get(), {.slots = slots, .reap_one = reap_one, .name = path},
                                fd.get(), path, size, 64 * 1024, got.data(), &counts);
      ASSERT_TRUE(st.ok()) << st.message();
      EXPECT_TRUE(got == want);
      const uint64_t chunks = (size + 64 * 1024 - 1) / (64 * 1024);
      EXPECT_EQ(counts.reads, chunks + counts.short_reads);
      EXPECT_EQ(counts.submitted, counts.reads + counts.retries);
    }
  }
}

TEST(RingReadsTest, ADirectReadOfTheLastBlockRoundedUpArrivesWithTheFileBytes) {
  char tmpl[] = "/var/tmp/loadbench_ring_reads_test.XXXXXX";  // not /tmp: tmpfs has no O_DIRECT
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string path = std::string(tmpl) + "/data";
  const uint64_t size = 5 * kBlock + 5;
  const std::vector<std::byte> want = test::WriteRandom(path, size, 2);
  UniqueFd fd;
  const Status opened = OpenReadOnly(path, O_DIRECT, &fd);
  const uint64_t align = opened.ok() ? DirectIoAlignment(fd.get()) : kBlock;
  const uint64_t room = (size + align - 1) / align * align;
  void* mem = ::mmap(nullptr, room, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  Mapping buf(mem, room);
  Status st = opened;
  RingReadCounts counts;
  IoRing ring;
  if (opened.ok() && ring.Init(4) == 0) {
    st = ReadAll(ring.get(), {.slots = 4, .align = align, .name = path}, fd.get(), path, size,
                 2 * align, buf.mutable_data(), &counts);
  }
  ::unlink(path.c_str());
  ::rmdir(tmpl);
  if (!opened.ok()) GTEST_SKIP() << opened.message();
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_TRUE(std::equal(want.begin(), want.end(), buf.data()));
  EXPECT_EQ(counts.short_reads, 0u);
}

TEST(RingReadsTest, AShortReadIsAskedAgainForTheRest) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
  UniqueFd in(pipe_fds[0]), out(pipe_fds[1]);
  IoRing ring;
  INIT_RING_OR_SKIP(ring, 1);
  // The read asks for 10 bytes; the pipe has 3 of them when it is first served, and the rest
  // only once those 3 were taken (the pipe empty again), so the first read is short on any
  // machine however late the ring is served.
  ASSERT_EQ(::write(out.get(), "abc", 3), 3);
  std::thread writer([&] {
    int queued = 3;
    for (int i = 0; i < 10000 && queued > 0; ++i) {  // 10 s at most, then the read fails below
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      ASSERT_EQ(::ioctl(in.get(), FIONREAD, &queued), 0);
    }
    EXPECT_EQ(::write(out.get(), "defghij", 7), 7);
  });
  char got[10] = {};
  bool handed = false;
  RingReadCounts counts;
  const Status st = ReadRequests(
      ring.get(), {.slots = 1, .name = "pipe"},
      [&](size_t, RingRead* read) {
        if (handed) return false;
        handed = true;
        *read = {.fd = in.get(),
                 .offset = 0,
                 .dst = reinterpret_cast<std::byte*>(got),
                 .len = 10,
                 .need = 10,
                 .path = "pipe"};
        return true;
      },
      [](size_t, const RingRead&, uint64_t n) {
        EXPECT_EQ(n, 10u);
        return Status::Ok();
      },
      &counts);
  writer.join();
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(std::string(got, 10), "abcdefghij");
  EXPECT_GE(counts.short_reads, 1u);
  EXPECT_EQ(counts.reads, counts.short_reads + 1);
}

TEST(RingReadsTest, AReadThatMeetsTheFileEndEarlyIsTruncated) {
  test::TempDir dir;
  const std::string path = dir.File("short");
  test::WriteRandom(path, 1000, 3);
  UniqueFd fd;
  ASSERT_TRUE(OpenReadOnly(path, 0, &fd).ok());
  IoRing ring;
  INIT_RING_OR_SKIP(ring, 2);
  std::vector<std::byte> buf(4096);
  RingReadCounts counts;
  const Status st = ReadAll(ring.get(), {.slots = 2, .name = path}, fd.get(), path, 4096, 4096,
                            buf.data(), &counts);
  EXPECT_EQ(st.code(), Status::Code::kBadInput) << st.message();
  EXPECT_NE(st.message().find(path + ": truncated: the file ends at offset 1000"),
            std::string::npos)
      << st.message();
}

TEST(RingReadsTest, AFailedReadNamesItsFile) {
  IoRing ring;
  INIT_RING_OR_SKIP(ring, 1);
  std::byte buf[16];
  bool handed = false;
  const Status st = ReadRequests(
      ring.get(), {.slots = 1, .name = "ring"},
      [&](size_t, RingRead* read) {
        if (handed) return false;
        handed = true;
        *read = {.fd = -1, .offset = 32, .dst = buf, .len = 16, .need = 16, .path = "nowhere"};
        return true;
      },
      [](size_t, const RingRead&, uint64_t) {
        ADD_FAILURE() << "a read of fd -1 arrived";
        return Status::Ok();
      });
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("nowhere: read of 16 bytes at offset 32"), std::string::npos)
      << st.message();
}

TEST(RingReadsTest, AfterAnErrorNothingMoreIsAskedForAndWhatIsInFlightIsReaped) {
  test::TempDir dir;
  const std::string path = dir.File("data");
  const uint64_t size = 256 * 1024;
  test::WriteRandom(path, size, 4);
  UniqueFd fd;
  ASSERT_TRUE(OpenReadOnly(path, 0, &fd).ok());
  IoRing ring;
  INIT_RING_OR_SKIP(ring, 8);
  std::vector<std::byte> buf(size);
  uint64_t next = 0, handed = 0;
  bool failed = false;
  RingReadCounts counts;
  const Status st = ReadRequests(
      ring.get(), {.slots = 8, .name = path},
      [&](size_t, RingRead* read) {
        EXPECT_FALSE(failed) << "a read asked for after the error";
        if (next >= size) return false;
        *read = {.fd = fd.get(),
                 .offset = next,
                 .dst = buf.data() + next,
                 .len = 4096,
                 .need = 4096,
                 .path = path};
        next += 4096;
        ++handed;
        return true;
      },
      [&](size_t, const RingRead&, uint64_t) {
        failed = true;
        return Status::Failed("the consumer gave up");
      },
      &counts);
  EXPECT_EQ(st.message(), "the consumer gave up");
  EXPECT_EQ(handed, 8u);  // the first batch; none after the error
  EXPECT_EQ(counts.submitted, handed + counts.retries + counts.short_reads);
  io_uring_cqe* cqe = nullptr;
  EXPECT_NE(::io_uring_peek_cqe(ring.get(), &cqe), 0) << "a completion left unreaped";
}

}  // namespace
}  // namespace loadbench
