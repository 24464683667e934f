// Output formats (issue 4, eventctl --format). A writer gets each record's msgpack bytes, as
// eventd sent them, between begin() and finish():
//   pretty   one line per record, key=value (pretty_format.hpp); whole records without their
//            wide header fields but with their subject (compact_record.hpp), wrapped to the
//            terminal (pretty_wrap.hpp) — or, when every record of a finished result has the same
//            keys (aggregates, SELECT), an aligned table under a header row of the keys (for
//            whole records only when every line of it fits the terminal)
//   jsonl    one JSON object per line, unrepresentable values tagged (json_record.hpp)
//   json     one JSON array of those objects
//   msgpack  each record as a msgpack map behind a 4-byte little-endian length (bytes unchanged)
// `eventctl status` with pretty renders tables instead (status_view.hpp); with openmetrics, the
// OpenMetrics text of its counters (openmetrics.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "base/result.hpp"
#include "output.hpp"
#include "pretty_wrap.hpp"
#include "subject_name.hpp"
#include "time_text.hpp"

namespace eventctl {

enum class Format { pretty, jsonl, json, msgpack, openmetrics };  // openmetrics: eventctl status only

std::optional<Format> parse_format(std::string_view name);

class RecordWriter {
public:
    virtual ~RecordWriter() = default;
    virtual void begin() {}
    virtual base::Status write(std::span<const uint8_t> record) = 0;
    // From now on records come as they happen (a stream's live phase, a resumed stream): a
    // writer that holds records back writes them now, and every later one at once.
    virtual void live() {}
    virtual void finish() {}
};

// How pretty writes records; the other formats always carry everything, event times as integers.
struct PrettyOptions {
    TimeZone zone = TimeZone::utc;  // event times (--utc, --local)
    // Every header field of whole records, each record on one line (--all-fields). Otherwise
    // the default view: the wide header fields left out, the subject added (compact_record.hpp),
    // and lines wrapped to `width` (pretty_wrap.hpp).
    bool all_fields = true;
    LineWidth width = LineWidth::fixed(0);
    SubjectNames::AccountSource accounts = read_local_accounts;  // whose names the subjects show
};

std::unique_ptr<RecordWriter> make_record_writer(Format format, bool status_view, Output& out,
                                                 const PrettyOptions& pretty = {});

}  // namespace eventctl
