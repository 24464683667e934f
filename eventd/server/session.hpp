// One query on one connection, run on its own worker thread (PSD-008 §8.6.7–§8.8, §9.2):
//
//   parse ─► STATUS? admin check ─► records ─► end
//         └► STREAM? streaming slot ─► check_query ─► execute (deadline, cancel flag)
//              ─► {ok, records} frames ─► end            (plain query)
//              ─► {ok, records} frames ─► watch ─► live  (stream, §8.7)
//         └► after: <cursor>? ─► check_query ─► catch_up (query/resume.hpp)
//              ─► [gap] ─► {ok, records, cursor} frames ─► watch|end, with the cursor ─► live
//              └► a bare COUNT: count_after ─► {count} ─► end
//
// session.cpp has one function per path (run_status, run_index, run_query, run_catch_up,
// run_count_after, follow); the socket is channel.hpp's, the slots admissions.hpp's.
//
// SQLite work never runs on the io thread. Sends of the initial result block only this
// worker, bounded by the query's deadline (SO_SNDTIMEO); live sends never block: a full
// socket buffer drops the stream (§8.7.6).
#pragma once

#include "eventd/access/caller.hpp"
#include "eventd/server/admissions.hpp"
#include "eventd/server/record_batcher.hpp"
#include "protocol/wire.hpp"
#include "eventd/server/server_shared.hpp"

namespace eventd::server {

// Run the query of `request` on the connected socket `fd` for `caller`; returns when the
// query (or stream) is over. The socket is shut down (the client sees EOF) but not closed: the server
// closes it after joining this thread, so a shutdown() from stop() never hits a reused fd.
void run_session(ServerShared& shared, int fd, const access::Caller& caller, const protocol::Request& request,
                 Admissions::Ticket& ticket);

}  // namespace eventd::server
