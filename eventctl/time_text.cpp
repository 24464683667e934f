#include "time_text.hpp"

#include <cstdio>
#include <ctime>

namespace eventctl {

std::string rfc3339(int64_t ns, TimeZone zone, int fraction_digits) {
    // Floor division: a time before 1970 still has a fraction in [0, 1 s).
    int64_t secs = ns / 1'000'000'000;
    int64_t fraction = ns % 1'000'000'000;
    if (fraction < 0) {
        fraction += 1'000'000'000;
        --secs;
    }
    const std::time_t t = static_cast<std::time_t>(secs);
    std::tm tm{};
    if ((zone == TimeZone::utc ? gmtime_r(&t, &tm) : localtime_r(&t, &tm)) == nullptr)
        return std::to_string(ns);  // beyond what the C library can represent: the number
    char date[48];
    std::snprintf(date, sizeof date, "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                  tm.tm_hour, tm.tm_min, tm.tm_sec);
    std::string out = date;
    if (fraction_digits > 0) {
        char digits[16];
        std::snprintf(digits, sizeof digits, "%09lld", static_cast<long long>(fraction));
        out += '.';
        out.append(digits, static_cast<size_t>(fraction_digits < 9 ? fraction_digits : 9));
    }
    if (zone == TimeZone::utc) return out + "Z";
    const long offset_min = tm.tm_gmtoff / 60;
    char offset[16];
    std::snprintf(offset, sizeof offset, "%c%02ld:%02ld", offset_min < 0 ? '-' : '+', std::labs(offset_min) / 60,
                  std::labs(offset_min) % 60);
    return out + offset;
}

}  // namespace eventctl
