// The per-row cost of issue 28's hash chain (store/row_chain.hpp; docs/PERFORMANCE.md §16): one
// `chain_next` per row, as eventd's writer calls it (ShardDb::insert: an EventRow and its id)
// and as `eventctl verify` calls it (a StoredRow read back from SQLite), each row chained onto
// the head of the one before (a serial dependency, as in a shard). Floor, side by side: one
// one-shot BLAKE2b-256 (crypto_generichash) over the same number of bytes in one buffer, so
// the difference is the canonical encoding and the seven incremental updates.
//
// Rows: an event of the shape eventd stores from the shim (boot id, timestamp, cpu, sequence,
// origin class, a 19-byte type, three identity GUIDs) with a payload of 100 and of 300 bytes.
//
//   kmes-bench-chain [--quick] [--time S] [--no-sodium-init]
//
// libsodium picks its BLAKE2b implementation (reference, SSSE3, SSE4.1 or AVX2) in
// sodium_init(); a process that never calls it hashes with the portable reference code.
// eventd calls it (the query server's cursor key); --no-sodium-init measures the other case.
#include <sodium.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "harness.hpp"
#include "store/row_chain.hpp"

namespace {

using eventd::store::ChainHead;

eventd::store::EventRow event_row(size_t payload_bytes) {
    eventd::store::EventRow row;
    for (size_t i = 0; i < row.boot_id.size(); ++i) row.boot_id[i] = uint8_t(0x10 + i);
    row.timestamp = 1'795'800'000'000'000'000ULL;
    row.cpu_id = 0;
    row.sequence = 1'000'000;
    row.origin_class = 1;
    row.event_type = "bench.seal.examples";  // 19 bytes: the length of a typical dotted type
    kmes::Guid g{};
    for (size_t i = 0; i < g.size(); ++i) g[i] = uint8_t(0xa0 + i);
    row.effective_token = g;
    row.true_token = g;
    g[0] = 0x55;
    row.process = g;
    std::vector<uint8_t> payload(payload_bytes);
    for (size_t i = 0; i < payload.size(); ++i) payload[i] = uint8_t(i * 31 + 7);
    row.payload = std::move(payload);
    return row;
}

eventd::store::StoredRow stored_view(const eventd::store::EventRow& r) {
    eventd::store::StoredRow s;
    s.boot_id = std::span<const uint8_t>(r.boot_id.data(), r.boot_id.size());
    s.timestamp = r.timestamp;
    s.cpu_id = r.cpu_id;
    s.sequence = r.sequence;
    s.origin_class = r.origin_class;
    s.event_type = r.event_type;
    s.effective_token = std::span<const uint8_t>(r.effective_token->data(), 16);
    s.true_token = std::span<const uint8_t>(r.true_token->data(), 16);
    s.process = std::span<const uint8_t>(r.process->data(), 16);
    s.payload = std::span<const uint8_t>(*r.payload);
    return s;
}

// The canonical bytes of row_chain.cpp, counted: id 8, boot id 16, timestamp 8, cpu 1+2,
// sequence 1+8, origin class 1+1, type length 4, the type, 3 × (1+16), payload 1+4+n; plus the
// previous head (32).
size_t hashed_bytes(const eventd::store::EventRow& r) {
    return 32 + 8 + 16 + 8 + 3 + 9 + 2 + 4 + r.event_type.size() + 3 * 17 + 5 + r.payload->size();
}

}  // namespace

int main(int argc, char** argv) {
    bench::Options options = bench::Options::parse(argc, argv);
    bool init = true;
    for (int i = 1; i < argc; ++i) {
        if (std::string_view(argv[i]) == "--no-sodium-init") init = false;
        if (std::string_view(argv[i]) == "--version") {
            std::printf("kmes-bench-chain\n");
            return 0;
        }
    }
    if (init && sodium_init() < 0) {
        std::fprintf(stderr, "chain: sodium_init failed\n");
        return 1;
    }

    bench::Table table({"payload B", "bytes hashed", "writer: chain_next(EventRow) ns/row",
                        "verifier: chain_next(StoredRow) ns/row", "one-shot BLAKE2b-256 ns",
                        "writer / one-shot", "verifier rows/s (hashing alone)"});
    for (const size_t payload : {size_t(100), size_t(300)}) {
        const eventd::store::EventRow row = event_row(payload);
        eventd::store::StoredRow stored = stored_view(row);
        const size_t bytes = hashed_bytes(row);
        std::vector<uint8_t> flat(bytes, 0x5a);
        ChainHead head{};
        int64_t id = 1;

        bench::Contender writer{bench::loop_of([&] {
            head = eventd::store::chain_next(head, id++, row);
            bench::keep(head);
        })};
        bench::Contender verifier{bench::loop_of([&] {
            stored.id = id++;
            head = eventd::store::chain_next(head, stored);
            bench::keep(head);
        })};
        bench::Contender oneshot{bench::loop_of([&] {
            std::memcpy(flat.data(), head.data(), head.size());  // the same serial dependency
            crypto_generichash(head.data(), head.size(), flat.data(), flat.size(), nullptr, 0);
            bench::keep(head);
        })};
        bench::interleave({&writer, &verifier, &oneshot}, options);
        table.add({std::to_string(payload), std::to_string(bytes), bench::fmt("%.0f", writer.ns.med()),
                   bench::fmt("%.0f", verifier.ns.med()), bench::fmt("%.0f", oneshot.ns.med()),
                   bench::fmt("%.2f", bench::ratio_median(writer.ns, oneshot.ns)),
                   bench::fmt("%.2f M", 1e3 / verifier.ns.med())});
    }
    table.print(std::string("hash chain: chain_next per row (thread CPU time; libsodium ") +
                (init ? "after sodium_init(): its fastest BLAKE2b for this CPU" :
                        "without sodium_init(): the reference BLAKE2b") + ")");
    return 0;
}
