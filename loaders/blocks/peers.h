// Readers of one run that hand each other bytes (the fleet strategy: loaders/strategies/
// fleet.cc): where a reader stands among them, and a mesh of TCP connections between them that
// moves chunks of one buffer, each written straight into its place at the receiver.
//
// A reader learns its place from its environment, as a rank of a distributed job learns its
// rank and its peers' addresses from its launcher's variables: LOADBENCH_READER ("K/N", set by
// the worker for every reader of a run) and LOADBENCH_FLEET_PEERS (every reader's address,
// comma-separated, set on a cluster's nodes: harness/run/cluster_run.h; without it every reader
// is on this machine, 127.0.0.1). Reader K listens at its address on port PORT + K.
//
// On the wire a chunk is its offset and length (two 64-bit little-endian integers) and then its
// bytes; a sender closes its connection once it has sent all it will send.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "loaders/base/file_io.h"
#include "loaders/base/status.h"

namespace loadbench {

inline constexpr const char* kReaderVar = "LOADBENCH_READER";
inline constexpr const char* kPeersVar = "LOADBENCH_FLEET_PEERS";

struct PeerPlace {
  int node = 0, nodes = 1;
  std::vector<std::string> addresses;  // one per node
};

// This reader's place, from the environment (above). kBadInput naming the variable when it is
// malformed or names fewer addresses than there are readers.
Status PeerPlaceFromEnv(PeerPlace* out);

// [offset, offset + len) of the buffer.
struct Chunk {
  uint64_t offset = 0, len = 0;
};

class PeerMesh {
 public:
  // Called on a receiving thread for each chunk that has landed, before it is counted.
  using OnChunk = std::function<void(const Chunk&)>;

  PeerMesh() = default;
  ~PeerMesh();  // ends every thread, closing every connection
  PeerMesh(const PeerMesh&) = delete;
  PeerMesh& operator=(const PeerMesh&) = delete;

  // Listens at this node's address and port + node, connects to each node of `to` (retrying
  // while it does not listen yet, until `timeout_s`), accepts `from` connections, and starts a
  // sending thread per connection made and a receiving thread per connection accepted, which
  // writes each chunk into `buffer` (`size` bytes; a chunk outside it is an error) and calls
  // `on_chunk`. kIOError naming the peer and the reason.
  Status Open(const PeerPlace& place, int port, const std::vector<int>& to, int from,
              std::byte* buffer, uint64_t size, double timeout_s, OnChunk on_chunk);

  // Queues `c` (already in the buffer) to node `to`, one of Open's.
  void Send(int to, const Chunk& c);
  // No more chunks will be queued: each sender sends what it holds, then closes.
  void EndSends();
  // Waits until every sender has closed and every sender to this node has closed; the first
  // error of any connection.
  Status Wait();

  // The first error of any connection so far, "" when none.
  std::string error();

  // Whether some node that sends to this one has not closed its connection yet: once none has,
  // every chunk that will ever land here has (its on_chunk returned).
  bool receiving() const { return receiving_.load() > 0; }

  uint64_t rx_bytes() const { return rx_bytes_.load(); }
  uint64_t tx_bytes() const { return tx_bytes_.load(); }

 private:
  struct Out {
    int node = 0;
    UniqueFd fd;
    std::deque<Chunk> queue;
    bool ended = false;
    std::thread thread;
  };
  Status Connect(const PeerPlace& place, int port, int to, double deadline_s, UniqueFd* fd);
  void SendLoop(Out* o);
  void ReceiveLoop(int fd);
  void Fail(const std::string& why);

  std::byte* buffer_ = nullptr;
  uint64_t size_ = 0;
  OnChunk on_chunk_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Out>> outs_;
  std::vector<std::thread> ins_;
  std::vector<UniqueFd> in_fds_;  // the receiving threads' connections
  std::string error_;
  std::atomic<uint64_t> rx_bytes_{0}, tx_bytes_{0};
  std::atomic<int> receiving_{0};  // receiving threads still reading
  bool waited_ = false;
};

}  // namespace loadbench
