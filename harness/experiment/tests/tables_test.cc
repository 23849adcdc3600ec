// The reader of each table of an experiment on its own: what it refuses and how it names the
// value, at its line in a file and by its flag in tables built from `run`'s flags.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/experiment/tables.h"

namespace loadbench {
namespace {

// A reader of one table, into a value of its own, as Refusal calls it.
template <typename T>
auto Into(Status (*read)(const TableReader&, const toml::node&, T*)) {
  return [read](const TableReader& r, const toml::node& n) {
    T v;
    return read(r, n, &v);
  };
}

// The same for the readers of [[file]] and [[strategy]]: the first table of the array.
template <typename T>
auto First(Status (*read)(const TableReader&, const toml::table&, std::vector<T>*)) {
  return [read](const TableReader& r, const toml::node& n) {
    std::vector<T> v;
    return read(r, *n.as_array()->front().as_table(), &v);
  };
}

class TablesTest : public ::testing::Test {
 protected:
  TablesTest() { file_.path = "e.toml"; }

  // The message of the reader `read` given the table `key` of `text`.
  template <typename Read>
  std::string Refusal(const std::string& text, const char* key, Read&& read) {
    const toml::table top = toml::parse(text, std::string("e.toml"));
    const TableReader r(file_);
    const Status s = read(r, *top.get(key));
    EXPECT_EQ(s.code(), Status::Code::kBadInput) << text;
    return s.message();
  }
  // The message of the whole tables of `text`.
  std::string Refusal(const std::string& text) {
    const toml::table top = toml::parse(text, std::string("e.toml"));
    Experiment e;
    const Status s = ReadExperiment(top, file_, &e);
    EXPECT_EQ(s.code(), Status::Code::kBadInput) << text;
    return s.message();
  }

  ExperimentSource file_;
};

TEST_F(TablesTest, SystemNamesTheKeyAtItsLine) {
  const auto read = Into(ReadSystem);
  EXPECT_EQ(Refusal("[system]\ntune = \"yes\"\n", "system", read),
            "e.toml:2: system.tune must be true, false or \"auto\"");
  EXPECT_EQ(Refusal("[system]\nspeed = 3\n", "system", read),
            "e.toml:2: [system]: unknown key 'speed' (it takes tune, page_reporting and settle)");
  EXPECT_EQ(Refusal("[system]\npage_reporting = \"keep\"\n", "system", read),
            "e.toml:2: system.page_reporting says how to tune: it needs tune = true");
  EXPECT_EQ(Refusal("system = 1\n", "system", read), "e.toml:1: system must be a table: [system]");
}

TEST_F(TablesTest, TheNetworkTablesNameTheKeyAtItsLine) {
  const auto server = Into(ReadServer);
  const auto link = Into(ReadLink);
  const auto cluster = Into(ReadCluster);
  EXPECT_EQ(Refusal("[server]\nkind = \"ftp\"\n", "server", server),
            "e.toml:2: server.kind must be \"http\" or \"s3\"");
  EXPECT_EQ(Refusal("[server]\nkind = \"s3\"\nlimit_rate = \"1MiB\"\n", "server", server),
            "e.toml:1: server.limit_rate is nginx's: it needs kind = \"http\"");
  EXPECT_EQ(Refusal("[link]\ndelay = \"1ms\"\n", "link", link),
            "e.toml:1: [link] needs rate = \"1gbit\" (or a list)");
  EXPECT_EQ(Refusal("[link]\nrate = \"1gbit\"\nstreams = 0\n", "link", link),
            "e.toml:3: link.streams = 0 is out of range (1 to 128)");
  EXPECT_EQ(Refusal("[cluster]\nnodes = []\n", "cluster", cluster),
            "e.toml:2: cluster.nodes is an empty list");
  EXPECT_EQ(Refusal("[cluster]\nnodes = [2]\nuplink = \"unshaped\"\n", "cluster", cluster),
            "e.toml:3: cluster.uplink: a rate (\"200mbit\"), not unshaped");
}

TEST_F(TablesTest, FileAndStrategyTablesNameTheKeyAtItsLine) {
  const auto file = First(ReadFile);
  const auto strategy = First(ReadStrategy);
  EXPECT_EQ(Refusal("[[file]]\npath = \"m.wlf\"\ncolour = 3\n", "file", file),
            "e.toml:3: [[file]]: unknown key 'colour'");
  EXPECT_EQ(Refusal("[[file]]\npreset = \"llama\"\n", "file", file),
            "e.toml:1: [[file]] needs path (a file to use) or size (one to generate)");
  EXPECT_EQ(Refusal("[[file]]\nsize = \"4MiB\"\nmisalign = 64\n", "file", file),
            "e.toml:3: misalign = 64 is out of range (0 to 63)");
  EXPECT_EQ(Refusal("[[strategy]]\nname = \"fread\"\nchunk = []\n", "strategy", strategy),
            "e.toml:3: option chunk: empty list");
  EXPECT_EQ(Refusal("[[strategy]]\nname = \"fread\"\nvia = \"ftp\"\n", "strategy", strategy),
            "e.toml:3: via = \"ftp\": it takes \"local\", \"http\", \"s3\" or \"s3fs\"");
  EXPECT_EQ(Refusal("[[strategy]]\nname = \"exec\"\nlabel = \"a\"\n", "strategy", strategy),
            "e.toml:1: exec: a command is required");
  EXPECT_EQ(Refusal("[[strategy]]\nname = \"exec\"\nlabel = \"a\"\nshell = true\n"
                    "command = [\"true\"]\n",
                    "strategy", strategy),
            "e.toml:5: exec: with shell = true, command is one string");
}

TEST_F(TablesTest, TheTopLevelChecksWhatNeedsEveryTable) {
  const std::string tables = "[[file]]\npath = \"m.wlf\"\n[[strategy]]\nname = \"fread\"\n";
  EXPECT_EQ(Refusal("reps = 0\n" + tables), "e.toml:1: reps = 0 is out of range (1 to 100000)");
  EXPECT_EQ(Refusal("bogus = 1\n" + tables), "e.toml:1: unknown key 'bogus'");
  EXPECT_EQ(Refusal("baseline = \"mmap\"\n" + tables),
            "e.toml:1: baseline 'mmap' is not one of the strategy points (fread)");
  EXPECT_EQ(Refusal("auto_target = 0.2\n" + tables), "e.toml:1: auto_* keys need reps = \"auto\"");
  EXPECT_EQ(Refusal("[[file]]\npath = \"m.wlf\"\n"), "e.toml: no [[strategy]]");
}

// Tables built from flags name a bad value by its flag, and keep a point's text as written.
TEST_F(TablesTest, TablesFromFlagsNameTheFlagAndKeepThePointsText) {
  toml::table top{{"timeout_s", 1e9},
                  {"file", toml::array{toml::table{{"path", "m.wlf"}}}},
                  {"strategy", toml::array{toml::table{{"name", "fread"}, {"chunk", "1MiB"}}}}};
  ExperimentSource flags;
  flags.flags[top.get("timeout_s")] = "--timeout";
  Experiment e;
  EXPECT_EQ(ReadExperiment(top, flags, &e).message(),
            "--timeout: timeout_s must be a number of seconds, 0 to 604800");

  top.insert_or_assign("timeout_s", 30);
  flags.written[&top.get_as<toml::array>("strategy")->front()] = "fread:chunk=1MiB:x";
  Experiment ok;
  ASSERT_TRUE(ReadExperiment(top, flags, &ok).ok());
  ASSERT_EQ(ok.strategies.size(), 1u);
  EXPECT_EQ(ok.strategies[0].spec.text, "fread:chunk=1MiB:x");
  EXPECT_EQ(ok.strategies[0].spec.options.at("chunk"), "1MiB");
  EXPECT_EQ(ok.baseline, "fread:chunk=1MiB:x");
  EXPECT_EQ(ok.path, "");
  EXPECT_FALSE(ok.runs.empty());
}

}  // namespace
}  // namespace loadbench
