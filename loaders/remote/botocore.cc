// botocore's credential chain, asked in a python3 child: the child writes what it found as one
// JSON object on a pipe (never on its command line, never into the environment of anything but
// this process, never into a log), in a process group of its own that is killed, with
// whatever it started (a profile's credential_process), when it does not answer in time.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "loaders/base/file_io.h"
#include "loaders/base/text.h"
#include "loaders/remote/credentials.h"

extern char** environ;

namespace loadbench {
namespace {

using Clock = std::chrono::steady_clock;

// The resolver (the answer's forms: credentials.h). Exit code 3: botocore cannot be imported.
// The current folder is taken off the module path, so that a botocore.py there is not run.
constexpr const char* kResolver = R"(import json, sys
sys.path = [p for p in sys.path if p not in ("", ".")]
try:
    import botocore.exceptions
    import botocore.session
except ImportError:
    sys.exit(3)
def resolve():
    # Session.get_credentials's own loop (CredentialResolver.load_credentials), each provider
    # in turn, so that a failure names the one that failed.
    try:
        providers = botocore.session.Session().get_component("credential_provider").providers
    except botocore.exceptions.ProfileNotFound as e:
        return {"found": False, "looked": [], "why": str(e)}
    for p in providers:
        try:
            creds = p.load()
            if creds is None:
                continue
            frozen = creds.get_frozen_credentials()
        except botocore.exceptions.ProfileNotFound as e:
            return {"found": False, "looked": [], "why": str(e)}
        except Exception as e:
            return {"error": "%s: %s" % (type(e).__name__, e), "provider": p.METHOD}
        expiry = getattr(creds, "_expiry_time", None)
        return {"found": True, "access_key_id": frozen.access_key,
                "secret_access_key": frozen.secret_key, "token": frozen.token,
                "method": creds.method or p.METHOD,
                "expiry_unix_s": expiry.timestamp() if expiry else None}
    return {"found": False, "looked": [p.METHOD for p in providers]}
sys.stdout.write(json.dumps(resolve()))
)";

constexpr int kNoBotocore = 3;
constexpr size_t kLongestAnswer = 64 << 10;

struct ChildRun {
  int spawn_error = 0;  // errno of a child that could not be started
  bool timed_out = false;
  bool too_long = false;  // more than kLongestAnswer bytes: cut off
  int wstatus = 0;
  std::string out;  // its standard output, at most kLongestAnswer + 1 bytes
};

// Reads `fd` into *out until it closes, `deadline` passes or the answer is too long.
void ReadUntil(int fd, Clock::time_point deadline, std::string* out, bool* timed_out) {
  char buf[4096];
  while (out->size() <= kLongestAnswer) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      *timed_out = true;
      return;
    }
    pollfd p = {fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;  // the deadline, checked above
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    out->append(buf, static_cast<size_t>(n));
  }
}

// Waits for `pid` to exit, until `deadline`, without reaping it: its process group stays its
// own until the group is killed.
bool ExitedBy(pid_t pid, Clock::time_point deadline) {
  for (;;) {
    siginfo_t info = {};
    const int r = ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT);
    if (r == 0 && info.si_pid == pid) return true;
    if (r != 0 && errno != EINTR) return true;  // not ours to wait for any more
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// `argv` in a process group of its own (standard input and error /dev/null), its standard output
// read until it ends; the group killed at the end, however it ended, and the child reaped.
ChildRun RunBounded(const std::vector<std::string>& argv, double timeout_s) {
  ChildRun r;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    r.spawn_error = errno;
    return r;
  }
  UniqueFd rd(fds[0]), wr(fds[1]);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, wr.get(), 1);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  r.spawn_error = ::posix_spawnp(&pid, args[0], &fa, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  wr.reset();
  if (r.spawn_error != 0) return r;
  const Clock::time_point deadline =
      Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  ReadUntil(rd.get(), deadline, &r.out, &r.timed_out);
  r.too_long = r.out.size() > kLongestAnswer;
  if (!r.timed_out && !r.too_long && !ExitedBy(pid, deadline)) r.timed_out = true;
  ::killpg(pid, SIGKILL);  // the leader not reaped yet: the group is still the child's
  while (::waitpid(pid, &r.wstatus, 0) < 0 && errno == EINTR) {
  }
  return r;
}

// Text of the answer on one line: control characters as spaces, invalid UTF-8 replaced.
std::string OneLine(std::string_view s) {
  std::string out = JsonSafe(s);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  return out;
}

std::string Ended(int wstatus) {
  if (WIFSIGNALED(wstatus)) return fmt::format("was killed by signal {}", WTERMSIG(wstatus));
  return fmt::format("ended with exit code {}", WEXITSTATUS(wstatus));
}

}  // namespace

Status BotocoreCredentials(const BotocoreOptions& options, AwsCredentials* out) {
  *out = {};
  std::vector<std::string> tried;
  for (const std::string& python : options.pythons) {
    const ChildRun r = RunBounded({python, "-c", kResolver}, options.timeout_s);
    if (r.spawn_error != 0) {
      tried.push_back(fmt::format("{}: {}", python, std::strerror(r.spawn_error)));
      continue;
    }
    if (r.timed_out) {
      return Status::BadInput(fmt::format(
          "no AWS credentials: botocore ({}) found none within {:g} s and was killed (a container "
          "or instance metadata endpoint that does not answer?)",
          python, options.timeout_s));
    }
    if (r.too_long) {
      return Status::BadInput(
          fmt::format("no AWS credentials: botocore's answer ({}) is longer than {} bytes", python,
                      kLongestAnswer));
    }
    if (WIFEXITED(r.wstatus) && WEXITSTATUS(r.wstatus) == kNoBotocore) {
      tried.push_back(fmt::format("{}: no botocore", python));
      continue;
    }
    if (!WIFEXITED(r.wstatus) || WEXITSTATUS(r.wstatus) != 0) {
      return Status::BadInput(fmt::format("no AWS credentials: botocore ({}) {} without an answer",
                                          python, Ended(r.wstatus)));
    }
    return ParseBotocoreAnswer(r.out, out);
  }
  out->source = fmt::format("none (no python3 with botocore: {})", fmt::join(tried, "; "));
  return Status::Ok();
}

Status ParseBotocoreAnswer(std::string_view answer, AwsCredentials* out) {
  *out = {};
  const nlohmann::json a = nlohmann::json::parse(answer, nullptr, false);
  const auto text = [&](const char* key) {
    return a.contains(key) && a[key].is_string() ? a[key].get<std::string>() : std::string();
  };
  if (!a.is_object()) {
    return Status::BadInput(fmt::format(
        "no AWS credentials: botocore's answer is not a JSON object ({} bytes)", answer.size()));
  }
  if (a.contains("error")) {
    std::string why = OneLine(text("error"));
    if (why.size() > 400) why = why.substr(0, 400) + "...";
    const std::string provider = OneLine(text("provider"));
    return Status::BadInput(fmt::format("no AWS credentials: botocore{} failed: {}",
                                        provider.empty() ? "" : "'s " + provider, why));
  }
  const nlohmann::json found = a.value("found", nlohmann::json());
  if (found == false) {
    std::vector<std::string> looked;
    for (const nlohmann::json& p : a.value("looked", nlohmann::json::array())) {
      if (p.is_string()) looked.push_back(OneLine(p.get<std::string>()));
    }
    out->source = a.contains("why")
                      ? fmt::format("none (botocore: {})", OneLine(text("why")))
                      : fmt::format("none (botocore looked in: {})", fmt::join(looked, ", "));
    return Status::Ok();
  }
  const std::string method = OneLine(text("method"));
  const nlohmann::json token = a.value("token", nlohmann::json());
  const nlohmann::json expiry = a.value("expiry_unix_s", nlohmann::json());
  if (found != true || text("access_key_id").empty() || text("secret_access_key").empty() ||
      !(token.is_null() || token.is_string()) || !(expiry.is_null() || expiry.is_number())) {
    return Status::BadInput(fmt::format(
        "no AWS credentials: botocore's answer{} lacks a key id, a secret, or a well-formed token "
        "or expiry",
        method.empty() ? "" : " (from " + method + ")"));
  }
  out->access_key_id = text("access_key_id");
  out->secret_access_key = text("secret_access_key");
  out->session_token = token.is_string() ? token.get<std::string>() : "";
  out->source = fmt::format("botocore: {}", method.empty() ? "unnamed provider" : method);
  out->expiry_unix_s = expiry.is_number() ? static_cast<int64_t>(expiry.get<double>()) : 0;
  return Status::Ok();
}

}  // namespace loadbench
