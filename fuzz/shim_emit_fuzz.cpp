// The shim's emit path (PSD-003 §4.1.2 kmes_emit, §4.1.3 kmes_emit_batch) over arbitrary
// requests: a real Shim (kmes-shim/shimd/shim.hpp) with one ring, started once, and one
// connection to it that sends each input as one EMIT or EMIT_BATCH message — the entry table,
// the type and payload bytes, all attacker-chosen. The input:
//
//   byte 0   bit 0: EMIT_BATCH (else EMIT); bit 1: count + 256
//   byte 1   count (low 8 bits)
//   rest     the message body: count × WireEntry {u16 type_len, u16 flags, u32 payload_len},
//            then each entry's type and payload bytes (kmes-shim/lib/wire.hpp)
//
// Checked besides "no crash": the reply says at most `count` events were emitted and names
// one of the documented errors; the validators the shim runs on each entry
// (shimd/validation.hpp) agree with eventctl's strict UTF-8 check on the body's bytes.
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <spdlog/spdlog.h>

#include "check.hpp"
#include "eventctl/utf8.hpp"
#include "lib/socket_io.hpp"
#include "lib/wire.hpp"
#include "shimd/shim.hpp"
#include "shimd/validation.hpp"

namespace {

// The shim under test and the connection to it, for the whole run.
struct ShimUnderTest {
    std::string dir;
    std::unique_ptr<kmes::shim::Shim> shim;
    int fd = -1;

    ShimUnderTest() {
        spdlog::set_level(spdlog::level::off);
        char tmpl[] = "/tmp/eventd-fuzz-shim-XXXXXX";
        FUZZ_CHECK(mkdtemp(tmpl) != nullptr);
        dir = tmpl;
        kmes::shim::ShimConfig config;
        config.cpus = 1;
        config.socket_path = dir + "/kmes.sock";
        config.emit_group = getgid();  // not root: the group grants emission (DESIGN.md §2)
        auto started = kmes::shim::Shim::start(config);
        FUZZ_CHECK_MSG(started.ok(), started.ok() ? "" : started.error().message);
        shim = std::move(started.value());
        fd = kmes::detail::connect_seqpacket(config.socket_path);
        FUZZ_CHECK(fd >= 0);
    }
    ~ShimUnderTest() {
        close(fd);
        shim.reset();
        rmdir(dir.c_str());
    }
};

bool documented_error(int error) {
    switch (error) {
        case 0:
        case EINVAL:  // count, type, UTF-8, msgpack, sizes
        case ENOSPC:  // MaxEventSize or half the ring
        case EFAULT:  // the caller's memory (an entry flagged, or bytes missing)
        case EAGAIN:  // the rate limit (not root)
        case EPERM:   // not allowed to emit
            return true;
        default:
            return false;
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static ShimUnderTest under_test;
    if (size < 2) return 0;
    const bool batch = data[0] & 1;
    const uint32_t count = data[1] | ((data[0] & 2) ? 256u : 0u);
    const std::span<const uint8_t> body(data + 2, size - 2);

    // The validators alone, on the body's bytes.
    const std::string_view text(reinterpret_cast<const char*>(body.data()), body.size());
    FUZZ_CHECK(kmes::shim::valid_utf8(text) == !eventctl::find_invalid_utf8(text).has_value());
    (void)kmes::shim::valid_msgpack(body, 32);

    // The whole request through the shim's socket.
    kmes::wire::RequestHeader header{};
    header.magic = kmes::wire::kMagic;
    header.op = static_cast<uint32_t>(batch ? kmes::wire::Op::emit_batch : kmes::wire::Op::emit);
    header.cpu = 0;
    header.count = count;
    header.total_len = sizeof header + body.size();
    std::vector<uint8_t> message(sizeof header);
    std::memcpy(message.data(), &header, sizeof header);
    message.insert(message.end(), body.begin(), body.end());
    FUZZ_CHECK(kmes::detail::send_message(under_test.fd, message) == 0);
    kmes::wire::Reply reply{};
    FUZZ_CHECK_MSG(kmes::detail::recv_reply(under_test.fd, reply, nullptr, 0) == 0, std::strerror(errno));
    FUZZ_CHECK_MSG(documented_error(reply.error), std::to_string(reply.error));
    FUZZ_CHECK(reply.emitted <= count);
    FUZZ_CHECK(reply.error != 0 || reply.emitted == count);
    return 0;
}
