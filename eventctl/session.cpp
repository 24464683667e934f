#include "session.hpp"

#include <unistd.h>

#include <cerrno>
#include <vector>

#include <nlohmann/json.hpp>

#include "connection.hpp"
#include "output.hpp"
#include "reply.hpp"
#include "spool.hpp"

namespace eventctl {
namespace {

std::vector<uint8_t> request_body(const std::string& query) {
    return nlohmann::json::to_msgpack(nlohmann::json{{"query", query}});
}

class Session {
public:
    explicit Session(const SessionOptions& o)
        : path_(o.socket_path), out_(STDOUT_FILENO), writer_(make_record_writer(o.format, o.status_view, out_)) {}

    kmes::Result<SessionEnd> run(Connection& conn, const std::string& query) {
        auto sent = conn.send_frame(request_body(query));
        if (sent && sent.value() == ReadResult::interrupted) return SessionEnd::interrupted_early;
        // eventd may refuse the request without reading it all ("… exceeds N") and close: its
        // error frame may still be waiting, and says more than the failed send.
        const bool send_failed = !sent;

        std::vector<uint8_t> frame;
        while (true) {
            auto got = conn.read_frame(frame);
            if (!got) return send_failed ? sent.error() : got.error();
            if (got.value() == ReadResult::interrupted) return interrupted_end();
            if (got.value() == ReadResult::closed) {
                if (send_failed) return sent.error();
                return closed_error();
            }
            auto reply = parse_reply(frame);
            if (!reply) return end_stream_with(reply.error());
            if (reply->status == ReplyStatus::error) return end_stream_with(kmes::Error{EPROTO, reply->error});
            if (auto st = take_records(reply->records); !st) return end_stream_with(st.error());
            switch (reply->status) {
                case ReplyStatus::ok:
                    if (streaming_) {
                        if (auto st = out_.flush(); !st) return st.error();
                    }
                    break;
                case ReplyStatus::end:
                    // After `watch` no `end` is due; take one as eventd closing the stream cleanly.
                    if (!streaming_) {
                        if (auto st = commit(); !st) return st.error();
                    }
                    return finish();
                case ReplyStatus::watch:
                    if (!streaming_) {
                        if (auto st = commit(); !st) return st.error();
                        streaming_ = true;
                        if (auto st = out_.flush(); !st) return st.error();
                    }
                    break;
                case ReplyStatus::error:
                    break;  // handled above
            }
        }
    }

private:
    kmes::Status take_records(const std::vector<std::span<const uint8_t>>& records) {
        for (const auto& r : records) {
            auto st = streaming_ ? writer_->write(r) : spool_.append(r);
            if (!st) return st;
        }
        return {};
    }

    // `end` or `watch`: the spooled result goes out, as one piece.
    kmes::Status commit() {
        writer_->begin();
        return spool_.drain([this](std::span<const uint8_t> r) { return writer_->write(r); });
    }

    kmes::Result<SessionEnd> finish() {
        writer_->finish();
        if (auto st = out_.flush(); !st) return st.error();
        return SessionEnd::done;
    }

    // Ctrl-C: a stream ends cleanly (what is shown stays, a JSON array is closed); before the
    // result was committed, nothing is printed.
    kmes::Result<SessionEnd> interrupted_end() {
        if (!streaming_) return SessionEnd::interrupted_early;
        return finish();
    }

    kmes::Error closed_error() {
        if (streaming_) {
            return end_stream_with(kmes::Error{EPIPE, "eventd at " + path_ + " closed the stream (eventd stopped?)"});
        }
        return kmes::Error{EPIPE, "eventd at " + path_ +
                                      " closed the connection before the end of the result "
                                      "(eventd stopped or crashed?); nothing printed"};
    }

    // An error during a stream still closes what was started on stdout (the JSON array), so
    // the output shown so far stays well-formed; before that, stdout stays empty.
    kmes::Error end_stream_with(kmes::Error error) {
        if (streaming_) {
            writer_->finish();
            (void)out_.flush();
        }
        return error;
    }

    std::string path_;
    Output out_;
    std::unique_ptr<RecordWriter> writer_;
    Spool spool_;
    bool streaming_ = false;
};

}  // namespace

kmes::Result<SessionEnd> run_session(const SessionOptions& options) {
    auto conn = Connection::open(options.socket_path);
    if (!conn) return conn.error();
    Session session(options);
    return session.run(conn.value(), options.query);
}

}  // namespace eventctl
