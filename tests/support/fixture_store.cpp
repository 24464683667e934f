#include "support/fixture_store.hpp"

#include "base/guid_text.hpp"

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <vector>

#include <nlohmann/json.hpp>

#include "kmes/guid.hpp"
#include "store/shard_db.hpp"
#include "support/rows.hpp"

namespace eventd::query_it {
namespace {

using nlohmann::json;

constexpr int64_t kSecond = 1'000'000'000;

// The two boots of the fixture; lines name them "A" and "B".
const char* const kBootA = "a0000000-0000-4000-8000-00000000000a";
const char* const kBootB = "b0000000-0000-4000-8000-00000000000b";
// Identity defaults when a line does not name its own.
const char* const kEffectiveToken = "e0000000-0000-4000-8000-000000000001";
const char* const kTrueToken = "7e000000-0000-4000-8000-000000000001";
const char* const kProcess = "c0000000-0000-4000-8000-000000000001";

std::vector<uint8_t> hex_bytes(const std::string& hex) {
    if (hex.size() % 2) throw std::runtime_error("odd hex string " + hex);
    std::vector<uint8_t> out;
    for (size_t i = 0; i < hex.size(); i += 2) out.push_back(uint8_t(std::stoul(hex.substr(i, 2), nullptr, 16)));
    return out;
}

// A nullable number of a fixture line: null is NULL.
template <class T>
std::optional<T> optional_value(const json& value) {
    if (value.is_null()) return std::nullopt;
    return value.get<T>();
}

kmes::Guid guid(const std::string& text) {
    const auto g = base::parse_guid(text);
    if (!g) throw std::runtime_error("not a GUID: " + text);
    return *g;
}

// {"$binary": "hex"} anywhere in the payload becomes msgpack bin.
json with_binaries(const json& value) {
    if (value.is_object() && value.size() == 1 && value.contains("$binary"))
        return json::binary(hex_bytes(value["$binary"].get<std::string>()));
    if (value.is_object()) {
        json out = json::object();
        for (auto it = value.begin(); it != value.end(); ++it) out[it.key()] = with_binaries(it.value());
        return out;
    }
    if (value.is_array()) {
        json out = json::array();
        for (const json& v : value) out.push_back(with_binaries(v));
        return out;
    }
    return value;
}

int64_t midnight_utc(int64_t ns) {
    const int64_t day = 86400 * kSecond;
    return ns - ((ns % day) + day) % day;
}

// "2026-03-01T09:00:00", "now-10m", "today+1s", "yesterday-1s".
int64_t timestamp(const std::string& text, int64_t now) {
    auto offset = [&](size_t from) -> int64_t {
        if (from >= text.size()) return 0;
        const int64_t sign = text[from] == '-' ? -1 : 1;
        size_t used = 0;
        const int64_t n = std::stoll(text.substr(from + 1), &used);
        const char unit = text.at(from + 1 + used);
        const int64_t scale = unit == 's'   ? kSecond
                              : unit == 'm' ? 60 * kSecond
                              : unit == 'h' ? 3600 * kSecond
                                            : 86400 * kSecond;
        return sign * n * scale;
    };
    if (text.rfind("now", 0) == 0) return now + offset(3);
    if (text.rfind("today", 0) == 0) return midnight_utc(now) + offset(5);
    if (text.rfind("yesterday", 0) == 0) return midnight_utc(now) - 86400 * kSecond + offset(9);
    std::tm tm{};
    if (!strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm)) throw std::runtime_error("bad timestamp " + text);
    return int64_t(timegm(&tm)) * kSecond;
}

}  // namespace

std::string fixture_path() {
    const char* path = std::getenv("QUERY_FIXTURE");
    if (!path || !*path) throw std::runtime_error("QUERY_FIXTURE is not set: run the tests through `meson test`");
    return path;
}

FixtureInfo build_fixture_store(const std::string& store_dir) {
    FixtureInfo info;
    info.built_at =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    std::filesystem::create_directories(store_dir);
    std::ifstream in(fixture_path());
    if (!in) throw std::runtime_error("cannot read " + fixture_path());

    std::map<uint32_t, std::unique_ptr<store::ShardDb>> shards;
    std::string line;
    int number = 0;
    while (std::getline(in, line)) {
        ++number;
        if (line.empty() || line[0] == '#') continue;
        try {
            const json e = json::parse(line);
            const uint32_t shard = e.at("shard");
            auto& db = shards[shard];
            if (!db) {
                auto opened = store::ShardDb::open(store_dir, shard);
                if (!opened)
                    throw std::runtime_error("cannot create shard " + std::to_string(shard) + ": " +
                                             opened.error().message);
                db = std::move(*opened);
                if (auto s = db->begin(); !s) throw std::runtime_error(s.error().message);
            }
            const bool identity = !(e.contains("identity") && e["identity"].is_null());
            auto identity_guid = [&](const char* key, const char* otherwise) -> std::optional<kmes::Guid> {
                if (!identity) return std::nullopt;
                return guid(e.value(key, otherwise));
            };
            std::optional<std::vector<uint8_t>> payload;
            if (e.contains("payload_hex"))
                payload = hex_bytes(e["payload_hex"]);
            else if (!e.at("payload").is_null())
                payload = json::to_msgpack(with_binaries(e["payload"]));
            const store::EventRow row = test_support::event_row({
                .boot = guid(e.at("boot") == "A" ? kBootA : kBootB),
                .timestamp = uint64_t(timestamp(e.at("ts"), info.built_at)),
                .cpu = optional_value<uint16_t>(e.at("cpu")),
                .sequence = optional_value<uint64_t>(e.at("seq")),
                .origin_class = optional_value<uint8_t>(e.at("origin")),
                .type = e.at("type"),
                .effective_token = identity_guid("eff", kEffectiveToken),
                .true_token = identity_guid("true", kTrueToken),
                .process = identity_guid("proc", kProcess),
                .payload = std::move(payload),
            });
            if (auto s = db->insert(row); !s) throw std::runtime_error(s.error().message);
            ++info.events;
        } catch (const std::exception& ex) {
            throw std::runtime_error(fixture_path() + ":" + std::to_string(number) + ": " + ex.what());
        }
    }
    for (auto& [index, db] : shards)
        if (auto s = db->commit(); !s)
            throw std::runtime_error("commit shard " + std::to_string(index) + ": " + s.error().message);
    return info;
}

void add_filler_shard(const std::string& store_dir, uint32_t shard, uint64_t rows) {
    auto opened = store::ShardDb::open(store_dir, shard);
    if (!opened)
        throw std::runtime_error("cannot create shard " + std::to_string(shard) + ": " + opened.error().message);
    auto& db = *opened;
    if (auto s = db->begin(); !s) throw std::runtime_error(s.error().message);
    const kmes::Guid boot = guid(kBootB), effective = guid(kEffectiveToken), true_token = guid(kTrueToken),
                     process = guid(kProcess);
    const uint64_t start = uint64_t(timestamp("2026-02-01T00:00:00", 0));
    for (uint64_t n = 0; n < rows; ++n) {
        const store::EventRow row = test_support::event_row({
            .boot = boot,
            .timestamp = start + n * 1000,
            .cpu = uint16_t(n % 4),
            .sequence = 1000000 + n,
            .origin_class = 0,
            .type = "filler.row",
            .effective_token = effective,
            .true_token = true_token,
            .process = process,
            .payload = json::to_msgpack(json{{"i", n}, {"s", "row-" + std::to_string(n)}}),
        });
        if (auto s = db->insert(row); !s) throw std::runtime_error(s.error().message);
    }
    if (auto s = db->commit(); !s) throw std::runtime_error(s.error().message);
}

}  // namespace eventd::query_it
