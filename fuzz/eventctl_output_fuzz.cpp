// eventctl's value writers (eventctl/json_record.hpp, eventctl/pretty_format.hpp) over
// arbitrary msgpack: the bytes come from a reply frame, which a broken or hostile peer fills.
// Checked besides "no crash": JSON output that the writer calls good parses as JSON (every
// line parses, json_record.hpp); a pretty record, value or table cell never spans lines; the
// writers agree on which bytes are one well-formed value (or record); and nothing unsafe for a
// terminal in any of them (terminal_safe.hpp, issue 39: no C0, DEL, C1, bidi control or invalid
// UTF-8 raw — JSON included, whose C1 and bidi code points become \uXXXX).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "check.hpp"
#include "terminal_safe.hpp"
#include "eventctl/json_record.hpp"
#include "eventctl/pretty_format.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::span<const uint8_t> bytes(data, size);
    std::string json_text;
    const bool json_ok = eventctl::append_json_record(json_text, bytes).ok();
    if (json_ok) {
        const auto parsed = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
        FUZZ_CHECK_MSG(!parsed.is_discarded(), json_text);
        if (const auto problem = eventd::fuzz::terminal_unsafe(json_text)) FUZZ_FAIL(problem->c_str(), json_text);
    }
    std::string pretty_record;
    const bool record_ok = eventctl::append_pretty_record(pretty_record, bytes).ok();
    if (record_ok)
        if (const auto problem = eventd::fuzz::terminal_unsafe(pretty_record)) FUZZ_FAIL(problem->c_str(), pretty_record);
    std::string pretty_value;
    const bool value_ok = eventctl::append_pretty_value(pretty_value, bytes).ok();
    if (value_ok)
        if (const auto problem = eventd::fuzz::terminal_unsafe(pretty_value)) FUZZ_FAIL(problem->c_str(), pretty_value);
    FUZZ_CHECK(json_ok == value_ok);
    // The table cells of a record: the same bytes are one record for both, and no cell spans
    // lines (a table row would break).
    auto cells = eventctl::pretty_cells(bytes, eventctl::TimeZone::utc);
    FUZZ_CHECK(cells.ok() == record_ok);
    if (cells.ok())
        for (const auto& cell : cells.value())
            if (const auto problem = eventd::fuzz::terminal_unsafe(cell.text)) FUZZ_FAIL(problem->c_str(), cell.text);
    return 0;
}
