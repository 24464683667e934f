// A msgpack map written straight into bytes, for the audit payloads (audit_event.cpp): no tree
// in between — building an nlohmann tree and encoding it cost the shim ~40 % of its audit CPU
// (docs/PERFORMANCE.md §14). A key is written once: the first value given for it wins, as in
// eventd's reads of a payload, and a key can be reserved for a value written later (a value the
// mapping puts under that name, whatever a record's own fields are called).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <vector>

#include "msgpack/writer.hpp"

namespace kmes::audit {

class PayloadMap {
public:
    using Bytes = eventd::msgpack::Bytes;

    // `expected_bytes`: the size the map will likely reach (one allocation instead of several).
    explicit PayloadMap(size_t expected_bytes = 0);

    // Starts the pair `key`: true when the caller must now write exactly one value (into
    // value()); false when the key is taken or reserved (the caller writes nothing).
    bool add(std::string_view key);
    // Like add(), for a key reserved before: always starts the pair.
    void add_reserved(std::string_view key);
    // Keys that no add() may take (values the mapping writes itself, later).
    void reserve(std::initializer_list<std::string_view> keys);

    Bytes& value() { return body_; }
    size_t pairs() const { return keys_.size(); }
    // Appends the whole map (header and pairs) to `out`.
    void write_to(Bytes& out) const;

private:
    bool taken(std::string_view key, uint64_t hash) const;
    void put_key(std::string_view key, uint64_t hash);

    Bytes body_;
    // Where each key's bytes sit in body_ (offsets: body_ grows), and their hash: a payload's
    // few dozen keys are scanned by hash, bytes compared only on a match. Reserved keys are
    // literals.
    struct KeyAt {
        uint64_t hash;
        size_t offset;
        size_t size;
    };
    std::vector<KeyAt> keys_;
    std::vector<std::string_view> reserved_;
};

}  // namespace kmes::audit
