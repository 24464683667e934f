#include "record_writer.hpp"

#include <algorithm>
#include <cerrno>
#include <optional>
#include <string>
#include <vector>

#include "compact_record.hpp"
#include "display_width.hpp"
#include "json_record.hpp"
#include "openmetrics.hpp"
#include "pretty_format.hpp"
#include "pretty_wrap.hpp"
#include "status_view.hpp"
#include "text_table.hpp"

namespace eventctl {
namespace {

base::Error undecodable(const base::Error& e) {
    return base::Error{EPROTO, "eventd sent a record eventctl cannot decode: " + e.message};
}

// jsonl and json write each record into one reused line: no allocation per record once it has
// grown to the longest record.
using AppendRecord = base::Status (*)(std::string& out, std::span<const uint8_t> record);

// jsonl: one line per record, the format's text followed by a newline.
class LineWriter : public RecordWriter {
public:
    LineWriter(Output& out, AppendRecord append) : out_(out), append_(append) {}
    base::Status write(std::span<const uint8_t> record) override {
        line_.clear();
        if (auto st = append_(line_, record); !st) return undecodable(st.error());
        line_ += '\n';
        out_.write(line_);
        return {};
    }

private:
    Output& out_;
    AppendRecord append_;
    std::string line_;
};

// pretty: a finished result whose records all have the same keys becomes a table (header row
// of the keys, columns two spaces apart, numbers right-aligned); anything else, and everything
// once live() was called, is key=value lines. The records are held until the result is known
// (at most kMaxTableRecords / kMaxTableBytes; past that the held ones go out as lines). In the
// default view whole records are compacted (compact_record.hpp) and their lines wrapped to the
// width (pretty_wrap.hpp); a table of them is printed only if it fits that width too, a table
// of anything else (a SELECT, an aggregate) as it is.
class PrettyWriter : public RecordWriter {
public:
    PrettyWriter(Output& out, const PrettyOptions& options)
        : out_(out),
          zone_(options.zone),
          all_fields_(options.all_fields),
          width_(options.width),
          names_(options.accounts) {}
    base::Status write(std::span<const uint8_t> whole) override {
        std::optional<std::vector<uint8_t>> compact;
        if (!all_fields_) compact = compact_record(whole, names_);
        const std::span<const uint8_t> record = compact ? std::span<const uint8_t>(*compact) : whole;
        if (holding_) {
            auto cells = pretty_cells(record, zone_);
            if (!cells) return undecodable(cells.error());
            const bool same_keys =
                rows_.empty() || std::equal(cells->begin(), cells->end(), rows_.front().begin(), rows_.front().end(),
                                            [](const PrettyCell& a, const PrettyCell& b) { return a.key == b.key; });
            if (same_keys && rows_.size() < kMaxTableRecords && held_bytes_ + record.size() <= kMaxTableBytes) {
                held_.push_back({std::vector<uint8_t>(record.begin(), record.end()), compact.has_value()});
                held_bytes_ += record.size();
                rows_.push_back(std::move(*cells));
                return {};
            }
            if (auto st = release(); !st) return st;
        }
        return write_line(record, compact.has_value());
    }
    void live() override { (void)release(); }
    void finish() override {
        if (!holding_ || rows_.empty()) return (void)release();
        TextTable table;
        for (size_t c = 0; c < rows_.front().size(); ++c) {
            // Numbers (and nulls among them) right-aligned.
            const bool numeric =
                std::all_of(rows_.begin(), rows_.end(),
                            [c](const auto& row) { return row[c].numeric || row[c].null; }) &&
                std::any_of(rows_.begin(), rows_.end(), [c](const auto& row) { return row[c].numeric; });
            table.add_column(pretty_key(rows_.front()[c].key), numeric);
        }
        for (auto& row : rows_) {
            std::vector<std::string> texts;
            for (PrettyCell& cell : row) texts.push_back(std::move(cell.text));
            table.add_row(std::move(texts));
        }
        const std::string text = table.render("");
        const bool whole_records = std::any_of(held_.begin(), held_.end(), [](const Held& h) { return h.compact; });
        if (whole_records && !fits(text, width_.columns())) return (void)release();
        out_.write(text);
        holding_ = false;
    }

private:
    static constexpr size_t kMaxTableRecords = 10000;
    static constexpr size_t kMaxTableBytes = 8u << 20;

    struct Held {
        std::vector<uint8_t> record;
        bool compact;  // a whole record of the default view: its line is wrapped
    };

    // Every line of `text` is at most `width` columns wide (0: any width fits).
    static bool fits(std::string_view text, size_t width) {
        if (width == 0) return true;
        for (size_t start = 0; start < text.size();) {
            const size_t end = std::min(text.find('\n', start), text.size());
            if (display_columns(text.substr(start, end - start)) > width) return false;
            start = end + 1;
        }
        return true;
    }

    // Lines from here on, starting with the records held.
    base::Status release() {
        holding_ = false;
        for (const Held& held : held_)
            if (auto st = write_line(held.record, held.compact); !st) return st;
        held_.clear();
        rows_.clear();
        return {};
    }
    base::Status write_line(std::span<const uint8_t> record, bool compact) {
        line_.clear();
        if (auto st = append_pretty_record(line_, record, zone_); !st) return undecodable(st.error());
        const size_t width = compact ? width_.columns() : 0;
        if (width > 0) {
            wrapped_.clear();
            append_wrapped(wrapped_, line_, width);
            std::swap(line_, wrapped_);
        }
        line_ += '\n';
        out_.write(line_);
        return {};
    }

    Output& out_;
    TimeZone zone_;
    bool all_fields_;
    LineWidth width_;
    SubjectNames names_;
    bool holding_ = true;
    std::vector<Held> held_;
    std::vector<std::vector<PrettyCell>> rows_;
    size_t held_bytes_ = 0;
    std::string line_;
    std::string wrapped_;
};

// "[\n{…},\n{…}\n]\n", or "[]\n" for no records. A stream's array is closed when it ends.
class JsonArrayWriter : public RecordWriter {
public:
    explicit JsonArrayWriter(Output& out) : out_(out) {}
    void begin() override { out_.write("["); }
    base::Status write(std::span<const uint8_t> record) override {
        line_.assign(any_ ? ",\n" : "\n");
        if (auto st = append_json_record(line_, record); !st) return undecodable(st.error());
        out_.write(line_);
        any_ = true;
        return {};
    }
    void finish() override { out_.write(any_ ? "\n]\n" : "]\n"); }

private:
    Output& out_;
    std::string line_;
    bool any_ = false;
};

class MsgpackWriter : public RecordWriter {
public:
    explicit MsgpackWriter(Output& out) : out_(out) {}
    base::Status write(std::span<const uint8_t> record) override {
        const auto len = static_cast<uint32_t>(record.size());
        const char header[4] = {static_cast<char>(len), static_cast<char>(len >> 8), static_cast<char>(len >> 16),
                                static_cast<char>(len >> 24)};
        out_.write(std::string_view(header, 4));
        out_.write(std::string_view(reinterpret_cast<const char*>(record.data()), record.size()));
        return {};
    }

private:
    Output& out_;
};

// Tables (and metric families) need every record first; STATUS answers are small.
class StatusWriter : public RecordWriter {
public:
    using Render = std::string (*)(const std::vector<Json>&);
    StatusWriter(Output& out, Render render) : out_(out), render_(render) {}
    base::Status write(std::span<const uint8_t> record) override {
        // protocol::parse_reply() has checked what nlohmann's decoder requires (a map, string keys) and
        // bounded the nesting it would recurse into (msgpack::kRecordMaxDepth).
        try {
            records_.push_back(Json::from_msgpack(record.begin(), record.end()));
        } catch (const Json::exception& e) {
            return undecodable(base::Error{EPROTO, e.what()});
        }
        return {};
    }
    void finish() override { out_.write(render_(records_)); }

private:
    Output& out_;
    Render render_;
    std::vector<Json> records_;
};

}  // namespace

std::optional<Format> parse_format(std::string_view name) {
    if (name == "pretty") return Format::pretty;
    if (name == "jsonl") return Format::jsonl;
    if (name == "json") return Format::json;
    if (name == "msgpack") return Format::msgpack;
    if (name == "openmetrics") return Format::openmetrics;
    return std::nullopt;
}

std::unique_ptr<RecordWriter> make_record_writer(Format format, bool status_view, Output& out,
                                                 const PrettyOptions& pretty) {
    switch (format) {
        case Format::pretty:
            if (status_view) return std::make_unique<StatusWriter>(out, render_status);
            return std::make_unique<PrettyWriter>(out, pretty);
        case Format::jsonl:
            return std::make_unique<LineWriter>(out, append_json_record);
        case Format::json:
            return std::make_unique<JsonArrayWriter>(out);
        case Format::msgpack:
            return std::make_unique<MsgpackWriter>(out);
        case Format::openmetrics:
            return std::make_unique<StatusWriter>(out, render_openmetrics);
    }
    return nullptr;
}

}  // namespace eventctl
