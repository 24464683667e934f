// Msgpack encoding primitives, each appending one item to a byte vector in its smallest form
// (like nlohmann's encoder) — except floats, which are always float64: PSD-008 §8.8 puts
// floats on the wire as float64, and nlohmann's to_msgpack would narrow a float to float32
// whenever that is lossless. Shared by eventd's record encoders (eventd/query/record.hpp for
// trees, eventd/query/row_encoder.hpp straight from a row).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace eventd::msgpack {

using Bytes = std::vector<uint8_t>;

void put_nil(Bytes& out);
void put_bool(Bytes& out, bool v);
void put_unsigned(Bytes& out, uint64_t v);
void put_signed(Bytes& out, int64_t v);  // non-negative values use the unsigned forms
void put_float64(Bytes& out, double v);
void put_string(Bytes& out, std::string_view s);
void put_binary(Bytes& out, std::span<const uint8_t> data);
void put_ext(Bytes& out, int8_t type, std::span<const uint8_t> data);  // fixext when the size fits
void put_map_header(Bytes& out, size_t pairs);
void put_array_header(Bytes& out, size_t elements);

}  // namespace eventd::msgpack
