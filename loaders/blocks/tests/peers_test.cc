// The readers' place from their environment, and the mesh that moves chunks between them: three
// meshes of one process on loopback pass a buffer along a chain, every byte landing in its
// place; a connection that does not say the run's token takes no reader's place and feeds no
// bytes; a chunk outside the buffer or not claimed, a sender that trickles past the deadline, a
// peer that never listens or never answers, and a port past 65535 are errors that name why.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "loaders/blocks/peers.h"

namespace loadbench {
namespace {

using Clock = std::chrono::steady_clock;

double Now() { return std::chrono::duration<double>(Clock::now().time_since_epoch()).count(); }

constexpr char kToken[] = "00112233445566778899aabbccddeeff";

PeerPlace Place(int node, int nodes, double deadline_s = 0) {
  return {node, nodes, std::vector<std::string>(static_cast<size_t>(nodes), "127.0.0.1"), kToken,
          deadline_s};
}

PeerMesh::Claim Any() {
  return [](int, const Chunk&) { return std::string(); };
}

class PeerEnv : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const char* var : {kReaderVar, kPeersVar, kTokenVar, kDeadlineVar}) ::unsetenv(var);
  }
};

TEST_F(PeerEnv, APlaceComesFromTheReaderPeersTokenAndDeadlineVariables) {
  PeerPlace p;
  TearDown();
  ASSERT_TRUE(PeerPlaceFromEnv(&p).ok());
  EXPECT_EQ(p.node, 0);
  EXPECT_EQ(p.nodes, 1);
  EXPECT_EQ(p.addresses, (std::vector<std::string>{"127.0.0.1"}));
  ::setenv(kReaderVar, "2/3", 1);
  EXPECT_NE(PeerPlaceFromEnv(&p).message().find("LOADBENCH_FLEET_TOKEN: not 32 hex digits"),
            std::string::npos);
  ::setenv(kTokenVar, kToken, 1);
  ASSERT_TRUE(PeerPlaceFromEnv(&p).ok());
  EXPECT_EQ(p.node, 2);
  EXPECT_EQ(p.addresses.size(), 3u);
  EXPECT_EQ(p.token, kToken);
  EXPECT_EQ(p.deadline_s, 0);
  ::setenv(kDeadlineVar, "1234.5", 1);
  ASSERT_TRUE(PeerPlaceFromEnv(&p).ok());
  EXPECT_EQ(p.deadline_s, 1234.5);
  ::setenv(kDeadlineVar, "soon", 1);
  EXPECT_EQ(PeerPlaceFromEnv(&p).code(), Status::Code::kBadInput);
  ::unsetenv(kDeadlineVar);
  ::setenv(kPeersVar, "169.254.9.10,169.254.9.11,169.254.9.12,169.254.9.13", 1);
  ASSERT_TRUE(PeerPlaceFromEnv(&p).ok());
  EXPECT_EQ(p.addresses[2], "169.254.9.12");
  ::setenv(kPeersVar, "169.254.9.10", 1);
  EXPECT_NE(PeerPlaceFromEnv(&p).message().find("1 addresses for 3 readers"), std::string::npos);
  ::setenv(kReaderVar, "3/3", 1);
  EXPECT_EQ(PeerPlaceFromEnv(&p).code(), Status::Code::kBadInput);
}

TEST(PeerToken, EveryRunGetsANewOne) {
  const std::string a = NewPeerToken(), b = NewPeerToken();
  EXPECT_EQ(a.size(), 32u);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos) << a;
  EXPECT_NE(a, b);
}

// A raw connection to 127.0.0.1:`port`, as any local process can make; -1 when refused.
int Dial(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// The hello a node says on the wire (peers.h): "LBFLEET1", the token's 16 bytes, the node.
std::string HelloBytes(const std::string& token, uint32_t node) {
  std::string h = "LBFLEET1";
  for (size_t i = 0; i < 32; i += 2) h += static_cast<char>(std::stoul(token.substr(i, 2), {}, 16));
  for (int b = 0; b < 4; ++b) h += static_cast<char>(node >> (8 * b));
  return h;
}

// The audit's attack: a local loop connecting to the nodes' ports and sending a header for
// offset 0 and 8 bytes. Without the token it takes no place and feeds nothing.
void Intrude(int port, std::atomic<bool>* stop, std::atomic<int>* made) {
  const uint64_t head[2] = {0, 8};
  while (!*stop) {
    for (int k = 0; k < 3; ++k) {
      const int fd = Dial(port + k);
      if (fd < 0) continue;
      ++*made;
      (void)!::send(fd, head, sizeof head, MSG_NOSIGNAL);
      (void)!::send(fd, "intruder", 8, MSG_NOSIGNAL);
      ::close(fd);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

constexpr int kPort = 29800;

// Three nodes in a chain: node 0 sends every chunk to 1, which passes each on to 2.
void Chain(int port, uint64_t size, uint64_t chunk, std::vector<std::vector<std::byte>>* buffers,
           std::vector<Status>* results, std::vector<int>* rejected) {
  std::vector<std::thread> nodes;
  for (int k = 0; k < 3; ++k) {
    nodes.emplace_back([&, k] {
      PeerMesh mesh;
      std::atomic<uint64_t> got{0};
      MeshPlan plan{.port = port, .to = {}, .from = {}, .connect_s = 10};
      if (k < 2) plan.to.push_back(k + 1);
      if (k > 0) plan.from.push_back(k - 1);
      Status s =
          mesh.Open(Place(k, 3), plan, (*buffers)[k].data(), size, Any(), [&](const Chunk& c) {
            got += c.len;
            if (k < 2) mesh.Send(k + 1, c);
          });
      if (s.ok() && k == 0) {
        for (uint64_t at = 0; at < size; at += chunk)
          mesh.Send(1, {at, std::min(chunk, size - at)});
      }
      while (s.ok() && k > 0 && got < size && mesh.error().empty()) std::this_thread::yield();
      if (s.ok()) mesh.EndSends();
      (*results)[k] = s.ok() ? mesh.Wait() : s;
      (*rejected)[k] = mesh.rejected();
      if (k == 1) {
        EXPECT_EQ(mesh.tx_bytes(), size);
      }
    });
  }
  for (std::thread& t : nodes) t.join();
}

TEST(PeerMesh, AChainPassesEveryChunkIntoItsPlace) {
  constexpr uint64_t kSize = 3 * 1024 * 1024 + 17, kChunk = 256 * 1024;
  std::vector<std::vector<std::byte>> buffers(3, std::vector<std::byte>(kSize));
  for (uint64_t i = 0; i < kSize; ++i) buffers[0][i] = static_cast<std::byte>(i * 7 + 1);
  std::vector<Status> results(3);
  std::vector<int> rejected(3);
  Chain(kPort, kSize, kChunk, &buffers, &results, &rejected);
  for (int k = 0; k < 3; ++k) EXPECT_TRUE(results[k].ok()) << k << ": " << results[k].message();
  EXPECT_EQ(std::memcmp(buffers[2].data(), buffers[0].data(), kSize), 0);
  EXPECT_EQ(rejected, (std::vector<int>{0, 0, 0}));
}

TEST(PeerMesh, AConnectionWithoutTheTokenTakesNoPlaceAndFeedsNothing) {
  constexpr uint64_t kSize = 2 * 1024 * 1024, kChunk = 256 * 1024;
  std::vector<std::vector<std::byte>> buffers(3, std::vector<std::byte>(kSize));
  for (uint64_t i = 0; i < kSize; ++i) buffers[0][i] = static_cast<std::byte>(i * 5 + 3);
  std::atomic<bool> stop{false};
  std::atomic<int> made{0};
  std::thread intruder(Intrude, kPort + 40, &stop, &made);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // in before the nodes listen
  std::vector<Status> results(3);
  std::vector<int> rejected(3);
  Chain(kPort + 40, kSize, kChunk, &buffers, &results, &rejected);
  stop = true;
  intruder.join();
  for (int k = 0; k < 3; ++k) EXPECT_TRUE(results[k].ok()) << k << ": " << results[k].message();
  EXPECT_EQ(std::memcmp(buffers[2].data(), buffers[0].data(), kSize), 0);
  EXPECT_GT(made.load(), 0);
  EXPECT_GT(rejected[1] + rejected[2], 0) << "the intruder's connections are counted";
}

// A real peer (it says the token) that sends a chunk the node does not need fails the round.
TEST(PeerMesh, AChunkTheNodeDoesNotClaimIsAnErrorNamingTheSender) {
  std::vector<std::byte> buf(1 << 16);
  Status receiver;
  std::thread rx([&] {
    PeerMesh mesh;
    receiver = mesh.Open(
        Place(1, 2), {.port = kPort + 50, .to = {}, .from = {0}, .connect_s = 10}, buf.data(),
        buf.size(),
        [](int, const Chunk& c) {
          return c.offset == 0 ? std::string() : std::string("in already");
        },
        [](const Chunk&) {});
    if (receiver.ok()) receiver = mesh.Wait();
  });
  std::vector<std::byte> out(1 << 16);
  PeerMesh mesh;
  ASSERT_TRUE(mesh.Open(Place(0, 2), {.port = kPort + 50, .to = {1}, .from = {}, .connect_s = 10},
                        out.data(), out.size(), Any(), [](const Chunk&) {})
                  .ok());
  mesh.Send(1, {0, 4096});
  mesh.Send(1, {4096, 4096});
  mesh.EndSends();
  (void)mesh.Wait();
  rx.join();
  EXPECT_EQ(receiver.message(), "node 0 sent bytes 4096+4096: in already");
}

// A sender whose buffer is laid out otherwise than the receiver's (bcast's node 0 under tp holds
// the span, node k its part packed) names where the bytes lie in its own buffer; the wire
// carries the receiver's offset.
TEST(PeerMesh, ASenderSendsFromItsOwnPlaceToTheReceiversPlace) {
  std::vector<std::byte> span(1 << 16), part(1 << 12);
  for (size_t i = 0; i < span.size(); ++i) span[i] = static_cast<std::byte>(i * 13 + 5);
  std::vector<Chunk> landed;
  Status receiver;
  std::thread rx([&] {
    PeerMesh mesh;
    receiver =
        mesh.Open(Place(1, 2), {.port = kPort + 80, .to = {}, .from = {0}, .connect_s = 10},
                  part.data(), part.size(), Any(), [&](const Chunk& c) { landed.push_back(c); });
    if (receiver.ok()) receiver = mesh.Wait();
  });
  PeerMesh mesh;
  ASSERT_TRUE(mesh.Open(Place(0, 2), {.port = kPort + 80, .to = {1}, .from = {}, .connect_s = 10},
                        span.data(), span.size(), Any(), [](const Chunk&) {})
                  .ok());
  mesh.Send(1, 40000, {0, 1000});
  mesh.Send(1, 9000, {1000, 3096});
  mesh.EndSends();
  EXPECT_TRUE(mesh.Wait().ok());
  rx.join();
  EXPECT_TRUE(receiver.ok()) << receiver.message();
  EXPECT_EQ(std::memcmp(part.data(), span.data() + 40000, 1000), 0);
  EXPECT_EQ(std::memcmp(part.data() + 1000, span.data() + 9000, 3096), 0);
  ASSERT_EQ(landed.size(), 2u);
  EXPECT_EQ(landed[1].offset, 1000u);
  EXPECT_EQ(mesh.tx_bytes(), 4096u);
}

// A send from past the sender's own buffer reads nothing there: the connection fails, named.
TEST(PeerMesh, ASendFromOutsideTheSendersBufferIsAnError) {
  std::vector<std::byte> buf(4096), in(1 << 16);
  Status receiver;
  std::thread rx([&] {
    PeerMesh mesh;
    receiver = mesh.Open(Place(1, 2), {.port = kPort + 90, .to = {}, .from = {0}, .connect_s = 10},
                         in.data(), in.size(), Any(), [](const Chunk&) {});
    if (receiver.ok()) receiver = mesh.Wait();
  });
  PeerMesh mesh;
  ASSERT_TRUE(mesh.Open(Place(0, 2), {.port = kPort + 90, .to = {1}, .from = {}, .connect_s = 10},
                        buf.data(), buf.size(), Any(), [](const Chunk&) {})
                  .ok());
  mesh.Send(1, 4000, {0, 200});
  mesh.EndSends();
  const Status s = mesh.Wait();
  rx.join();
  EXPECT_EQ(s.message(), "sending to node 1: bytes 4000+200 are outside this node's 4096");
  EXPECT_EQ(mesh.tx_bytes(), 0u);
}

TEST(PeerMesh, AChunkOutsideTheBufferIsAnError) {
  std::vector<std::byte> big(1 << 20), small(1 << 16);
  Status receiver, sender;
  std::thread rx([&] {
    PeerMesh mesh;
    receiver = mesh.Open(Place(1, 2), {.port = kPort + 10, .to = {}, .from = {0}, .connect_s = 10},
                         small.data(), small.size(), Any(), [](const Chunk&) {});
    if (receiver.ok()) receiver = mesh.Wait();
  });
  PeerMesh mesh;
  sender = mesh.Open(Place(0, 2), {.port = kPort + 10, .to = {1}, .from = {}, .connect_s = 10},
                     big.data(), big.size(), Any(), [](const Chunk&) {});
  ASSERT_TRUE(sender.ok()) << sender.message();
  mesh.Send(1, {0, big.size()});
  mesh.EndSends();
  (void)mesh.Wait();
  rx.join();
  EXPECT_NE(receiver.message().find("node 0 sent bytes 0+1048576, outside the"), std::string::npos)
      << receiver.message();
}

// A sender that says the token, then trickles a chunk a few bytes at a time, fails the node at
// the run's deadline, named; it does not hold the node for as long as it likes.
TEST(PeerMesh, ASenderThatTricklesFailsAtTheDeadlineNamed) {
  std::vector<std::byte> buf(1 << 16);
  Status receiver;
  std::atomic<bool> done{false};
  std::thread rx([&] {
    PeerMesh mesh;
    receiver = mesh.Open(Place(1, 2, Now() + 1.5),
                         {.port = kPort + 60, .to = {}, .from = {0}, .connect_s = 10}, buf.data(),
                         buf.size(), Any(), [](const Chunk&) {});
    if (receiver.ok()) receiver = mesh.Wait();
    done = true;
  });
  int fd = -1;
  for (int i = 0; i < 500 && fd < 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    fd = Dial(kPort + 61);
  }
  ASSERT_GE(fd, 0);
  const std::string hello = HelloBytes(kToken, 0);
  ASSERT_EQ(::send(fd, hello.data(), hello.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(hello.size()));
  const uint64_t head[2] = {0, 1 << 16};
  (void)!::send(fd, head, sizeof head, MSG_NOSIGNAL);
  // A byte every 0.1 s, never idle for long, never done (64 KiB would take 2 hours), until the
  // node gives up (or 60 s, well past the idle limit, have passed).
  for (int i = 0; i < 600 && !done; ++i) {
    (void)!::send(fd, "x", 1, MSG_NOSIGNAL);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  rx.join();
  ::close(fd);
  EXPECT_EQ(receiver.message().find("receiving a chunk at 0 from node 0 stalled: "), 0u)
      << receiver.message();
  EXPECT_NE(receiver.message().find("bytes had moved when the run's deadline passed"),
            std::string::npos)
      << receiver.message();
}

TEST(PeerMesh, AReceiverKnowsWhenEverySenderHasClosed) {
  std::vector<std::byte> out(1 << 20), in(1 << 20);
  PeerMesh rx;
  std::thread tx([&] {
    PeerMesh mesh;
    ASSERT_TRUE(mesh.Open(Place(0, 2), {.port = kPort + 30, .to = {1}, .from = {}, .connect_s = 10},
                          out.data(), out.size(), Any(), [](const Chunk&) {})
                    .ok());
    mesh.Send(1, {0, out.size() / 2});  // half of it, then no more
    mesh.EndSends();
    EXPECT_TRUE(mesh.Wait().ok());
  });
  ASSERT_TRUE(rx.Open(Place(1, 2), {.port = kPort + 30, .to = {}, .from = {0}, .connect_s = 10},
                      in.data(), in.size(), Any(), [](const Chunk&) {})
                  .ok());
  tx.join();
  for (int i = 0; i < 1000 && rx.receiving(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_FALSE(rx.receiving());
  EXPECT_EQ(rx.rx_bytes(), in.size() / 2);
  EXPECT_TRUE(rx.Wait().ok());
}

TEST(PeerMesh, APeerThatNeverListensIsNamed) {
  std::vector<std::byte> buf(4096);
  PeerMesh mesh;
  const Status s =
      mesh.Open(Place(0, 2), {.port = kPort + 20, .to = {1}, .from = {}, .connect_s = 0.3},
                buf.data(), buf.size(), Any(), [](const Chunk&) {});
  EXPECT_EQ(s.code(), Status::Code::kIOError);
  EXPECT_NE(s.message().find("node 1 at 127.0.0.1:29821"), std::string::npos) << s.message();
}

// A peer whose listener never answers (its queue full: the handshake is dropped, as on a host
// that is down) is given up at the connect deadline, not after the kernel's two minutes.
TEST(PeerMesh, AConnectHonoursItsDeadline) {
  const int full = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(kPort + 71);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(full, reinterpret_cast<const sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(full, 0), 0);
  std::vector<int> queued;
  for (int i = 0; i < 4; ++i) {  // fill the queue; later handshakes go unanswered
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    (void)::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a);
    queued.push_back(fd);
  }
  std::vector<std::byte> buf(4096);
  PeerMesh mesh;
  const Status s =
      mesh.Open(Place(0, 2), {.port = kPort + 70, .to = {1}, .from = {}, .connect_s = 0.5},
                buf.data(), buf.size(), Any(), [](const Chunk&) {});
  for (int fd : queued) ::close(fd);
  ::close(full);
  // Given up by the mesh's own deadline: the kernel's give-up (after about 127 s) would say
  // "Connection timed out" instead.
  EXPECT_EQ(s.code(), Status::Code::kIOError) << s.message();
  EXPECT_EQ(s.message(), "node 1 at 127.0.0.1:29871: no answer by the connect deadline");
}

TEST(PeerMesh, APortPast65535IsRefused) {
  std::vector<std::byte> buf(4096);
  PeerMesh mesh;
  const Status s = mesh.Open(Place(1, 2), {.port = 65535, .to = {}, .from = {0}, .connect_s = 1},
                             buf.data(), buf.size(), Any(), [](const Chunk&) {});
  EXPECT_EQ(s.code(), Status::Code::kBadInput);
  EXPECT_EQ(s.message(), "127.0.0.1:65536: a port is 1 to 65535");
}

}  // namespace
}  // namespace loadbench
