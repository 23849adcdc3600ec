#include "loaders/remote/credentials.h"

#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <mutex>

#include <fmt/format.h>

namespace loadbench {
namespace {

const char* EnvOrNull(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

// The INI file of AWS credentials: section -> key -> value.
using Ini = std::map<std::string, std::map<std::string, std::string>>;

std::string Trim(std::string s) {
  const char* blank = " \t\r";
  s.erase(0, s.find_first_not_of(blank));
  s.erase(s.find_last_not_of(blank) + 1);
  return s;
}

Status ReadIni(const std::string& path, Ini* out) {
  std::ifstream in(path);
  if (!in) return Status::BadInput(fmt::format("{}: cannot read the credentials file", path));
  std::string line, section;
  for (int n = 1; std::getline(in, line); ++n) {
    line = Trim(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      section = Trim(line.substr(1, line.size() - 2));
      continue;
    }
    const size_t eq = line.find('=');
    if (eq == std::string::npos || section.empty()) {
      return Status::BadInput(
          fmt::format("{}: line {}: not `[profile]` or `key = value`", path, n));
    }
    (*out)[section][Trim(line.substr(0, eq))] = Trim(line.substr(eq + 1));
  }
  return Status::Ok();
}

// Keys a process exported (kCredentialsSourceVar) are the environment's own when its workers
// read them: named by the source that process found while they are still the ones it exported.
void NameExported(AwsCredentials* c) {
  const char* source = EnvOrNull(kCredentialsSourceVar);
  const char* key = EnvOrNull(kCredentialsKeyVar);
  if (source == nullptr || key == nullptr || c->access_key_id != key) return;
  c->source = source;
  if (const char* expiry = EnvOrNull(kCredentialsExpiryVar)) {
    c->expiry_unix_s = std::strtoll(expiry, nullptr, 10);
  }
}

void SetOrUnset(const char* name, const std::string& value) {
  if (value.empty()) {
    ::unsetenv(name);
  } else {
    ::setenv(name, value.c_str(), 1);
  }
}

// What botocore found, into this process's environment, for its workers to inherit.
void Export(const AwsCredentials& c) {
  if (c.found()) {
    ::setenv("AWS_ACCESS_KEY_ID", c.access_key_id.c_str(), 1);
    ::setenv("AWS_SECRET_ACCESS_KEY", c.secret_access_key.c_str(), 1);
    SetOrUnset("AWS_SESSION_TOKEN", c.session_token);
  }
  SetOrUnset(kCredentialsKeyVar, c.access_key_id);
  SetOrUnset(kCredentialsExpiryVar, c.expiry_unix_s ? std::to_string(c.expiry_unix_s) : "");
  ::setenv(kCredentialsSourceVar, c.source.c_str(), 1);
}

std::mutex found_here_mutex;
AwsCredentials found_here;  // keys cleared

std::string Duration(int64_t s) {
  if (s >= 3600) return fmt::format("{} h {} min", s / 3600, s % 3600 / 60);
  if (s >= 60) return fmt::format("{} min", s / 60);
  return fmt::format("{} s", s);
}

}  // namespace

Status StaticCredentials(AwsCredentials* out) {
  *out = {};
  const char* id = EnvOrNull("AWS_ACCESS_KEY_ID");
  const char* secret = EnvOrNull("AWS_SECRET_ACCESS_KEY");
  if (id && secret) {
    out->access_key_id = id;
    out->secret_access_key = secret;
    if (const char* token = EnvOrNull("AWS_SESSION_TOKEN")) out->session_token = token;
    out->source = "environment";
    return Status::Ok();
  }
  std::string file;
  if (const char* f = EnvOrNull("AWS_SHARED_CREDENTIALS_FILE")) {
    file = f;
  } else if (const char* home = EnvOrNull("HOME")) {
    file = fmt::format("{}/.aws/credentials", home);
  }
  std::ifstream probe(file);
  if (file.empty() || !probe) return Status::Ok();
  Ini ini;
  LB_RETURN_IF_ERROR(ReadIni(file, &ini));
  const std::string profile = EnvOrNull("AWS_PROFILE") ? EnvOrNull("AWS_PROFILE") : "default";
  const auto it = ini.find(profile);
  if (it == ini.end()) return Status::Ok();
  const auto& kv = it->second;
  if (kv.count("aws_access_key_id") && kv.count("aws_secret_access_key")) {
    out->access_key_id = kv.at("aws_access_key_id");
    out->secret_access_key = kv.at("aws_secret_access_key");
    if (kv.count("aws_session_token")) out->session_token = kv.at("aws_session_token");
    out->source = fmt::format("profile {}", profile);
  }
  return Status::Ok();
}

Status FindCredentials(AwsCredentials* out) {
  // One asker at a time: a second waits for the first's export instead of asking again.
  static std::mutex asking;
  const std::lock_guard<std::mutex> lock(asking);
  AwsCredentials c;
  LB_RETURN_IF_ERROR(StaticCredentials(&c));
  if (c.found()) {
    NameExported(&c);
  } else if (const char* handed = EnvOrNull(kCredentialsSourceVar);
             handed && !EnvOrNull(kCredentialsKeyVar)) {
    c.source = handed;  // the process that asked botocore found none: not asked again
  } else {
    LB_RETURN_IF_ERROR(BotocoreCredentials(BotocoreOptions{}, &c));
    Export(c);
  }
  {
    const std::lock_guard<std::mutex> here(found_here_mutex);
    found_here = AwsCredentials{};
    found_here.source = c.source;
    found_here.expiry_unix_s = c.expiry_unix_s;
  }
  *out = std::move(c);
  return Status::Ok();
}

AwsCredentials CredentialsFoundHere() {
  const std::lock_guard<std::mutex> lock(found_here_mutex);
  return found_here;
}

std::string DescribeCredentials(const AwsCredentials& c, int64_t now_unix_s) {
  if (c.expiry_unix_s == 0) return c.source;
  const time_t t = static_cast<time_t>(c.expiry_unix_s);
  struct tm utc = {};
  char when[32] = {};
  ::gmtime_r(&t, &utc);
  std::strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &utc);
  const int64_t left = c.expiry_unix_s - now_unix_s;
  return left >= 0 ? fmt::format("{}, valid until {} ({} from now)", c.source, when, Duration(left))
                   : fmt::format("{}, expired at {} ({} ago)", c.source, when, Duration(-left));
}

}  // namespace loadbench
