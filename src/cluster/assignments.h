// Partition assignments: <ns>/assign/<topic_id>/<p> = {owner, leader epoch, state}.
//
// AssignmentTable is an in-memory view of every assignment, kept by a prefix watch (snapshot,
// then the watch from the snapshot's revision; events are applied by mod revision so a replay
// never moves a key backwards). create_assignments() places new partitions over the live
// brokers (placement.h) and writes them in one transaction that requires every key to be absent,
// so two brokers creating the same partitions race safely: one wins, the other gets kConflict.
//
// Threads: AssignmentTable getters are thread-safe. The listener runs on the store's watch
// thread, in revision order, once per changed key; it must not block on the store (post the work
// elsewhere) and must not destroy the table. create_assignments blocks on the store.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cluster/model.h"
#include "meta/meta_store.h"

namespace shale::cluster {

using PartitionKey = std::pair<std::string, int32_t>;  // topic id, partition

class AssignmentTable {
 public:
  // nullopt: the assignment was deleted.
  using Listener = std::function<void(const PartitionKey&, const std::optional<Assignment>&)>;

  static Result<std::unique_ptr<AssignmentTable>> start(meta::MetaStore* store, Keys keys,
                                                        Listener listener = {});
  ~AssignmentTable();
  AssignmentTable(const AssignmentTable&) = delete;
  AssignmentTable& operator=(const AssignmentTable&) = delete;

  std::optional<Assignment> get(const std::string& topic_id, int32_t partition) const;
  std::map<PartitionKey, Assignment> all() const;
  // Partitions owned by each broker in `brokers` (0 for a broker that owns none); partitions
  // owned by brokers not listed are not counted.
  // How many records each broker owns (brokers not listed are ignored); with `only`, just the
  // records it accepts.
  std::map<int32_t, int64_t> owned_counts(
      const std::vector<int32_t>& brokers,
      const std::function<bool(const PartitionKey&)>& only = nullptr) const;
  // The highest store revision the view has applied, listener calls included.
  int64_t revision() const;
  // Blocks until revision() >= rev or timeout_ms passes.
  bool wait_for(int64_t rev, int64_t timeout_ms) const;

 private:
  AssignmentTable(meta::MetaStore* store, Keys keys, Listener l)
      : store_(store), keys_(std::move(keys)), listener_(std::move(l)) {}
  void apply(const std::vector<meta::WatchEvent>& evs);

  meta::MetaStore* store_;
  const Keys keys_;
  Listener listener_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  struct Rec {
    Assignment a;
    int64_t mod_revision = 0;
  };
  std::map<PartitionKey, Rec> map_;
  std::map<PartitionKey, int64_t> deleted_;  // mod revision of the last deletion seen per key
  int64_t revision_ = 0;
  int64_t watch_ = 0;
};

// Places partitions [first, first + count) of topic_id over the brokers in `owned` (live broker
// → partitions owned now) and writes them OWNED with leader epoch 0, all or none. Returns the
// assignments in partition order and the store revision of the write.
struct Created {
  std::vector<Assignment> assignments;
  int64_t revision = 0;
};
Result<Created> create_assignments(meta::MetaStore* store, const Keys& keys,
                                   std::string_view topic_id, int32_t first, int32_t count,
                                   const std::map<int32_t, int64_t>& owned);

}  // namespace shale::cluster
