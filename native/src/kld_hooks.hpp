// Test hooks of the KLD pass (internal; the test-only module dumpcmp_testhooks exposes them, never _core).
//
// The pass evaluates log(p/q) in one of two forms per group of 16 elements, chosen by the group's values alone
// (metrics.cpp explains both): these let the tests see which form ran and force the general one, so that both can
// be checked against NumPy and against each other.
#pragma once
#include <cstdint>

namespace dumpcmp::detail {

// DUMPCMP_KLD=general sends every group through the general form; read once per process.
bool kld_general_only() noexcept;

struct KldGroupCounts {
    std::uint64_t close = 0;    // groups that took the division-free form
    std::uint64_t general = 0;  // groups that took the general one (incl. each block's last partial group)
};
// Totals since the process started (or the last reset), over all threads.
KldGroupCounts kld_group_counts() noexcept;
void reset_kld_group_counts() noexcept;

}  // namespace dumpcmp::detail
