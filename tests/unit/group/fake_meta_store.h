// An in-memory MetaStore for the group module's tests: etcd-like revisions and transactions
// over a std::map, plus failure injection (fail_next_commits) so tests can check that the
// coordinator never acknowledges what the store did not accept.
// Thread-safety: one mutex around everything.
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "meta/meta_store.h"

namespace shale::group::testing {

class FakeMetaStore : public meta::MetaStore {
 public:
  Result<std::optional<meta::KeyValue>> get(std::string_view key) override {
    std::lock_guard lk(mu_);
    auto it = kv_.find(std::string(key));
    if (it == kv_.end()) return std::optional<meta::KeyValue>();
    return std::optional<meta::KeyValue>(it->second);
  }
  Result<std::vector<meta::KeyValue>> range(std::string_view begin, std::string_view end,
                                            size_t limit) override {
    std::lock_guard lk(mu_);
    std::vector<meta::KeyValue> out;
    for (auto it = kv_.lower_bound(std::string(begin)); it != kv_.end(); ++it) {
      if (!end.empty() && it->first >= end) break;
      out.push_back(it->second);
      if (limit && out.size() == limit) break;
    }
    return out;
  }
  Result<std::vector<meta::KeyValue>> prefix(std::string_view p, size_t limit) override {
    std::lock_guard lk(mu_);
    std::vector<meta::KeyValue> out;
    for (auto it = kv_.lower_bound(std::string(p)); it != kv_.end(); ++it) {
      if (it->first.compare(0, p.size(), p) != 0) break;
      out.push_back(it->second);
      if (limit && out.size() == limit) break;
    }
    return out;
  }
  Result<int64_t> commit(const meta::Txn& txn) override {
    std::lock_guard lk(mu_);
    ++commits_;
    if (max_txn_ops_ && (txn.ops.size() > max_txn_ops_ || txn.compares.size() > max_txn_ops_)) {
      return Error::make(Errc::kInvalidArgument, "too many operations");
    }
    if (fail_next_ > 0) {
      --fail_next_;
      return Error::make(Errc::kIoError, "injected failure", true);
    }
    for (const auto& c : txn.compares) {
      auto it = kv_.find(c.key);
      int64_t rev = it == kv_.end() ? 0 : it->second.mod_revision;
      if (rev != c.mod_revision) return Error::make(Errc::kConflict, "compare failed");
    }
    ++revision_;
    for (const auto& op : txn.ops) {
      switch (op.type) {
        case meta::Op::Type::kPut: {
          auto& kv = kv_[op.key];
          if (kv.create_revision == 0) kv.create_revision = revision_;
          kv.key = op.key;
          kv.value = op.value;
          kv.mod_revision = revision_;
          kv.lease = op.lease;
          break;
        }
        case meta::Op::Type::kDelete:
          kv_.erase(op.key);
          break;
        case meta::Op::Type::kDeletePrefix:
          for (auto it = kv_.lower_bound(op.key);
               it != kv_.end() && it->first.compare(0, op.key.size(), op.key) == 0;) {
            it = kv_.erase(it);
          }
          break;
      }
    }
    return revision_;
  }
  Result<int64_t> revision() override {
    std::lock_guard lk(mu_);
    return revision_;
  }
  // Leases and watches are not used by the group store; they fail loudly if that changes.
  Result<int64_t> grant_lease(int64_t) override { return unsupported(); }
  Status keep_alive(int64_t) override { return unsupported(); }
  Status revoke_lease(int64_t) override { return unsupported(); }
  Result<int64_t> watch(std::string_view, int64_t, meta::WatchCallback) override {
    return unsupported();
  }
  void cancel_watch(int64_t) override {}

  size_t max_txn_ops() const override { return max_txn_ops_; }
  void set_max_txn_ops(size_t n) { max_txn_ops_ = n; }

  void fail_next_commits(int n) {
    std::lock_guard lk(mu_);
    fail_next_ = n;
  }
  int commits() {
    std::lock_guard lk(mu_);
    return commits_;
  }
  size_t size() {
    std::lock_guard lk(mu_);
    return kv_.size();
  }

 private:
  static Error unsupported() { return Error::make(Errc::kUnsupported, "not in the fake"); }
  std::mutex mu_;
  std::map<std::string, meta::KeyValue> kv_;
  int64_t revision_ = 0;
  int fail_next_ = 0;
  int commits_ = 0;
  size_t max_txn_ops_ = 0;
};

}  // namespace shale::group::testing
