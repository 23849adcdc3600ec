#include "loaders/base/units.h"

#include <gtest/gtest.h>

namespace loadbench {
namespace {

uint64_t Parse(const std::string& s) {
  uint64_t v = 0;
  Status st = ParseBytes(s, "--size", &v);
  EXPECT_TRUE(st.ok()) << s << ": " << st.message();
  return v;
}

TEST(Units, ParsesBinaryAndDecimalUnits) {
  EXPECT_EQ(Parse("4096"), 4096u);
  EXPECT_EQ(Parse("1KiB"), 1024u);
  EXPECT_EQ(Parse("2GiB"), 2ull << 30);
  EXPECT_EQ(Parse("2gib"), 2ull << 30);
  EXPECT_EQ(Parse("14G"), 14ull << 30);
  EXPECT_EQ(Parse("1.5GB"), 1500000000u);
  EXPECT_EQ(Parse("512MiB"), 512ull << 20);
  EXPECT_EQ(Parse("0.5KiB"), 512u);
  EXPECT_EQ(Parse("18446744073709551615"), 18446744073709551615ull);
}

TEST(Units, RejectsWhatIsNotASize) {
  for (const char* bad : {"", "abc", "GiB", "1.2.3", "12XB", "-1", "1e9", "99999999999999999999",
                          "99999999999TiB", "20000000000GiB"}) {
    uint64_t v = 0;
    Status st = ParseBytes(bad, "--size", &v);
    EXPECT_EQ(st.code(), Status::Code::kBadInput) << bad;
    EXPECT_NE(st.message().find("--size"), std::string::npos) << st.message();
  }
}

TEST(Units, FormatsBytes) {
  EXPECT_EQ(FormatBytes(17), "17 B");
  EXPECT_EQ(FormatBytes(2ull << 30), "2.00 GiB");
  EXPECT_EQ(FormatBytes(1536), "1.50 KiB");
}

}  // namespace
}  // namespace loadbench
