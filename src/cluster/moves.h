// Partition moves at the metadata level: the transitions of <ns>/assign/<topic_id>/<p> that
// move ownership from broker A to broker B without copying data (cluster.md §3).
//
//   OWNED(A, e) --request_move(B)--> MOVING(A, e, →B) --release(A)--> RELEASED(A, e, →B)
//               --take_over(B)--> OWNED(B, e+1)
//   MOVING(A, e, →B) --cancel_move--> OWNED(A, e)
//
// A serves while OWNED or MOVING; after it has stopped accepting, drained, uploaded and closed
// the stream it writes RELEASED, and serves nothing more. Only then may B open the stream (with a
// higher stream epoch) and write OWNED(B, e+1) — in the same transaction as its own ops — so two
// brokers never both serve a partition. Every transition compares the record's mod revision, so
// concurrent requests race safely (one wins, the others get kConflict and re-read).
//
// Errors: kNotFound for an unknown partition (UNKNOWN_TOPIC_OR_PARTITION); kInvalidArgument for
// a target that is not a live broker (INVALID_REPLICA_ASSIGNMENT); kFenced when the caller is
// not the broker the transition belongs to; kConflict on a lost race or a state that does not
// allow the transition (retry after re-reading).
//
// Threads: blocking store calls; call from worker threads.
#pragma once

#include <functional>
#include <set>
#include <vector>

#include "cluster/model.h"
#include "meta/meta_store.h"

namespace shale::cluster {

// Serving rule: broker `me` may accept requests for the partition.
bool may_serve(const Assignment& a, int32_t me);

// Asks to move the partition to `target` (one of `live`). Moving to the current owner of an
// OWNED partition, or asking again for the current target, changes nothing. A MOVING partition
// can be re-targeted; a RELEASED one cannot (kConflict). Returns the resulting assignment.
Result<Assignment> request_move(meta::MetaStore* store, const Keys& keys,
                                const std::string& topic_id, int32_t partition, int32_t target,
                                const std::set<int32_t>& live);

// The owner `me` has closed the stream: MOVING → RELEASED. `revision` (optional) receives the
// store revision of the record as returned (the write's, or the record's if it was RELEASED
// already): a watch-fed view of the records must reach it before acting on the partition again.
Result<Assignment> release(meta::MetaStore* store, const Keys& keys, const std::string& topic_id,
                           int32_t partition, int32_t me, int64_t* revision = nullptr);

// The target `me` takes the partition over: RELEASED(→me) → OWNED(me, epoch + 1), together with
// `extra` (the caller's compares and ops, e.g. its stream open) in one transaction. `revision`
// as for release().
Result<Assignment> take_over(meta::MetaStore* store, const Keys& keys, const std::string& topic_id,
                             int32_t partition, int32_t me, const meta::Txn& extra = {},
                             int64_t* revision = nullptr);

// Controller: hands a partition of broker `from` (dead, its WAL recovered) to `target`: any
// record owned by `from` → RELEASED(from → target), same epoch, written through `commit` (the
// controller's fenced commit). kConflict when the owner is no longer `from`.
using CommitFn = std::function<Result<int64_t>(meta::Txn)>;
Result<Assignment> hand_over(meta::MetaStore* store, const Keys& keys, const std::string& topic_id,
                             int32_t partition, int32_t from, int32_t target,
                             const CommitFn& commit);

// Controller: a RELEASED record whose target died before taking it over goes back to its owner
// (OWNED, same epoch), which reopens it. kConflict when it is no longer RELEASED to `target`.
Result<Assignment> revert_release(meta::MetaStore* store, const Keys& keys,
                                  const std::string& topic_id, int32_t partition, int32_t target,
                                  const CommitFn& commit);

// Cancels a move the owner has not yet released: MOVING → OWNED (same owner and epoch).
Result<Assignment> cancel_move(meta::MetaStore* store, const Keys& keys,
                               const std::string& topic_id, int32_t partition);

}  // namespace shale::cluster
