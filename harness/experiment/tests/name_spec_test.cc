// A [[strategy]] table's name may be the spec `run --strategies` takes (NAME:key=value:...):
// its options are read as keys of the table, merged with the table's own; one given in both
// must say the same, and a piece that is not key=value is refused with the form of a key.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "harness/experiment/experiment.h"
#include "tests/support/wlf_fixture.h"

namespace loadbench {
namespace {

class NameSpecTest : public ::testing::Test {
 protected:
  Status Load(const std::string& strategy, Experiment* e) {
    const std::string path = dir_.File("e.toml");
    std::ofstream(path) << "[[file]]\npath = \"x.wlf\"\n[[strategy]]\nname = \"fread\"\n"
                        << "[[strategy]]\n"
                        << strategy;
    return LoadExperiment(path, dir_.File("data"), e);
  }
  std::string Refusal(const std::string& strategy) {
    Experiment e;
    const Status s = Load(strategy, &e);
    EXPECT_EQ(s.code(), Status::Code::kBadInput) << strategy;
    return s.message();
  }

  test::TempDir dir_;
};

TEST_F(NameSpecTest, ASpecInTheNameIsReadAsItsKeys) {
  Experiment e;
  const Status s = Load("name = \"fleet:design=every\"\n", &e);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(e.strategies.size(), 2u);
  EXPECT_EQ(e.strategies[1].spec.name, "fleet");
  EXPECT_EQ(e.strategies[1].spec.options.at("design"), "every");
  EXPECT_EQ(e.strategies[1].spec.text, "fleet:design=every");
}

TEST_F(NameSpecTest, TheNamesOptionsMergeWithTheTablesKeys) {
  Experiment e;
  // chunk in the name, a grid as a key, and the same value in both for one key.
  const Status s = Load(
      "name = \"pool:chunk=1MiB:threads=2\"\nthreads = 2\norder = [\"file\", \"interleave\"]\n",
      &e);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(e.strategies.size(), 3u);  // fread, and pool in each order
  for (size_t i = 1; i < 3; ++i) {
    EXPECT_EQ(e.strategies[i].spec.options.at("chunk"), "1MiB");
    EXPECT_EQ(e.strategies[i].spec.options.at("threads"), "2");
  }
}

TEST_F(NameSpecTest, AKeyGivenTwiceDifferentlyIsRefusedNamingBoth) {
  const std::string why = Refusal("name = \"fread:chunk=4MiB\"\nchunk = \"1MiB\"\n");
  EXPECT_NE(why.find("e.toml:7: option chunk is given twice, differently: 4MiB in name "
                     "\"fread:chunk=4MiB\" and chunk = 1MiB"),
            std::string::npos)
      << why;
}

TEST_F(NameSpecTest, APieceThatIsNoOptionIsRefusedWithTheFormOfAKey) {
  const std::string why = Refusal("name = \"fread:chunk\"\n");
  EXPECT_NE(why.find("e.toml:6: name \"fread:chunk\": 'chunk' is not key=value; an option may "
                     "also be a key of its own: name = \"fread\" and chunk = VALUE"),
            std::string::npos)
      << why;
  EXPECT_NE(Refusal("name = \"fraed:chunk=1MiB\"\n").find("unknown strategy 'fraed'"),
            std::string::npos);
  EXPECT_NE(Refusal("name = \"exec:label=x\"\n").find("an exec strategy is name = \"exec\""),
            std::string::npos);
}

}  // namespace
}  // namespace loadbench
