// FitChunks: the chunk and threads of O_DIRECT reads from a device's queue limits, worked out
// without a device, on the limits of the devices this suite meets (a loop device, a virtio disk,
// an NVMe drive with small requests) and at the edges (no limits, odd sizes, a thread cap).
#include "loaders/blocks/chunk_reads.h"

#include <string>

#include <gtest/gtest.h>

namespace loadbench {
namespace {

constexpr uint64_t KiB = 1024, MiB = 1024 * KiB;
constexpr uint64_t kHuge = 2 * MiB, kPlain = 4 * KiB;

BlockLimits Limits(uint64_t sectors_kb, uint64_t segments, uint64_t segment_size = 0,
                   uint64_t block = 512) {
  BlockLimits l;
  l.device = "dev";
  l.max_sectors_kb = sectors_kb, l.max_hw_sectors_kb = sectors_kb;
  l.max_segments = segments, l.max_segment_size = segment_size, l.logical_block_size = block;
  return l;
}

// A loop device (max_sectors_kb 1280, 128 segments): into huge pages its requests are 1280 KiB,
// and 4 MiB asked becomes 3 of them (4 MiB would be 1280 x 3 + a 256 KiB tail); 4 threads keep
// 15 MiB in flight, the nearest to the 16 MiB asked.
TEST(FitChunks, ALoopDeviceIntoHugePagesReadsThreeWholeRequests) {
  const ChunkFit f = FitChunks(Limits(1280, 128, 4ull << 30), kHuge, 4096, 4 * MiB, 4);
  ASSERT_TRUE(f.fitted);
  EXPECT_EQ(f.request, 1280 * KiB);
  EXPECT_STREQ(f.limited_by, "max_sectors_kb");
  EXPECT_EQ(f.chunk, 3 * 1280 * KiB);
  EXPECT_EQ(f.threads, 4u);
}

// Into 4 KiB pages each page is a segment: 128 of them make 512 KiB requests, of which 4 MiB is
// already a whole number.
TEST(FitChunks, PlainPagesAreLimitedBySegments) {
  const ChunkFit f = FitChunks(Limits(1280, 128), kPlain, 4096, 4 * MiB, 4);
  ASSERT_TRUE(f.fitted);
  EXPECT_EQ(f.request, 512 * KiB);
  EXPECT_STREQ(f.limited_by, "max_segments");
  EXPECT_EQ(f.chunk, 4 * MiB);
  EXPECT_EQ(f.threads, 4u);
}

// A virtio disk (4096 KiB, 254 segments) takes 4 MiB whole: what was asked stays.
TEST(FitChunks, ADiskThatTakesTheAskedChunkWholeKeepsIt) {
  const ChunkFit f = FitChunks(Limits(4096, 254, 4ull << 30), kHuge, 4096, 4 * MiB, 4);
  ASSERT_TRUE(f.fitted);
  EXPECT_EQ(f.request, 4 * MiB);
  EXPECT_EQ(f.chunk, 4 * MiB);
  EXPECT_EQ(f.threads, 4u);
}

// Small requests (128 KiB) make the asked chunk many of them; a request larger than the asked
// chunk leaves it as it is: one request, never cut.
TEST(FitChunks, SmallRequestsAndChunksOfOneRequest) {
  ChunkFit f = FitChunks(Limits(128, 33), kHuge, 4096, 4 * MiB, 4);
  EXPECT_EQ(f.request, 128 * KiB);
  EXPECT_EQ(f.chunk, 4 * MiB);
  EXPECT_EQ(f.threads, 4u);
  f = FitChunks(Limits(1280, 128), kHuge, 4096, 1 * MiB, 4);
  EXPECT_TRUE(f.fitted);
  EXPECT_EQ(f.chunk, 1 * MiB);
  EXPECT_EQ(f.threads, 4u);
  f = FitChunks(Limits(1280, 128), kHuge, 4096, 4 * KiB, 1);
  EXPECT_EQ(f.chunk, 4 * KiB);
  EXPECT_EQ(f.threads, 1u);
  // 16 MiB asked: 13 requests (16.25 MiB) is the nearest whole number.
  f = FitChunks(Limits(1280, 128), kHuge, 4096, 16 * MiB, 4);
  EXPECT_EQ(f.chunk, 13 * 1280 * KiB);
  EXPECT_EQ(f.threads, 4u);
}

// Small segments in huge pages: a request that crosses a page's end needs one more, so 64 KiB
// segments of 20 (19 usable) make 1216 KiB requests.
TEST(FitChunks, SegmentSizeAndCrossingLimitHugePages) {
  const ChunkFit f = FitChunks(Limits(1280, 20, 64 * KiB), kHuge, 4096, 4 * MiB, 4);
  ASSERT_TRUE(f.fitted);
  EXPECT_EQ(f.request, 19 * 64 * KiB);
  EXPECT_STREQ(f.limited_by, "max_segments");
  EXPECT_EQ(f.chunk % f.request, 0u);
}

// A request that is no multiple of the O_DIRECT alignment is rounded down to one (a 1023 KiB
// queue: 1020 KiB), and so is every chunk.
TEST(FitChunks, RequestsAreWholeAlignments) {
  ChunkFit f = FitChunks(Limits(1023, 128), kHuge, 4096, 4 * MiB, 4);
  EXPECT_EQ(f.request, 1020 * KiB);
  EXPECT_EQ(f.chunk, 4 * 1020 * KiB);
  EXPECT_EQ(f.chunk % 4096, 0u);
  f = FitChunks(Limits(1280, 128, 0, 4096), kHuge, 64 * KiB, 4 * MiB, 4);
  EXPECT_EQ(f.request % (64 * KiB), 0u);
  EXPECT_EQ(f.chunk % (64 * KiB), 0u);
}

// Without limits (overlay, tmpfs, fuse, NFS) or with none usable, chunk and threads are as asked.
TEST(FitChunks, NoLimitsLeaveWhatWasAsked) {
  for (const BlockLimits& l : {BlockLimits{}, Limits(2, 128, 0, 4096)}) {
    const ChunkFit f = FitChunks(l, kHuge, 8192, 4 * MiB, 4);
    EXPECT_FALSE(f.fitted);
    EXPECT_EQ(f.chunk, 4 * MiB);
    EXPECT_EQ(f.threads, 4u);
  }
}

// Threads are raised where the chunk shrank enough, never lowered, and raised to 256 at most.
TEST(FitChunks, ThreadsAreRaisedOnlyAndCapped) {
  ChunkFit f = FitChunks(Limits(1280, 128), kHuge, 4096, 1664 * KiB, 4);
  EXPECT_EQ(f.chunk, 1280 * KiB);
  EXPECT_EQ(f.threads, 5u);  // 6.5 MiB asked over 1.25 MiB reads: 5.2
  f = FitChunks(Limits(1280, 128), kHuge, 4096, 4 * MiB, 64);
  EXPECT_EQ(f.threads, 68u);  // 256 MiB asked over 3.75 MiB reads: 68.3
  f = FitChunks(Limits(1280, 128), kHuge, 4096, 4 * MiB, 256);
  EXPECT_EQ(f.threads, 256u);
  f = FitChunks(Limits(4096, 254), kHuge, 4096, 5 * MiB, 2);  // 4 MiB: one request; 10 / 4
  EXPECT_EQ(f.chunk, 4 * MiB);
  EXPECT_EQ(f.threads, 3u);
}

}  // namespace
}  // namespace loadbench
