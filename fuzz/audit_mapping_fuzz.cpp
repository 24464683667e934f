// kmes-shimd's audit source, record → event (kmes-shim/audit/audit_assembler.hpp,
// audit_event.hpp; docs/AUDIT.md "Mapping"): arbitrary text as audit.log lines — what the kernel
// sends, as auditd writes it — reassembled by libauparse and mapped. Checked besides "no crash":
// every event is named audit.<something>, its payload a map with the record types, and its
// msgpack payload (what goes into a ring) reads back as one map without a repeated key.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "audit/audit_assembler.hpp"
#include "check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    std::vector<kmes::audit::AuditEvent> events;
    {
        kmes::audit::AuditAssembler assembler([&](kmes::audit::AuditEvent e) { events.push_back(std::move(e)); }, 1);
        size_t start = 0;
        while (start < text.size()) {
            size_t end = text.find('\n', start);
            if (end == std::string_view::npos) end = text.size();
            assembler.feed_line(text.substr(start, end - start));
            start = end + 1;
        }
        assembler.flush();
    }
    for (const auto& e : events) {
        FUZZ_CHECK_MSG(e.type.rfind("audit.", 0) == 0, e.type);
        // One msgpack map with no key twice (what a ring must carry): a key written twice would
        // read back as one, and the tree would encode shorter (both encoders use the smallest forms).
        const nlohmann::json payload = nlohmann::json::from_msgpack(e.payload, true, false);
        FUZZ_CHECK(!payload.is_discarded() && payload.is_object());
        FUZZ_CHECK(payload.contains("record_types") && payload["record_types"].is_array());
        FUZZ_CHECK(nlohmann::json::to_msgpack(payload).size() == e.payload.size());
    }
    return 0;
}
