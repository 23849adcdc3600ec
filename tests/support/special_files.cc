#include "tests/support/special_files.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <future>
#include <stdexcept>

#include <fmt/format.h>

#include "loaders/base/file_io.h"

namespace loadbench::test {
namespace {

[[noreturn]] void Throw(const std::string& what, int err) {
  throw std::runtime_error(fmt::format("{}: {}", what, std::strerror(err)));
}

}  // namespace

void MakeFifo(const std::string& path) {
  if (::mkfifo(path.c_str(), 0644) != 0) Throw(fmt::format("mkfifo {}", path), errno);
}

void MakeSocketFile(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) {
    throw std::runtime_error(fmt::format("{}: too long for a socket's path", path));
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) Throw("socket", errno);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    Throw(fmt::format("bind {}", path), errno);
  }
}

bool ReturnsWithin(std::chrono::milliseconds limit, const std::string& fifo,
                   const std::function<void()>& fn) {
  std::future<void> done = std::async(std::launch::async, fn);
  if (done.wait_for(limit) == std::future_status::ready) {
    done.get();
    return true;
  }
  // A reader blocked in open(2) counts as a reader: a non-blocking open for writing succeeds and
  // wakes it; closing at once gives it an empty pipe.
  while (done.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready) {
    const UniqueFd writer(::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC));
  }
  done.get();
  return false;
}

}  // namespace loadbench::test
