// `eventctl status` in the pretty format: the records eventd answers to the query `STATUS`
// (admins only) rendered as tables, one section per record kind:
//   {kind:"ring", cpu, capacity_bytes, fill_percent, reader_lag_bytes, last_sequence, gaps, lost_events}
//   {kind:"shard", shard, file, rows, bytes, last_commit_ns, batches, avg_batch_size, last_batch_size,
//    commit_latency_ms, failed_batches, lost_events}
//   {kind:"rates", events_in_per_s, events_out_per_s}
//   {kind:"queries", active, streaming, refused_total, refused_concurrency, refused_streaming,
//    refused_per_user, refused_streaming_per_user, timeouts, dropped_streams}
// Keys and kinds it does not know are shown too (extra columns, extra lines, extra sections),
// so a newer eventd that reports more still displays in full.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace eventctl {

using Json = nlohmann::ordered_json;  // keeps eventd's key order

std::string render_status(const std::vector<Json>& records);

}  // namespace eventctl
