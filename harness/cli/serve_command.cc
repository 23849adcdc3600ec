// `loadbench serve --kind http|s3 --root DIR`: a real server for remote models on 127.0.0.1
// (harness/net/server.h), for as long as the command runs. It prints one line with the
// endpoint once the server answers, and at SIGINT or SIGTERM (or, when asked, the end of its
// standard input) stops it and removes everything it made, exit 0. This is how tests of the
// remote client and scripts get a server.
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include <fmt/format.h>

#include "harness/cli/commands.h"
#include "harness/net/server.h"
#include "harness/process/interrupt.h"
#include "loaders/base/units.h"

namespace loadbench::cli {
namespace {

// Whether standard input has reached its end (or was closed); consumes what it holds.
bool StdinClosed() {
  pollfd p{0, POLLIN, 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  if ((p.revents & (POLLHUP | POLLERR | POLLNVAL)) != 0 && (p.revents & POLLIN) == 0) return true;
  char buf[512];
  return ::read(0, buf, sizeof buf) == 0;
}

}  // namespace

int ServeCommand(const ServeFlags& f) {
  ServerSpec spec;
  spec.kind = f.kind;
  spec.root = f.root;
  spec.buckets = f.buckets;
  if (!f.limit_rate.empty()) {
    if (Status s = ParseBytes(f.limit_rate, "--limit-rate", &spec.limit_rate); !s.ok()) {
      return ReportError("serve", s);
    }
  }
  InstallInterruptHandlers();
  std::unique_ptr<Server> server;
  if (Status s = Server::Start(spec, &server); !s.ok()) return ReportError("serve", s);
  const nlohmann::ordered_json env = server->Env();
  fmt::print("serving {} at {} ({} {})\n", env["root"].get<std::string>(), server->endpoint(),
             env["program"].get<std::string>(), env["version"].get<std::string>());
  std::fflush(stdout);
  while (!Interrupted() && !(f.until_stdin_closes && StdinClosed())) {
    if (!server->running()) {
      (void)server->Stop();
      return ReportError("serve", Status::Failed(fmt::format("{} at {} ended by itself",
                                                             env["program"].get<std::string>(),
                                                             server->endpoint())));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (Status s = server->Stop(); !s.ok()) return ReportError("serve", s);
  return 0;
}

}  // namespace loadbench::cli
