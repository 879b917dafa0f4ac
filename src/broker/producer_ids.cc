#include "broker/producer_ids.h"

#include <charconv>

#include "meta/meta_store.h"

namespace shale::broker {

Result<int64_t> ProducerIdManager::allocate() {
  std::lock_guard lock(mu_);
  if (next_ == end_) {
    for (int attempt = 0;; ++attempt) {
      auto kv = meta_->get(key_);
      if (!kv.ok()) return std::move(kv).error();
      int64_t start = 0;
      int64_t rev = 0;
      if (kv->has_value()) {
        const std::string& v = (*kv)->value;
        auto r = std::from_chars(v.data(), v.data() + v.size(), start);
        if (r.ec != std::errc()) return Error::make(Errc::kCorruption, "bad producer id block");
        rev = (*kv)->mod_revision;
      }
      meta::Txn txn;
      txn.compares.push_back({key_, rev});
      txn.ops.push_back(meta::Op::put(key_, std::to_string(start + kBlockSize)));
      auto c = meta_->commit(txn);
      if (c.ok()) {
        next_ = start;
        end_ = start + kBlockSize;
        break;
      }
      if (c.error().code != Errc::kConflict || attempt > 100) return std::move(c).error();
    }
  }
  return next_++;
}

}  // namespace shale::broker
