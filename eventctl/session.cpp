#include "session.hpp"

#include <cstdlib>

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/client.hpp"
#include "protocol/wire.hpp"
#include "cursor_file.hpp"
#include "help_text.hpp"
#include "output.hpp"
#include "protocol/reply.hpp"
#include "spool.hpp"

namespace eventctl {
namespace {


class Session {
public:
    explicit Session(const SessionOptions& o)
        : path_(o.socket_path),
          out_(STDOUT_FILENO),
          writer_(make_record_writer(o.format, o.status_view, out_, o.pretty)),
          cursor_file_(o.cursor_file),
          allow_gap_(o.allow_gap) {}

    base::Result<SessionEnd> run(protocol::Connection& conn, const std::string& query) {
        std::optional<std::string> after;
        if (cursor_file_) {
            auto saved = load_cursor(*cursor_file_);
            if (!saved) return saved.error();
            auto cut = rewind_output(STDOUT_FILENO, *saved);
            if (!cut) return cut.error();
            if (*cut > 0)
                std::fprintf(stderr,
                             "eventctl: removed the last %llu bytes of the output file: the previous run wrote them "
                             "but was stopped before saving their cursor; they follow again\n",
                             static_cast<unsigned long long>(*cut));
            after = saved->cursor;
            saved_ = saved->cursor;
            // Resumed: records go out frame by frame, each followed by its cursor.
            writer_->begin();
            writer_->live();
            streaming_ = true;
        }
        auto sent = conn.send_frame(protocol::encode_request({query, after, allow_gap_}));
        if (sent && sent.value() == protocol::ReadResult::interrupted) return SessionEnd::interrupted_early;
        // eventd may refuse the request without reading it all ("… exceeds N") and close: its
        // error frame may still be waiting, and says more than the failed send.
        const bool send_failed = !sent;

        std::vector<uint8_t> frame;
        while (true) {
            auto got = conn.read_frame(frame);
            if (!got) return send_failed ? sent.error() : got.error();
            if (got.value() == protocol::ReadResult::interrupted) return interrupted_end();
            if (got.value() == protocol::ReadResult::closed) {
                if (send_failed) return sent.error();
                return closed_error();
            }
            auto reply = protocol::parse_reply(frame);
            if (!reply) return end_stream_with(reply.error());
            if (reply->status == protocol::ReplyStatus::error) return end_stream_with(base::Error{EPROTO, reply->error});
            // A new cursor: through a pipe it is made ready before the records go out, so that
            // only the rename is left between them and the saved cursor (cursor_file.hpp).
            const bool saving = cursor_file_ && reply->cursor && *reply->cursor != saved_;
            if (saving && !output_is_file_) {
                if (auto st = prepare_cursor(*cursor_file_, *reply->cursor, std::nullopt); !st)
                    return end_stream_with(st.error());
            }
            if (auto st = take_records(reply->records); !st) return end_stream_with(st.error());
            switch (reply->status) {
                case protocol::ReplyStatus::ok:
                    if (streaming_) {
                        if (auto st = out_.flush(); !st) return st.error();
                    }
                    break;
                case protocol::ReplyStatus::end:
                    // After `watch` no `end` is due; take one as eventd closing the stream cleanly.
                    if (!streaming_) {
                        if (auto st = commit(); !st) return st.error();
                    }
                    if (auto st = out_.flush(); !st) return st.error();
                    if (saving) {
                        if (auto st = save(*reply->cursor); !st) return end_stream_with(st.error());
                    }
                    return finish();
                case protocol::ReplyStatus::watch:
                    if (!streaming_) {
                        if (auto st = commit(); !st) return st.error();
                        writer_->live();
                        streaming_ = true;
                    }
                    if (auto st = out_.flush(); !st) return st.error();
                    break;
                case protocol::ReplyStatus::gap:
                    std::fprintf(stderr, "eventctl: warning: %s records after the saved cursor are no longer stored "
                                 "and were skipped (%s)\n",
                                 reply->lost ? std::to_string(*reply->lost).c_str() : "an unknown number of",
                                 reply->detail.c_str());
                    break;
                case protocol::ReplyStatus::error:
                    break;  // handled above
            }
            // Only once the frame's records are out: a cursor never runs ahead of stdout.
            if (saving) {
                if (auto st = save(*reply->cursor); !st) return end_stream_with(st.error());
            }
        }
    }

private:
    // The frame's records are flushed: its cursor replaces the saved one (for an output
    // file, with where the file ends now).
    base::Status save(const std::string& cursor) {
        if (out_.stopped()) return {};  // Ctrl-C dropped part of the batch: keep the old cursor
        if (output_is_file_) {
            // The records on disk before the cursor that says they are (a power loss must not
            // leave the cursor ahead of the file).
            if (::fdatasync(STDOUT_FILENO) != 0)
                return base::errno_error("cannot sync the output file before saving the cursor");
            if (auto st = prepare_cursor(*cursor_file_, cursor, output_mark(STDOUT_FILENO)); !st) return st;
        }
        if (auto st = commit_cursor(*cursor_file_); !st) return st;
        saved_ = cursor;
        return {};
    }

    base::Status take_records(const std::vector<std::span<const uint8_t>>& records) {
        for (const auto& r : records) {
            auto st = streaming_ ? writer_->write(r) : spool_.append(r);
            if (!st) return st;
        }
        return {};
    }

    // `end` or `watch`: the spooled result goes out, as one piece.
    base::Status commit() {
        writer_->begin();
        return spool_.drain([this](std::span<const uint8_t> r) { return writer_->write(r); });
    }

    base::Result<SessionEnd> finish() {
        writer_->finish();
        if (auto st = out_.flush(); !st) return st.error();
        return SessionEnd::done;
    }

    // Ctrl-C: a stream ends cleanly (what is shown stays, a JSON array is closed); before the
    // result was committed, nothing is printed.
    base::Result<SessionEnd> interrupted_end() {
        if (!streaming_) return SessionEnd::interrupted_early;
        return finish();
    }

    base::Error closed_error() {
        if (streaming_) {
            return end_stream_with(base::Error{EPIPE, "eventd at " + path_ + " closed the stream (eventd stopped?)"});
        }
        return base::Error{EPIPE, "eventd at " + path_ +
                                      " closed the connection before the end of the result "
                                      "(eventd stopped or crashed?); nothing printed"};
    }

    // An error during a stream still closes what was started on stdout (the JSON array), so
    // the output shown so far stays well-formed; before that, stdout stays empty.
    base::Error end_stream_with(base::Error error) {
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
    std::optional<std::string> cursor_file_;
    bool allow_gap_ = false;
    bool output_is_file_ = output_mark(STDOUT_FILENO).has_value();
    std::string saved_;  // the cursor last saved
};

}  // namespace

base::Result<SessionEnd> run_session(const SessionOptions& options) {
    auto conn = protocol::Connection::open(options.socket_path);
    if (!conn) return conn.error();
    Session session(options);
    return session.run(conn.value(), options.query);
}

std::string socket_path(const std::optional<std::string>& option) {
    if (option) return *option;
    const char* env = std::getenv("EVENTD_SOCKET");
    if (env != nullptr && *env != '\0') return env;
    return EVENTCTL_DEFAULT_SOCKET;
}

}  // namespace eventctl
