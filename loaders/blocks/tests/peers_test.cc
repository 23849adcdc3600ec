// The readers' place from their environment, and the mesh that moves chunks between them: three
// meshes of one process on loopback pass a buffer along a chain, every byte landing in its
// place; a chunk outside the buffer and a peer that never listens are errors that name why.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "loaders/blocks/peers.h"

namespace loadbench {
namespace {

class PeerEnv : public ::testing::Test {
 protected:
  void TearDown() override {
    ::unsetenv(kReaderVar);
    ::unsetenv(kPeersVar);
  }
};

TEST_F(PeerEnv, APlaceComesFromTheReaderAndPeersVariables) {
  PeerPlace p;
  ::unsetenv(kReaderVar);
  ::unsetenv(kPeersVar);
  ASSERT_TRUE(PeerPlaceFromEnv(&p).ok());
  EXPECT_EQ(p.node, 0);
  EXPECT_EQ(p.nodes, 1);
  EXPECT_EQ(p.addresses, (std::vector<std::string>{"127.0.0.1"}));
  ::setenv(kReaderVar, "2/3", 1);
  ASSERT_TRUE(PeerPlaceFromEnv(&p).ok());
  EXPECT_EQ(p.node, 2);
  EXPECT_EQ(p.addresses.size(), 3u);
  ::setenv(kPeersVar, "169.254.9.10,169.254.9.11,169.254.9.12,169.254.9.13", 1);
  ASSERT_TRUE(PeerPlaceFromEnv(&p).ok());
  EXPECT_EQ(p.addresses[2], "169.254.9.12");
  ::setenv(kPeersVar, "169.254.9.10", 1);
  EXPECT_NE(PeerPlaceFromEnv(&p).message().find("1 addresses for 3 readers"), std::string::npos);
  ::setenv(kReaderVar, "3/3", 1);
  EXPECT_EQ(PeerPlaceFromEnv(&p).code(), Status::Code::kBadInput);
}

constexpr int kPort = 29800;

TEST(PeerMesh, AChainPassesEveryChunkIntoItsPlace) {
  constexpr uint64_t kSize = 3 * 1024 * 1024 + 17, kChunk = 256 * 1024;
  std::vector<std::vector<std::byte>> buffers(3, std::vector<std::byte>(kSize));
  for (uint64_t i = 0; i < kSize; ++i) buffers[0][i] = static_cast<std::byte>(i * 7 + 1);
  std::vector<Status> results(3);
  std::vector<std::thread> nodes;
  for (int k = 0; k < 3; ++k) {
    nodes.emplace_back([&, k] {
      PeerPlace place{k, 3, {"127.0.0.1", "127.0.0.1", "127.0.0.1"}};
      PeerMesh mesh;
      std::atomic<uint64_t> got{0};
      std::vector<int> to;
      if (k < 2) to.push_back(k + 1);
      Status s = mesh.Open(place, kPort, to, k > 0 ? 1 : 0, buffers[k].data(), kSize, 10,
                           [&](const Chunk& c) {
                             got += c.len;
                             if (k < 2) mesh.Send(k + 1, c);
                           });
      if (s.ok() && k == 0) {
        for (uint64_t at = 0; at < kSize; at += kChunk) {
          mesh.Send(1, {at, std::min(kChunk, kSize - at)});
        }
      }
      while (s.ok() && k > 0 && got < kSize && mesh.error().empty()) std::this_thread::yield();
      if (s.ok()) mesh.EndSends();
      results[k] = s.ok() ? mesh.Wait() : s;
      if (k == 1) {
        EXPECT_EQ(mesh.tx_bytes(), kSize);
      }
    });
  }
  for (std::thread& t : nodes) t.join();
  for (int k = 0; k < 3; ++k) EXPECT_TRUE(results[k].ok()) << k << ": " << results[k].message();
  EXPECT_EQ(std::memcmp(buffers[2].data(), buffers[0].data(), kSize), 0);
}

TEST(PeerMesh, AChunkOutsideTheBufferIsAnError) {
  std::vector<std::byte> big(1 << 20), small(1 << 16);
  Status receiver, sender;
  std::thread rx([&] {
    PeerMesh mesh;
    receiver = mesh.Open({1, 2, {"127.0.0.1", "127.0.0.1"}}, kPort + 10, {}, 1, small.data(),
                         small.size(), 10, [](const Chunk&) {});
    if (receiver.ok()) receiver = mesh.Wait();
  });
  PeerMesh mesh;
  sender = mesh.Open({0, 2, {"127.0.0.1", "127.0.0.1"}}, kPort + 10, {1}, 0, big.data(), big.size(),
                     10, [](const Chunk&) {});
  ASSERT_TRUE(sender.ok()) << sender.message();
  mesh.Send(1, {0, big.size()});
  mesh.EndSends();
  (void)mesh.Wait();
  rx.join();
  EXPECT_NE(receiver.message().find("outside the"), std::string::npos) << receiver.message();
}

TEST(PeerMesh, AReceiverKnowsWhenEverySenderHasClosed) {
  std::vector<std::byte> out(1 << 20), in(1 << 20);
  PeerMesh rx;
  std::thread tx([&] {
    PeerMesh mesh;
    ASSERT_TRUE(mesh.Open({0, 2, {"127.0.0.1", "127.0.0.1"}}, kPort + 30, {1}, 0, out.data(),
                          out.size(), 10, [](const Chunk&) {})
                    .ok());
    mesh.Send(1, {0, out.size() / 2});  // half of it, then no more
    mesh.EndSends();
    EXPECT_TRUE(mesh.Wait().ok());
  });
  ASSERT_TRUE(rx.Open({1, 2, {"127.0.0.1", "127.0.0.1"}}, kPort + 30, {}, 1, in.data(), in.size(),
                      10, [](const Chunk&) {})
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
  const Status s = mesh.Open({0, 2, {"127.0.0.1", "127.0.0.1"}}, kPort + 20, {1}, 0, buf.data(),
                             buf.size(), 0.3, [](const Chunk&) {});
  EXPECT_EQ(s.code(), Status::Code::kIOError);
  EXPECT_NE(s.message().find("node 1 at 127.0.0.1:29821"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace loadbench
