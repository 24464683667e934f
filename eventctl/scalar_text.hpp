// Text of scalar values, shared by the JSON writer (json_record.hpp) and the pretty writer
// (pretty_format.hpp) so that both print a number, a non-finite float and bytes the same way:
//   integers           decimal
//   finite floats      nlohmann's shortest round-trip form (7.5, 1e+20, 0.1, -0.0, 1.0): what
//                      eventctl printed when records were decoded into nlohmann trees and dumped
//   NaN / ±inf         nan, +inf, -inf (JSON carries them inside a {"$float":…} tag)
//   bytes              lowercase hex, two digits a byte
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace eventctl {

void append_unsigned(std::string& out, uint64_t value);
void append_signed(std::string& out, int64_t value);
void append_finite_float(std::string& out, double value);  // value must be finite
std::string_view non_finite_name(double value);            // value must be NaN or ±inf
void append_hex(std::string& out, std::string_view bytes);

}  // namespace eventctl
