// The collector's reading of a JetStream message body (eventd/collector/record_row.hpp): the
// bytes any host — or anyone with permission on a host's subjects — publishes. Checked besides
// "no crash": no exception leaves the parser (a std::bad_alloc from a claimed count ended the
// collector's thread, issue 40), both readers agree on which bodies hold records, and each
// record read is a row with a boot, a time and a type.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "check.hpp"
#include "eventd/collector/record_row.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::span<const uint8_t> body(data, size);
    try {
        const auto items = eventd::collector::items_of_message(body, "fuzz-host");
        const auto records = eventd::collector::records_of_message(body);
        if (items) {
            FUZZ_CHECK(records.ok());
            FUZZ_CHECK(records->size() == items->size());
            for (const auto& item : *items) FUZZ_CHECK(!item.row.event_type.empty());
        }
    } catch (...) {
        FUZZ_FAIL("an exception left the collector's message parser", std::string_view());
    }
    return 0;
}
