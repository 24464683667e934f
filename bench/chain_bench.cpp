// The per-row cost of issue 28's hash chain (store/row_chain.hpp; docs/PERFORMANCE.md §16),
// each part as eventd runs it:
//   - drain: row_digest(EventRow), the row's SHA-256, made on a drain thread as it makes the row;
//   - writer: SegmentHasher::add of a row that brings its digest — the shard writer's whole
//     share: half a SHA-256 block and a 4-byte tag (ShardDb::insert), a segment closed every
//     kSegmentRows rows (a commit of that size);
//   - writer, no digest: the same for a row made without one (synthetic rows, checkpoints);
//   - v2 writer: the per-row link of the design before segments (commit c293d68), one SHA-256
//     over previous head ‖ u64be(id) ‖ digest, 72 bytes;
//   - verifier: row_digest(StoredRow) and SegmentHasher::add, as `eventctl verify` per row;
//   - v1, one thread: one-shot BLAKE2b-256 (libsodium) over the bytes of the first chain
//     design, which hashed each whole row on the writer (commit 7a05a9e): what the writer paid.
// Each row is chained onto the head of the one before (a serial dependency, as in a shard).
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

#define OPENSSL_API_COMPAT 10101  // SHA256_Init/Update/Final, as store/row_chain.cpp calls OpenSSL
#include <openssl/sha.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "base/big_endian.hpp"
#include "harness.hpp"
#include "store/row_chain.hpp"

namespace {

using eventd::store::ChainHead;
constexpr int64_t kSegmentRows = 1000;  // rows per commit while a backlog drains

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

// What the first chain design hashed per row on the writer (docs/STORE.md §8 before v2): id 8,
// boot id 16, timestamp 8, cpu 1+2, sequence 1+8, origin class 1+1, type length 4, the type,
// 3 × (1+16), payload 1+4+n; plus the previous head (32).
size_t v1_hashed_bytes(const eventd::store::EventRow& r) {
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

    bench::Table table({"payload B", "drain: row_digest ns/row", "writer: segment, digest given ns/row",
                        "writer, no digest ns/row", "v2 writer: per-row link ns/row", "verifier ns/row",
                        "v1 writer: one-shot BLAKE2b ns/row", "writer × v2", "writer × v1",
                        "verifier rows/s (hashing alone)"});
    for (const size_t payload : {size_t(100), size_t(300)}) {
        const eventd::store::EventRow row = event_row(payload);
        eventd::store::EventRow digested = row;
        digested.content_digest = eventd::store::row_digest(row);
        eventd::store::StoredRow stored = stored_view(row);
        std::vector<uint8_t> flat(v1_hashed_bytes(row), 0x5a);
        ChainHead head{};
        int64_t id = 1;

        eventd::store::EventRow fresh = row;
        bench::Contender drain{bench::loop_of([&] {
            fresh.timestamp = uint64_t(id++);  // a new row each time, as the drain makes them
            bench::keep(eventd::store::row_digest(fresh));
        })};
        eventd::store::SegmentHasher segment;
        // One row into the open segment, closing it every kSegmentRows rows as a commit would.
        auto add = [&](const eventd::store::RowDigest& digest) {
            if (!segment.open()) segment.start(head, id);
            segment.add(digest);
            if (++id % kSegmentRows == 0) head = segment.finish();
        };
        bench::Contender writer{bench::loop_of([&] { add(*digested.content_digest); })};
        bench::Contender whole{bench::loop_of([&] { add(eventd::store::row_digest(row)); })};
        bench::Contender v2{bench::loop_of([&] {
            uint8_t link[72];
            std::memcpy(link, head.data(), 32);
            const auto id_bytes = base::big_endian(uint64_t(id));
            std::memcpy(link + 32, id_bytes.data(), id_bytes.size());
            std::memcpy(link + 40, digested.content_digest->data(), 32);
            ++id;
            SHA256_CTX context;  // as c293d68 hashed it: no EVP context, which allocates
            SHA256_Init(&context);
            SHA256_Update(&context, link, sizeof link);
            SHA256_Final(head.data(), &context);
            bench::keep(head);
        })};
        bench::Contender verifier{bench::loop_of([&] { add(eventd::store::row_digest(stored)); })};
        bench::Contender v1{bench::loop_of([&] {
            std::memcpy(flat.data(), head.data(), head.size());  // the same serial dependency
            crypto_generichash(head.data(), head.size(), flat.data(), flat.size(), nullptr, 0);
            bench::keep(head);
        })};
        bench::interleave({&drain, &writer, &whole, &v2, &verifier, &v1}, options);
        table.add({std::to_string(payload), bench::fmt("%.0f", drain.ns.med()), bench::fmt("%.0f", writer.ns.med()),
                   bench::fmt("%.0f", whole.ns.med()), bench::fmt("%.0f", v2.ns.med()),
                   bench::fmt("%.0f", verifier.ns.med()), bench::fmt("%.0f", v1.ns.med()),
                   bench::fmt("%.2f", bench::ratio_median(writer.ns, v2.ns)),
                   bench::fmt("%.2f", bench::ratio_median(writer.ns, v1.ns)),
                   bench::fmt("%.2f M", 1e3 / verifier.ns.med())});
    }
    table.print(std::string("hash chain per row (thread CPU time; SHA-256 through OpenSSL; v1's BLAKE2b ") +
                (init ? "after sodium_init(), as eventd ran it" : "without sodium_init(): the reference code") + ")");
    return 0;
}
