// The transaction APIs (KIP-98, KIP-447, KIP-664) over TxnCoordinator (txn_coordinator.h) and
// the partitions: AddPartitionsToTxn (client form, v0-3), AddOffsetsToTxn, TxnOffsetCommit,
// EndTxn, DescribeTransactions, ListTransactions, DescribeProducers. InitProducerId with a
// transactional.id is handle_init_producer_id (admin_topics.cc), which calls the coordinator.
// The versions registered stop before the KIP-890 part 2 forms (EndTxn v5, TxnOffsetCommit v5,
// AddPartitionsToTxn v4+), which clients use only with the transaction.version feature that
// Shale does not finalize. docs/transactions.md.
//
// Threads: coroutines on a shard; every coordinator call runs on Broker::blocking().
#pragma once

#include <asio/awaitable.hpp>

#include "broker/broker.h"
#include "group/coordinator.h"
#include "protocol/generated/add_offsets_to_txn_request.h"
#include "protocol/generated/add_offsets_to_txn_response.h"
#include "protocol/generated/add_partitions_to_txn_request.h"
#include "protocol/generated/add_partitions_to_txn_response.h"
#include "protocol/generated/describe_producers_request.h"
#include "protocol/generated/describe_producers_response.h"
#include "protocol/generated/describe_transactions_request.h"
#include "protocol/generated/describe_transactions_response.h"
#include "protocol/generated/end_txn_request.h"
#include "protocol/generated/end_txn_response.h"
#include "protocol/generated/list_transactions_request.h"
#include "protocol/generated/list_transactions_response.h"
#include "protocol/generated/txn_offset_commit_request.h"
#include "protocol/generated/txn_offset_commit_response.h"

namespace shale::broker {

asio::awaitable<protocol::AddPartitionsToTxnResponse> handle_add_partitions_to_txn(
    Broker& b, int16_t version, protocol::AddPartitionsToTxnRequest req);
asio::awaitable<protocol::AddOffsetsToTxnResponse> handle_add_offsets_to_txn(
    Broker& b, int16_t version, protocol::AddOffsetsToTxnRequest req);
asio::awaitable<protocol::TxnOffsetCommitResponse> handle_txn_offset_commit(
    Broker& b, int16_t version, protocol::TxnOffsetCommitRequest req);
asio::awaitable<protocol::EndTxnResponse> handle_end_txn(Broker& b, int16_t version,
                                                         protocol::EndTxnRequest req);
asio::awaitable<protocol::DescribeTransactionsResponse> handle_describe_transactions(
    Broker& b, int16_t version, protocol::DescribeTransactionsRequest req);
asio::awaitable<protocol::ListTransactionsResponse> handle_list_transactions(
    Broker& b, int16_t version, protocol::ListTransactionsRequest req);
asio::awaitable<protocol::DescribeProducersResponse> handle_describe_producers(
    Broker& b, int16_t version, protocol::DescribeProducersRequest req);

// TxnHooks::commit_offsets over the group coordinator: writes a committed transaction's
// offsets (CommitRequest::transactional). Blocking.
Status commit_txn_offsets(group::Coordinator& gc, const std::string& group,
                          const std::map<TxnTopicPartition, TxnPendingOffset>& offsets);

// PRODUCER_FENCED as the API version can carry it: versions before it existed (KIP-588) get
// INVALID_PRODUCER_EPOCH. `first_version` is the API's first version that knows it.
protocol::ErrorCode fenced_for_version(protocol::ErrorCode e, int16_t version,
                                       int16_t first_version);

}  // namespace shale::broker
