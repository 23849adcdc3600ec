// A prepared file's checksums of the parts each reader of a read pattern loads (experiment/file.h).
#include "harness/experiment/file.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "loaders/format/checksum.h"
#include "loaders/use/part.h"
#include "tests/support/generated_model.h"
#include "tests/support/wlf_fixture.h"

namespace loadbench {
namespace {

ReadPattern Pattern(const std::string& text) {
  ReadPattern p;
  EXPECT_TRUE(ParsePattern(text, &p).ok()) << text;
  return p;
}

TEST(PreparedFile, EachReaderOfAPatternGetsTheChecksumOfItsPart) {
  test::TempDir dir;
  const std::string path = dir.File("m.wlf");
  test::WriteModel({.path = path, .seed = 3});
  EXPECT_EQ(PartsKey(Pattern("tp"), 4), "tp/4");
  PreparedFile f;
  Status s = PrepareFile(path, "part_test", &f);
  ASSERT_TRUE(s.ok()) << s.message();

  ASSERT_TRUE(PrepareParts(Pattern("replicated"), 2, &f).ok());
  EXPECT_TRUE(f.part_checksums.empty());

  s = PrepareParts(Pattern("tp"), 2, &f);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(f.part_checksums.size(), 1u);
  const std::vector<uint64_t>& sums = f.part_checksums.at("tp/2");
  ASSERT_EQ(sums.size(), 2u);
  ReadPattern tp;
  ASSERT_TRUE(ParsePattern("tp", &tp).ok());
  for (int k = 0; k < 2; ++k) {
    TensorTable part;
    ASSERT_TRUE(PartOf(path, f.table, tp, k, 2, &part).ok());
    uint64_t sum = 0;
    ASSERT_TRUE(ChecksumModel(part, &sum).ok());
    EXPECT_EQ(sums[static_cast<size_t>(k)], sum) << "reader " << k;
    EXPECT_NE(sum, *f.table.expected_checksum) << "reader " << k;
  }
  EXPECT_NE(sums[0], sums[1]);

  s = PrepareParts(Pattern("pp"), 1000, &f);
  EXPECT_EQ(s.code(), Status::Code::kBadInput);
  EXPECT_NE(s.message().find(f.path + ": pp cannot split"), std::string::npos) << s.message();
  EXPECT_EQ(f.part_checksums.size(), 1u);
}

}  // namespace
}  // namespace loadbench
