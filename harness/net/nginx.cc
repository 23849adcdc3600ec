// The http kind: nginx serving a folder read-only on 127.0.0.1, with a configuration of its own
// in a temporary folder, so that it never touches /etc/nginx, /var/log/nginx, /var/lib/nginx
// or /run: keep-alive connections, ranges (nginx's default), a per-connection rate limit when
// asked for. sendfile is off: on this kind of machine the page-cache pages nginx sends over
// loopback with sendfile stay pinned, so that no drop takes them and every later cold run of
// the file starts partly resident (docs/remote.md, "An experiment's server").
#include <unistd.h>

#include <fstream>

#include <fmt/format.h>

#include "harness/net/kinds.h"
#include "harness/process/child.h"
#include "harness/process/program.h"

namespace loadbench {
namespace {

constexpr int kKeepaliveTimeoutS = 75;
constexpr int kKeepaliveRequests = 100000;

// A path as one nginx configuration token: double-quoted, with '"' and '\' escaped. A '$'
// would be read as a variable (root takes variables), so none is allowed.
Status Quoted(const std::string& path, std::string* out) {
  if (path.find_first_of("$\n\r{};") != std::string::npos) {
    return Status::BadInput(
        fmt::format("{}: a path nginx cannot take (it holds $, a newline, braces or ;)", path));
  }
  std::string q = "\"";
  for (const char c : path) {
    if (c == '"' || c == '\\') q += '\\';
    q += c;
  }
  *out = q + "\"";
  return Status::Ok();
}

std::string ConfigText(const ServerSpec& spec, const std::string& root, const std::string& temp,
                       int port) {
  const std::string t = temp + "/";
  std::string c =
      fmt::format("# Written by loadbench (harness/net/nginx.cc): {} served read-only on {}.\n"
                  "daemon off;\nmaster_process on;\nworker_processes 1;\n",
                  root, spec.address);
  if (::geteuid() == 0) c += "user root;\n";  // as root, workers would otherwise be nobody
  c += fmt::format(
      "pid {0}nginx.pid;\nerror_log {0}error.log warn;\n"
      "events {{\n  worker_connections 1024;\n}}\n"
      "http {{\n  default_type application/octet-stream;\n  access_log {0}access.log;\n"
      "  client_body_temp_path {0}client_body;\n  proxy_temp_path {0}proxy;\n"
      "  fastcgi_temp_path {0}fastcgi;\n  uwsgi_temp_path {0}uwsgi;\n  scgi_temp_path {0}scgi;\n"
      "  sendfile off;\n  tcp_nodelay on;\n"
      "  keepalive_timeout {1}s;\n  keepalive_requests {2};\n",
      t, kKeepaliveTimeoutS, kKeepaliveRequests);
  c += fmt::format("  server {{\n    listen {}:{};\n    server_name localhost;\n", spec.address,
                   port);
  c += fmt::format("    root {};\n    autoindex {};\n", root, spec.listings ? "on" : "off");
  if (spec.limit_rate > 0) c += fmt::format("    limit_rate {};\n", spec.limit_rate);
  c += "    location / {\n      limit_except GET HEAD { deny all; }\n    }\n  }\n}\n";
  return c;
}

}  // namespace

Status PrepareNginx(const ServerSpec& spec, const std::string& temp_dir, ServerLaunch* out) {
  ServerLaunch l;
  l.name = "nginx";
  LB_RETURN_IF_ERROR(FindProgram("nginx", "nginx-light", &l.program));
  std::string root, temp;
  LB_RETURN_IF_ERROR(Quoted(spec.root, &root));
  LB_RETURN_IF_ERROR(Quoted(temp_dir, &temp));
  std::string said;
  LB_RETURN_IF_ERROR(RunToEnd({.argv = {l.program, "-v"}, .timeout_s = 10}, &said));
  l.version = VersionIn(said);
  LB_RETURN_IF_ERROR(FreeLoopbackPort(&l.port));
  l.config_text = ConfigText(spec, root, temp_dir, l.port);
  const std::string conf = temp_dir + "/nginx.conf";
  std::ofstream(conf) << l.config_text;
  // -p: relative paths under the temporary folder; -e: the log of the start itself, before the
  // configuration is read (the built-in one may be /var/log/nginx/error.log).
  const std::vector<std::string> common = {
      "-p", temp_dir + "/", "-e", temp_dir + "/error.log", "-c", conf};
  std::vector<std::string> test = {l.program, "-t", "-q"};
  test.insert(test.end(), common.begin(), common.end());
  if (Status s = RunToEnd({.argv = test, .timeout_s = 10, .netns = spec.netns}, &said); !s.ok()) {
    return Status::IOError(
        fmt::format("nginx refuses its configuration {}: {}", conf, s.message()));
  }
  l.argv = {l.program};
  l.argv.insert(l.argv.end(), common.begin(), common.end());
  l.config = {{"worker_processes", 1},
              {"sendfile", false},
              {"tcp_nodelay", true},
              {"keepalive_timeout_s", kKeepaliveTimeoutS},
              {"keepalive_requests", kKeepaliveRequests},
              {"limit_rate_bytes_per_s", spec.limit_rate},
              {"ranges", true},
              {"autoindex", spec.listings},
              {"methods", {"GET", "HEAD"}}};
  *out = std::move(l);
  return Status::Ok();
}

}  // namespace loadbench
