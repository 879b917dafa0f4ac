#include "cluster/moves.h"

#include "base/clock.h"

namespace shale::cluster {

namespace {

struct Current {
  Assignment a;
  int64_t mod_revision = 0;
};

Result<Current> read(meta::MetaStore* store, const Keys& keys, const std::string& topic_id,
                     int32_t partition) {
  auto kv = store->get(keys.assign(topic_id, partition));
  if (!kv.ok()) return std::move(kv).error();
  if (!kv->has_value())
    return Error::make(Errc::kNotFound,
                       "no partition " + std::to_string(partition) + " of topic " + topic_id);
  auto a = assignment_from_json((*kv)->value);
  if (!a.ok()) return std::move(a).error();
  return Current{*a, (*kv)->mod_revision};
}

Result<Assignment> write(meta::MetaStore* store, const Keys& keys, const std::string& topic_id,
                         int32_t partition, const Current& cur, Assignment next,
                         const meta::Txn& extra = {}, const CommitFn* commit = nullptr,
                         int64_t* revision = nullptr) {
  next.since_ms = clock::wall_ms();
  meta::Txn t = extra;
  t.compares.push_back({keys.assign(topic_id, partition), cur.mod_revision});
  t.ops.push_back(meta::Op::put(keys.assign(topic_id, partition), to_json(next)));
  auto r = commit != nullptr ? (*commit)(std::move(t)) : store->commit(t);
  if (!r.ok()) return std::move(r).error();
  if (revision != nullptr) *revision = *r;
  return next;
}

Error wrong_state(const std::string& what, const Assignment& a) {
  return Error::make(Errc::kConflict, what + " (" + to_json(a) + ")", true);
}

}  // namespace

bool may_serve(const Assignment& a, int32_t me) {
  return a.owner == me && a.state != Assignment::State::kReleased;
}

Result<Assignment> request_move(meta::MetaStore* store, const Keys& keys,
                                const std::string& topic_id, int32_t partition, int32_t target,
                                const std::set<int32_t>& live) {
  auto cur = read(store, keys, topic_id, partition);
  if (!cur.ok()) return std::move(cur).error();
  if (!live.contains(target))
    return Error::make(Errc::kInvalidArgument,
                       "broker " + std::to_string(target) + " is not a live broker");
  const Assignment& a = cur->a;
  switch (a.state) {
    case Assignment::State::kOwned:
      if (a.owner == target) return a;
      break;
    case Assignment::State::kMoving:
      if (a.target == target) return a;
      if (a.owner == target) return cancel_move(store, keys, topic_id, partition);
      break;
    case Assignment::State::kReleased:
      if (a.target == target) return a;
      return wrong_state("the partition is being taken over; retry when it is owned", a);
  }
  Assignment next = a;
  next.state = Assignment::State::kMoving;
  next.target = target;
  return write(store, keys, topic_id, partition, *cur, next);
}

Result<Assignment> release(meta::MetaStore* store, const Keys& keys, const std::string& topic_id,
                           int32_t partition, int32_t me, int64_t* revision) {
  auto cur = read(store, keys, topic_id, partition);
  if (!cur.ok()) return std::move(cur).error();
  const Assignment& a = cur->a;
  if (a.owner != me)
    return Error::make(Errc::kFenced, "broker " + std::to_string(me) + " does not own it");
  if (a.state == Assignment::State::kReleased) {
    if (revision != nullptr) *revision = cur->mod_revision;
    return a;
  }
  if (a.state != Assignment::State::kMoving) return wrong_state("no move to release for", a);
  Assignment next = a;
  next.state = Assignment::State::kReleased;
  return write(store, keys, topic_id, partition, *cur, next, {}, nullptr, revision);
}

Result<Assignment> take_over(meta::MetaStore* store, const Keys& keys, const std::string& topic_id,
                             int32_t partition, int32_t me, const meta::Txn& extra,
                             int64_t* revision) {
  auto cur = read(store, keys, topic_id, partition);
  if (!cur.ok()) return std::move(cur).error();
  const Assignment& a = cur->a;
  if (a.state == Assignment::State::kOwned && a.owner == me) {
    if (revision != nullptr) *revision = cur->mod_revision;
    return a;
  }
  if (a.state == Assignment::State::kOwned || a.target != me)
    return Error::make(Errc::kFenced,
                       "broker " + std::to_string(me) + " is not the target of a move");
  if (a.state != Assignment::State::kReleased)
    return wrong_state("the owner has not released it yet", a);
  Assignment next;
  next.owner = me;
  next.leader_epoch = a.leader_epoch + 1;
  next.state = Assignment::State::kOwned;
  return write(store, keys, topic_id, partition, *cur, next, extra, nullptr, revision);
}

Result<Assignment> cancel_move(meta::MetaStore* store, const Keys& keys,
                               const std::string& topic_id, int32_t partition) {
  auto cur = read(store, keys, topic_id, partition);
  if (!cur.ok()) return std::move(cur).error();
  const Assignment& a = cur->a;
  if (a.state == Assignment::State::kOwned) return a;
  if (a.state == Assignment::State::kReleased)
    return wrong_state("too late to cancel: the owner has released it", a);
  Assignment next = a;
  next.state = Assignment::State::kOwned;
  next.target = -1;
  return write(store, keys, topic_id, partition, *cur, next);
}

Result<Assignment> hand_over(meta::MetaStore* store, const Keys& keys, const std::string& topic_id,
                             int32_t partition, int32_t from, int32_t target,
                             const CommitFn& commit) {
  auto cur = read(store, keys, topic_id, partition);
  if (!cur.ok()) return std::move(cur).error();
  const Assignment& a = cur->a;
  if (a.owner != from) return wrong_state("not owned by " + std::to_string(from), a);
  Assignment next = a;
  next.state = Assignment::State::kReleased;
  next.target = target;
  return write(store, keys, topic_id, partition, *cur, next, {}, &commit);
}

Result<Assignment> revert_release(meta::MetaStore* store, const Keys& keys,
                                  const std::string& topic_id, int32_t partition, int32_t target,
                                  const CommitFn& commit) {
  auto cur = read(store, keys, topic_id, partition);
  if (!cur.ok()) return std::move(cur).error();
  const Assignment& a = cur->a;
  if (a.state != Assignment::State::kReleased || a.target != target)
    return wrong_state("not released to " + std::to_string(target), a);
  Assignment next = a;
  next.state = Assignment::State::kOwned;
  next.target = -1;
  return write(store, keys, topic_id, partition, *cur, next, {}, &commit);
}

}  // namespace shale::cluster
