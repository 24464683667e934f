// The collector's conversion on its own (issue 27, docs/PERFORMANCE.md §12): one packed message
// body as eventd-forward publishes it — 760 records of the fleet benchmark's shape, each as a
// host's eventd served it (PSD-008 §8.8: the header fields, three token GUIDs, the payload's
// keys) — turned into rows as the collector does (collector::items_of_message), against the
// floor of one msgpack walk over the same body (Reader::skip: every item read and checked once,
// nothing built). No NATS, no SQLite: what conversion costs per record, beside what reading the
// bytes at all costs.
//
//   kmes-bench-collector-convert [--quick] [--time S]
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eventd/collector/record_row.hpp"
#include "harness.hpp"
#include "msgpack/reader.hpp"

namespace {

constexpr size_t kRecordsPerMessage = 760;  // what the fleet benchmark's packed messages hold

std::vector<uint8_t> packed_body() {
    nlohmann::json records = nlohmann::json::array();
    for (size_t i = 0; i < kRecordsPerMessage; ++i) {
        records.push_back({{"boot_id", "6f1c2a4e-9b3d-4c5e-8f7a-1b2c3d4e5f60"},
                           {"timestamp", 1'764'000'000'000'000'000ULL + i * 2'500},
                           {"cpu_id", 0},
                           {"sequence", 1'000'000 + i},
                           {"origin_class", 1},
                           {"event_type", "bench.fleet.packed"},
                           {"effective_token_guid", "0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9"},
                           {"true_token_guid", "0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9"},
                           {"process_guid", "9f8e7d6c-5b4a-3928-1706-f5e4d3c2b1a0"},
                           {"user", "alice"},
                           {"n", 12345},
                           {"note", "fleet benchmark"}});
    }
    return nlohmann::json::to_msgpack(records);
}

}  // namespace

int main(int argc, char** argv) {
    const bench::Options options = bench::Options::parse(argc, argv);
    const std::vector<uint8_t> body = packed_body();
    size_t rows = 0;

    bench::Contender convert{[&](uint64_t n) {
        const auto start = bench::Clock::now();
        for (uint64_t i = 0; i < n; ++i) {
            auto items = eventd::collector::items_of_message(body, "bench-host");
            if (!items) {
                std::fprintf(stderr, "collector-convert: %s\n", items.error().message.c_str());
                std::exit(1);
            }
            rows += items->size();
            bench::keep(items->back().row.payload);
        }
        return std::pair{bench::seconds_since(start), n * kRecordsPerMessage};
    }};
    bench::Contender walk{[&](uint64_t n) {
        const auto start = bench::Clock::now();
        for (uint64_t i = 0; i < n; ++i) {
            eventd::msgpack::Reader in(body, eventd::msgpack::kRecordMaxDepth + 1, eventd::msgpack::MapKeys::any);
            if (!in.skip()) std::exit(1);
            bench::keep(in.pos());
        }
        return std::pair{bench::seconds_since(start), n * kRecordsPerMessage};
    }};
    bench::interleave({&convert, &walk}, options);

    bench::Table table({"per record", "ns", "× one msgpack walk"});
    table.add({"the collector's conversion (items_of_message)", bench::fmt("%.0f", convert.ns.med()),
               bench::fmt("%.2f", bench::ratio_median(convert.ns, walk.ns))});
    table.add({"floor: one msgpack walk over the body", bench::fmt("%.0f", walk.ns.med()), "1.00"});
    table.print("collector conversion: a packed message of " + std::to_string(kRecordsPerMessage) + " records (" +
                std::to_string(body.size()) + " bytes) into rows");
    return rows > 0 ? 0 : 1;
}
