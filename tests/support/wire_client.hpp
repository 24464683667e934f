// A raw client of eventd's query socket (PSD-008 §8.8: u32 little-endian length + msgpack map),
// for what eventctl never does: oversized or truncated frames, garbage, a second query, a
// client that never reads or never writes.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace eventd::query_it {

class WireClient {
public:
    // Connect (REQUIRE success). `receive_buffer` > 0 sets SO_RCVBUF before connecting.
    explicit WireClient(const std::string& socket_path, int receive_buffer = 0);
    ~WireClient();
    WireClient(const WireClient&) = delete;
    WireClient& operator=(const WireClient&) = delete;

    // Raw bytes; false when the peer is gone (EPIPE/ECONNRESET).
    bool send_bytes(const std::vector<uint8_t>& bytes);
    bool send_frame(const nlohmann::json& body);  // length + msgpack(body)
    bool send_query(const std::string& text) { return send_frame({{"query", text}}); }
    static std::vector<uint8_t> frame(const std::vector<uint8_t>& body);
    static std::vector<uint8_t> length_prefix(uint32_t length);

    // The next frame, decoded; nullopt on timeout, EOF or a frame that does not decode
    // (closed() then tells EOF apart).
    std::optional<nlohmann::json> read_frame(std::chrono::milliseconds timeout);
    // Frames until `end`/`watch`/`error` (included) or EOF/timeout.
    std::vector<nlohmann::json> read_reply(std::chrono::milliseconds timeout);
    // Wait until the peer closed the connection (EOF or reset); false on timeout. Data that
    // arrives meanwhile is discarded.
    bool wait_closed(std::chrono::milliseconds timeout);
    bool closed() const { return closed_; }
    int fd() const { return fd_; }

private:
    bool fill(size_t want, std::chrono::steady_clock::time_point deadline);

    int fd_ = -1;
    std::vector<uint8_t> buffer_;
    bool closed_ = false;
};

// A stream's `watch` frame: {status: "watch", cursor: <string>} (the cursor of the snapshot
// the initial result came from, docs/QUERY-SERVER.md "Cursors").
bool is_watch(const nlohmann::json& frame);

// Every record of the `ok` frames of a reply.
std::vector<nlohmann::json> records_of(const std::vector<nlohmann::json>& frames);

}  // namespace eventd::query_it
