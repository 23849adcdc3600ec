// An experiment's [link] (harness/net/link.h) through a command: made before the server starts
// (the server listens at the link's far end, in its namespace), shaped for each run's
// condition, the link's and the server's ceilings measured in every round of every condition
// on it (record/record.h kLinkCeiling, kServerCeiling: reads in this process, launch/ceiling.h),
// and removed when the command ends, after the servers (the executor declares it before them).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/experiment/experiment.h"
#include "harness/launch/ceiling.h"
#include "harness/measure/measure.h"
#include "harness/net/iperf.h"
#include "harness/net/link.h"
#include "harness/run/remote_files.h"

namespace loadbench {

class LinkRuns {
 public:
  LinkRuns() = default;
  LinkRuns(const LinkRuns&) = delete;  // its ceilings refer to it
  LinkRuns& operator=(const LinkRuns&) = delete;

  // The link at each rate of the experiment, tried once, and iperf3's server at its far end.
  // kBadInput, before any run: not root, no ip, tc or iperf3, a rate the kernel cannot shape.
  Status Start(const Experiment& e, const std::string& who);
  const Link* link() const { return link_.get(); }

  // The link as run `r` needs it: at its condition's rate; unshaped for the server's ceiling.
  Status ShapeFor(const Experiment& e, const ExperimentRun& r);
  // The round-trip time, measured once the server listens at `port`.
  Status MeasureRtt(int port) { return link_->MeasureRtt(port, 10); }
  // The link's and the server's ceilings into the settings, the server's read through
  // `remote`; none without a link.
  void Wire(const RemoteFiles& remote, MeasureSettings* s);
  // env.json's `link`: the link's settings, iperf3's, the ceilings' streams and chunk.
  nlohmann::ordered_json Env() const;

 private:
  // iperf3 over the link as the run's condition shapes it.
  class LinkCeiling final : public CeilingRead {
   public:
    explicit LinkCeiling(const LinkRuns& runs) : runs_(runs) {}
    void Read(const LaunchRequest& req, RunRecord* r) override;

   private:
    const LinkRuns& runs_;
  };
  // The model's objects fetched from the server into nothing, the link unshaped.
  class ServerCeiling final : public CeilingRead {
   public:
    explicit ServerCeiling(const LinkRuns& runs) : runs_(runs) {}
    void Read(const LaunchRequest& req, RunRecord* r) override;

   private:
    const LinkRuns& runs_;
  };

  const Experiment* e_ = nullptr;
  int concurrency_ = 1;  // the most of the strategy points' (http_ranges' concurrency)
  std::unique_ptr<Link> link_;
  std::unique_ptr<LinkMeter> meter_;
  const RemoteFiles* remote_ = nullptr;  // what the server's ceiling reads through
  LinkCeiling link_ceiling_{*this};
  ServerCeiling server_ceiling_{*this};
};

}  // namespace loadbench
