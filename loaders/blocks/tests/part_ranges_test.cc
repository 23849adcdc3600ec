// The ranges a reader of a part reads and where they land (the fleet strategy under tp): a
// part packs into a buffer of exactly its bytes, adjacent slices merge into one range, and the
// pieces that node 0's chunks hold of node k's ranges, copied at their places, give node k
// exactly its part in its table's order, whatever the chunk size.
#include "loaders/blocks/part_ranges.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "loaders/use/part.h"

namespace loadbench {
namespace {

// Tensors one after the other from byte 64 of one file, `gap` bytes between each two (padding,
// as an aligned format leaves), 2 bytes per element.
TensorTable Model(const std::vector<std::vector<uint64_t>>& shapes, uint64_t gap = 0) {
  TensorTable t;
  t.format = "wlf";
  t.shards.push_back({"m.wlf", 1 << 20, 64, 0, 0, 0, std::nullopt});
  uint64_t at = 64;
  for (size_t i = 0; i < shapes.size(); ++i) {
    TensorInfo x;
    x.name = "t" + std::to_string(i);
    x.dtype = "bf16";
    x.shape = shapes[i];
    x.size = 2;
    for (uint64_t d : shapes[i]) x.size *= d;
    x.offset = at;
    at += x.size + gap;
    t.tensor_bytes += x.size;
    t.tensors.push_back(x);
  }
  t.file_size = 1 << 20;
  t.shards[0].tensor_bytes = t.tensor_bytes;
  t.shards[0].tensor_count = t.tensors.size();
  return t;
}

TensorTable Part(const TensorTable& model, const std::string& pattern, int k, int n) {
  ReadPattern p;
  EXPECT_TRUE(ParsePattern(pattern, &p).ok());
  TensorTable part;
  const Status s = PartOf("m.wlf", model, p, k, n, &part);
  EXPECT_TRUE(s.ok()) << s.message();
  return part;
}

TEST(PartRanges, APartPacksIntoItsOwnBytesInTableOrder) {
  const TensorTable model = Model({{8, 4}, {6}, {4, 2, 2}});
  for (int k = 0; k < 2; ++k) {
    const TensorTable part = Part(model, "tp", k, 2);
    std::vector<uint64_t> at;
    std::vector<Placed> ranges;
    EXPECT_EQ(PackTensors(part.tensors, &at, &ranges), part.tensor_bytes);
    ASSERT_EQ(at.size(), part.tensors.size());
    uint64_t next = 0;
    for (size_t i = 0; i < at.size(); ++i) {
      EXPECT_EQ(at[i], next);
      next += part.tensors[i].size;
    }
    EXPECT_EQ(RangeBytes(ranges), part.tensor_bytes);
    // Each tensor's slice is a range of its own: the other node's slices lie between them.
    EXPECT_EQ(ranges.size(), part.tensors.size());
  }
}

TEST(PartRanges, SlicesThatFollowEachOtherInTheFileAreOneRange) {
  const TensorTable model = Model({{8, 4}, {6}, {4, 2, 2}});
  std::vector<uint64_t> at;
  std::vector<Placed> ranges;
  EXPECT_EQ(PackTensors(model.tensors, &at, &ranges), model.tensor_bytes);
  EXPECT_EQ(ranges, (std::vector<Placed>{{64, model.tensor_bytes, 0}}));
  // With padding between the tensors they are not adjacent in the file.
  const TensorTable padded = Model({{8, 4}, {6}}, 32);
  PackTensors(padded.tensors, &at, &ranges);
  EXPECT_EQ(ranges, (std::vector<Placed>{{64, 64, 0}, {160, 12, 64}}));
}

TEST(PartRanges, SpanRangesMergeAndCutRangesCut) {
  const TensorTable padded = Model({{8, 4}, {6}, {2}}, 32);
  const std::vector<Placed> span = SpanRanges(padded.tensors, 64);
  EXPECT_EQ(span, (std::vector<Placed>{{64, 64, 0}, {160, 12, 96}, {204, 4, 140}}));
  EXPECT_EQ(SpanRanges(Model({{8, 4}, {6}}).tensors, 0), (std::vector<Placed>{{64, 76, 64}}));
  EXPECT_EQ(CutRanges({{64, 64, 0}, {160, 12, 96}}, 40),
            (std::vector<Placed>{{64, 40, 0}, {104, 24, 40}, {160, 12, 96}}));
  EXPECT_EQ(CutRanges({{64, 64, 0}}, 0), (std::vector<Placed>{{64, 64, 0}}));
}

TEST(PartRanges, RangesWithinGiveThePiecesOfAStretch) {
  const std::vector<Placed> ranges = {{100, 50, 0}, {200, 10, 50}, {300, 40, 60}};
  EXPECT_EQ(RangesWithin(ranges, 0, 100), std::vector<Placed>{});
  EXPECT_EQ(RangesWithin(ranges, 120, 305),
            (std::vector<Placed>{{120, 30, 20}, {200, 10, 50}, {300, 5, 60}}));
  EXPECT_EQ(RangesWithin(ranges, 150, 200), std::vector<Placed>{});
  EXPECT_EQ(RangesWithin(ranges, 339, 1000), (std::vector<Placed>{{339, 1, 99}}));
}

// bcast's scatter on paper: node 0 holds the file's span and pulls it chunk by chunk; each
// chunk's pieces of node k's ranges, copied to their places, give node k its part's bytes in
// its table's order, and every byte of the part exactly once.
void ExpectScatterDelivers(const TensorTable& model, const std::string& pattern, int n,
                           uint64_t chunk) {
  std::vector<std::byte> file(1 << 12);
  for (size_t i = 0; i < file.size(); ++i) file[i] = static_cast<std::byte>(i * 31 + 7);
  const std::vector<Placed> pulls = CutRanges(SpanRanges(model.tensors, 0), chunk);
  for (int k = 1; k < n; ++k) {
    const TensorTable part = Part(model, pattern, k, n);
    std::vector<uint64_t> at;
    std::vector<Placed> ranges;
    const uint64_t size = PackTensors(part.tensors, &at, &ranges);
    std::vector<std::byte> got(size), want;
    std::vector<int> written(size);
    for (const Placed& c : pulls) {
      for (const Placed& p : RangesWithin(ranges, c.file, c.file + c.len)) {
        ASSERT_LE(p.at + p.len, size);
        std::memcpy(got.data() + p.at, file.data() + c.at + (p.file - c.file), p.len);
        for (uint64_t b = 0; b < p.len; ++b) ++written[p.at + b];
      }
    }
    for (const TensorInfo& t : part.tensors) {
      want.insert(want.end(), file.begin() + static_cast<long>(t.offset),
                  file.begin() + static_cast<long>(t.offset + t.size));
    }
    EXPECT_EQ(got, want) << pattern << " node " << k << " chunk " << chunk;
    EXPECT_EQ(written, std::vector<int>(size, 1)) << pattern << " node " << k;
  }
}

TEST(PartRanges, AScatterGivesEachNodeExactlyItsPart) {
  const TensorTable model = Model({{12, 4}, {6}, {6, 2, 2}, {3, 6}}, 8);
  for (uint64_t chunk : {1u, 7u, 16u, 100u, 4096u}) {
    ExpectScatterDelivers(model, "tp", 3, chunk);
    ExpectScatterDelivers(model, "tp:1", 2, chunk);
  }
}

}  // namespace
}  // namespace loadbench
