#pragma once
/// @file
/// @brief `standby_lag`: a standby task an instance keeps and how far behind
/// it is, as `instance_metadata::standby_lags` (metadata.hpp) reports it and
/// the instances publish it to each other (detail/coordination.hpp).

#include <boost/hana/define_struct.hpp>

#include <cstdint>

namespace strata::runtime {

/// @brief A standby task an instance keeps, and how many changelog records
/// it is behind (the largest lag over the task's stores).
struct standby_lag {
    BOOST_HANA_DEFINE_STRUCT(standby_lag, (std::int32_t, task), (std::int64_t, lag));
    friend bool operator==(const standby_lag&, const standby_lag&) = default;
};

}  // namespace strata::runtime
