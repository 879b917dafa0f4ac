#include "cluster/assignments.h"

#include <chrono>

#include "base/clock.h"
#include "base/log.h"
#include "cluster/placement.h"

namespace shale::cluster {

Result<std::unique_ptr<AssignmentTable>> AssignmentTable::start(meta::MetaStore* store, Keys keys,
                                                                Listener listener) {
  std::unique_ptr<AssignmentTable> t(
      new AssignmentTable(store, std::move(keys), std::move(listener)));
  auto rev = store->revision();
  if (!rev.ok()) return std::move(rev).error();
  auto kvs = store->prefix(t->keys_.assign_prefix());
  if (!kvs.ok()) return std::move(kvs).error();
  std::vector<meta::WatchEvent> evs;
  for (auto& kv : *kvs) {
    meta::WatchEvent e;
    e.kv = std::move(kv);
    evs.push_back(std::move(e));
  }
  t->apply(evs);
  {
    std::lock_guard lk(t->mu_);
    t->revision_ = std::max(t->revision_, *rev);
  }
  AssignmentTable* p = t.get();
  auto w = store->watch(t->keys_.assign_prefix(), *rev,
                        [p](const std::vector<meta::WatchEvent>& e) { p->apply(e); });
  if (!w.ok()) return std::move(w).error();
  t->watch_ = *w;
  return t;
}

AssignmentTable::~AssignmentTable() {
  if (watch_) store_->cancel_watch(watch_);
}

void AssignmentTable::apply(const std::vector<meta::WatchEvent>& evs) {
  std::vector<std::pair<PartitionKey, std::optional<Assignment>>> changed;
  int64_t rev = 0;
  {
    std::lock_guard lk(mu_);
    for (const auto& e : evs) {
      rev = std::max(rev, e.kv.mod_revision);
      auto key = keys_.parse_assign(e.kv.key);
      if (!key) continue;
      auto it = map_.find(*key);
      auto del = deleted_.find(*key);
      if (del != deleted_.end() && del->second >= e.kv.mod_revision) continue;
      if (it != map_.end() && it->second.mod_revision >= e.kv.mod_revision) continue;
      if (e.type == meta::WatchEvent::Type::kPut) {
        auto a = assignment_from_json(e.kv.value);
        if (!a.ok()) {
          SPDLOG_WARN("cluster: ignoring {}: {}", e.kv.key, a.error().to_string());
          continue;
        }
        map_[*key] = Rec{*a, e.kv.mod_revision};
        changed.emplace_back(*key, *a);
      } else {
        deleted_[*key] = e.kv.mod_revision;
        if (it == map_.end()) continue;
        map_.erase(it);
        changed.emplace_back(*key, std::nullopt);
      }
    }
  }
  if (listener_)
    for (const auto& [k, a] : changed) listener_(k, a);
  // Published after the listener ran: wait_for(rev) returning means it has seen rev.
  {
    std::lock_guard lk(mu_);
    revision_ = std::max(revision_, rev);
  }
  cv_.notify_all();
}

std::optional<Assignment> AssignmentTable::get(const std::string& topic_id,
                                               int32_t partition) const {
  std::lock_guard lk(mu_);
  auto it = map_.find({topic_id, partition});
  if (it == map_.end()) return std::nullopt;
  return it->second.a;
}

std::map<PartitionKey, Assignment> AssignmentTable::all() const {
  std::lock_guard lk(mu_);
  std::map<PartitionKey, Assignment> out;
  for (const auto& [k, r] : map_) out.emplace(k, r.a);
  return out;
}

std::map<int32_t, int64_t> AssignmentTable::owned_counts(
    const std::vector<int32_t>& brokers,
    const std::function<bool(const PartitionKey&)>& only) const {
  std::map<int32_t, int64_t> out;
  for (int32_t b : brokers) out[b] = 0;
  std::lock_guard lk(mu_);
  for (const auto& [k, r] : map_) {
    if (only && !only(k)) continue;
    auto it = out.find(r.a.owner);
    if (it != out.end()) ++it->second;
  }
  return out;
}

int64_t AssignmentTable::revision() const {
  std::lock_guard lk(mu_);
  return revision_;
}

bool AssignmentTable::wait_for(int64_t rev, int64_t timeout_ms) const {
  std::unique_lock lk(mu_);
  return cv_.wait_for(lk, std::chrono::milliseconds(timeout_ms), [&] { return revision_ >= rev; });
}

Result<Created> create_assignments(meta::MetaStore* store, const Keys& keys,
                                   std::string_view topic_id, int32_t first, int32_t count,
                                   const std::map<int32_t, int64_t>& owned) {
  if (first < 0) return Error::make(Errc::kInvalidArgument, "negative partition number");
  auto owners = place(owned, count);
  if (!owners.ok()) return std::move(owners).error();
  const size_t limit = store->max_txn_ops();
  if (limit != 0 && static_cast<size_t>(count) > limit)
    return Error::make(Errc::kInvalidArgument,
                       std::to_string(count) +
                           " partitions in one creation exceed the metadata "
                           "store's transaction limit of " +
                           std::to_string(limit) + " (etcd: raise --max-txn-ops)");
  Created out;
  meta::Txn t;
  const int64_t now = clock::wall_ms();
  for (int32_t i = 0; i < count; ++i) {
    Assignment a;
    a.owner = (*owners)[static_cast<size_t>(i)];
    a.since_ms = now;
    std::string key = keys.assign(topic_id, first + i);
    t.compares.push_back({key, 0});
    t.ops.push_back(meta::Op::put(std::move(key), to_json(a)));
    out.assignments.push_back(a);
  }
  auto r = store->commit(t);
  if (!r.ok()) return std::move(r).error();
  out.revision = *r;
  return out;
}

}  // namespace shale::cluster
