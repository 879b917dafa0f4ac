#include "cluster/member.h"

#include <charconv>
#include <chrono>
#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "base/log.h"

namespace shale::cluster {

namespace {

std::string controller_value(int32_t id, int64_t node_epoch) {
  nlohmann::json j;
  j["id"] = id;
  j["node_epoch"] = node_epoch;
  return j.dump();
}

std::optional<int32_t> controller_id(std::string_view v) {
  auto j = nlohmann::json::parse(v, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("id") || !j["id"].is_number_integer())
    return std::nullopt;
  return j["id"].get<int32_t>();
}

}  // namespace

Member::Member(meta::MetaStore* store, meta::LeaseKeeper* lease, MemberOptions opts, Listener l)
    : store_(store),
      lease_(lease),
      keys_(opts.ns),
      id_(opts.self.id),
      tick_ms_(std::max<int64_t>(opts.tick_ms, 10)),
      listener_(std::move(l)),
      self_(std::move(opts.self)) {}

Result<std::unique_ptr<Member>> Member::start(meta::MetaStore* store, meta::LeaseKeeper* lease,
                                              MemberOptions opts, Listener listener) {
  if (opts.self.id < 0) return Error::make(Errc::kInvalidArgument, "broker id must be >= 0");
  if (opts.ns.empty()) return Error::make(Errc::kInvalidArgument, "empty cluster namespace");
  const int64_t wait_ms = opts.register_wait_ms;
  std::unique_ptr<Member> m(new Member(store, lease, std::move(opts), std::move(listener)));

  // View first (snapshot, then watch from the snapshot's revision: replayed events are applied
  // by mod revision, so overlap is harmless), then registration, which the watch then reports.
  auto rev = store->revision();
  if (!rev.ok()) return std::move(rev).error();
  auto brokers = store->prefix(m->keys_.brokers_prefix());
  if (!brokers.ok()) return std::move(brokers).error();
  for (const auto& kv : *brokers) {
    meta::WatchEvent e;
    e.kv = kv;
    m->on_broker_events({e});
  }
  auto ctl = store->get(m->keys_.controller());
  if (!ctl.ok()) return std::move(ctl).error();
  if (ctl->has_value()) {
    meta::WatchEvent e;
    e.kv = **ctl;
    m->on_controller_events({e});
  }
  Member* p = m.get();
  auto w1 =
      store->watch(m->keys_.brokers_prefix(), *rev,
                   [p](const std::vector<meta::WatchEvent>& evs) { p->on_broker_events(evs); });
  if (!w1.ok()) return std::move(w1).error();
  m->broker_watch_ = *w1;
  auto w2 =
      store->watch(m->keys_.controller(), *rev,
                   [p](const std::vector<meta::WatchEvent>& evs) { p->on_controller_events(evs); });
  if (!w2.ok()) {
    store->cancel_watch(m->broker_watch_);
    return std::move(w2).error();
  }
  m->ctl_watch_ = *w2;

  const int64_t deadline = clock::mono_ms() + wait_ms;
  while (true) {
    auto st = m->register_self();
    if (st.ok()) break;
    if (st.error().code != Errc::kAlreadyExists || clock::mono_ms() >= deadline) {
      store->cancel_watch(m->broker_watch_);
      store->cancel_watch(m->ctl_watch_);
      m->broker_watch_ = m->ctl_watch_ = 0;
      return std::move(st).error();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(m->tick_ms_));
  }
  m->campaign();
  m->thread_ = std::thread([p] { p->run(); });
  return m;
}

Member::~Member() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (broker_watch_) store_->cancel_watch(broker_watch_);
  if (ctl_watch_) store_->cancel_watch(ctl_watch_);
}

Status Member::register_self() {
  const int64_t lease = lease_->lease();
  for (int attempt = 0; attempt < 10; ++attempt) {
    auto cur = store_->get(keys_.node_epoch(id_));
    if (!cur.ok()) return std::move(cur).error();
    int64_t epoch = 0;
    int64_t epoch_rev = 0;
    if (cur->has_value()) {
      const std::string& v = (*cur)->value;
      auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), epoch);
      if (ec != std::errc() || ptr != v.data() + v.size())
        return Error::make(Errc::kCorruption, "node epoch of broker " + std::to_string(id_));
      epoch_rev = (*cur)->mod_revision;
    }
    BrokerInfo info;
    {
      std::lock_guard lk(mu_);
      info = self_;
    }
    info.node_epoch = epoch + 1;
    info.start_time_ms = clock::wall_ms();
    meta::Txn t;
    t.compares.push_back({keys_.broker(id_), 0});
    t.compares.push_back({keys_.node_epoch(id_), epoch_rev});
    t.ops.push_back(meta::Op::put(keys_.node_epoch(id_), std::to_string(info.node_epoch)));
    t.ops.push_back(meta::Op::put(keys_.broker(id_), to_json(info), lease));
    auto r = store_->commit(t);
    if (r.ok()) {
      std::lock_guard lk(mu_);
      self_ = info;
      registered_lease_ = lease;
      SPDLOG_INFO("cluster: broker {} registered, node epoch {}, lease {}", id_, info.node_epoch,
                  lease);
      return ok_status();
    }
    if (r.error().code != Errc::kConflict) return std::move(r).error();
    auto held = store_->get(keys_.broker(id_));
    if (!held.ok()) return std::move(held).error();
    if (held->has_value()) {
      if ((*held)->lease == lease) {
        // Ours already (a retry after an answer was lost): adopt it.
        auto b = broker_from_json((*held)->value);
        if (!b.ok()) return std::move(b).error();
        std::lock_guard lk(mu_);
        self_ = *b;
        registered_lease_ = lease;
        return ok_status();
      }
      return Error::make(Errc::kAlreadyExists,
                         "broker id " + std::to_string(id_) +
                             " is registered by another live process (lease " +
                             std::to_string((*held)->lease) + ")");
    }
    // The epoch counter moved under us: read it again.
  }
  return Error::make(Errc::kConflict, "registration kept losing races", true);
}

void Member::campaign() {
  int64_t lease;
  int64_t epoch;
  {
    std::lock_guard lk(mu_);
    if (ctl_.has_value() || registered_lease_ == 0) return;
    lease = registered_lease_;
    epoch = self_.node_epoch;
  }
  if (!lease_->valid() || lease_->lease() != lease) return;
  meta::Txn t;
  t.compares.push_back({keys_.controller(), 0});
  t.ops.push_back(meta::Op::put(keys_.controller(), controller_value(id_, epoch), lease));
  auto r = store_->commit(t);
  if (!r.ok()) {
    if (r.error().code != Errc::kConflict && r.error().code != Errc::kNotFound)
      SPDLOG_WARN("cluster: broker {} controller campaign: {}", id_, r.error().to_string());
    return;
  }
  std::lock_guard lk(mu_);
  my_token_ = *r;  // the revision of the create = the key's create revision
  my_token_lease_ = lease;
  // Known now, not when the watch reports it (under load that took long enough for clients
  // to be told "no controller"); the watch's event for this revision is then a no-op.
  if (!ctl_ && ctl_deleted_rev_ < *r) {
    ctl_ = Ctl{id_, *r, *r, lease};
    changed_ = true;
    cv_.notify_all();
  }
  SPDLOG_INFO("cluster: broker {} is the controller (token {})", id_, *r);
}

void Member::run() {
  std::unique_lock lk(mu_);
  while (!stop_) {
    cv_.wait_for(lk, std::chrono::milliseconds(tick_ms_), [&] { return stop_ || changed_; });
    if (stop_) break;
    bool changed = std::exchange(changed_, false);
    bool need_register =
        lease_->valid() && (lease_->lease() != registered_lease_ || !live_.contains(id_));
    bool need_campaign = !ctl_.has_value();
    lk.unlock();
    if (need_register) {
      // The lease was re-granted or our key vanished (lease revoked, or deleted by hand).
      auto st = register_self();
      // kNotFound: the lease is gone and the keeper has not noticed yet; it re-grants or
      // reports the lapse, and the next tick retries.
      if (!st.ok() && st.error().code != Errc::kNotFound)
        SPDLOG_WARN("cluster: broker {} re-registration: {}", id_, st.error().to_string());
    }
    if (need_campaign) campaign();
    if (changed && listener_) listener_();
    lk.lock();
  }
}

void Member::on_broker_events(const std::vector<meta::WatchEvent>& evs) {
  std::lock_guard lk(mu_);
  for (const auto& e : evs) {
    auto id = keys_.parse_broker(e.kv.key);
    if (!id) continue;
    auto it = live_.find(*id);
    if (e.type == meta::WatchEvent::Type::kPut) {
      if (it != live_.end() && it->second.mod_revision >= e.kv.mod_revision) continue;
      auto b = broker_from_json(e.kv.value);
      if (!b.ok()) {
        SPDLOG_WARN("cluster: ignoring {}: {}", e.kv.key, b.error().to_string());
        continue;
      }
      live_[*id] = Rec{std::move(b).value(), e.kv.mod_revision};
    } else {
      if (it == live_.end() || it->second.mod_revision >= e.kv.mod_revision) continue;
      live_.erase(it);
    }
    changed_ = true;
  }
  cv_.notify_all();
}

void Member::on_controller_events(const std::vector<meta::WatchEvent>& evs) {
  std::lock_guard lk(mu_);
  for (const auto& e : evs) {
    if (e.kv.key != keys_.controller()) continue;
    if (e.type == meta::WatchEvent::Type::kPut) {
      if (ctl_ && ctl_->mod_revision >= e.kv.mod_revision) continue;
      if (ctl_deleted_rev_ >= e.kv.mod_revision) continue;
      auto id = controller_id(e.kv.value);
      ctl_ = Ctl{id.value_or(-1), e.kv.create_revision, e.kv.mod_revision, e.kv.lease};
    } else {
      if (ctl_deleted_rev_ >= e.kv.mod_revision) continue;
      ctl_deleted_rev_ = e.kv.mod_revision;
      if (!ctl_ || ctl_->mod_revision >= e.kv.mod_revision) continue;
      ctl_.reset();
    }
    changed_ = true;
  }
  cv_.notify_all();
}

BrokerInfo Member::self() const {
  std::lock_guard lk(mu_);
  return self_;
}

std::map<int32_t, BrokerInfo> Member::live() const {
  std::lock_guard lk(mu_);
  std::map<int32_t, BrokerInfo> out;
  for (const auto& [id, rec] : live_) out.emplace(id, rec.info);
  return out;
}

std::optional<int32_t> Member::controller() const {
  std::lock_guard lk(mu_);
  if (!ctl_) return std::nullopt;
  return ctl_->id;
}

bool Member::is_controller() const {
  std::lock_guard lk(mu_);
  return ctl_ && my_token_ != 0 && ctl_->create_revision == my_token_ &&
         my_token_lease_ == lease_->lease() && lease_->valid();
}

int64_t Member::controller_token() const { return is_controller() ? my_token_ : 0; }

Result<int64_t> Member::controller_commit(meta::Txn txn) {
  int64_t token = controller_token();
  if (token == 0)
    return Error::make(Errc::kFenced, "broker " + std::to_string(id_) + " is not the controller");
  txn.compares.push_back({keys_.controller(), token});
  auto r = store_->commit(txn);
  if (r.ok() || r.error().code != Errc::kConflict) return r;
  auto cur = store_->get(keys_.controller());
  if (cur.ok() && (!cur->has_value() || (*cur)->mod_revision != token))
    return Error::make(Errc::kFenced, "controller token " + std::to_string(token) +
                                          " no longer holds: a newer controller exists");
  return r;
}

Status Member::set_listeners(std::map<std::string, std::string> listeners) {
  BrokerInfo info;
  int64_t lease;
  {
    std::lock_guard lk(mu_);
    self_.listeners = std::move(listeners);
    info = self_;
    lease = registered_lease_;
  }
  auto cur = store_->get(keys_.broker(id_));
  if (!cur.ok()) return std::move(cur).error();
  // Gone, or another lease's: the member thread registers again, with the new listeners.
  if (!cur->has_value() || (*cur)->lease != lease) {
    std::lock_guard lk(mu_);
    changed_ = true;
    cv_.notify_all();
    return ok_status();
  }
  meta::Txn t;
  t.compares.push_back({keys_.broker(id_), (*cur)->mod_revision});
  t.ops.push_back(meta::Op::put(keys_.broker(id_), to_json(info), lease));
  auto r = store_->commit(t);
  if (!r.ok()) return std::move(r).error();
  return ok_status();
}

bool Member::wait_until(const std::function<bool()>& pred, int64_t timeout_ms) {
  const int64_t deadline = clock::mono_ms() + timeout_ms;
  while (!pred()) {
    if (clock::mono_ms() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

}  // namespace shale::cluster
