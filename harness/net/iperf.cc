#include "harness/net/iperf.h"
#include "harness/process/program.h"

#include <fmt/format.h>

#include "harness/net/kinds.h"
#include "harness/process/child.h"

namespace loadbench {

// The server end: iperf3's server on the link's server address at a free port, in the
// foreground, its output flushed line by line so that its "listening" line is seen as soon as it
// is printed (a kind of server.h's Server).
Status PrepareIperf3(const ServerSpec& spec, ServerLaunch* out) {
  ServerLaunch l;
  l.name = "iperf3";
  if (Status s = FindProgram("iperf3", "iperf3", &l.program); !s.ok()) {
    return Status::BadInput(s.message());
  }
  std::string said;
  LB_RETURN_IF_ERROR(RunToEnd({.argv = {l.program, "--version"}, .timeout_s = 10}, &said));
  l.version = VersionIn(said);
  LB_RETURN_IF_ERROR(FreeLoopbackPort(&l.port));
  l.argv = {l.program,     "--server", "--bind", spec.address, "--port", std::to_string(l.port),
            "--forceflush"};
  l.config = {{"bind", spec.address}, {"port", l.port}};
  *out = std::move(l);
  return Status::Ok();
}

bool IperfListening(const std::string& log) {
  return log.find("Server listening on") != std::string::npos;
}

// The client end.
Status LinkMeter::Start(const Link& link, std::unique_ptr<LinkMeter>* out) {
  auto m = std::make_unique<LinkMeter>();
  m->address_ = link.server_address();
  ServerSpec spec;
  spec.kind = "iperf3";
  spec.address = link.server_address();
  spec.netns = link.netns_path();
  LB_RETURN_IF_ERROR(Server::Start(spec, &m->server_));
  *out = std::move(m);
  return Status::Ok();
}

Status LinkMeter::Measure(int streams, int seconds, nlohmann::ordered_json* out) const {
  return Iperf3({.address = address_,
                 .port = port(),
                 .streams = streams,
                 .seconds = seconds,
                 .reverse = true},
                out);
}

Status Iperf3(const Iperf3Run& run, nlohmann::ordered_json* out) {
  std::string program, text;
  LB_RETURN_IF_ERROR(FindProgram("iperf3", "iperf3", &program));
  std::vector<std::string> argv = {program,
                                   "--client",
                                   run.address,
                                   "--port",
                                   std::to_string(run.port),
                                   "--parallel",
                                   std::to_string(run.streams),
                                   "--time",
                                   std::to_string(run.seconds),
                                   "--json"};
  if (run.reverse) argv.push_back("--reverse");
  const Status ran =
      RunToEnd({.argv = argv, .timeout_s = run.seconds + 15.0, .netns = run.netns}, &text);
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_object() && j.contains("error")) {
    return Status::IOError(fmt::format("iperf3: {}", j["error"].get<std::string>()));
  }
  LB_RETURN_IF_ERROR(ran);
  const auto& end = j.is_object() ? j.value("end", nlohmann::json()) : nlohmann::json();
  const auto& got =
      end.is_object() ? end.value("sum_received", nlohmann::json()) : nlohmann::json();
  const auto& sent = end.is_object() ? end.value("sum_sent", nlohmann::json()) : nlohmann::json();
  if (!got.is_object() || !got["bytes"].is_number() || !got["seconds"].is_number() ||
      got["seconds"].get<double>() <= 0) {
    return Status::IOError("iperf3 printed no received total: " + LastLines(text, 2));
  }
  const double bytes = got["bytes"].get<double>(), secs = got["seconds"].get<double>();
  *out = {{"bytes", got["bytes"].get<uint64_t>()},
          {"seconds", secs},
          {"gb_per_s", bytes / secs / 1e9},
          {"receiver_bits_per_s", got.value("bits_per_second", 0.0)},
          {"sender_bits_per_s", sent.is_object() ? sent.value("bits_per_second", 0.0) : 0.0},
          {"retransmits",
           sent.is_object() ? sent.value("retransmits", nlohmann::json()) : nullptr}};
  return Status::Ok();
}

nlohmann::ordered_json LinkMeter::Env() const {
  const nlohmann::ordered_json s = server_->Env();
  return {{"program", "iperf3"},
          {"version", s.value("version", "")},
          {"endpoint", s.value("endpoint", "")}};
}

}  // namespace loadbench
