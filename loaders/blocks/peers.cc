#include "loaders/blocks/peers.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>

#include <fmt/format.h>

namespace loadbench {
namespace {

using Clock = std::chrono::steady_clock;  // CLOCK_MONOTONIC, as LOADBENCH_DEADLINE is
constexpr double kIdleS = 120;            // a connection that moves nothing this long has failed
constexpr double kHelloS = 5;        // a connection that has not said its hello by then is closed
constexpr size_t kMostPending = 64;  // connections heard at once before their hello
constexpr char kMagic[8] = {'L', 'B', 'F', 'L', 'E', 'E', 'T', '1'};
constexpr size_t kTokenBytes = 16;
constexpr size_t kHelloBytes = sizeof kMagic + kTokenBytes + 4;
using Hello = std::array<unsigned char, kHelloBytes>;

double Now() { return std::chrono::duration<double>(Clock::now().time_since_epoch()).count(); }

Status Address(const std::string& host, int port, sockaddr_in* a) {
  if (port < 1 || port > 65535) {
    return Status::BadInput(fmt::format("{}:{}: a port is 1 to 65535", host, port));
  }
  *a = {};
  a->sin_family = AF_INET;
  a->sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, host.c_str(), &a->sin_addr) != 1) {
    return Status::BadInput(fmt::format("{}: not an IPv4 address", host));
  }
  return Status::Ok();
}

// Waits until `fd` is ready for `events`: 0, or ETIMEDOUT once `deadline` (a Now() time, 0 for
// none) has passed, EAGAIN after kIdleS of nothing, else errno.
int WaitFor(int fd, short events, double deadline) {
  for (;;) {
    const double now = Now(), idle = now + kIdleS;
    const double until = deadline > 0 ? std::min(deadline, idle) : idle;
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, static_cast<int>(std::max(0.0, until - now) * 1000) + 1);
    if (r > 0) return 0;
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return errno;
    if (deadline > 0 && Now() >= deadline) return ETIMEDOUT;
    if (Now() >= idle) return EAGAIN;
  }
}

// All of [p, p + n) sent or received, through EINTR, before `deadline`: 0, or why not (-1 at
// EOF, ETIMEDOUT at the deadline, EAGAIN idle, errno).
template <typename Io, typename Ptr>
int Whole(Io io, short events, int fd, Ptr p, size_t n, double deadline, uint64_t* moved) {
  while (n > 0) {
    if (const int err = WaitFor(fd, events, deadline); err != 0) return err;
    const ssize_t k = io(fd, p, n);
    if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (k == 0) return -1;
    if (k < 0) return errno;
    p += k;
    n -= static_cast<size_t>(k);
    *moved += static_cast<uint64_t>(k);
  }
  return 0;
}

int WriteAll(int fd, const std::byte* p, size_t n, double deadline, uint64_t* moved) {
  return Whole([](int f, const std::byte* q,
                  size_t m) { return ::send(f, q, m, MSG_NOSIGNAL | MSG_DONTWAIT); },
               POLLOUT, fd, p, n, deadline, moved);
}
int ReadAll(int fd, std::byte* p, size_t n, double deadline, uint64_t* moved) {
  return Whole([](int f, std::byte* q, size_t m) { return ::recv(f, q, m, MSG_DONTWAIT); }, POLLIN,
               fd, p, n, deadline, moved);
}

// Why a transfer with node `node` stopped, `moved` bytes in.
std::string WhyStopped(int err, int node, uint64_t moved) {
  if (err == ETIMEDOUT) {
    return fmt::format("node {} stalled: {} bytes had moved when the run's deadline passed "
                       "(its timeout_s)",
                       node, moved);
  }
  if (err == EAGAIN) return fmt::format("node {}: nothing for {:.0f} s", node, kIdleS);
  return fmt::format("node {}: {}", node, err < 0 ? "closed" : std::strerror(err));
}

std::array<unsigned char, kTokenBytes> TokenBytes(const std::string& hex) {
  std::array<unsigned char, kTokenBytes> out{};
  for (size_t i = 0; i < kTokenBytes && 2 * i + 1 < hex.size(); ++i) {
    out[i] = static_cast<unsigned char>(std::stoul(hex.substr(2 * i, 2), nullptr, 16));
  }
  return out;
}

Hello HelloOf(const std::string& token, int node) {
  Hello h{};
  std::memcpy(h.data(), kMagic, sizeof kMagic);
  const auto t = TokenBytes(token);
  std::memcpy(h.data() + sizeof kMagic, t.data(), kTokenBytes);
  for (int b = 0; b < 4; ++b) {
    h[sizeof kMagic + kTokenBytes + b] = static_cast<unsigned char>(node >> (8 * b));
  }
  return h;
}

bool IsHex(const std::string& text, size_t digits) {
  return text.size() == digits && text.find_first_not_of("0123456789abcdef") == std::string::npos;
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
  const char* token = std::getenv(kTokenVar);
  out->token = token != nullptr ? token : "";
  if (out->nodes > 1 && !IsHex(out->token, 2 * kTokenBytes)) {
    return Status::BadInput(fmt::format("{}: not {} hex digits; the harness gives every run of "
                                        "several readers a token of its own",
                                        kTokenVar, 2 * kTokenBytes));
  }
  if (const char* d = std::getenv(kDeadlineVar); d != nullptr && *d != '\0') {
    char* end = nullptr;
    out->deadline_s = std::strtod(d, &end);
    if (*end != '\0' || !(out->deadline_s > 0)) {
      return Status::BadInput(fmt::format("{}={}: not a time in seconds", kDeadlineVar, d));
    }
  }
  return Status::Ok();
}

std::string NewPeerToken() {
  std::array<unsigned char, kTokenBytes> bytes{};
  for (size_t got = 0; got < bytes.size();) {
    const ssize_t n = ::getrandom(bytes.data() + got, bytes.size() - got, 0);
    if (n > 0) got += static_cast<size_t>(n);
  }
  std::string hex;
  for (const unsigned char b : bytes) hex += fmt::format("{:02x}", b);
  return hex;
}

Status PeerMesh::Connect(int to, double deadline, UniqueFd* fd) {
  sockaddr_in a{};
  const std::string& host = place_.addresses.at(static_cast<size_t>(to));
  const int port = plan_.port + to;
  LB_RETURN_IF_ERROR(Address(host, port, &a));
  const Hello hello = HelloOf(place_.token, place_.node);
  for (;;) {
    UniqueFd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!s.valid()) return Status::FromErrno("socket", errno);
    int err = ::connect(s.get(), reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0 ? 0 : errno;
    if (err == EINPROGRESS && (err = WaitFor(s.get(), POLLOUT, deadline)) == 0) {
      socklen_t len = sizeof err;
      if (::getsockopt(s.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    } else if (err == ETIMEDOUT) {  // WaitFor's: the deadline, not the kernel's own give-up
      return Status::IOError(
          fmt::format("node {} at {}:{}: no answer by the connect deadline", to, host, port));
    }
    uint64_t sent = 0;
    if (err == 0) {
      err = WriteAll(s.get(), reinterpret_cast<const std::byte*>(hello.data()), hello.size(),
                     deadline, &sent);
    }
    if (err == 0) {
      *fd = std::move(s);
      return Status::Ok();
    }
    if ((err != ECONNREFUSED && err != EINTR) || Now() > deadline) {
      return Status::IOErrorFromErrno(fmt::format("node {} at {}:{}", to, host, port),
                                      err < 0 ? ECONNRESET : err);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

namespace {

// A connection heard but not yet taken: its hello so far, and until when it may finish it.
struct Pending {
  UniqueFd fd;
  Hello hello{};
  size_t got = 0;
  double until = 0;
};

// More of `p`'s hello read: false when the connection has closed or failed.
bool ReadHello(Pending* p) {
  for (;;) {
    const ssize_t n =
        ::recv(p->fd.get(), p->hello.data() + p->got, p->hello.size() - p->got, MSG_DONTWAIT);
    if (n > 0) {
      p->got += static_cast<size_t>(n);
      return true;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && errno == EAGAIN;
  }
}

// The sender's node a whole hello names, when it says `token`; -1 otherwise.
int NodeOf(const Hello& h, const std::string& token) {
  const Hello want = HelloOf(token, 0);
  if (std::memcmp(h.data(), want.data(), sizeof kMagic + kTokenBytes) != 0) return -1;
  uint32_t node = 0;
  for (int b = 0; b < 4; ++b)
    node |= static_cast<uint32_t>(h[sizeof kMagic + kTokenBytes + b]) << (8 * b);
  return node < 1u << 20 ? static_cast<int>(node) : -1;
}

}  // namespace

Status PeerMesh::Open(const PeerPlace& place, const MeshPlan& plan, std::byte* buffer,
                      uint64_t size, Claim claim, OnChunk on_chunk) {
  place_ = place, plan_ = plan, buffer_ = buffer, size_ = size;
  claim_ = std::move(claim), on_chunk_ = std::move(on_chunk);
  double deadline = Now() + plan.connect_s;
  if (place.deadline_s > 0) deadline = std::min(deadline, place.deadline_s);
  sockaddr_in me{};
  const std::string& host = place.addresses.at(static_cast<size_t>(place.node));
  LB_RETURN_IF_ERROR(Address(host, plan.port + place.node, &me));
  UniqueFd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  const int one = 1;
  ::setsockopt(listener.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (!listener.valid() ||
      ::bind(listener.get(), reinterpret_cast<const sockaddr*>(&me), sizeof me) != 0 ||
      ::listen(listener.get(), 128) != 0) {
    return Status::IOErrorFromErrno(fmt::format("listening at {}:{}", host, plan.port + place.node),
                                    errno);
  }
  for (int j : plan.to) {
    auto o = std::make_unique<Out>();
    o->node = j;
    LB_RETURN_IF_ERROR(Connect(j, deadline, &o->fd));
    outs_.push_back(std::move(o));
  }
  LB_RETURN_IF_ERROR(Accept(listener.get(), deadline));
  for (auto& o : outs_) o->thread = std::thread([this, p = o.get()] { SendLoop(p); });
  return Status::Ok();
}

// One connection taken from each node of plan_.from that says its hello with the run's token, a
// receiving thread started for it; every other connection closed and counted.
Status PeerMesh::Accept(int listener, double deadline) {
  std::vector<Pending> pending;
  std::set<int> heard;
  while (heard.size() < plan_.from.size()) {
    double wake = deadline;
    std::vector<pollfd> fds = {{listener, POLLIN, 0}};
    for (const Pending& p : pending) {
      fds.push_back({p.fd.get(), POLLIN, 0});
      wake = std::min(wake, p.until);
    }
    if (Now() >= deadline) {
      return Status::IOError(fmt::format(
          "node {}: {} of the {} nodes that send to it connected within {:.0f} s ({} other "
          "connections closed: not the run's readers)",
          place_.node, heard.size(), plan_.from.size(), plan_.connect_s, rejected_));
    }
    const int wait_ms = static_cast<int>(std::max(0.0, wake - Now()) * 1000) + 1;
    if (::poll(fds.data(), fds.size(), wait_ms) < 0 && errno != EINTR) {
      return Status::IOErrorFromErrno("poll", errno);
    }
    for (size_t i = pending.size(); i-- > 0;) {
      Pending& p = pending[i];
      const bool open = (fds[i + 1].revents == 0 || ReadHello(&p)) && Now() < p.until;
      const int node = p.got == kHelloBytes ? NodeOf(p.hello, place_.token) : -1;
      const bool expected = std::count(plan_.from.begin(), plan_.from.end(), node) > 0;
      if (p.got == kHelloBytes && expected && heard.insert(node).second) {
        ++receiving_;
        ins_.emplace_back([this, fd = p.fd.get(), node] {
          ReceiveLoop(fd, node);
          --receiving_;
        });
        in_fds_.push_back(std::move(p.fd));
      } else if (open && p.got < kHelloBytes) {
        continue;
      } else {
        ++rejected_;
      }
      pending.erase(pending.begin() + static_cast<long>(i));
    }
    if ((fds[0].revents & POLLIN) == 0) continue;
    UniqueFd in(::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!in.valid()) continue;
    if (pending.size() >= kMostPending) {
      ++rejected_;
      continue;
    }
    pending.push_back({std::move(in), {}, 0, Now() + kHelloS});
  }
  return Status::Ok();
}

void PeerMesh::Send(int to, uint64_t from, const Chunk& at) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& o : outs_) {
    if (o->node == to) o->queue.push_back({from, at});
  }
  cv_.notify_all();
}

void PeerMesh::EndSends() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& o : outs_) o->ended = true;
  cv_.notify_all();
}

void PeerMesh::SendLoop(Out* o) {
  uint64_t moved = 0;
  for (;;) {
    Outgoing g;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return !o->queue.empty() || o->ended || !error_.empty(); });
      if (o->queue.empty() || !error_.empty()) break;
      g = o->queue.front();
      o->queue.pop_front();
    }
    if (g.from > size_ || g.at.len > size_ - g.from) {
      Fail(fmt::format("sending to node {}: bytes {}+{} are outside this node's {}", o->node,
                       g.from, g.at.len, size_));
      break;
    }
    const uint64_t head[2] = {g.at.offset, g.at.len};
    uint64_t head_moved = 0;
    int err = WriteAll(o->fd.get(), reinterpret_cast<const std::byte*>(head), sizeof head,
                       place_.deadline_s, &head_moved);
    if (err == 0)
      err = WriteAll(o->fd.get(), buffer_ + g.from, g.at.len, place_.deadline_s, &moved);
    if (err != 0) {
      Fail("sending to " + WhyStopped(err, o->node, moved));
      break;
    }
    tx_bytes_ += g.at.len;
  }
  ::shutdown(o->fd.get(), SHUT_WR);
}

void PeerMesh::ReceiveLoop(int fd, int from) {
  uint64_t moved = 0;  // the chunks' bytes that came
  for (;;) {
    uint64_t head[2], head_moved = 0;
    int err = ReadAll(fd, reinterpret_cast<std::byte*>(head), sizeof head, place_.deadline_s,
                      &head_moved);
    if (err == -1 && head_moved == 0) return;  // closed between chunks: all it sends is in
    if (err != 0) return Fail("receiving from " + WhyStopped(err, from, moved + head_moved));
    const Chunk c{head[0], head[1]};
    if (c.offset > size_ || c.len > size_ - c.offset) {
      return Fail(fmt::format("node {} sent bytes {}+{}, outside the {} of this node's buffer",
                              from, c.offset, c.len, size_));
    }
    if (const std::string no = claim_(from, c); !no.empty()) {
      return Fail(fmt::format("node {} sent bytes {}+{}: {}", from, c.offset, c.len, no));
    }
    if ((err = ReadAll(fd, buffer_ + c.offset, c.len, place_.deadline_s, &moved)) != 0) {
      return Fail(
          fmt::format("receiving a chunk at {} from {}", c.offset, WhyStopped(err, from, moved)));
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
