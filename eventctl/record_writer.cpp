#include "record_writer.hpp"

#include <cerrno>
#include <functional>
#include <string>
#include <vector>

#include "json_record.hpp"
#include "pretty_format.hpp"
#include "status_view.hpp"

namespace eventctl {
namespace {

kmes::Error undecodable(const kmes::Error& e) {
    return kmes::Error{EPROTO, "eventd sent a record eventctl cannot decode: " + e.message};
}

// pretty, jsonl and json write each record into one reused line: no allocation per record
// once it has grown to the longest record.
using AppendRecord = std::function<kmes::Status(std::string& out, std::span<const uint8_t> record)>;

// pretty and jsonl: one line per record, the format's text followed by a newline.
class LineWriter : public RecordWriter {
public:
    LineWriter(Output& out, AppendRecord append) : out_(out), append_(std::move(append)) {}
    kmes::Status write(std::span<const uint8_t> record) override {
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

// "[\n{…},\n{…}\n]\n", or "[]\n" for no records. A stream's array is closed when it ends.
class JsonArrayWriter : public RecordWriter {
public:
    explicit JsonArrayWriter(Output& out) : out_(out) {}
    void begin() override { out_.write("["); }
    kmes::Status write(std::span<const uint8_t> record) override {
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
    kmes::Status write(std::span<const uint8_t> record) override {
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

// Tables need every record first (column widths); STATUS answers are small.
class StatusWriter : public RecordWriter {
public:
    explicit StatusWriter(Output& out) : out_(out) {}
    kmes::Status write(std::span<const uint8_t> record) override {
        // parse_reply() has checked what nlohmann's decoder requires (a map, string keys) and
        // bounded the nesting it would recurse into (msgpack::kRecordMaxDepth).
        try {
            records_.push_back(Json::from_msgpack(record.begin(), record.end()));
        } catch (const Json::exception& e) {
            return undecodable(kmes::Error{EPROTO, e.what()});
        }
        return {};
    }
    void finish() override { out_.write(render_status(records_)); }

private:
    Output& out_;
    std::vector<Json> records_;
};

}  // namespace

std::optional<Format> parse_format(std::string_view name) {
    if (name == "pretty") return Format::pretty;
    if (name == "jsonl") return Format::jsonl;
    if (name == "json") return Format::json;
    if (name == "msgpack") return Format::msgpack;
    return std::nullopt;
}

std::unique_ptr<RecordWriter> make_record_writer(Format format, bool status_view, Output& out, TimeZone zone) {
    switch (format) {
        case Format::pretty:
            if (status_view) return std::make_unique<StatusWriter>(out);
            return std::make_unique<LineWriter>(out, [zone](std::string& line, std::span<const uint8_t> record) {
                return append_pretty_record(line, record, zone);
            });
        case Format::jsonl:
            return std::make_unique<LineWriter>(out, append_json_record);
        case Format::json:
            return std::make_unique<JsonArrayWriter>(out);
        case Format::msgpack:
            return std::make_unique<MsgpackWriter>(out);
    }
    return nullptr;
}

}  // namespace eventctl
