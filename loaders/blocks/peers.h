// Readers of one run that hand each other bytes (the fleet strategy: loaders/strategies/
// fleet.cc): where a reader stands among them, and a mesh of TCP connections between them that
// moves chunks of one buffer, each written straight into its place at the receiver.
//
// A reader learns its place from its environment, as a rank of a distributed job learns its
// rank and its peers' addresses from its launcher's variables: LOADBENCH_READER ("K/N", set by
// the worker for every reader of a run), LOADBENCH_FLEET_PEERS (every reader's address,
// comma-separated, set on a cluster's nodes: harness/run/cluster_run.h; without it every reader
// is on this machine, 127.0.0.1), LOADBENCH_FLEET_TOKEN (the run's secret, 32 hex digits, a new
// one for every run, set by the harness for every reader of it: harness/launch/workers.cc) and
// LOADBENCH_DEADLINE (CLOCK_MONOTONIC seconds at which the harness stops the run's readers, its
// timeout_s; unset without one). Reader K listens at its address on port PORT + K.
//
// On the wire a connection opens with a hello: "LBFLEET1", the run's token (16 bytes) and the
// sender's node (32-bit little-endian). A listener closes, and counts, any connection whose hello
// is not the run's token from a node it expects, once each; so a process on the machine that is
// not one of the run's readers can neither take a reader's place nor feed it bytes. Then each
// chunk is its offset and length (two 64-bit little-endian integers) and its bytes, which the
// receiver takes only where its owner claims them (Claim); a sender closes its connection once
// it has sent all it will send.
//
// Offsets on the wire are the receiver's: where in its buffer the bytes go. The sender's bytes
// come from its own buffer, at the same offset when the two buffers are laid out alike (every
// node holding the whole model's span, as under the replicated pattern), at another one when
// they are not (a node holding only its part of the model, packed in its part's table order, as
// under tp: the sender names where the bytes lie in its own buffer, Send's `from`). So a
// receiver checks each chunk against its own layout alone, and a sender can read nothing
// outside its own buffer.
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
inline constexpr const char* kTokenVar = "LOADBENCH_FLEET_TOKEN";
inline constexpr const char* kDeadlineVar = "LOADBENCH_DEADLINE";

struct PeerPlace {
  int node = 0, nodes = 1;
  std::vector<std::string> addresses;  // one per node
  std::string token;                   // 32 hex digits; "" for a reader alone
  double deadline_s = 0;               // CLOCK_MONOTONIC seconds; 0: none
};

// This reader's place, from the environment (above). kBadInput naming the variable when it is
// malformed, names fewer addresses than there are readers, or, for one of several readers, when
// the run's token is missing.
Status PeerPlaceFromEnv(PeerPlace* out);

// A new token for a run: 16 random bytes (getrandom) as 32 hex digits.
std::string NewPeerToken();

// [offset, offset + len) of the buffer.
struct Chunk {
  uint64_t offset = 0, len = 0;
};

// Whom a node exchanges chunks with.
struct MeshPlan {
  int port = 0;           // node K listens on port + K (at most 65535)
  std::vector<int> to;    // the nodes it sends to
  std::vector<int> from;  // the nodes that send to it
  double connect_s = 60;  // every connection made (and every hello heard) within this
};

class PeerMesh {
 public:
  // Called on a receiving thread with a chunk's header from node `from`, before its bytes land:
  // "" when this node still needs exactly that chunk from that node (and it is now taken), else
  // why not (the connection fails, naming the sender).
  using Claim = std::function<std::string(int from, const Chunk&)>;
  // Called on a receiving thread for each chunk that has landed, before it is counted.
  using OnChunk = std::function<void(const Chunk&)>;

  PeerMesh() = default;
  ~PeerMesh();  // ends every thread, closing every connection
  PeerMesh(const PeerMesh&) = delete;
  PeerMesh& operator=(const PeerMesh&) = delete;

  // Listens at this node's address and port + node, connects to each node of `plan.to`
  // (retrying while it does not listen yet, until `plan.connect_s`), and takes one connection
  // from each node of `plan.from` that says the run's token (others are closed and counted:
  // rejected()); then starts a sending thread per connection made and a receiving thread per
  // connection taken, which writes each chunk `claim` allows into `buffer` (`size` bytes; a
  // chunk outside it is an error) and calls `on_chunk`. A connection that moves nothing for
  // 120 s fails, and so does every connection still open at the place's deadline, naming the
  // node at its other end. kIOError naming the peer and the reason; kBadInput for a port past
  // 65535.
  Status Open(const PeerPlace& place, const MeshPlan& plan, std::byte* buffer, uint64_t size,
              Claim claim, OnChunk on_chunk);

  // Queues `c` (already in the buffer) to node `to`, one of Open's: the same bytes of both
  // buffers.
  void Send(int to, const Chunk& c) { Send(to, c.offset, c); }
  // Queues the `at.len` bytes at `from` in this node's buffer to node `to`, for `at` in its
  // buffer (the wire's offset, above). A span past this node's buffer fails the connection.
  void Send(int to, uint64_t from, const Chunk& at);
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
  // Connections closed unheard: no hello, another token, a node not expected or heard already.
  int rejected() const { return rejected_; }

 private:
  struct Outgoing {
    uint64_t from = 0;  // in this node's buffer
    Chunk at;           // in the receiver's
  };
  struct Out {
    int node = 0;
    UniqueFd fd;
    std::deque<Outgoing> queue;
    bool ended = false;
    std::thread thread;
  };
  Status Connect(int to, double deadline, UniqueFd* fd);
  Status Accept(int listener, double deadline);
  void SendLoop(Out* o);
  void ReceiveLoop(int fd, int from);
  void Fail(const std::string& why);

  PeerPlace place_;
  MeshPlan plan_;
  std::byte* buffer_ = nullptr;
  uint64_t size_ = 0;
  Claim claim_;
  OnChunk on_chunk_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Out>> outs_;
  std::vector<std::thread> ins_;
  std::vector<UniqueFd> in_fds_;  // the receiving threads' connections
  std::string error_;
  std::atomic<uint64_t> rx_bytes_{0}, tx_bytes_{0};
  std::atomic<int> receiving_{0};  // receiving threads still reading
  int rejected_ = 0;
  bool waited_ = false;
};

}  // namespace loadbench
