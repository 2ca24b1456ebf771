#pragma once
/// @file
/// @brief Everything in strata but the Kafka changelog (include
/// <strata/kafka/...> and link strata::kafka for that).

#include <strata/changelog/file_log.hpp>
#include <strata/changelog/memory_log.hpp>
#include <strata/codec/default_codec.hpp>
#include <strata/codec/kv_codec.hpp>
#include <strata/core/concepts.hpp>
#include <strata/core/error.hpp>
#include <strata/core/store_traits.hpp>
#include <strata/decorators/all.hpp>
#include <strata/metrics/all.hpp>
#include <strata/restore/checkpoint.hpp>
#include <strata/restore/restore.hpp>
#include <strata/serde/all.hpp>
#include <strata/stores/hash_map_store.hpp>
#include <strata/stores/ordered_map_store.hpp>
