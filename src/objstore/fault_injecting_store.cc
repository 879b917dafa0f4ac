#include "objstore/fault_injecting_store.h"

namespace shale::objstore {

FaultInjectingStore::FaultInjectingStore(ObjectStore& inner)
    : inner_(inner), timer_([this] { timer_loop(); }) {}

FaultInjectingStore::~FaultInjectingStore() {
  {
    std::lock_guard lk(timer_mu_);
    stopping_ = true;
  }
  timer_cv_.notify_all();
  timer_.join();
}

void FaultInjectingStore::timer_loop() {
  std::unique_lock lk(timer_mu_);
  for (;;) {
    if (timers_.empty()) {
      if (stopping_) return;
      timer_cv_.wait(lk);
      continue;
    }
    auto it = timers_.begin();
    // On shutdown run what is left at once: every call must get its callback.
    if (!stopping_ && it->first > std::chrono::steady_clock::now()) {
      timer_cv_.wait_until(lk, it->first);
      continue;
    }
    auto fn = std::move(it->second);
    timers_.erase(it);
    lk.unlock();
    fn();
    lk.lock();
  }
}

void FaultInjectingStore::later(std::chrono::milliseconds delay, std::function<void()> fn) {
  if (delay.count() <= 0) {
    fn();
    return;
  }
  {
    std::lock_guard lk(timer_mu_);
    timers_.emplace(std::chrono::steady_clock::now() + delay, std::move(fn));
  }
  timer_cv_.notify_all();
}

void FaultInjectingStore::fail_next(Op op, int n, Error err) {
  std::lock_guard lk(mu_);
  ops_[static_cast<int>(op)].fail_n = n;
  ops_[static_cast<int>(op)].fail_err = std::move(err);
}
void FaultInjectingStore::lose_response_next(Op op, int n, Error err) {
  std::lock_guard lk(mu_);
  ops_[static_cast<int>(op)].lose_n = n;
  ops_[static_cast<int>(op)].lose_err = std::move(err);
}
void FaultInjectingStore::tear_next(Op op, int n) {
  std::lock_guard lk(mu_);
  ops_[static_cast<int>(op)].tear_n = n;
}
void FaultInjectingStore::fail_randomly(Op op, double p, uint64_t seed, Error err) {
  std::lock_guard lk(mu_);
  ops_[static_cast<int>(op)].p = p;
  ops_[static_cast<int>(op)].p_err = std::move(err);
  rng_.seed(seed);
}
void FaultInjectingStore::set_delay(Op op, std::chrono::milliseconds d) {
  std::lock_guard lk(mu_);
  ops_[static_cast<int>(op)].delay = d;
}
void FaultInjectingStore::clear() {
  std::lock_guard lk(mu_);
  for (auto& s : ops_) {
    uint64_t calls = s.calls;
    s = OpState{};
    s.calls = calls;
  }
}
uint64_t FaultInjectingStore::calls(Op op) const {
  std::lock_guard lk(mu_);
  return ops_[static_cast<int>(op)].calls;
}
uint64_t FaultInjectingStore::injected() const {
  std::lock_guard lk(mu_);
  return injected_;
}

FaultInjectingStore::Decision FaultInjectingStore::decide(Op op) {
  std::lock_guard lk(mu_);
  OpState& s = ops_[static_cast<int>(op)];
  ++s.calls;
  Decision d;
  d.delay = s.delay;
  bool tearable = op == Op::kPut || op == Op::kGet;
  if (s.fail_n > 0) {
    --s.fail_n;
    d.action = Action::kFail;
    d.error = s.fail_err;
  } else if (s.lose_n > 0) {
    --s.lose_n;
    d.action = Action::kLoseResponse;
    d.error = s.lose_err;
  } else if (tearable && s.tear_n > 0) {
    --s.tear_n;
    d.action = Action::kTear;
  } else if (s.p > 0 && std::uniform_real_distribution<double>(0, 1)(rng_) < s.p) {
    d.action = Action::kFail;
    d.error = s.p_err;
  }
  if (d.action != Action::kPass) ++injected_;
  return d;
}

void FaultInjectingStore::put(const std::string& key, BufferChain data, StatusCallback done) {
  Decision d = decide(Op::kPut);
  later(d.delay, [this, d, key, data = std::move(data), done = std::move(done)]() mutable {
    switch (d.action) {
      case Action::kFail:
        done(d.error);
        return;
      case Action::kLoseResponse:
        inner_.put(key, std::move(data), [err = d.error, done](Status) { done(err); });
        return;
      case Action::kTear: {
        Buffer all = data.flatten();
        BufferChain half;
        half.push_back(all.slice(0, all.size() / 2));
        inner_.put(key, std::move(half),
                   [done](Status) { done(Error::make(Errc::kIoError, "injected: torn write")); });
        return;
      }
      case Action::kPass:
        inner_.put(key, std::move(data), std::move(done));
        return;
    }
  });
}

void FaultInjectingStore::get(const std::string& key, Range range, GetCallback done) {
  Decision d = decide(Op::kGet);
  later(d.delay, [this, d, key, range, done = std::move(done)]() mutable {
    switch (d.action) {
      case Action::kFail:
        done(d.error);
        return;
      case Action::kLoseResponse:
        inner_.get(key, range, [err = d.error, done](Result<Buffer>) { done(err); });
        return;
      case Action::kTear:
        inner_.get(key, range, [done](Result<Buffer> r) {
          if (!r.ok()) {
            done(std::move(r));
            return;
          }
          done(r->slice(0, r->size() / 2));
        });
        return;
      case Action::kPass:
        inner_.get(key, range, std::move(done));
        return;
    }
  });
}

void FaultInjectingStore::remove(std::vector<std::string> keys, StatusCallback done) {
  Decision d = decide(Op::kRemove);
  later(d.delay, [this, d, keys = std::move(keys), done = std::move(done)]() mutable {
    if (d.action == Action::kFail) return done(d.error);
    if (d.action == Action::kLoseResponse) {
      return inner_.remove(std::move(keys), [err = d.error, done](Status) { done(err); });
    }
    inner_.remove(std::move(keys), std::move(done));
  });
}

void FaultInjectingStore::list(const std::string& prefix, ListCallback done) {
  Decision d = decide(Op::kList);
  later(d.delay, [this, d, prefix, done = std::move(done)]() mutable {
    if (d.action == Action::kFail) return done(d.error);
    if (d.action == Action::kLoseResponse) {
      return inner_.list(prefix, [err = d.error, done](auto) { done(err); });
    }
    inner_.list(prefix, std::move(done));
  });
}

// Wraps the inner store's upload so parts, complete and abort can be failed too.
class FaultyMultipart final : public MultipartUpload {
 public:
  FaultyMultipart(FaultInjectingStore* fs, std::unique_ptr<MultipartUpload> inner)
      : fs_(fs), inner_(std::move(inner)) {}

  void upload_part(int part_number, BufferChain data, StatusCallback done) override {
    run(Op::kUploadPart, std::move(done), [this, part_number, data](StatusCallback cb) mutable {
      inner_->upload_part(part_number, std::move(data), std::move(cb));
    });
  }
  void complete(StatusCallback done) override {
    run(Op::kComplete, std::move(done),
        [this](StatusCallback cb) { inner_->complete(std::move(cb)); });
  }
  void abort(StatusCallback done) override {
    run(Op::kAbort, std::move(done), [this](StatusCallback cb) { inner_->abort(std::move(cb)); });
  }

 private:
  void run(Op op, StatusCallback done, std::function<void(StatusCallback)> call) {
    auto d = fs_->decide(op);
    fs_->later(d.delay, [d, done = std::move(done), call = std::move(call)]() mutable {
      using A = FaultInjectingStore::Action;
      if (d.action == A::kFail) return done(d.error);
      if (d.action == A::kLoseResponse) return call([err = d.error, done](Status) { done(err); });
      call(std::move(done));
    });
  }

  FaultInjectingStore* fs_;
  std::unique_ptr<MultipartUpload> inner_;
};

void FaultInjectingStore::create_multipart(const std::string& key, MultipartCallback done) {
  Decision d = decide(Op::kCreateMultipart);
  later(d.delay, [this, d, key, done = std::move(done)]() mutable {
    if (d.action == Action::kFail) return done(d.error);
    inner_.create_multipart(key, [this, d, done](Result<std::unique_ptr<MultipartUpload>> r) {
      if (!r.ok()) return done(std::move(r));
      if (d.action == Action::kLoseResponse) return done(d.error);
      done(std::unique_ptr<MultipartUpload>(new FaultyMultipart(this, std::move(r).value())));
    });
  });
}

}  // namespace shale::objstore
