#include "loaders/blocks/peers.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include <fmt/format.h>

namespace loadbench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kIdleS = 120;  // a connection that moves nothing this long has failed

double Now() { return std::chrono::duration<double>(Clock::now().time_since_epoch()).count(); }

Status Address(const std::string& host, int port, sockaddr_in* a) {
  *a = {};
  a->sin_family = AF_INET;
  a->sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, host.c_str(), &a->sin_addr) != 1) {
    return Status::BadInput(fmt::format("{}: not an IPv4 address", host));
  }
  return Status::Ok();
}

void Limit(int fd) {
  const timeval idle{kIdleS, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &idle, sizeof idle);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &idle, sizeof idle);
}

// All of [p, p + n) written or read, through EINTR; errno's reason otherwise ("closed" at EOF).
template <typename Io, typename Ptr>
bool Whole(Io io, int fd, Ptr p, size_t n, std::string* why) {
  while (n > 0) {
    const ssize_t k = io(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      *why = k == 0 ? "closed"
                    : (errno == EAGAIN ? fmt::format("nothing for {} s", kIdleS)
                                       : std::strerror(errno));
      return false;
    }
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

bool WriteAll(int fd, const std::byte* p, size_t n, std::string* why) {
  return Whole([](int f, const std::byte* q, size_t m) { return ::send(f, q, m, MSG_NOSIGNAL); },
               fd, p, n, why);
}
bool ReadAll(int fd, std::byte* p, size_t n, std::string* why) {
  return Whole([](int f, std::byte* q, size_t m) { return ::recv(f, q, m, 0); }, fd, p, n, why);
}

}  // namespace

Status PeerPlaceFromEnv(PeerPlace* out) {
  *out = PeerPlace{};
  if (const char* r = std::getenv(kReaderVar); r != nullptr && *r != '\0') {
    if (std::sscanf(r, "%d/%d", &out->node, &out->nodes) != 2 || out->nodes < 1 || out->node < 0 ||
        out->node >= out->nodes) {
      return Status::BadInput(fmt::format("{}={}: not K/N with 0 <= K < N", kReaderVar, r));
    }
  }
  const char* peers = std::getenv(kPeersVar);
  std::istringstream in(peers != nullptr ? peers : "");
  for (std::string a; std::getline(in, a, ',');) out->addresses.push_back(a);
  if (out->addresses.empty()) out->addresses.assign(static_cast<size_t>(out->nodes), "127.0.0.1");
  if (out->addresses.size() < static_cast<size_t>(out->nodes)) {
    return Status::BadInput(fmt::format("{} names {} addresses for {} readers", kPeersVar,
                                        out->addresses.size(), out->nodes));
  }
  return Status::Ok();
}

Status PeerMesh::Connect(const PeerPlace& place, int port, int to, double deadline_s,
                         UniqueFd* fd) {
  sockaddr_in a{};
  const std::string& host = place.addresses.at(static_cast<size_t>(to));
  LB_RETURN_IF_ERROR(Address(host, port + to, &a));
  for (;;) {
    UniqueFd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!s.valid()) return Status::FromErrno("socket", errno);
    if (::connect(s.get(), reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0) {
      Limit(s.get());
      *fd = std::move(s);
      return Status::Ok();
    }
    if ((errno != ECONNREFUSED && errno != EINTR) || Now() > deadline_s) {
      return Status::IOError(
          fmt::format("node {} at {}:{}: {}", to, host, port + to, std::strerror(errno)));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

Status PeerMesh::Open(const PeerPlace& place, int port, const std::vector<int>& to, int from,
                      std::byte* buffer, uint64_t size, double timeout_s, OnChunk on_chunk) {
  buffer_ = buffer, size_ = size, on_chunk_ = std::move(on_chunk);
  const double deadline = Now() + timeout_s;
  sockaddr_in me{};
  const std::string& host = place.addresses.at(static_cast<size_t>(place.node));
  LB_RETURN_IF_ERROR(Address(host, port + place.node, &me));
  UniqueFd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  const int one = 1;
  ::setsockopt(listener.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (!listener.valid() ||
      ::bind(listener.get(), reinterpret_cast<const sockaddr*>(&me), sizeof me) != 0 ||
      ::listen(listener.get(), 128) != 0) {
    return Status::FromErrno(fmt::format("listening at {}:{}", host, port + place.node), errno);
  }
  for (int j : to) {
    auto o = std::make_unique<Out>();
    o->node = j;
    LB_RETURN_IF_ERROR(Connect(place, port, j, deadline, &o->fd));
    outs_.push_back(std::move(o));
  }
  for (int got = 0; got < from;) {
    pollfd p{listener.get(), POLLIN, 0};
    const int wait_ms = static_cast<int>(std::max(0.0, deadline - Now()) * 1000);
    if (::poll(&p, 1, wait_ms) <= 0) {
      return Status::IOError(fmt::format("node {}: {} of the {} nodes that send to it connected "
                                         "within {:.0f} s",
                                         place.node, got, from, timeout_s));
    }
    UniqueFd in(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!in.valid()) continue;
    Limit(in.get());
    ++receiving_;
    ins_.emplace_back([this, fd = in.get()] {
      ReceiveLoop(fd);
      --receiving_;
    });
    in_fds_.push_back(std::move(in));
    ++got;
  }
  for (auto& o : outs_) o->thread = std::thread([this, p = o.get()] { SendLoop(p); });
  return Status::Ok();
}

void PeerMesh::Send(int to, const Chunk& c) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& o : outs_) {
    if (o->node == to) o->queue.push_back(c);
  }
  cv_.notify_all();
}

void PeerMesh::EndSends() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& o : outs_) o->ended = true;
  cv_.notify_all();
}

void PeerMesh::SendLoop(Out* o) {
  for (;;) {
    Chunk c;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return !o->queue.empty() || o->ended || !error_.empty(); });
      if (o->queue.empty() || !error_.empty()) break;
      c = o->queue.front();
      o->queue.pop_front();
    }
    const uint64_t head[2] = {c.offset, c.len};
    std::string why;
    if (!WriteAll(o->fd.get(), reinterpret_cast<const std::byte*>(head), sizeof head, &why) ||
        !WriteAll(o->fd.get(), buffer_ + c.offset, c.len, &why)) {
      Fail(fmt::format("sending to node {}: {}", o->node, why));
      break;
    }
    tx_bytes_ += c.len;
  }
  ::shutdown(o->fd.get(), SHUT_WR);
}

void PeerMesh::ReceiveLoop(int fd) {
  for (;;) {
    uint64_t head[2];
    std::string why;
    if (!ReadAll(fd, reinterpret_cast<std::byte*>(head), sizeof head, &why)) {
      if (why != "closed") Fail("receiving: " + why);
      return;
    }
    const Chunk c{head[0], head[1]};
    if (c.offset > size_ || c.len > size_ - c.offset) {
      return Fail(fmt::format("a peer sent bytes {}+{}, outside the {} of the model", c.offset,
                              c.len, size_));
    }
    if (!ReadAll(fd, buffer_ + c.offset, c.len, &why)) {
      return Fail(fmt::format("receiving a chunk at {}: {}", c.offset, why));
    }
    on_chunk_(c);
    rx_bytes_ += c.len;
  }
}

void PeerMesh::Fail(const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (error_.empty()) error_ = why;
  cv_.notify_all();
}

std::string PeerMesh::error() {
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

Status PeerMesh::Wait() {
  waited_ = true;
  for (auto& o : outs_) {
    if (o->thread.joinable()) o->thread.join();
  }
  for (std::thread& t : ins_) {
    if (t.joinable()) t.join();
  }
  std::lock_guard<std::mutex> lock(mu_);
  return error_.empty() ? Status::Ok() : Status::IOError(error_);
}

PeerMesh::~PeerMesh() {
  if (!waited_) {
    Fail("stopped");
    for (auto& o : outs_) ::shutdown(o->fd.get(), SHUT_RDWR);
    for (UniqueFd& fd : in_fds_) ::shutdown(fd.get(), SHUT_RDWR);
  }
  for (auto& o : outs_) {
    if (o->thread.joinable()) o->thread.join();
  }
  for (std::thread& t : ins_) {
    if (t.joinable()) t.join();
  }
}

}  // namespace loadbench
