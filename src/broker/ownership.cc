#include "broker/ownership.h"

#include <algorithm>
#include <vector>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "broker/broker.h"
#include "cluster/moves.h"
#include "cluster/placement.h"
#include "group/coordinator.h"

namespace shale::broker {

using cluster::Assignment;
using cluster::PartitionKey;

namespace {

struct Failover {
  int32_t target = -1;
  bool done = false;
  int64_t mod_revision = 0;
};

std::string failover_json(int32_t target, bool done) {
  return nlohmann::json{{"target", target}, {"done", done}}.dump();
}

std::map<int32_t, Failover> read_failovers(meta::MetaStore& store, const cluster::Keys& keys) {
  std::map<int32_t, Failover> out;
  auto kvs = store.prefix(keys.failover_prefix());
  if (!kvs.ok()) return out;
  for (const auto& kv : *kvs) {
    int32_t id = 0;
    try {
      id = std::stoi(kv.key.substr(keys.failover_prefix().size()));
      auto j = nlohmann::json::parse(kv.value);
      out[id] = Failover{j.at("target").get<int32_t>(), j.value("done", false), kv.mod_revision};
    } catch (const std::exception&) {
      spdlog::warn("cluster: ignoring malformed failover record {}", kv.key);
    }
  }
  return out;
}

bool is_group_shard(const PartitionKey& k) { return k.first == Ownership::kGroupShards; }
bool is_partition(const PartitionKey& k) { return k.first != Ownership::kGroupShards; }

}  // namespace

Ownership::Ownership(Broker* b, cluster::Member* m, Options o)
    : b_(b), member_(m), opts_(std::move(o)) {}

Result<std::unique_ptr<Ownership>> Ownership::start(Broker* broker, cluster::Member* member,
                                                    Options opts) {
  std::unique_ptr<Ownership> o(new Ownership(broker, member, std::move(opts)));
  Ownership* self = o.get();
  broker->topics().set_cluster_mode(
      [self](const Topic& t, int32_t first, int32_t count) { return self->place(t, first, count); },
      [self](const Topic& t) {
        // The assignment records go with the topic (best effort: a leftover record without a
        // topic is ignored).
        meta::Txn txn;
        txn.ops.push_back(
            meta::Op::del_prefix(self->member_->keys().assign_topic_prefix(topic_id_hex(t.id))));
        if (auto r = self->b_->meta().commit(txn); !r.ok())
          spdlog::warn("cluster: removing the assignments of topic {}: {}", t.name,
                       r.error().to_string());
      });
  auto table = cluster::AssignmentTable::start(
      &broker->meta(), member->keys(),
      [self](const PartitionKey& k, const std::optional<Assignment>&) { self->on_assignment(k); });
  if (!table.ok()) return std::move(table).error();
  o->table_ = std::move(table).value();
  const std::string prefix = broker->topics().topics_prefix();
  auto w =
      broker->meta().watch(prefix, 0, [self, prefix](const std::vector<meta::WatchEvent>& evs) {
        for (const auto& ev : evs) self->on_topic(ev.kv.key.substr(prefix.size()));
      });
  if (!w.ok()) return std::move(w).error();
  o->topic_watch_ = *w;
  o->thread_ = std::thread([self] { self->run(); });
  return o;
}

Ownership::~Ownership() { stop(); }

void Ownership::stop() {
  {
    std::lock_guard lk(mu_);
    if (stop_) return;
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (topic_watch_ != 0) b_->meta().cancel_watch(topic_watch_);
  table_.reset();
}

void Ownership::kick() {
  {
    std::lock_guard lk(mu_);
    all_pending_ = true;
  }
  cv_.notify_all();
}

void Ownership::on_assignment(const PartitionKey& k) {
  {
    std::lock_guard lk(mu_);
    pending_.insert(k);
  }
  cv_.notify_all();
}

void Ownership::on_topic(std::string name) {
  {
    std::lock_guard lk(mu_);
    topics_pending_.insert(std::move(name));
  }
  cv_.notify_all();
}

std::set<int32_t> Ownership::live_ids() const {
  std::set<int32_t> out;
  for (const auto& [id, info] : member_->live()) out.insert(id);
  return out;
}

Status Ownership::place(const Topic& t, int32_t first, int32_t count) {
  if (count <= 0) return ok_status();
  auto ids = live_ids();
  if (ids.empty()) ids.insert(member_->id());
  auto owned = table_->owned_counts(std::vector<int32_t>(ids.begin(), ids.end()), is_partition);
  const std::string hex = topic_id_hex(t.id);
  auto r = cluster::create_assignments(&b_->meta(), member_->keys(), hex, first, count, owned);
  if (!r.ok()) {
    if (r.error().code != Errc::kConflict) return std::move(r).error();
    // The controller placed them first (it fills in partitions it sees without a record):
    // fine, as long as every one has a record now.
    for (int32_t p = first; p < first + count; ++p) {
      auto kv = b_->meta().get(member_->keys().assign(hex, p));
      if (!kv.ok()) return std::move(kv).error();
      if (!kv->has_value()) return std::move(r).error();
    }
    return ok_status();
  }
  // Our own records reach the table through the watch; wait so that the partitions this broker
  // got are opened before the creator answers (others' open on their own).
  table_->wait_for(r->revision, 2000);
  return ok_status();
}

Ownership::Leader Ownership::leader(const protocol::Uuid& topic_id, int32_t partition) const {
  Leader out;
  auto a = table_->get(topic_id_hex(topic_id), partition);
  if (!a) return out;
  out.epoch = a->leader_epoch;
  if (a->state == Assignment::State::kReleased) return out;
  auto live = member_->live();
  if (live.contains(a->owner)) out.id = a->owner;
  return out;
}

std::optional<Ownership::Endpoint> Ownership::endpoint_of(const cluster::BrokerInfo& info,
                                                          const std::string& listener) {
  auto it = info.listeners.find(listener);
  if (it == info.listeners.end()) it = info.listeners.begin();
  if (it == info.listeners.end()) return std::nullopt;
  const auto colon = it->second.rfind(':');
  if (colon == std::string::npos) return std::nullopt;
  Endpoint e;
  e.id = info.id;
  e.host = it->second.substr(0, colon);
  if (e.host.size() >= 2 && e.host.front() == '[' && e.host.back() == ']')
    e.host = e.host.substr(1, e.host.size() - 2);
  e.port = std::atoi(it->second.c_str() + colon + 1);
  e.rack = info.rack;
  return e;
}

std::optional<Ownership::Endpoint> Ownership::endpoint(int32_t id,
                                                       const std::string& listener) const {
  auto live = member_->live();
  auto it = live.find(id);
  if (it == live.end()) return std::nullopt;
  return endpoint_of(it->second, listener);
}

Ownership::Hint Ownership::hint(const protocol::Uuid& topic_id, int32_t partition, int32_t self,
                                const std::string& listener) const {
  Hint h;
  h.leader = leader(topic_id, partition);
  if (h.leader.id == self) h.leader.id = -1;
  if (h.leader.id >= 0) h.endpoint = endpoint(h.leader.id, listener);
  return h;
}

std::vector<Ownership::Endpoint> Ownership::live_endpoints(const std::string& listener) const {
  std::vector<Endpoint> out;
  for (const auto& [id, info] : member_->live()) {
    if (auto e = endpoint_of(info, listener)) out.push_back(std::move(*e));
  }
  return out;
}

bool Ownership::opening(const protocol::Uuid& topic_id, int32_t partition) const {
  auto a = table_->get(topic_id_hex(topic_id), partition);
  if (!a) return false;
  const int32_t me = member_->id();
  if (a->state == Assignment::State::kReleased) return a->target == me;
  // OWNED or MOVING by me; MOVING away while not serving means it is closing, not opening.
  return a->owner == me && (a->state == Assignment::State::kOwned || a->target == me);
}

Result<Assignment> Ownership::reassign(const protocol::Uuid& topic_id, int32_t partition,
                                       int32_t target) {
  return cluster::request_move(&b_->meta(), member_->keys(), topic_id_hex(topic_id), partition,
                               target, live_ids());
}

Result<Assignment> Ownership::cancel(const protocol::Uuid& topic_id, int32_t partition) {
  return cluster::cancel_move(&b_->meta(), member_->keys(), topic_id_hex(topic_id), partition);
}

Ownership::Leader Ownership::group_coordinator(const std::string& group) const {
  Leader out;
  if (opts_.group_shards <= 0) return out;
  auto a = table_->get(kGroupShards, group::Coordinator::shard_of(group, opts_.group_shards));
  if (!a) return out;
  out.epoch = a->leader_epoch;
  if (a->state == Assignment::State::kReleased) return out;
  if (member_->live().contains(a->owner)) out.id = a->owner;
  return out;
}

std::map<PartitionKey, Assignment> Ownership::ongoing() const {
  std::map<PartitionKey, Assignment> out;
  for (auto& [k, a] : table_->all()) {
    if (a.state != Assignment::State::kOwned) out.emplace(k, a);
  }
  return out;
}

void Ownership::run() {
  {
    // Nothing before the first kick(): the topics are loaded and the hooks set by then.
    std::unique_lock lk(mu_);
    cv_.wait(lk, [&] { return stop_ || all_pending_; });
    if (stop_) return;
  }
  int64_t next_full = 0;
  while (true) {
    std::set<PartitionKey> work;
    std::set<std::string> topics;
    bool all = false;
    {
      std::unique_lock lk(mu_);
      cv_.wait_for(lk, std::chrono::milliseconds(opts_.tick_ms), [&] {
        return stop_ || all_pending_ || !pending_.empty() || !topics_pending_.empty();
      });
      if (stop_) return;
      work.swap(pending_);
      topics.swap(topics_pending_);
      all = all_pending_;
      all_pending_ = false;
    }
    for (const auto& name : topics) {
      auto t = b_->topics().refresh(name);
      if (!t.ok()) {
        spdlog::warn("cluster: re-reading topic {}: {}", name, t.error().to_string());
        on_topic(name);  // retried next round
        continue;
      }
      if (*t) {
        for (const auto& p : (*t)->partitions) work.insert({topic_id_hex((*t)->id), p->index()});
      }
    }
    if (controller_hook_) {
      const bool is = member_->is_controller();
      if (!was_controller_ || *was_controller_ != is) {
        was_controller_ = is;
        controller_hook_(is);
      }
    }
    const int64_t now = clock::mono_ms();
    if (all || now >= next_full) {
      // The safety net: every partition, every second (a missed event costs one second).
      next_full = now + 1000;
      for (const auto& t : b_->topics().list()) {
        for (const auto& p : t->partitions) work.insert({topic_id_hex(t->id), p->index()});
      }
      for (int32_t g = 0; g < opts_.group_shards; ++g) work.insert({kGroupShards, g});
    }
    // Failover steps every tick: they are on the path of a dead broker's partitions.
    for (int32_t id : live_ids()) seen_live_.insert(id);
    if (member_->is_controller()) {
      if (controller_since_ms_ < 0) controller_since_ms_ = now;
      controller_duties();
    } else {
      controller_since_ms_ = -1;
    }
    failover_duties();
    for (const auto& k : work) reconcile(k);
  }
}

void Ownership::reconcile(const PartitionKey& k) {
  if (k.first == kGroupShards) return reconcile_group_shard(k.second);
  const int32_t me = member_->id();
  protocol::Uuid id;
  if (!parse_topic_id_hex(k.first, id)) return;
  TopicPtr t = b_->topics().find(id);
  if (!t || k.second < 0 || static_cast<size_t>(k.second) >= t->partitions.size()) return;
  std::shared_ptr<Partition> part = t->partitions[static_cast<size_t>(k.second)];
  if (part->deleted()) return;
  // After this broker's own release or take-over, wait for the view to show that write: acting
  // on the record as it was before would open the partition again (a second stream open, which
  // fences the first one's appends, acknowledged or not) or reopen one just released.
  if (auto it = settle_.find(k); it != settle_.end()) {
    if (table_->revision() < it->second) return;  // its watch event queues the key again
    settle_.erase(it);
  }
  auto a = table_->get(k.first, k.second);
  if (!a) {
    if (part->serving()) part->stop_serving();
    return;
  }
  auto open_new = [&](int32_t epoch) -> std::shared_ptr<Partition> {
    auto np = std::make_shared<Partition>(t->name, k.second, part->stream_id());
    if (auto st = np->open(b_->engine(), true, epoch); !st.ok()) {
      spdlog::warn("cluster: opening {}-{}: {}", t->name, k.second, st.error().to_string());
      return nullptr;
    }
    return np;
  };
  const bool mine = a->owner == me && a->state != Assignment::State::kReleased;
  if (mine) {
    if (!part->serving()) {
      auto np = open_new(a->leader_epoch);
      if (!np) return;
      if (!b_->topics().replace_partition(id, np)) {
        np->stop_serving();
        return;
      }
      spdlog::info("cluster: serving {}-{} (leader epoch {})", t->name, k.second,
                   np->leader_epoch());
      part = np;
    }
    if (a->state == Assignment::State::kMoving && a->target != me) {
      const int64_t t0 = clock::mono_ms();
      auto st = part->close();
      if (!st.ok()) {
        // Its WAL data may not be uploaded: keep the partition (the move is cancelled, and it
        // reopens here on the next round).
        spdlog::warn("cluster: closing {}-{} for a move failed ({}); cancelling the move", t->name,
                     k.second, st.error().to_string());
        (void)cluster::cancel_move(&b_->meta(), member_->keys(), k.first, k.second);
        return;
      }
      int64_t rev = 0;
      auto r = cluster::release(&b_->meta(), member_->keys(), k.first, k.second, me, &rev);
      if (r.ok()) settle_[k] = rev;
      if (!r.ok()) {
        spdlog::warn("cluster: releasing {}-{}: {}", t->name, k.second, r.error().to_string());
        on_assignment(k);
        return;
      }
      spdlog::info("cluster: released {}-{} to broker {} ({} ms)", t->name, k.second, a->target,
                   clock::mono_ms() - t0);
    }
    return;
  }
  if (a->state == Assignment::State::kReleased && a->target == me) {
    auto np = open_new(a->leader_epoch + 1);
    if (!np) return;
    int64_t rev = 0;
    auto r = cluster::take_over(&b_->meta(), member_->keys(), k.first, k.second, me, {}, &rev);
    if (r.ok()) settle_[k] = rev;
    if (!r.ok()) {
      spdlog::warn("cluster: taking over {}-{}: {}", t->name, k.second, r.error().to_string());
      np->stop_serving();
      return;
    }
    if (!b_->topics().replace_partition(id, np)) {
      np->stop_serving();
      return;
    }
    if (part->serving()) part->stop_serving();
    spdlog::info("cluster: took over {}-{} from broker {} (leader epoch {})", t->name, k.second,
                 a->owner, np->leader_epoch());
    return;
  }
  if (part->serving()) {
    spdlog::info("cluster: {}-{} is owned by broker {} now; no longer serving it", t->name,
                 k.second, a->owner);
    part->stop_serving();
  }
}

// A group coordinator shard follows its record like a partition, without a stream: the owner
// loads the shard's groups from the MetaStore; a move unloads them (parked joins and syncs
// answer NOT_COORDINATOR, so members find the new coordinator) before RELEASED, and the target
// loads them after taking the record over.
void Ownership::reconcile_group_shard(int32_t shard) {
  if (shard < 0 || shard >= opts_.group_shards || !load_group_shard_) return;
  const int32_t me = member_->id();
  // As for partitions: after our own release or take-over, act only on a view that shows it.
  const PartitionKey key{kGroupShards, shard};
  if (auto it = settle_.find(key); it != settle_.end()) {
    if (table_->revision() < it->second) return;
    settle_.erase(it);
  }
  auto a = table_->get(kGroupShards, shard);
  const bool loaded = loaded_shards_.contains(shard);
  auto unload = [&] {
    unload_group_shard_(shard);
    loaded_shards_.erase(shard);
  };
  if (!a) {
    if (loaded) unload();
    return;
  }
  const bool mine = a->owner == me && a->state != Assignment::State::kReleased;
  if (mine) {
    if (a->state == Assignment::State::kMoving && a->target != me) {
      if (loaded) unload();
      int64_t rev = 0;
      auto r = cluster::release(&b_->meta(), member_->keys(), kGroupShards, shard, me, &rev);
      if (!r.ok()) {
        spdlog::warn("cluster: releasing group shard {}: {}", shard, r.error().to_string());
        on_assignment(key);
        return;
      }
      settle_[key] = rev;
      spdlog::info("cluster: released group shard {} to broker {}", shard, a->target);
      return;
    }
    if (!loaded) {
      if (auto st = load_group_shard_(shard); !st.ok()) {
        spdlog::warn("cluster: loading group shard {}: {}", shard, st.error().to_string());
        return;  // the next sweep retries
      }
      loaded_shards_.insert(shard);
    }
    return;
  }
  if (a->state == Assignment::State::kReleased && a->target == me) {
    int64_t rev = 0;
    auto r = cluster::take_over(&b_->meta(), member_->keys(), kGroupShards, shard, me, {}, &rev);
    if (!r.ok()) {
      spdlog::warn("cluster: taking over group shard {}: {}", shard, r.error().to_string());
      return;
    }
    settle_[key] = rev;
    if (auto st = load_group_shard_(shard); !st.ok()) {
      spdlog::warn("cluster: loading group shard {}: {}", shard, st.error().to_string());
      return;
    }
    loaded_shards_.insert(shard);
    spdlog::info("cluster: took over group shard {} from broker {}", shard, a->owner);
    return;
  }
  if (loaded) {
    spdlog::info("cluster: group shard {} is owned by broker {} now; unloading it", shard,
                 a->owner);
    unload();
  }
}

void Ownership::controller_duties() {
  auto& store = b_->meta();
  const auto& keys = member_->keys();
  const std::set<int32_t> live = live_ids();
  if (live.empty()) return;
  auto commit = [this](meta::Txn t) { return member_->controller_commit(std::move(t)); };
  auto all = table_->all();

  // Partitions without a record for a while (a creator that died between the topic and its
  // assignments; a creator that is alive writes them within moments).
  const int64_t now = clock::mono_ms();
  std::map<PartitionKey, int64_t> still_missing;
  for (const auto& t : b_->topics().list()) {
    const std::string hex = topic_id_hex(t->id);
    for (const auto& p : t->partitions) {
      if (all.contains({hex, p->index()})) continue;
      const PartitionKey key{hex, p->index()};
      auto seen = missing_since_.find(key);
      const int64_t since = seen == missing_since_.end() ? now : seen->second;
      still_missing[key] = since;
      if (now - since < 5000) continue;
      auto owned =
          table_->owned_counts(std::vector<int32_t>(live.begin(), live.end()), is_partition);
      auto r = cluster::create_assignments(&store, keys, hex, p->index(), 1, owned);
      if (r.ok()) spdlog::info("cluster: placed {}-{} (it had no owner)", t->name, p->index());
    }
  }
  missing_since_ = std::move(still_missing);
  // Group coordinator shards without a record (a new cluster): placed at once.
  std::optional<std::map<int32_t, int64_t>> shard_counts;
  for (int32_t g = 0; g < opts_.group_shards; ++g) {
    if (all.contains({kGroupShards, g})) continue;
    if (!shard_counts)
      shard_counts =
          table_->owned_counts(std::vector<int32_t>(live.begin(), live.end()), is_group_shard);
    auto r = cluster::create_assignments(&store, keys, kGroupShards, g, 1, *shard_counts);
    if (r.ok()) ++(*shard_counts)[r->assignments.front().owner];
  }

  // Group shards spread evenly over the live brokers: a broker that joins (or the first ones
  // to start, which got every shard) takes its share. Shards move only while none is moving.
  if (opts_.group_shards > 0) {
    bool settled = true;
    std::map<int32_t, std::vector<int32_t>> by_owner;
    for (int32_t id : live) by_owner[id];
    int32_t present = 0;
    for (const auto& [k, a] : all) {
      if (k.first != kGroupShards) continue;
      ++present;
      if (a.state != Assignment::State::kOwned || !live.contains(a.owner)) {
        settled = false;
        continue;
      }
      by_owner[a.owner].push_back(k.second);
    }
    if (settled && present == opts_.group_shards) {
      const auto n = static_cast<int32_t>(live.size());
      const int32_t floor = opts_.group_shards / n;
      const int32_t ceil = floor + (opts_.group_shards % n != 0 ? 1 : 0);
      std::vector<int32_t> spare;  // shards above the ceiling, or above the floor if needed
      for (auto& [id, shards] : by_owner) {
        while (static_cast<int32_t>(shards.size()) > ceil) {
          spare.push_back(shards.back());
          shards.pop_back();
        }
      }
      for (auto& [id, shards] : by_owner) {
        while (static_cast<int32_t>(shards.size()) < floor) {
          if (spare.empty()) {
            // Take one from a broker at the ceiling.
            for (auto& [other, os] : by_owner) {
              if (other != id && static_cast<int32_t>(os.size()) > floor) {
                spare.push_back(os.back());
                os.pop_back();
                break;
              }
            }
            if (spare.empty()) break;
          }
          const int32_t shard = spare.back();
          spare.pop_back();
          shards.push_back(shard);
          auto r = cluster::request_move(&store, keys, kGroupShards, shard, id, live);
          if (r.ok())
            spdlog::info("cluster: moving group shard {} to broker {} (balance)", shard, id);
        }
      }
    }
  }

  // A RELEASED partition whose target died before taking it over goes back to its owner.
  for (const auto& [k, a] : all) {
    if (a.state == Assignment::State::kReleased && !live.contains(a.target) &&
        live.contains(a.owner)) {
      (void)cluster::revert_release(&store, keys, k.first, k.second, a.target, commit);
    }
  }

  // Dead owners: failover of their WAL, then their partitions to live brokers.
  std::set<int32_t> dead;
  for (const auto& [k, a] : all) {
    if (a.owner >= 0 && !live.contains(a.owner) &&
        !(a.state == Assignment::State::kReleased && live.contains(a.target)))
      dead.insert(a.owner);
  }
  auto failovers = read_failovers(store, keys);
  std::vector<int32_t> targets(live.begin(), live.end());
  size_t rr = 0;
  for (int32_t d : dead) {
    auto it = failovers.find(d);
    if (it == failovers.end() || (!it->second.done && !live.contains(it->second.target))) {
      if (!opts_.recover_wal) continue;
      if (!seen_live_.contains(d) &&
          clock::mono_ms() - controller_since_ms_ < opts_.failover_grace_ms)
        continue;  // it may still be registering (a whole cluster starting)
      const int32_t target = targets[(static_cast<size_t>(d) + rr++) % targets.size()];
      meta::Txn txn;
      txn.compares.push_back(
          {keys.failover(d), it == failovers.end() ? 0 : it->second.mod_revision});
      txn.ops.push_back(meta::Op::put(keys.failover(d), failover_json(target, false)));
      if (commit(std::move(txn)).ok())
        spdlog::warn("cluster: broker {} is gone; broker {} recovers its WAL", d, target);
      continue;
    }
    if (!it->second.done) continue;
    bool all_moved = true;
    for (const auto& [k, a] : all) {
      if (a.owner != d) continue;
      if (a.state == Assignment::State::kReleased && live.contains(a.target)) continue;
      auto owned =
          table_->owned_counts(targets, k.first == kGroupShards ? is_group_shard : is_partition);
      auto placed = cluster::place(owned, 1);
      if (!placed.ok()) {
        all_moved = false;
        continue;
      }
      auto r = cluster::hand_over(&store, keys, k.first, k.second, d, placed->front(), commit);
      if (!r.ok()) all_moved = false;
    }
    if (all_moved) {
      meta::Txn txn;
      txn.compares.push_back({keys.failover(d), it->second.mod_revision});
      txn.ops.push_back(meta::Op::del(keys.failover(d)));
      if (commit(std::move(txn)).ok())
        spdlog::info("cluster: failover of broker {} done; its partitions were handed over", d);
    }
  }
  // A failover record for a broker that owns nothing any more and is done: drop it.
  for (const auto& [d, f] : failovers) {
    if (!f.done || dead.contains(d)) continue;
    meta::Txn txn;
    txn.compares.push_back({keys.failover(d), f.mod_revision});
    txn.ops.push_back(meta::Op::del(keys.failover(d)));
    (void)commit(std::move(txn));
  }
}

void Ownership::failover_duties() {
  if (!opts_.recover_wal) return;
  auto& store = b_->meta();
  const auto& keys = member_->keys();
  for (const auto& [d, f] : read_failovers(store, keys)) {
    if (f.target != member_->id() || f.done) continue;
    auto wal = store.get(keys.wal(d));
    if (!wal.ok() || !wal->has_value()) {
      spdlog::error("cluster: failover of broker {}: its WAL location is unknown", d);
      continue;
    }
    const int64_t t0 = clock::mono_ms();
    spdlog::warn("cluster: recovering the WAL of broker {} ({})", d, (*wal)->value);
    if (auto st = opts_.recover_wal(d, (*wal)->value); !st.ok()) {
      spdlog::error("cluster: recovering the WAL of broker {} failed: {} (retrying)", d,
                    st.error().to_string());
      continue;
    }
    meta::Txn txn;
    txn.compares.push_back({keys.failover(d), f.mod_revision});
    txn.ops.push_back(meta::Op::put(keys.failover(d), failover_json(f.target, true)));
    if (auto r = store.commit(txn); r.ok()) {
      spdlog::warn("cluster: WAL of broker {} recovered in {} ms", d, clock::mono_ms() - t0);
    }
    kick();
  }
}

}  // namespace shale::broker
