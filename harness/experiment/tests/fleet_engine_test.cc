// fleet's torch_* designs in an experiment: a grid of fleet designs gives the fleet strategy's
// points and, for the engine's designs, the exec command of loaders/peers/torch_fleet.py, with
// fleet's options checked as fleet checks them; what the command cannot do is refused at its
// line.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "harness/experiment/experiment.h"
#include "tests/support/wlf_fixture.h"

namespace loadbench {
namespace {

class FleetEngineTest : public ::testing::Test {
 protected:
  Status Load(const std::string& text, Experiment* e) {
    const std::string path = dir_.File("e.toml");
    std::ofstream(path) << text;
    return LoadExperiment(path, dir_.File("data"), e);
  }
  std::string Refusal(const std::string& text) {
    Experiment e;
    const Status s = Load(text, &e);
    EXPECT_EQ(s.code(), Status::Code::kBadInput) << text;
    return s.message();
  }
  const ExperimentStrategy* Find(const Experiment& e, const std::string& text) {
    for (const ExperimentStrategy& s : e.strategies) {
      if (s.spec.text == text) return &s;
    }
    ADD_FAILURE() << "no point " << text;
    return nullptr;
  }

  test::TempDir dir_;
};

constexpr const char* kTop = R"(reps = 1
cache = "cold"
procs = [2]
[[file]]
preset = "llama"
size = "4MiB"
format = "safetensors"
)";

std::vector<std::string> Argv(const std::string& design, const std::string& chunk,
                              const std::string& port, const std::string& concurrency) {
  return {"/usr/bin/python3",
          "{peers}/torch_fleet.py",
          "--design",
          design,
          "--chunk",
          chunk,
          "--port",
          port,
          "--concurrency",
          concurrency,
          "{file}"};
}

TEST_F(FleetEngineTest, AGridOfDesignsGivesFleetsPointsAndTheEnginesCommands) {
  Experiment e;
  const Status s = Load(std::string(kTop) + R"([server]
kind = "http"
[[strategy]]
name = "fleet"
design = ["chain", "torch_bcast", "torch_stripe"]
chunk = "1MiB"
)",
                        &e);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(e.strategies.size(), 3u);
  const ExperimentStrategy* chain = Find(e, "fleet:chunk=1MiB:design=chain");
  ASSERT_NE(chain, nullptr);
  EXPECT_FALSE(chain->exec.has_value());
  EXPECT_NE(chain->resolved.info, nullptr);
  for (const std::string design : {"bcast", "stripe"}) {
    const ExperimentStrategy* engine = Find(e, "exec:label=torch_" + design);
    ASSERT_NE(engine, nullptr);
    ASSERT_TRUE(engine->exec.has_value());
    EXPECT_EQ(engine->exec->label, "torch_" + design);
    // fleet's defaults: port 29400, 4 requests in flight; the chunk in bytes
    EXPECT_EQ(engine->exec->argv, Argv(design, "1048576", "29400", "4"));
    EXPECT_EQ(engine->exec->timed, kTimedRegion);
    EXPECT_EQ(engine->exec->package, "python3-torch");
    EXPECT_FALSE(engine->exec->shell);
    EXPECT_EQ(engine->spec.via, "http");  // the experiment's server
    EXPECT_EQ(engine->resolved.info, nullptr);
    EXPECT_EQ(engine->unsupported, "");
  }
  // One run per point and rep, two readers each.
  EXPECT_EQ(e.runs.size(), 3u);
  for (const ExperimentRun& r : e.runs) EXPECT_EQ(r.procs, 2);
}

TEST_F(FleetEngineTest, AxesOfItsOptionsNameItsRowsAndANameSpecReadsAsKeys) {
  Experiment e;
  Status s = Load(std::string(kTop) + R"([[strategy]]
name = "fleet:design=torch_stripe"
chunk = ["256KiB", "1MiB"]
concurrency = 8
port = 31000
)",
                  &e);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(e.strategies.size(), 2u);
  const ExperimentStrategy* small = Find(e, "exec:label=torch_stripe-chunk256KiB");
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(small->exec->argv, Argv("stripe", "262144", "31000", "8"));
  EXPECT_EQ(small->spec.via, "");  // no [server]: the command reads the file itself
  ASSERT_NE(Find(e, "exec:label=torch_stripe-chunk1MiB"), nullptr);

  s = Load(std::string(kTop) + "[[strategy]]\nname = \"fleet\"\ndesign = \"torch_bcast\"\n"
                               "via = \"http\"\n[server]\nkind = \"http\"\n",
           &e);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(e.strategies.at(0).spec.via, "http");
  EXPECT_EQ(e.strategies.at(0).exec->argv, Argv("bcast", "4194304", "29400", "4"));
}

TEST_F(FleetEngineTest, WhatTheCommandCannotDoIsRefusedAtItsLine) {
  const std::string fleet = std::string(kTop) + "[[strategy]]\nname = \"fleet\"\n";
  EXPECT_EQ(Refusal(fleet + "design = \"torch_bcast\"\nbuffer = \"malloc\"\n"),
            dir_.File("e.toml") +
                ":11: fleet:buffer=malloc:design=torch_bcast: option buffer: torch_bcast takes "
                "chunk, concurrency, port (torch.distributed moves the bytes, not fleet); give "
                "the fleet designs' other options in a [[strategy]] table of their own");
  EXPECT_EQ(Refusal(fleet + "design = \"torch_bcast\"\nchunk = \"0\"\n"),
            dir_.File("e.toml") +
                ":11: strategy fleet: option chunk: 0 is out of range (1 B to 1 TiB)");
  EXPECT_EQ(Refusal(fleet + "design = \"torch_stripe\"\nport = 80\n"),
            dir_.File("e.toml") + ":11: strategy fleet: option port: 80 is out of range (1024 "
                                  "to 65535)");
  EXPECT_EQ(Refusal(fleet + "design = \"torch_scatter\"\n"),
            dir_.File("e.toml") + ":10: fleet:design=torch_scatter: option design: "
                                  "'torch_scatter' is not one of the engine's designs "
                                  "(torch_bcast, torch_stripe)");
  EXPECT_EQ(Refusal(fleet + "design = \"torch_bcast\"\n[server]\nkind = \"s3\"\n"),
            dir_.File("e.toml") +
                ":8: fleet:design=torch_bcast: loaders/peers/torch_fleet.py reads the model "
                "over HTTP or from the file; [server] kind = \"s3\" cannot serve it (use kind = "
                "\"http\", or via = \"local\")");
  EXPECT_EQ(Refusal(fleet + "design = \"torch_bcast\"\nvia = \"s3fs\"\n"),
            dir_.File("e.toml") +
                ":11: fleet:design=torch_bcast:via=s3fs: option via: loaders/peers/"
                "torch_fleet.py reads via \"http\" or \"local\", not \"s3fs\"");
  // Two tables whose points would be one row.
  EXPECT_EQ(Refusal(fleet + "design = \"torch_bcast\"\nchunk = \"1MiB\"\n[[strategy]]\n"
                            "name = \"fleet\"\ndesign = \"torch_bcast\"\n"),
            dir_.File("e.toml") +
                ":12: fleet:design=torch_bcast: its row torch_bcast is another point's; in an "
                "experiment, give the values that differ as one list in one [[strategy]] table, "
                "and its rows are named by them (torch_bcast-chunk1MiB)");
}

// What a node needs is the run's pattern: the engine's designs honour replicated and tp (also
// along another dimension), and refuse the others before any run.
TEST_F(FleetEngineTest, ItHonoursReplicatedAndTpAndRefusesTheOtherPatterns) {
  const std::string engines =
      std::string(kTop) + "[[strategy]]\nname = \"fleet\"\ndesign = \"torch_stripe\"\n";
  Experiment e;
  const Status s = Load("pattern = [\"replicated\", \"tp\", \"tp:1\"]\n" + engines, &e);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(e.runs.size(), 3u);
  EXPECT_EQ(Refusal("pattern = [\"tp\", \"pp\"]\n" + engines),
            dir_.File("e.toml") +
                ": strategy exec:label=torch_stripe: the engine's designs honour the patterns "
                "replicated and tp (a node's slices of every tensor), not pp");
}

}  // namespace
}  // namespace loadbench
