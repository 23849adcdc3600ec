#include "loaders/base/proc_fields.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>

namespace loadbench {

std::map<std::string, uint64_t> ParseProcFields(std::string_view text) {
  std::map<std::string, uint64_t> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    const std::string line(text.substr(pos, nl - pos));
    pos = nl + 1;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const char* v = line.c_str() + colon + 1;
    char* end = nullptr;
    const unsigned long long n = std::strtoull(v, &end, 10);
    if (end == v) continue;
    const bool kib = std::string_view(end).find("kB") != std::string_view::npos;
    out[line.substr(0, colon)] = kib ? n * 1024 : n;
  }
  return out;
}

std::optional<int64_t> ProcFieldIn(const std::optional<std::string>& text, const std::string& key) {
  if (!text) return std::nullopt;
  const auto fields = ParseProcFields(*text);
  const auto it = fields.find(key);
  if (it == fields.end()) return std::nullopt;
  return static_cast<int64_t>(it->second);
}

std::map<std::string, uint64_t> ReadProcFields(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return ParseProcFields(text.str());
}

std::optional<uint64_t> ProcField(const std::string& path, const std::string& key) {
  const auto fields = ReadProcFields(path);
  const auto it = fields.find(key);
  if (it == fields.end()) return std::nullopt;
  return it->second;
}

std::optional<uint64_t> MeminfoBytes(const std::string& key) {
  return ProcField("/proc/meminfo", key);
}

std::vector<std::string> ProcStatFields(long pid) {
  // One line, read through the stream (not its buffer): a process that ends between the open
  // and the read makes read() fail with ESRCH, which the stream turns into a failed read and an
  // istreambuf_iterator would throw past every caller.
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  std::getline(in, text);
  const size_t paren = text.rfind(')');
  if (paren == std::string::npos) return {};
  std::vector<std::string> fields(3);  // [0] unused, [1] and [2] left empty: fields[n] is field n
  std::istringstream rest(text.substr(paren + 1));
  for (std::string f; rest >> f;) fields.push_back(f);
  return fields;
}

std::vector<long> AncestorPids(long pid) {
  std::vector<long> out;
  long p = ::getppid();
  if (pid != 0) {
    const std::vector<std::string> stat = ProcStatFields(pid);
    p = stat.size() > 4 ? std::strtol(stat[4].c_str(), nullptr, 10) : 0;
  }
  while (p > 1 && out.size() < 64) {
    out.push_back(p);
    const std::vector<std::string> stat = ProcStatFields(p);
    if (stat.size() <= 4) break;
    p = std::strtol(stat[4].c_str(), nullptr, 10);
  }
  return out;
}

}  // namespace loadbench
