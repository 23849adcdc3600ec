// Experiment files: grids expand to every combination, the plan has the order the file asks
// for, a strategy this build lacks is planned as unsupported, and a malformed file names the
// line.
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "harness/experiment/experiment.h"
#include "harness/experiment/point.h"
#include "loaders/strategy/registry.h"
#include "tests/support/wlf_fixture.h"

namespace loadbench {
namespace {

std::vector<std::string> PatternTexts(const std::vector<ReadPattern>& patterns) {
  std::vector<std::string> out;
  for (const ReadPattern& p : patterns) out.push_back(p.Text());
  return out;
}

class ExperimentTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& text) {
    const std::string path = dir_.File("e.toml");
    std::ofstream(path) << text;
    return path;
  }
  Status Load(const std::string& text, Experiment* e) {
    return LoadExperiment(Write(text), dir_.File("data"), e);
  }
  // The message of a file that must be refused.
  std::string Refusal(const std::string& text) {
    Experiment e;
    const Status s = Load(text, &e);
    EXPECT_EQ(s.code(), Status::Code::kBadInput) << text;
    return s.message();
  }

  test::TempDir dir_;
};

constexpr const char* kGrid = R"(# Question: a grid.
name = "grid"
reps = 2
cache = "both"

[[file]]
preset = "llama"
size = "4MiB"
format = "gguf"

[[strategy]]
name = "io_uring"
qd = [1, 4]
chunk = ["256KiB", "1MiB"]

[[strategy]]
name = "fread"
)";

TEST_F(ExperimentTest, GridsExpandToEveryCombination) {
  Experiment e;
  const Status s = Load(kGrid, &e);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(e.name, "grid");
  ASSERT_EQ(e.strategies.size(), 5u);
  std::set<std::string> texts;
  for (const auto& st : e.strategies) {
    texts.insert(st.spec.text);
    EXPECT_EQ(st.unsupported, "") << st.spec.text;
  }
  EXPECT_EQ(texts, (std::set<std::string>{"io_uring:chunk=256KiB:qd=1",
                                          "io_uring:chunk=256KiB:qd=4", "io_uring:chunk=1MiB:qd=1",
                                          "io_uring:chunk=1MiB:qd=4", "fread"}));
  // 2 reps x 2 cache states x 1 file x 5 strategies, each combination exactly once per rep.
  ASSERT_EQ(e.runs.size(), 20u);
  std::set<std::tuple<size_t, std::string, int>> seen;
  for (const auto& r : e.runs) EXPECT_TRUE(seen.insert({r.strategy, r.cache, r.rep}).second);
}

TEST_F(ExperimentTest, TheDefaultOrderIsBalancedAndInterleavedRotates) {
  Experiment e;
  ASSERT_TRUE(Load(kGrid, &e).ok());
  ASSERT_EQ(e.order, RoundOrder::kBalanced);
  // Rep 0 runs strategies 0..4 cold in the design's first row, then warm in the same row.
  const std::vector<size_t> row = MembersInOrder(5, 0, RoundOrder::kBalanced, 0);
  for (size_t k = 0; k < 5; ++k) {
    EXPECT_EQ(e.runs[k].strategy, row[k]);
    EXPECT_EQ(e.runs[k].cache, "cold");
    EXPECT_EQ(e.runs[5 + k].strategy, row[k]);
    EXPECT_EQ(e.runs[5 + k].cache, "warm");
  }
  EXPECT_EQ(e.runs[10].rep, 1);

  std::string text = kGrid;
  text.replace(text.find("reps = 2"), 8, "reps = 2\norder = \"interleaved\"");
  ASSERT_TRUE(Load(text, &e).ok());
  ASSERT_EQ(e.order, RoundOrder::kInterleaved);
  // Rep 0 runs strategies 0..4 cold, then warm; rep 1 starts one strategy later.
  EXPECT_EQ(e.runs[0].strategy, 0u);
  EXPECT_EQ(e.runs[5].cache, "warm");
  EXPECT_EQ(e.runs[10].rep, 1);
  EXPECT_EQ(e.runs[10].strategy, 1u);
  EXPECT_EQ(e.runs[14].strategy, 0u);
}

TEST_F(ExperimentTest, RoundsHoldEveryPointOnceTheCeilingOnlyWhenCold) {
  std::string text = kGrid;
  text.replace(text.find("reps = 2"), 8,
               "reps = 3\norder = \"shuffled\"\nseed = 7\nceiling = true");
  Experiment e;
  const Status s = Load(text, &e);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(e.order, RoundOrder::kShuffled);
  EXPECT_TRUE(e.ceiling);
  EXPECT_EQ(e.baseline, "fread");  // there is a fread: the default baseline
  // Per rep: 5 points + the ceiling cold, 5 points warm.
  ASSERT_EQ(e.runs.size(), 3u * 11u);
  std::map<std::pair<int, std::string>, std::vector<size_t>> rounds;
  for (const auto& r : e.runs) {
    EXPECT_EQ(r.position, static_cast<int>(rounds[{r.rep, r.cache}].size()));
    rounds[{r.rep, r.cache}].push_back(r.strategy);
  }
  std::set<std::vector<size_t>> orders;
  for (auto& [key, members] : rounds) {
    orders.insert(members);
    std::sort(members.begin(), members.end());
    std::vector<size_t> want = {0, 1, 2, 3, 4};
    if (key.second == "cold") want.push_back(5);  // strategies.size(): the ceiling
    EXPECT_EQ(members, want) << key.first << " " << key.second;
  }
  EXPECT_GT(orders.size(), 1u);  // shuffled, not one fixed order
  // The same file plans the same rounds (a resume relies on it).
  Experiment again;
  ASSERT_TRUE(Load(text, &again).ok());
  for (size_t i = 0; i < e.runs.size(); ++i) EXPECT_EQ(again.runs[i].strategy, e.runs[i].strategy);
}

TEST_F(ExperimentTest, AutoRepsPlansTheMostRoundsAndChecksItsKeys) {
  std::string text = kGrid;
  text.replace(text.find("reps = 2"), 8,
               "reps = \"auto\"\nauto_target = 0.05\nauto_max_rounds = 12\nauto_budget = \"20min\""
               "\nbaseline = \"io_uring:chunk=1MiB:qd=4\"");
  Experiment e;
  const Status s = Load(text, &e);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(e.auto_reps);
  EXPECT_EQ(e.reps, 12);
  EXPECT_DOUBLE_EQ(e.autoreps.target, 0.05);
  EXPECT_DOUBLE_EQ(e.autoreps.budget_s, 1200);
  EXPECT_EQ(e.autoreps.min_rounds, 6);
  EXPECT_EQ(e.baseline, "io_uring:chunk=1MiB:qd=4");
  EXPECT_EQ(e.runs.size(), 12u * 10u);

  auto with = [&](const std::string& lines) {
    std::string t = kGrid;
    t.replace(t.find("reps = 2"), 8, lines);
    return t;
  };
  EXPECT_NE(Refusal(with("reps = \"many\"")).find("e.toml:3: reps must be an integer or \"auto\""),
            std::string::npos);
  EXPECT_NE(Refusal(with("reps = 2\nauto_target = 0.1")).find("auto_* keys need reps = \"auto\""),
            std::string::npos);
  EXPECT_NE(Refusal(with("reps = \"auto\"\nauto_target = 1.5")).find("below 1"), std::string::npos);
  EXPECT_NE(Refusal(with("reps = \"auto\"\nauto_min_rounds = 9\nauto_max_rounds = 8"))
                .find("min 9 and max 8"),
            std::string::npos);
  EXPECT_NE(Refusal(with("reps = \"auto\"\norder = \"grouped\"")).find("not grouped"),
            std::string::npos);
  EXPECT_NE(Refusal(with("reps = \"auto\"\nauto_budget = \"soon\"")).find("not a duration"),
            std::string::npos);
  EXPECT_NE(Refusal(with("reps = 2\nbaseline = \"mmap\""))
                .find("e.toml:4: baseline 'mmap' is not one of the strategy points"),
            std::string::npos);
  EXPECT_NE(Refusal(with("reps = 2\norder = \"random\""))
                .find("not balanced, interleaved, shuffled or grouped"),
            std::string::npos);
}

TEST_F(ExperimentTest, GroupedOrderKeepsRepetitionsTogether) {
  Experiment e;
  ASSERT_TRUE(Load(std::string(kGrid) + "", &e).ok());
  std::string text = kGrid;
  text.replace(text.find("reps = 2"), 8, "reps = 2\norder = \"grouped\"");
  ASSERT_TRUE(Load(text, &e).ok());
  EXPECT_EQ(e.order, RoundOrder::kGrouped);
  ASSERT_EQ(e.runs.size(), 20u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(e.runs[i].strategy, 0u) << i;
  EXPECT_EQ(e.runs[0].rep, 0);
  EXPECT_EQ(e.runs[1].rep, 1);
  EXPECT_EQ(e.runs[2].cache, "warm");
}

// A ceiling is read in each round and compared with that round's runs; grouped order has no
// rounds, so it would plan none and still say it reads the device: the file is refused at the
// order's line instead.
TEST_F(ExperimentTest, GroupedOrderWithACeilingIsRefusedAtTheOrdersLine) {
  std::string text = kGrid;
  text.replace(text.find("reps = 2"), 8, "reps = 2\nceiling = true\norder = \"grouped\"");
  const std::string why = Refusal(text);
  EXPECT_NE(why.find("e.toml:5: order grouped"), std::string::npos) << why;
  EXPECT_NE(why.find("ceiling"), std::string::npos) << why;
  text = kGrid;
  text.replace(text.find("reps = 2"), 8, "reps = 2\nceiling = true\norder = \"balanced\"");
  Experiment e;
  ASSERT_TRUE(Load(text, &e).ok());
  size_t ceilings = 0;
  for (const ExperimentRun& r : e.runs) ceilings += IsCeilingRun(e, r) ? 1 : 0;
  EXPECT_EQ(ceilings, 2u);  // one per cold round
}

TEST_F(ExperimentTest, GeneratedFilesAreNamedBySpecInTheDataFolder) {
  Experiment e;
  ASSERT_TRUE(Load(kGrid, &e).ok());
  ASSERT_EQ(e.files.size(), 1u);
  EXPECT_TRUE(e.files[0].generate);
  EXPECT_EQ(e.files[0].path, dir_.File("data") + "/llama-4MiB-bf16-s0.gguf");
  EXPECT_GT(e.files[0].file_bytes, 4u << 20);
  ASSERT_TRUE(
      Load("[[file]]\npath = \"/models/x.safetensors\"\n[[strategy]]\nname = \"mmap\"\n", &e).ok());
  EXPECT_FALSE(e.files[0].generate);
  EXPECT_EQ(e.files[0].path, "/models/x.safetensors");
  EXPECT_EQ(e.name, "e");  // from the file name when not given
}

TEST_F(ExperimentTest, ProcsAndMemoryLimitsAreAxesOfThePlan) {
  Experiment e;
  const Status s = Load(R"(reps = 2
cache = "cold"
procs = [1, 4]
memory_limit = ["none", "2GiB", 1048576]
timeout_s = 2.5
[[file]]
path = "x.wlf"
[[strategy]]
name = "mmap"
[[strategy]]
name = "fread"
)",
                        &e);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(e.procs, (std::vector<int>{1, 4}));
  EXPECT_EQ(e.memory_limits, (std::vector<uint64_t>{0, uint64_t{2} << 30, 1u << 20}));
  EXPECT_EQ(e.timeout_s, 2.5);
  // 2 reps x 1 cache x 3 limits x 2 procs x 2 strategies, each once.
  ASSERT_EQ(e.runs.size(), 24u);
  std::set<std::tuple<size_t, int, int, uint64_t>> seen;
  for (const auto& r : e.runs) {
    EXPECT_TRUE(seen.insert({r.strategy, r.rep, r.procs, r.memory_limit}).second);
  }
  // Interleaved: one repetition of everything before the next starts.
  for (size_t i = 0; i < 12; ++i) EXPECT_EQ(e.runs[i].rep, 0) << i;
  EXPECT_NE(Refusal("procs = 0\n").find("e.toml:1: procs = 0 is out of range"), std::string::npos);
  EXPECT_NE(Refusal("memory_limit = []\n").find("memory_limit is an empty list"),
            std::string::npos);
  EXPECT_NE(Refusal("memory_limit = \"lots\"\n").find("e.toml:1:"), std::string::npos);
  EXPECT_NE(Refusal("timeout_s = -1\n").find("timeout_s must be"), std::string::npos);
}

// "1.25xRAM" is a multiple of this machine's memory, resolved when the plan is made and
// naming the file by its size in MiB, so that the same file is found again.
TEST_F(ExperimentTest, SizesCanBeMultiplesOfMemory) {
  Experiment e;
  const Status s = Load("[[file]]\npreset = \"llama\"\nsize = \"0.01xRAM\"\n"
                        "[[strategy]]\nname = \"mmap\"\n",
                        &e);
  ASSERT_TRUE(s.ok()) << s.message();
  const uint64_t ram = static_cast<uint64_t>(::sysconf(_SC_PHYS_PAGES)) *
                       static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t want = static_cast<uint64_t>(0.01 * static_cast<double>(ram)) >> 20;
  EXPECT_EQ(e.files[0].gen.size_bytes, want << 20);
  EXPECT_NE(e.files[0].path.find(fmt::format("llama-{}MiB-", want)), std::string::npos)
      << e.files[0].path;
  EXPECT_NE(Refusal("[[file]]\nsize = \"twoxRAM\"\n").find("1.25xRAM"), std::string::npos);
}

// A typo in a strategy's name or options is refused as `run --strategies` refuses it, naming
// the file, the line and what exists: planned, it would be an `unsupported` point that never
// runs, and could be the baseline every ratio is against. A combination that cannot work here,
// or a CUDA strategy in a build without the toolkit, is planned unsupported with the reason.
TEST_F(ExperimentTest, TyposInStrategiesAreRefusedAtTheirLine) {
  const std::string head = "[[file]]\npath = \"x.wlf\"\n[[strategy]]\nname = \"fread\"\n";
  std::string why = Refusal(head + "chunck = \"4MiB\"\n");
  EXPECT_NE(why.find("e.toml:5: strategy fread: unknown option 'chunck' (options: chunk"),
            std::string::npos)
      << why;
  why = Refusal(head + "chunk = [\"1MiB\", \"lots\"]\n");
  EXPECT_NE(why.find("e.toml:5: strategy fread: option chunk"), std::string::npos) << why;
  why = Refusal("[[file]]\npath = \"x.wlf\"\n[[strategy]]\nname = \"fraed\"\n");
  EXPECT_NE(why.find("e.toml:4: unknown strategy 'fraed' (known: "), std::string::npos) << why;
  EXPECT_NE(why.find("fread"), std::string::npos) << why;
}

TEST_F(ExperimentTest, WhatCannotWorkHereIsPlannedAsUnsupported) {
  Experiment e;
  // A CUDA strategy is one this build may lack (no toolkit at build time): then planned.
  const std::string cuda = CudaNotBuiltReason().empty() ? "mmap_seq" : "cuda_pageable";
  const Status s = Load(R"([[file]]
path = "x.wlf"
[[strategy]]
name = ")" + cuda + R"("
[[strategy]]
name = "fread"
transform = "bf16_to_f32"
place = "inplace"
[[strategy]]
name = "mmap"
)",
                        &e);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(e.strategies.size(), 3u);
  if (!CudaNotBuiltReason().empty()) {
    EXPECT_NE(e.strategies[0].unsupported.find("'cuda_pageable' is not built"), std::string::npos)
        << e.strategies[0].unsupported;
  }
  EXPECT_NE(e.strategies[1].unsupported.find("place=inplace"), std::string::npos)
      << e.strategies[1].unsupported;
  EXPECT_EQ(e.strategies[2].unsupported, "");
  EXPECT_EQ(e.runs.size(), 3u * 2u * 3u);  // 3 reps, both cache states by default
}

TEST_F(ExperimentTest, MalformedFilesNameTheLine) {
  EXPECT_NE(Refusal("name = \"x\"\nreps = = 3\n").find("e.toml:2:"), std::string::npos);
  EXPECT_NE(Refusal("reps = \"three\"\n").find("e.toml:1: reps must be an integer"),
            std::string::npos);
  EXPECT_NE(Refusal("\n\ncolour = 1\n").find("e.toml:3: unknown key 'colour'"), std::string::npos);
  EXPECT_NE(Refusal("cache = \"hot\"\n").find("cache must be"), std::string::npos);
  EXPECT_NE(Refusal("order = \"random\"\n").find("order 'random'"), std::string::npos);
  EXPECT_NE(Refusal("[[file]]\nsize = \"lots\"\n[[strategy]]\nname = \"mmap\"\n").find("e.toml:2:"),
            std::string::npos);
  EXPECT_NE(
      Refusal("[[file]]\npreset = \"llama\"\n[[strategy]]\nname = \"mmap\"\n").find("needs path"),
      std::string::npos);
  EXPECT_NE(Refusal("[[file]]\npath = \"x\"\n[[strategy]]\nqd = [1]\n").find("has no name"),
            std::string::npos);
  EXPECT_NE(Refusal("[[file]]\npath = \"x\"\n").find("no [[strategy]]"), std::string::npos);
  EXPECT_NE(Refusal("[[file]]\npath = \"x\"\n[[strategy]]\nname = \"mmap\"\nx = []\n")
                .find("e.toml:5: option x: empty list"),
            std::string::npos);
  Experiment e;
  const Status s = LoadExperiment(dir_.File("missing.toml"), dir_.path(), &e);
  EXPECT_EQ(s.code(), Status::Code::kBadInput);
  EXPECT_NE(s.message().find("missing.toml"), std::string::npos) << s.message();
}

// [system]: the tuned machine asked for, and how it holds free page reporting.
TEST_F(ExperimentTest, TheSystemTableAsksForTheTunedMachine) {
  const std::string head = "[[file]]\npath = \"x\"\n[[strategy]]\nname = \"mmap\"\n";
  Experiment e;
  ASSERT_TRUE(Load(head, &e).ok());
  EXPECT_FALSE(e.system.tune);
  ASSERT_TRUE(Load(head + "[system]\ntune = true\n", &e).ok());
  EXPECT_TRUE(e.system.tune);
  EXPECT_EQ(e.system.page_reporting, PageReportingChoice::kOff);
  EXPECT_FALSE(e.system.tune_auto);
  ASSERT_TRUE(Load(head + "[system]\ntune = true\npage_reporting = \"keep\"\n", &e).ok());
  EXPECT_EQ(e.system.page_reporting, PageReportingChoice::kKeep);
  ASSERT_TRUE(Load(head + "[system]\ntune = \"auto\"\nsettle = false\n", &e).ok());
  EXPECT_TRUE(e.system.tune);
  EXPECT_TRUE(e.system.tune_auto);
  EXPECT_FALSE(e.system.settle);
  EXPECT_NE(Refusal(head + "[system]\ntune = \"yes\"\n").find("e.toml:6: system.tune must be"),
            std::string::npos);
  EXPECT_NE(Refusal(head + "[system]\ntune = true\npage_reporting = \"maybe\"\n")
                .find("e.toml:7: system.page_reporting must be \"off\" or \"keep\""),
            std::string::npos);
  EXPECT_NE(Refusal(head + "[system]\npage_reporting = \"off\"\n").find("needs tune = true"),
            std::string::npos);
  EXPECT_NE(Refusal(head + "[system]\ngovernor = \"x\"\n").find("unknown key 'governor'"),
            std::string::npos);
  EXPECT_NE(Refusal("system = true\n" + head).find("system must be a table"), std::string::npos);
}

constexpr const char* kExecHead = R"(name = "peers"
reps = 2
[[file]]
path = "m.wlf"
[[strategy]]
name = "fread"
)";

TEST_F(ExperimentTest, ExecStrategiesAreRowsNamedByTheirLabel) {
  Experiment e;
  const Status s = Load(std::string(kExecHead) + R"(
[[strategy]]
name = "exec"
label = "np"
command = ["/usr/bin/python3", "{peers}/numpy_fromfile.py", "{file}"]
package = "python3-numpy"
timed = "region"
[[strategy]]
name = "exec"
label = "dd"
shell = true
command = "dd if={file} of=/dev/null bs=1M"
)",
                        &e);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(e.strategies.size(), 3u);
  const ExperimentStrategy& np = e.strategies[1];
  EXPECT_EQ(np.spec.text, "exec:label=np");
  ASSERT_TRUE(np.exec.has_value());
  EXPECT_EQ(np.exec->argv,
            (std::vector<std::string>{"/usr/bin/python3", "{peers}/numpy_fromfile.py", "{file}"}));
  EXPECT_EQ(np.exec->package, "python3-numpy");
  EXPECT_FALSE(np.exec->shell);
  EXPECT_EQ(np.exec->timed, "region");
  EXPECT_TRUE(e.strategies[2].exec->shell);
  EXPECT_EQ(e.strategies[2].exec->timed, "command");  // the default: the whole command
  EXPECT_EQ(e.strategies[2].exec->argv,
            (std::vector<std::string>{"dd if={file} of=/dev/null bs=1M"}));
  // Every round holds both commands beside fread, cold and warm.
  EXPECT_EQ(e.runs.size(), 2u * 2u * 3u);
  EXPECT_FALSE(e.strategies[0].exec.has_value());
}

TEST_F(ExperimentTest, MalformedExecStrategiesNameTheLineAndTheReason) {
  const std::string head = kExecHead;
  EXPECT_EQ(Refusal(head + "[[strategy]]\nname = \"exec\"\ncommand = [\"cat\"]\n"),
            Write("") + ":7: exec: a label is required");
  EXPECT_EQ(Refusal(head + "[[strategy]]\nname = \"exec\"\nlabel = \"a\"\n"),
            Write("") + ":7: exec: a command is required");
  EXPECT_NE(Refusal(head + "[[strategy]]\nname = \"exec\"\nlabel = \"a\"\ncommand = \"cat x\"\n")
                .find(":10: exec: command is a list of strings"),
            std::string::npos);
  EXPECT_NE(Refusal(head + "[[strategy]]\nname = \"exec\"\nlabel = \"a\"\ncommand = [\"cat\", 3]\n")
                .find("exec: every word of command is a string"),
            std::string::npos);
  EXPECT_NE(Refusal(head + "[[strategy]]\nname = \"exec\"\nlabel = \"a\"\ncommand = [\"cat\"]\n"
                           "qd = 4\n")
                .find("exec: unknown key 'qd' (exec takes label, command, shell, package, "
                      "timed and via)"),
            std::string::npos);
  EXPECT_EQ(Refusal(head + "[[strategy]]\nname = \"exec\"\nlabel = \"a\"\ncommand = [\"cat\"]\n"
                           "timed = \"load\"\n"),
            Write("") + ":11: exec: timed must be \"command\" or \"region\"");
  EXPECT_NE(Refusal(head + "[[strategy]]\nname = \"exec\"\nlabel = \"a b\"\ncommand = [\"cat\"]\n")
                .find("label 'a b'"),
            std::string::npos);
  const std::string twice = "[[strategy]]\nname = \"exec\"\nlabel = \"a\"\ncommand = [\"cat\"]\n";
  EXPECT_NE(Refusal(head + twice + twice).find("exec: label 'a' is used twice"), std::string::npos);
}

// Every shipped experiment parses, and names only strategies and options this build has.
TEST(ShippedExperiments, ParseAndPlanWithEveryStrategySupported) {
  const std::filesystem::path dir = std::filesystem::path(LOADBENCH_SOURCE_DIR) / "experiments";
  test::TempDir data;
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".toml") continue;
    ++count;
    Experiment e;
    const Status s = LoadExperiment(entry.path().string(), data.path(), &e);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_FALSE(e.runs.empty()) << entry.path();
    for (const auto& st : e.strategies) {
      EXPECT_EQ(st.unsupported, "") << entry.path() << ": " << st.spec.text;
      // A shipped peer a command names is in the tree.
      for (const std::string& word : st.exec ? st.exec->argv : std::vector<std::string>{}) {
        if (!word.starts_with("{peers}/")) continue;
        const std::string peer = PeersDir() + word.substr(7);
        EXPECT_TRUE(std::filesystem::exists(peer)) << entry.path() << ": " << peer;
      }
    }
    std::ifstream in(entry.path());
    std::string first;
    std::getline(in, first);
    EXPECT_EQ(first.rfind("# Question:", 0), 0u) << entry.path() << " must start with its question";
  }
  EXPECT_GE(count, 2);
}

// Read patterns are an axis of the runs with more than one reader: one reader loads the whole
// model whatever the pattern, so procs 1 is run once per point.
TEST_F(ExperimentTest, PatternsAreAnAxisOfTheRunsWithSeveralReaders) {
  Experiment e;
  Status s = Load(R"(reps = 2
cache = "both"
procs = [1, 2]
pattern = ["replicated", "tp", "pp"]
[[file]]
path = "x.wlf"
[[strategy]]
name = "mmap"
[[strategy]]
name = "fread"
)",
                  &e);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(e.procs_given);
  EXPECT_EQ(PatternTexts(e.patterns), (std::vector<std::string>{"replicated", "tp", "pp"}));
  // Per strategy point, cache state and rep: 1 run with 1 reader, 3 with 2 (one per pattern).
  std::map<std::tuple<size_t, std::string, int, int>, std::multiset<std::string>> runs;
  for (const auto& r : e.runs) {
    runs[{r.strategy, r.cache, r.rep, r.procs}].insert(r.pattern.Text());
    EXPECT_EQ(PointOf(e, r).pattern, r.pattern);
  }
  ASSERT_EQ(runs.size(), 2u * 2u * 2u * 2u);
  for (const auto& [key, patterns] : runs) {
    const std::multiset<std::string> want =
        std::get<3>(key) == 1 ? std::multiset<std::string>{"replicated"}
                              : std::multiset<std::string>{"pp", "replicated", "tp"};
    EXPECT_EQ(patterns, want) << std::get<0>(key) << " " << std::get<1>(key) << " "
                              << std::get<2>(key) << " procs " << std::get<3>(key);
  }
  EXPECT_EQ(e.runs.size(), 2u * 2u * 2u * (1u + 3u));

  s = Load("procs = 4\npattern = \"tp:1\"\n[[file]]\npath = \"x.wlf\"\n[[strategy]]\n"
           "name = \"mmap\"\n",
           &e);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(PatternTexts(e.patterns), (std::vector<std::string>{"tp:1"}));
  ASSERT_FALSE(e.runs.empty());
  for (const auto& r : e.runs) EXPECT_EQ(r.pattern.Text(), "tp:1");
}

TEST_F(ExperimentTest, ABadPatternNamesTheLineAndTheProcsDefault) {
  EXPECT_EQ(Refusal("name = \"x\"\npattern = [\"tp\", \"zz\"]\n"),
            Write("") + ":2: unknown read pattern 'zz' (the patterns are: replicated, tp, "
                        "tp:DIM, pp, files)");
  EXPECT_NE(Refusal("pattern = 3\n").find("e.toml:1: pattern must be a word"), std::string::npos);
  EXPECT_NE(Refusal("pattern = []\n").find("e.toml:1: pattern is an empty list"),
            std::string::npos);

  Experiment e;
  const std::string rest = "[[file]]\npath = \"x.wlf\"\n[[strategy]]\nname = \"mmap\"\n";
  ASSERT_TRUE(Load(rest, &e).ok());
  EXPECT_FALSE(e.procs_given);
  EXPECT_EQ(PatternTexts(e.patterns), (std::vector<std::string>{"replicated"}));
  ASSERT_TRUE(Load("procs = 1\n" + rest, &e).ok());
  EXPECT_TRUE(e.procs_given);
  ASSERT_TRUE(Load("pattern = \"tp\"\n" + rest, &e).ok());
  EXPECT_FALSE(e.procs_given);
}

// A run's identity for resuming: a replicated run keeps the key it had before patterns, so a
// record without "pattern" is the replicated run's; another pattern is another run.
TEST(RunKeyTest, OnlyAPatternOtherThanReplicatedChangesTheKey) {
  RunPoint p;
  p.spec.text = "mmap";
  p.cache = "cold";
  p.rep = 1;
  p.procs = 2;
  nlohmann::ordered_json record = {
      {"file", "/m.wlf"}, {"strategy_spec", "mmap"}, {"cache", "cold"}, {"rep", 1}, {"procs", 2}};
  const std::string replicated = RunKey("/m.wlf", p);
  EXPECT_EQ(replicated, "/m.wlf|mmap|cold|1|2|0");
  EXPECT_EQ(RunKey(record), replicated);
  record["pattern"] = "replicated";
  EXPECT_EQ(RunKey(record), replicated);

  ASSERT_TRUE(ParsePattern("tp", &p.pattern).ok());
  const std::string tp = RunKey("/m.wlf", p);
  EXPECT_NE(tp, replicated);
  record["pattern"] = "tp";
  EXPECT_EQ(RunKey(record), tp);
  record["pattern"] = "tp:1";
  EXPECT_NE(RunKey(record), tp);
}

// [link]: its rates are a condition of the plan, every round on it has the link's and the
// server's ceilings beside the strategies, and it needs a server to stand in front of.
TEST_F(ExperimentTest, ALinkIsAConditionWithItsCeilingsInEveryRound) {
  Experiment e;
  ASSERT_TRUE(Load(R"(name = "l"
reps = 2
cache = ["cold", "warm"]
ceiling = true
[server]
kind = "http"
[link]
rate = ["1gbit", "unshaped"]
[[file]]
path = "x.wlf"
[[strategy]]
name = "fread"
[[strategy]]
name = "mmap"
)",
                   &e)
                  .ok());
  EXPECT_EQ(e.link.rates, (std::vector<std::string>{"1gbit", "unshaped"}));
  std::map<std::tuple<int, std::string, std::string>, std::multiset<std::string>> rounds;
  for (const ExperimentRun& r : e.runs) {
    rounds[{r.rep, r.cache, r.link}].insert(PointOf(e, r).spec.text);
  }
  ASSERT_EQ(rounds.size(), 8u);  // 2 reps x 2 caches x 2 links
  for (const auto& [key, members] : rounds) {
    const bool cold = std::get<1>(key) == "cold";
    std::multiset<std::string> want = {"fread", "mmap", "link_ceiling", "server_ceiling"};
    if (cold) want.insert("ceiling");
    EXPECT_EQ(members, want) << std::get<2>(key);
  }
  RunPoint p = PointOf(e, e.runs[0]);
  const std::string key = RunKey("/m", p);
  EXPECT_NE(key.find("|link=" + p.link), std::string::npos) << key;
}

TEST_F(ExperimentTest, ALinkThatCannotBeIsRefusedWithItsLine) {
  const std::string rest = "[[file]]\npath = \"x.wlf\"\n[[strategy]]\nname = \"mmap\"\n";
  EXPECT_NE(Refusal("[server]\nkind = \"http\"\n[link]\nrate = \"fast\"\n" + rest).find("e.toml:4"),
            std::string::npos);
  EXPECT_NE(Refusal("[server]\nkind = \"http\"\n[link]\nrate = \"10kbit\"\n" + rest)
                .find("1mbit to 1tbit"),
            std::string::npos);
  EXPECT_NE(Refusal("[link]\nrate = \"1gbit\"\n" + rest).find("needs [server]"), std::string::npos);
  EXPECT_NE(
      Refusal("[server]\nkind = \"http\"\n[link]\ndelay = \"1ms\"\n" + rest).find("needs rate"),
      std::string::npos);
  EXPECT_NE(Refusal("[server]\nkind = \"http\"\n[link]\nrate = \"1gbit\"\nstreams = 0\n" + rest)
                .find("link.streams"),
            std::string::npos);
}

// [cluster]: its nodes are the readers (procs), an axis of the plan; it needs a server for
// the nodes to load from, and goes neither with procs nor with a [link].
TEST_F(ExperimentTest, AClustersNodesAreTheReadersOfThePlan) {
  Experiment e;
  ASSERT_TRUE(Load(R"(name = "c"
reps = 1
cache = ["cold"]
[cluster]
nodes = [1, 2, 4]
nic = "100mbit"
uplink = "1gbit"
[server]
kind = "http"
[[file]]
path = "x.wlf"
[[strategy]]
name = "fleet"
design = ["every", "chain"]
)",
                   &e)
                  .ok());
  EXPECT_EQ(e.cluster.nodes, (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(e.procs, (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(e.cluster.nic, "100mbit");
  EXPECT_EQ(e.cluster.uplink, "1gbit");
  EXPECT_EQ(e.runs.size(), 2u * 3u);
}

TEST_F(ExperimentTest, AClusterThatCannotBeIsRefusedWithItsLine) {
  const std::string server = "[server]\nkind = \"http\"\n";
  const std::string rest = "[[file]]\npath = \"x.wlf\"\n[[strategy]]\nname = \"fleet\"\n";
  EXPECT_NE(Refusal(server + "[cluster]\nnodes = [1]\nnic = \"fast\"\n" + rest).find("e.toml:5"),
            std::string::npos);
  EXPECT_NE(Refusal(server + "[cluster]\nnodes = [1]\nuplink = \"unshaped\"\n" + rest)
                .find("not unshaped"),
            std::string::npos);
  EXPECT_NE(Refusal(server + "[cluster]\nnodes = [65]\n" + rest).find("cluster.nodes"),
            std::string::npos);
  EXPECT_NE(Refusal(server + "[cluster]\nnic = \"1gbit\"\n" + rest).find("needs nodes"),
            std::string::npos);
  EXPECT_NE(Refusal("[cluster]\nnodes = [2]\n" + rest).find("needs [server]"), std::string::npos);
  EXPECT_NE(
      Refusal("procs = [2]\n" + server + "[cluster]\nnodes = [2]\n" + rest).find("leave procs out"),
      std::string::npos);
  EXPECT_NE(Refusal(server + "[link]\nrate = \"1gbit\"\n[cluster]\nnodes = [2]\n" + rest)
                .find("do not go together"),
            std::string::npos);
  EXPECT_NE(Refusal(server + "[cluster]\nnodes = [2]\nzones = 3\n" + rest).find("unknown key"),
            std::string::npos);
}

// [[storage]]: each table one value of the axis, outermost: every round of one storage before
// the next's, each storage's rounds numbered from 0, its label on every point and in the key.
TEST_F(ExperimentTest, StoragesAreTheOutermostAxisWithRoundsOfTheirOwn) {
  Experiment e;
  ASSERT_TRUE(Load(R"(name = "s"
reps = 2
cache = ["cold"]
ceiling = true
[[storage]]
kind = "xfs"
read_iops = 300
preset = "gp3"
[[storage]]
kind = "tmpfs"
label = "ram"
[[file]]
path = "x.wlf"
[[strategy]]
name = "fread"
[[strategy]]
name = "mmap"
)",
                   &e)
                  .ok());
  ASSERT_EQ(e.storages.size(), 2u);
  EXPECT_EQ(e.storages[0].spec.device.read_iops, 300u);  // the preset's overridden
  EXPECT_EQ(e.storages[0].spec.device.preset, "gp3");
  EXPECT_EQ(e.storages[1].spec.label, "ram");
  EXPECT_NE(e.storages[0].where.find("e.toml:5"), std::string::npos) << e.storages[0].where;
  ASSERT_EQ(e.runs.size(), 2u * 2u * 3u);  // storages x reps x (points + ceiling)
  for (size_t i = 0; i < e.runs.size(); ++i) {
    EXPECT_EQ(e.runs[i].storage, i < 6 ? 0u : 1u);
    EXPECT_EQ(e.runs[i].rep, static_cast<int>(i % 6 / 3));
  }
  const RunPoint a = PointOf(e, e.runs[0]), b = PointOf(e, e.runs[6]);
  EXPECT_EQ(b.storage, "ram");
  EXPECT_EQ(a.storage, e.storages[0].spec.label);
  EXPECT_NE(RunKey("/m", a), RunKey("/m", b));
  EXPECT_NE(RunKey("/m", b).find("|storage=ram"), std::string::npos);
}

TEST_F(ExperimentTest, AStorageThatCannotBeIsRefusedWithItsLine) {
  const std::string rest = "[[file]]\npath = \"x.wlf\"\n[[strategy]]\nname = \"mmap\"\n";
  EXPECT_NE(Refusal("[[storage]]\nkind = \"nfs\"\n" + rest).find("e.toml:2"), std::string::npos);
  EXPECT_NE(Refusal("[[storage]]\nlabel = \"x\"\n" + rest).find("needs kind"), std::string::npos);
  EXPECT_NE(Refusal("[[storage]]\nkind = \"xfs\"\npreset = \"floppy\"\n" + rest).find("e.toml:3"),
            std::string::npos);
  EXPECT_NE(Refusal("[[storage]]\nkind = \"xfs\"\nread_iops = 0\n" + rest).find("e.toml:3"),
            std::string::npos);
  EXPECT_NE(Refusal("[[storage]]\nkind = \"tmpfs\"\nread_bps = \"1GB\"\n" + rest).find("e.toml:3"),
            std::string::npos);
  EXPECT_NE(
      Refusal("[[storage]]\nkind = \"squashfs\"\ncompress = \"brotli\"\n" + rest).find("e.toml:3"),
      std::string::npos);
  EXPECT_NE(Refusal("[[storage]]\nkind = \"fuse\"\n" + rest).find("needs [server]"),
            std::string::npos);
  EXPECT_NE(Refusal("[[storage]]\nkind = \"ext4\"\n[[storage]]\nkind = \"ext4\"\n" + rest)
                .find("give each its own label"),
            std::string::npos);
  EXPECT_NE(Refusal("reps = \"auto\"\norder = \"interleaved\"\n[[storage]]\nkind = \"ext4\"\n"
                    "[[storage]]\nkind = \"xfs\"\n" +
                    rest)
                .find("several storages"),
            std::string::npos);
}

}  // namespace
}  // namespace loadbench
