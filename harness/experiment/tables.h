// The readers of an experiment's tables (docs/experiments.md), one per table, and what they
// share: where the tables came from, which names a bad value in its message, and the helpers
// that read a TOML value. The tables are an experiment file's, or those `run` builds from its
// flags (harness/cli/run_command.cc): both are read here, so that one path leads to an
// Experiment.
//
//   top level     table_top.cc       reps, auto_*, baseline, order, cache, procs, ...; the checks
//                                    across tables once all are read
//   [system]      table_system.cc
//   [server]      table_net.cc       with [link] and [cluster], the tables of the network
//   [[file]]      table_file.cc
//   [[strategy]]  table_strategy.cc  a grid of points; an exec command's in table_exec.cc;
//                                    fleet's torch_* designs as commands: table_fleet_engine.cc
//   [[storage]]   table_storage.cc   the storages the model is put on
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "harness/experiment/experiment.h"
#include "loaders/base/status.h"

namespace loadbench {

// Where an experiment's tables came from.
struct ExperimentSource {
  std::string path;      // the experiment file; "" for tables built from `run`'s flags
  std::string data_dir;  // where generated files go
  // Tables built from flags: the flag that gave each value, named in a message where a file's
  // would say PATH:LINE.
  std::map<const toml::node*, std::string> flags;
  // Tables built from flags: each [[strategy]] table's point as written on the command line
  // ("fread:chunk=4MiB:consume=forward"), its records' name; a file's point is named by its
  // name and options in the table's order.
  std::map<const toml::node*, std::string> written;
};

// Reads the tables into *out and plans its runs. A malformed value is kBadInput named by its
// place: "PATH:LINE: reason" in a file, "--FLAG: reason" for a flag.
Status ReadExperiment(const toml::table& top, const ExperimentSource& source, Experiment* out);

// One reading of an experiment's tables: its source, the keys that are checked against each
// other once all are read, and the helpers every table's reader uses.
class TableReader {
 public:
  explicit TableReader(const ExperimentSource& source) : source_(source) {}

  const ExperimentSource& source() const { return source_; }

  // kBadInput for the value at `where`: "PATH:LINE: what", or "--FLAG: what".
  Status Bad(const toml::node& where, const std::string& what) const;
  // kBadInput for the source as a whole: "PATH: what".
  Status BadSource(const std::string& what) const;

  Status String(const toml::node& n, const char* what, std::string* out) const;
  Status Integer(const toml::node& n, const char* what, int64_t lo, int64_t hi, int64_t* out) const;
  // A size: "4GiB", an integer number of bytes, or (none_ok) "none" for 0.
  Status Bytes(const toml::node& n, const char* what, bool none_ok, uint64_t* out) const;
  // via = "local", "http", "s3" or "s3fs"; "local" is "".
  Status Via(const toml::node& n, std::string* out) const;
  static std::string ViaError(const std::string& v);

  // A scalar or a list of scalars, each given to `fn`; a list must not be empty.
  template <typename Fn>
  Status Each(const toml::node& n, const char* what, Fn&& fn) const {
    if (const toml::array* a = n.as_array()) {
      if (a->empty()) return Bad(n, fmt::format("{} is an empty list", what));
      for (const toml::node& v : *a) LB_RETURN_IF_ERROR(fn(v));
      return Status::Ok();
    }
    return fn(n);
  }

  // An array of tables, [[what]], each given to `fn`.
  template <typename Fn>
  Status Tables(const toml::node& n, const char* what, Fn&& fn) const {
    const toml::array* a = n.as_array();
    if (a == nullptr || !a->is_array_of_tables()) {
      return Bad(n, fmt::format("{} must be written [[{}]]", what, what));
    }
    for (const toml::node& t : *a) LB_RETURN_IF_ERROR(fn(*t.as_table()));
    return Status::Ok();
  }

  // The experiment's [server], read before its [[strategy]] tables (ReadTop): the engine's
  // fleet designs reach the model through it. Null where a table is read on its own.
  const ExperimentServer* server = nullptr;

  // Where keys checked against each other were written, for the message; null where not.
  const toml::node* auto_where = nullptr;
  const toml::node* baseline_where = nullptr;
  const toml::node* order_where = nullptr;
  const toml::node* link_where = nullptr;
  const toml::node* cluster_where = nullptr;
  const toml::node* storage_where = nullptr;

 private:
  const ExperimentSource& source_;
};

// The readers, each of one table into the experiment (table_*.cc). ReadTop reads the top
// level and calls the others for the tables in it; FinishTop checks what needs every table.
Status ReadTop(TableReader& r, const toml::table& top, Experiment* e);
Status FinishTop(TableReader& r, const toml::table& top, Experiment* e);
Status ReadSystem(const TableReader& r, const toml::node& n, ExperimentSystem* out);
Status ReadServer(const TableReader& r, const toml::node& n, ExperimentServer* out);
Status ReadLink(const TableReader& r, const toml::node& n, ExperimentLink* out);
Status ReadCluster(const TableReader& r, const toml::node& n, ExperimentCluster* out);
// A cluster's nodes are its readers: checked against procs, [link] and [server], then procs.
Status CheckCluster(const TableReader& r, Experiment* e);
Status ReadFile(const TableReader& r, const toml::table& t, std::vector<ExperimentFile>* out);
Status ReadStrategy(const TableReader& r, const toml::table& t,
                    std::vector<ExperimentStrategy>* out);
Status ReadExec(const TableReader& r, const toml::table& t, std::vector<ExperimentStrategy>* out);
// Whether a point of a [[strategy]] grid is fleet with one of the engine's designs
// (design = "torch_bcast" or "torch_stripe"), which is not the fleet strategy's but a command.
bool IsFleetEngine(const StrategySpec& spec);
// That point made the exec command of loaders/peers/torch_fleet.py: label the design (and each
// of `varying`, the grid's axes of several values: "torch_bcast-chunk1MiB"), timed "region",
// package python3-torch, the fleet options it takes (chunk, concurrency, port) checked and
// defaulted as fleet's, via the experiment's HTTP server (`server`; none: the file itself).
// kBadInput naming the option: one it does not take, a bad value, an S3 server or via.
Status FleetEnginePoint(const ExperimentServer* server, const std::vector<std::string>& varying,
                        ExperimentStrategy* s);
// The engine's points against the experiment's patterns, once every table is read: with
// several readers, kBadInput for a pattern other than replicated and tp.
Status CheckEnginePatterns(const Experiment& e);
Status ReadStorage(const TableReader& r, const toml::table& t, std::vector<ExperimentStorage>* out);
// Storages checked against [cluster], [server], [link] and automatic rounds.
Status CheckStorages(const TableReader& r, const toml::node& where, const Experiment& e);

}  // namespace loadbench
