// Time literals of the query language (PSD-008 §8.1), all UTC, resolved to nanoseconds since
// the epoch:
//   N(s|m|h|d) ago | hence   relative to "now" (the moment the query was parsed)
//   today | yesterday        midnight UTC of the current / previous day
//   YYYY-MM-DD               midnight UTC of that date
//   YYYY-MM-DDTHH:MM:SS      that instant (optional .fraction up to 9 digits, optional Z;
//                            T and Z in either case)
// The lexer uses the *_shape() checks to classify a token; the resolvers validate the calendar
// and the 64-bit nanosecond range (1970-01-01 … 2262-04-11) and answer nullopt when invalid.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace eventd::query {

inline constexpr int64_t kNsPerSecond = 1'000'000'000;
inline constexpr int64_t kNsPerDay = 86'400 * kNsPerSecond;

// "30m": one or more digits and a unit s, m, h or d (either case; no sign, no space).
bool is_duration_shape(std::string_view text);
// "2026-11-01" or "2026-11-01T12:00:00[.fffffffff][Z]": digits in the right places only;
// whether the date exists is date_ns's business.
bool is_date_shape(std::string_view text);

// Length of a duration in ns; nullopt when not a duration or it does not fit 64 bits.
std::optional<int64_t> duration_ns(std::string_view text);
// now ± duration ("ago" subtracts, "hence" adds); nullopt on overflow.
std::optional<int64_t> relative_ns(int64_t now_ns, int64_t duration, bool ago);
// Midnight UTC `days_back` days before the day containing now_ns (0 = today).
int64_t midnight_ns(int64_t now_ns, int days_back);
// A date or date-time as above; nullopt for an impossible date/time (2026-02-30, 24:00:00)
// or one outside 1970-01-01 … 2262-04-11.
std::optional<int64_t> date_ns(std::string_view text);

}  // namespace eventd::query
