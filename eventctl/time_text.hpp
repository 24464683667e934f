// Event times for people (issue 13, "Readable output"): nanoseconds since the epoch as RFC 3339,
//   2026-11-24T04:11:00.061943023Z        UTC (eventctl's default, --utc)
//   2026-11-24T05:11:00.061943023+01:00   the local zone (--local; TZ, else /etc/localtime)
// with 9 fraction digits for records and 3 for `eventctl status`. Machine formats (jsonl, json,
// msgpack) keep the integers.
#pragma once

#include <cstdint>
#include <string>

namespace eventctl {

enum class TimeZone { utc, local };

std::string rfc3339(int64_t ns, TimeZone zone, int fraction_digits = 9);

}  // namespace eventctl
