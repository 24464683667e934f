#include "protocol/reply.hpp"

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <optional>

#include "msgpack/reader.hpp"

namespace protocol {
namespace {

namespace msgpack = eventd::msgpack;

base::Error bad_reply(const std::string& what) {
    return base::Error{EPROTO, "eventd sent a reply this client cannot read (" + what +
                                   "); are eventd and the client the same version?"};
}

}  // namespace

base::Result<Reply> parse_reply(std::span<const uint8_t> frame) {
    // Depth is counted from each record (skip() from depth 0): the frame's map and array add
    // two levels around records that may use all of kRecordMaxDepth.
    msgpack::Reader in(frame, msgpack::kRecordMaxDepth, msgpack::MapKeys::any);  // records may carry any keys
    auto fields = in.map_header();
    if (!fields) return bad_reply("the frame is not a msgpack map: " + fields.error().message);
    Reply reply;
    std::optional<std::string> status;
    bool has_error_text = false;
    for (uint32_t i = 0; i < fields.value(); ++i) {
        auto key = in.string();
        if (!key) return bad_reply(key.error().message);
        if (key.value() == "status" || key.value() == "error" || key.value() == "cursor" || key.value() == "detail") {
            const std::string name(key.value());
            auto text = in.string();
            if (!text) return bad_reply("'" + name + "' is not a string");
            if (name == "status") {
                status = std::string(text.value());
            } else if (name == "error") {
                reply.error = std::string(text.value());
                has_error_text = true;
            } else if (name == "cursor") {
                reply.cursor = std::string(text.value());
            } else {
                reply.detail = std::string(text.value());
            }
        } else if (key.value() == "lost") {
            auto item = in.next();
            if (!item) return bad_reply("'lost': " + item.error().message);
            if (item->kind == msgpack::Kind::int_unsigned) {
                reply.lost = item->unsigned_value;
            } else if (item->kind != msgpack::Kind::nil) {
                return bad_reply("'lost' is not a count");
            }
        } else if (key.value() == "records") {
            auto n = in.array_header();
            if (!n) return bad_reply("'records' is not an array");
            // A record takes at least one byte: a count past the bytes left is not believed
            // (an array32 header of 0xffffffff had eventctl reserve 64 GiB; the walk below
            // then fails on the missing records anyway).
            reply.records.reserve(std::min<std::size_t>(n.value(), frame.size() - in.pos()));
            for (uint32_t r = 0; r < n.value(); ++r) {
                if (!in.next_is_map()) return bad_reply("record " + std::to_string(r) + " is not a map");
                const std::size_t start = in.pos();
                if (auto st = in.skip(); !st)
                    return bad_reply("record " + std::to_string(r) + ": " + st.error().message);
                reply.records.push_back(frame.subspan(start, in.pos() - start));
            }
        } else {
            if (auto st = in.skip(); !st) return bad_reply(st.error().message);
        }
    }
    if (!in.at_end()) return bad_reply("bytes after the reply map");
    if (!status) return bad_reply("no 'status'");
    if (*status == "ok") {
        reply.status = ReplyStatus::ok;
    } else if (*status == "end") {
        reply.status = ReplyStatus::end;
    } else if (*status == "watch") {
        reply.status = ReplyStatus::watch;
    } else if (*status == "gap") {
        reply.status = ReplyStatus::gap;
    } else if (*status == "error") {
        reply.status = ReplyStatus::error;
        if (!has_error_text || reply.error.empty()) reply.error = "eventd reported an error without a message";
    } else {
        return bad_reply("unknown status '" + *status + "'");
    }
    return reply;
}

}  // namespace protocol
