// Reading an experiment file: its TOML parsed and its opening question taken, then its tables
// read by the readers of harness/experiment/tables.h.
#include "harness/experiment/experiment.h"

#include <fstream>
#include <string_view>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "harness/experiment/tables.h"

namespace loadbench {
namespace {

// The opening comment from "# Question:" on, its lines joined, the #s and the label dropped.
std::string QuestionOf(const std::string& path) {
  std::ifstream in(path);
  std::string line, out;
  while (std::getline(in, line) && line.starts_with("#")) {
    std::string text = line.substr(line.find_first_not_of("# ") == std::string::npos
                                       ? line.size()
                                       : line.find_first_not_of("# "));
    if (out.empty() && !text.starts_with("Question:")) break;
    if (out.empty()) text = text.substr(std::string_view("Question:").size());
    out += (out.empty() ? "" : " ") + text;
  }
  const size_t first = out.find_first_not_of(' ');
  return first == std::string::npos ? "" : out.substr(first);
}

}  // namespace

Status ReadExperiment(const toml::table& top, const ExperimentSource& source, Experiment* out) {
  TableReader r(source);
  LB_RETURN_IF_ERROR(ReadTop(r, top, out));
  LB_RETURN_IF_ERROR(FinishTop(r, top, out));
  PlanRuns(out);
  return Status::Ok();
}

Status LoadExperiment(const std::string& path, const std::string& data_dir, Experiment* out) {
  toml::table top;
  try {
    top = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    const std::string what(e.description());
    if (e.source().begin.line == 0) {
      return Status::BadInput(fmt::format("{}: {}", path, what));  // unreadable, not malformed
    }
    return Status::BadInput(fmt::format("{}:{}: {}", path, e.source().begin.line, what));
  }
  Experiment e;
  e.path = path;
  e.question = QuestionOf(path);
  ExperimentSource source;
  source.path = path;
  source.data_dir = data_dir;
  LB_RETURN_IF_ERROR(ReadExperiment(top, source, &e));
  *out = std::move(e);
  return Status::Ok();
}

}  // namespace loadbench
