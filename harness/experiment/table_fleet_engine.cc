// fleet:design=torch_bcast|torch_stripe: the engine's own designs, PyTorch's torch.distributed
// on gloo, as an experiment's fleet grid or `run --strategies` names them. They are not the
// fleet strategy's: each point is read as the exec command of the shipped peer
// loaders/peers/torch_fleet.py (one per reader, docs/fleet.md), so that a grid
// design = ["chain", "torch_bcast"] gives a fleet row and a command's row side by side.
#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/experiment/tables.h"
#include "loaders/strategy/registry.h"

namespace loadbench {
namespace {

constexpr const char* kEnginePrefix = "torch_";
constexpr const char* kEnginePeer = "{peers}/torch_fleet.py";
// The fleet options the engine's designs take, checked and defaulted as fleet's own are
// (loaders/strategies/fleet.cc), so that chunk, concurrency and port mean the same in both
// rows. `port` is torch's rendezvous port, at node 0's address.
const std::vector<std::string> kEngineOptions = {"chunk", "concurrency", "port"};

// The row's label: the design, then each option that varies in the table's grid ("-chunk1MiB"),
// in the label's own characters.
std::string EngineLabel(const std::string& design, const std::map<std::string, std::string>& opts,
                        const std::vector<std::string>& varying) {
  std::string label = design;
  for (const std::string& key : varying) {
    const auto it = opts.find(key);
    if (it == opts.end() || key == "design") continue;
    std::string value = it->second;
    std::replace_if(
        value.begin(), value.end(),
        [](char c) { return !(std::isalnum(static_cast<unsigned char>(c)) || c == '.'); }, '_');
    label += fmt::format("-{}{}", key, value);
  }
  return label;
}

// How the command reaches the model: via as given ("http" or "local"), else the experiment's
// server when it is an HTTP one, else the file itself. The peer reads HTTP or a file only.
Status EngineVia(const StrategySpec& spec, const ExperimentServer* server, std::string* via) {
  const auto given = spec.options.find("via");
  const std::string kind = server != nullptr ? server->kind : "";
  if (given == spec.options.end()) {
    if (kind == "s3") {
      return Status::BadInput(fmt::format(
          "{}: loaders/peers/torch_fleet.py reads the model over HTTP or from the file; "
          "[server] kind = \"s3\" cannot serve it (use kind = \"http\", or via = \"local\")",
          spec.text));
    }
    *via = kind == "http" ? "http" : "";
    return Status::Ok();
  }
  if (given->second != "http" && given->second != "local") {
    return Status::BadInput(fmt::format(
        "{}: option via: loaders/peers/torch_fleet.py reads via \"http\" or \"local\", not \"{}\"",
        spec.text, given->second));
  }
  *via = given->second == "local" ? "" : "http";
  return Status::Ok();
}

// The engine's options: the fleet options it takes, resolved with fleet's own declarations.
Status EngineParams(const StrategySpec& spec, const std::string& design, Params* params) {
  std::map<std::string, std::string> given;
  for (const auto& [key, value] : spec.options) {
    if (key == "design" || key == "via") continue;
    if (std::find(kEngineOptions.begin(), kEngineOptions.end(), key) == kEngineOptions.end()) {
      return Status::BadInput(fmt::format(
          "{}: option {}: {} takes {} (torch.distributed moves the bytes, not fleet); give the "
          "fleet designs' other options in a [[strategy]] table of their own",
          spec.text, key, design, fmt::join(kEngineOptions, ", ")));
    }
    given[key] = value;
  }
  const StrategyInfo* fleet = FindStrategy("fleet");
  if (fleet == nullptr) return Status::BadInput("the fleet strategy is not built");
  std::vector<OptionSpec> specs;
  for (const OptionSpec& o : fleet->options) {
    if (std::find(kEngineOptions.begin(), kEngineOptions.end(), o.name) != kEngineOptions.end()) {
      specs.push_back(o);
    }
  }
  return Params::Resolve("fleet", specs, given, params);
}

}  // namespace

bool IsFleetEngine(const StrategySpec& spec) {
  const auto design = spec.options.find("design");
  return spec.name == "fleet" && design != spec.options.end() &&
         design->second.starts_with(kEnginePrefix);
}

Status FleetEnginePoint(const ExperimentServer* server, const std::vector<std::string>& varying,
                        ExperimentStrategy* s) {
  const std::string design = s->spec.options.at("design");
  if (design != "torch_bcast" && design != "torch_stripe") {
    return Status::BadInput(fmt::format(
        "{}: option design: '{}' is not one of the engine's designs (torch_bcast, torch_stripe)",
        s->spec.text, design));
  }
  Params params;
  LB_RETURN_IF_ERROR(EngineParams(s->spec, design, &params));
  std::string via;
  LB_RETURN_IF_ERROR(EngineVia(s->spec, server, &via));
  ExecCommand c;
  c.label = EngineLabel(design, s->spec.options, varying);
  c.package = "python3-torch";
  c.timed = kTimedRegion;  // its own region: from the nodes' barrier to its `done`
  c.argv = {"/usr/bin/python3",
            kEnginePeer,
            "--design",
            design.substr(std::string(kEnginePrefix).size()),
            "--chunk",
            std::to_string(params.Bytes("chunk")),
            "--port",
            std::to_string(params.Int("port")),
            "--concurrency",
            std::to_string(params.Int("concurrency")),
            "{file}"};
  s->spec = ExecSpec(c.label);
  s->spec.via = via;
  s->resolved = ResolvedSpec();
  s->exec = std::move(c);
  return Status::Ok();
}

Status CheckEnginePatterns(const Experiment& e) {
  const bool several =  // procs left out takes the MPI job's size: perhaps several
      !e.procs_given || std::any_of(e.procs.begin(), e.procs.end(), [](int p) { return p > 1; });
  for (const ExperimentStrategy& st : e.strategies) {
    if (!several || !st.exec || st.exec->argv.size() < 2 || st.exec->argv[1] != kEnginePeer) {
      continue;
    }
    for (const ReadPattern& p : e.patterns) {
      if (p.replicated() || p.kind == ReadPattern::Kind::kTp) continue;
      return Status::BadInput(fmt::format(
          "strategy {}: the engine's designs honour the patterns replicated and tp (a node's "
          "slices of every tensor), not {}",
          st.spec.text, p.Text()));
    }
  }
  return Status::Ok();
}

}  // namespace loadbench
