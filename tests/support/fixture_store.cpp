#include "support/fixture_store.hpp"

#include "base/guid_text.hpp"

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "kmes/guid.hpp"
#include "store/shard_db.hpp"

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
            store::EventRow row;
            row.boot_id = guid(e.at("boot") == "A" ? kBootA : kBootB);
            row.timestamp = uint64_t(timestamp(e.at("ts"), info.built_at));
            if (!e.at("cpu").is_null()) row.cpu_id = e.at("cpu").get<uint16_t>();
            if (!e.at("seq").is_null()) row.sequence = e.at("seq").get<uint64_t>();
            if (!e.at("origin").is_null()) row.origin_class = e.at("origin").get<uint8_t>();
            row.event_type = e.at("type");
            if (!(e.contains("identity") && e["identity"].is_null())) {
                row.effective_token = guid(e.value("eff", kEffectiveToken));
                row.true_token = guid(e.value("true", kTrueToken));
                row.process = guid(e.value("proc", kProcess));
            }
            if (e.contains("payload_hex"))
                row.payload = hex_bytes(e["payload_hex"]);
            else if (!e.at("payload").is_null())
                row.payload = json::to_msgpack(with_binaries(e["payload"]));
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
    store::EventRow row;
    row.boot_id = guid(kBootB);
    row.event_type = "filler.row";
    row.origin_class = 0;
    row.effective_token = guid(kEffectiveToken);
    row.true_token = guid(kTrueToken);
    row.process = guid(kProcess);
    const uint64_t start = uint64_t(timestamp("2026-02-01T00:00:00", 0));
    for (uint64_t n = 0; n < rows; ++n) {
        row.timestamp = start + n * 1000;
        row.cpu_id = uint16_t(n % 4);
        row.sequence = 1000000 + n;
        row.payload = json::to_msgpack(json{{"i", n}, {"s", "row-" + std::to_string(n)}});
        if (auto s = db->insert(row); !s) throw std::runtime_error(s.error().message);
    }
    if (auto s = db->commit(); !s) throw std::runtime_error(s.error().message);
}

}  // namespace eventd::query_it
