// One query's records; see fetch_records.hpp.
#include "fetch_records.hpp"

#include "protocol/client.hpp"
#include "protocol/reply.hpp"
#include "protocol/wire.hpp"

namespace eventctl {

base::Result<std::vector<std::vector<uint8_t>>> fetch_records(const std::string& socket, const std::string& query) {
    auto connection = protocol::Connection::open(socket);
    if (!connection) return connection.error();
    protocol::Request request;
    request.query = query;
    auto sent = connection->send_frame(protocol::encode_request(request));
    if (!sent) return sent.error();
    if (*sent == protocol::ReadResult::interrupted) return base::Error{EINTR, "interrupted"};
    std::vector<std::vector<uint8_t>> records;
    std::vector<uint8_t> frame;
    for (;;) {
        auto read = connection->read_frame(frame);
        if (!read) return read.error();
        if (*read == protocol::ReadResult::interrupted) return base::Error{EINTR, "interrupted"};
        if (*read == protocol::ReadResult::closed) return base::Error{EPIPE, "eventd closed the connection early"};
        auto reply = protocol::parse_reply(frame);
        if (!reply) return reply.error();
        if (reply->status == protocol::ReplyStatus::error) return base::Error{EIO, reply->error};
        for (const auto& record : reply->records) records.emplace_back(record.begin(), record.end());
        if (reply->status == protocol::ReplyStatus::end) return records;
    }
}

}  // namespace eventctl
